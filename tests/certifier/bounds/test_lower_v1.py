"""The data-processing lower bound (certifier/bounds/lower_v1.py) and the two-sided certify path."""
from __future__ import annotations

import math

import pytest
from flint import fmpq, fmpz_poly
from scipy.special import erf

from certifier.bounds.fixedpoint import Poly, round_down_sig
from certifier.bounds.fixedpoint import coarsen_floor as floor_coarsen
from certifier.bounds.lower_v1 import LowerV1, _mix, lower_bound, step_a, step_b
from certifier.bounds.upper_v1 import rounding_bound
from certifier.certify import certify
from certifier.methods.v1.plan import choose_grid, choose_lower_grid
from certifier.numerics.exact import exact_tv
from certifier.params import parse_decimal

Q = lambda s: parse_decimal("x", s)  # noqa: E731


def _poly(coeffs, off=0):
    return Poly(off, fmpz_poly(coeffs))


def _coeffs(p: Poly) -> dict:
    return {p.off + j: int(c) for j, c in enumerate(p.poly.coeffs()) if int(c)}


def test_floor_coarsen_is_the_floor_map():
    """Index j goes to floor(j / r) with exact integer sums, for any offset (also negative)."""
    for off in (-7, -3, 0, 2, 5):
        p = _poly([3, 0, 5, 7, 11, 13, 0, 17], off)
        for r in (1, 2, 3, 4):
            want = {}
            for j, c in _coeffs(p).items():
                want[j // r] = want.get(j // r, 0) + c
            got = _coeffs(floor_coarsen(p, r))
            assert got == {k: v for k, v in want.items() if v}


def test_mix_floors_the_weighted_average():
    a, b = _poly([10, 20, 30], 1), _poly([7, 9], 0)
    m = _coeffs(_mix(a, 3, b, 5))
    assert m == {0: (5 * 7) // 8, 1: (3 * 10 + 5 * 9) // 8, 2: (3 * 20) // 8, 3: (3 * 30) // 8}


def test_q_side_with_unit_lattice_is_q_times_p_to_the_m_minus_1():
    """With lattice_schedule all ones the Q-side epoch pmf is (sum q z^k)(sum p z^k)^(M-1) (up to floors)."""
    M = 5
    m = LowerV1(h=Q("0.05"), cap=Q("3"), lattice_schedule=(1, 1, 1), eta=Q("0.001"), trim=fmpq(0))
    P, Qp = step_a(Q("1.5"), m)
    AP, AQ, g, _ = step_b(P, Qp, M, m)
    F = m.fixed_point_bits
    pw = P.poly ** (M - 1)
    direct = Qp.poly * pw
    got = _coeffs(AQ)
    scale = 1 << (F * (M - 1))
    for j, c in enumerate(direct.coeffs()):
        want = int(c) // scale
        assert abs(got.get(j, 0) - want) <= M + 1  # intermediate floors only
    assert g == 1


def test_step_a_masses_sum_to_one_from_below():
    m = LowerV1(h=Q("0.01"), cap=Q("8"), lattice_schedule=(1,), eta=Q("0.001"))
    P, Qp = step_a(Q("1.2"), m)
    one = 1 << m.fixed_point_bits
    for p in (P, Qp):
        tot = p.mass()
        assert one - 10 * p.poly.length() <= tot <= one


def test_round_down_sig():
    assert round_down_sig(Q("0.10000000129999")) == "0.1000000012"
    assert round_down_sig(Q("0.1")) == "0.1"
    assert round_down_sig(Q("123.456789012345")) == "123.456789"
    assert round_down_sig(fmpq(1, 3)) == "0.3333333333"


def test_method_json_keys_and_roundtrip():
    m = LowerV1(h=Q("0.001"), cap=Q("64.266"), lattice_schedule=(1, 1, 2, 2, 2, 4, 4), eta=Q("0.00008"),
                    b_min=-5, b_max=9)
    j = m.to_json(100)
    assert set(j) == {"name", "version", "h", "cap", "eta", "b_min", "b_max", "lattice_schedule", "prec",
                      "fixed_point_bits", "trim"}
    assert j["name"] == "data-processing-lower" and j["version"] == 1
    assert LowerV1.from_json(j) == m


@pytest.mark.parametrize("M,E,sigma", [(10, 5, "2.889659"), (20, 3, "2.5"), (1, 4, "4")])
def test_lower_le_tv_le_upper_with_small_gaps(M, E, sigma):
    """Certified lower <= exact TV <= certified upper; both gaps small (the lower one about half)."""
    tv = exact_tv(M, E, float(sigma)).tv if M > 1 else erf(math.sqrt(E) / (2 * float(sigma) * math.sqrt(2)))
    plan = choose_grid(M, E, Q(sigma), 4e-8)
    up = float(rounding_bound(M, E, Q(sigma), plan.method).bound)
    lp = choose_lower_grid(M, E, Q(sigma), 4e-8)
    L = lower_bound(M, E, Q(sigma), lp.method)
    lo = float(L.exact)
    assert lo <= tv + 1e-11 <= up + 2e-11      # exact_tv is numerical (error ~1e-12)
    assert tv - lo <= 6e-8 and up - tv <= 1e-7
    assert float(L.tv_lower) <= lo             # recorded value rounds down
    # the model predicts the loss within a factor 3
    assert tv - lo <= 3 * lp.predicted_loss + 1e-10
    # the recorded enclosures reproduce the exact bound: W_A - U_A - deleted_p, less the replay slack
    from flint import arb, ctx

    from certifier.bounds.lower_v1 import replay_slack
    e, slack = L.enclosures, replay_slack(M, E, L.method)
    assert 0 < float(slack) < 1e-9
    old, ctx.prec = ctx.prec, 256
    try:
        ball = arb(e["W_A"]) - arb(e["U_A"]) - arb(e["deleted_p"])
        assert ball.contains(arb((L.exact + slack).p) / arb((L.exact + slack).q))
        assert ball.rad() < 1e-18
    finally:
        ctx.prec = old


def test_two_sided_certify_small_cell():
    """The exact sigma is certified above and sigma - 1e-6 (or 2e-6) below: sigma_low misses the target."""
    res = certify(10, 5, Q("0.1"), two_sided=True)
    assert res.success and res.two_sided
    s, s_low = Q(res.sigma), Q(res.sigma_low)
    assert s - Q("0.000002") <= s_low < s
    assert Q(res.tv_lower) > Q("0.1") and Q(res.bound) <= Q("0.1")
    assert exact_tv(10, 5, float(s_low)).tv > 0.1          # consistent with the numerics
    p = res.predicate
    assert set(p) >= {"lower", "privacy", "tpr"}
    lo = p["lower"]
    assert lo["sigma_low"] == res.sigma_low and lo["target"] == "0.1"
    # replaying the recorded method at the recorded sigma_low reproduces the recorded bound
    m = LowerV1.from_json(lo["method"])
    again = lower_bound(10, 5, s_low, m, fixed_buckets=True)
    assert again.tv_lower == lo["tv_lower"]


def test_lower_side_refuses_at_or_above_the_exact_sigma():
    """No grid certifies 'misses' at a sigma whose TV is <= target: an edited sigma_low = sigma_high fails."""
    res = certify(10, 5, Q("0.1"), two_sided=True)
    s = Q(res.sigma)
    m = LowerV1.from_json(res.predicate["lower"]["method"])
    for sig in (s, s + Q("0.000001")):
        L = lower_bound(10, 5, sig, m)                     # the recorded grid, sigma edited upward
        assert L.exact <= Q("0.1")
        fine = choose_lower_grid(10, 5, sig, 5e-9)        # a finer grid does not help either
        assert lower_bound(10, 5, sig, fine.method).exact <= Q("0.1")
    # two-sided certify one step above the exact sigma: its first sigma_low is the exact sigma,
    # which the numerics skip; the second (sigma - 1e-6, i.e. 2 x resolution) is certified to miss
    out = certify(10, 5, Q("0.1"), s + Q("0.000001"), two_sided=True)
    assert out.lower_tries[0].get("skipped") and out.lower_tries[0]["sigma_low"] == res.sigma
    assert out.two_sided and Q(out.sigma_low) == s - Q("0.000001")
    assert Q(out.tv_lower) > Q("0.1")
