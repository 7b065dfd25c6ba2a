"""The Lemma C.5 bound (certifier/bounds/upper_v1.py) and the grid model (certifier/methods/v1/plan.py)."""
from __future__ import annotations

import math

import pytest
from flint import arb, ctx, fmpq, fmpz_poly
from scipy.special import erf

from certifier.bounds.fixedpoint import Ledger, Poly, round_up_sig
from certifier.bounds.fixedpoint import coarsen_two_point as _coarsen
from certifier.bounds.upper_v1 import UpperV1, make_method, rounding_bound, step_i, step_iii
from certifier.methods.v1.plan import Model, choose_grid, lattice_for, lattice_variance
from certifier.numerics.exact import exact_tv
from certifier.params import ParameterError, parse_decimal

Q = lambda s: parse_decimal("x", s)  # noqa: E731


def closed_m1(epochs: int, sigma: float) -> float:
    """M = 1: TV = 2 Phi(sqrt(E)/(2 sigma)) - 1."""
    return erf(math.sqrt(epochs) / (2 * sigma * math.sqrt(2)))


def test_m1_matches_closed_form():
    """At M = 1 the bound lies just above the closed form 2 Phi(sqrt(E)/(2 sigma)) - 1."""
    E, sigma = 4, "4"
    tv = closed_m1(E, 4.0)
    plan = choose_grid(1, E, Q(sigma), 3e-8)
    r = rounding_bound(1, E, Q(sigma), plan.method)
    b = float(r.bound)
    assert b >= tv
    assert b - tv <= 1e-7
    # the a-priori model predicts the loss within a factor 2
    assert 0.5 * plan.predicted_loss <= b - tv <= 2 * plan.predicted_loss + 1e-11


@pytest.mark.parametrize("M,E,sigma", [(10, 5, "2.889659"), (20, 3, "2.5")])
def test_small_cells_bound_close_to_exact_tv(M, E, sigma):
    tv = exact_tv(M, E, float(sigma)).tv
    plan = choose_grid(M, E, Q(sigma), 5e-8)
    r = rounding_bound(M, E, Q(sigma), plan.method)
    b = float(r.bound)
    assert b >= tv - 1e-11          # exact_tv is numerical (error ~1e-12)
    assert b - tv <= 1e-7
    assert r.ball.upper() <= arb(r.bound)  # bound rounds the ball's upper end up


def test_coarser_grid_gives_larger_bound():
    """Each rounding only lowers O: a coarser h gives a larger (worse) bound."""
    M, E, s = 5, 2, Q("2")
    fine = make_method(M, h="0.002", eta="0.0001", cap="20", k_minus=-60000, k_plus=30000)
    coarse = make_method(M, h="0.02", eta="0.0001", cap="20", k_minus=-60000, k_plus=30000)
    assert float(rounding_bound(M, E, s, coarse).bound) > float(rounding_bound(M, E, s, fine).bound)


def test_step_i_is_mean_preserving():
    """Sum_k k h p_k = E[Y 1{Y <= cap}] = 1 - G1(cap) up to the 2^-80 floors."""
    m = make_method(4, h="0.01", eta="0.001", cap="30", tail_start="5", tail_step="0.05")
    P, g0cap, loss = step_i(Q("1.5"), m)
    F = m.fixed_point_bits
    coeffs = [int(c) for c in P.poly.coeffs()]
    mass = sum(coeffs) / 2.0**F
    mean = sum(k * c for k, c in enumerate(coeffs)) / 2.0**F * 0.01
    t = 1 / 1.5
    g1cap = 0.5 * math.erfc((math.log(30) - t * t / 2) / (t * math.sqrt(2)))
    assert abs(mass - (1 - float(g0cap.mid()))) < 1e-15
    assert abs(mean - (1 - g1cap)) < 1e-13
    # only grid points carry mass: 0..5 step h, then 5 + i*0.05
    assert all(c == 0 for k, c in enumerate(coeffs) if k > 500 and (k - 500) % 5)
    assert loss.upper() < arb(2) ** -60


def test_coarsen_mean_and_mass():
    """Two-point re-rounding onto an r-times coarser lattice preserves mass and mean (up to floors)."""
    led = Ledger(80)
    vals = [3 << 70, 5 << 70, 7 << 70, 11 << 70, 13 << 70]
    p = Poly(7, fmpz_poly(vals))  # indices 7..11
    q = _coarsen(p, 3, led)
    cq = [int(c) for c in q.poly.coeffs()]
    lost = sum(vals) - sum(cq)
    assert 0 <= lost <= len(cq)                  # one floor per output coefficient
    assert led.fixed_point == lost << 80         # and the ledger records exactly that loss
    mean_p = sum((7 + j) * v for j, v in enumerate(vals))
    mean_q = sum(3 * (q.off + j) * v for j, v in enumerate(cq))
    assert 0 <= mean_p - mean_q <= 3 * (q.off + len(cq)) * len(cq)
    assert q.off == 2 and len(cq) == 3           # 7..11 -> 6, 9, 12 -> indices 2..4


def test_step_iii_matches_direct_ball_rounding():
    """Step (iii) on a tiny epoch sum agrees with a direct arb two-point rounding of each value."""
    M = 3
    m = make_method(M, h="0.1", eta="0.05", cap="4", k_minus=-200, k_plus=100)
    F = m.fixed_point_bits
    masses = [0, 1 << 76, 3 << 76, 5 << 76, 2 << 76, 1 << 75]  # at S = (off + j) h, off = 20
    A = Poly(20, fmpz_poly(masses))
    led = Ledger(F)
    R = step_iii(A, 1, M, m, led)
    got = {R.off + j: int(c) for j, c in enumerate(R.poly.coeffs()) if int(c)}
    ctx.prec = 200
    want = {}
    for j, w in enumerate(masses):
        if not w:
            continue
        L = arb(20 + j) * arb("0.1") / M
        k = int(math.floor(math.log(float(L.mid())) / 0.05))
        a, b = (arb(k) * arb("0.05")).exp(), (arb(k + 1) * arb("0.05")).exp()
        up = arb(w) * (L - a) / (b - a)
        want[k] = want.get(k, 0) + (arb(w) - up)
        want[k + 1] = want.get(k + 1, 0) + up
    ctx.prec = 53
    assert set(got) <= set(want)
    for k, v in want.items():
        assert abs(got.get(k, 0) - float(v.mid())) <= 3, k
    assert led.log_grid == 0


def test_round_up_sig_rounds_up():
    assert round_up_sig(arb(fmpq(123456789012, 10**12)), 10) == "0.1234567891"
    assert round_up_sig(arb(fmpq(1, 10)), 10) == "0.1000000001"  # 0.1 is not dyadic: the ball is wider
    assert round_up_sig(arb(fmpq(1, 8)), 10) == "0.125"           # exact values stay exact
    assert round_up_sig(arb("[0.0999999977009 +/- 1e-20]"), 10) == "0.09999999771"


def test_method_validation_and_json_roundtrip():
    with pytest.raises(ParameterError):
        make_method(10, h="0.001", eta="0.0001", cap="8", tail_start="4", tail_step="0.0015")
    with pytest.raises(ParameterError):
        make_method(10, h="0.001", eta="0.0001", cap="8", lattice_schedule=[1, 2, 3, 6])
    m = make_method(10, h="0.001", eta="0.00005", cap="8", tail_start="4", tail_step="0.004",
                    lattice_schedule=[1, 1, 2, 4])
    j = m.to_json(10)
    assert j["truncation"] == "80" and j["k_minus"] == -20000 and j["k_plus"] == 40000
    assert UpperV1.from_json(j) == m


def test_error_model_pieces():
    mod = Model.at(100, 10, 1.426215)
    assert 1.5 < 2 * mod.K / 10 < 1.65          # f(1) of the Table 4 cell
    g = lattice_for(250, 1.0)
    assert g[0] == 1 and all(b % a == 0 for a, b in zip(g, g[1:]))
    assert lattice_variance(250, [1] * 8) == 0.0
