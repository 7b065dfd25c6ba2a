"""A lattice per level of step (ii) (docs/method-v2.md §10): exact re-reading between the level lattices,
the parameters' rules, the certifier's bounds against the independent replay and the numerical TV, and
the planner's schedule."""
from __future__ import annotations

import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from flint import fmpz_poly

from certifier.bounds.fixedpoint import Poly
from certifier.bounds.lattice import onto_coarser, refine
from certifier.bounds.lower_v2 import lower_bound_v2, method_json
from certifier.bounds.upper_v2 import UpperV2, rounding_bound_v2
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.errors import ParameterError
from certifier.methods.v2.plan import CellModel, choose_v2, level_bits, level_weights, plan_v2
from certifier.params import decimal_str, parse_decimal
from certifier.targets import kind

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from verifier_v3_fixtures import CLAIM_RA, typed  # noqa: E402

from verifier.replay.lower_v2 import replay_lower_v2  # noqa: E402
from verifier.replay.upper_v2 import replay_v2  # noqa: E402

Q = lambda s: parse_decimal("x", s)


def _values(X: dict, spacing: int) -> dict:
    """{value in units of the finest lattice's h: mass} of a distribution whose octave k has spacing 2^k spacing."""
    return {(p.off + j) * (spacing << k): int(c) for k, p in X.items() for j, c in enumerate(p.poly.coeffs()) if c}


@pytest.mark.parametrize("d", [1, 3])
def test_refine_reads_the_same_values_and_onto_coarser_undoes_it(d):
    rng, n = random.Random(d), 6
    X = {0: Poly(3, fmpz_poly([rng.randrange(1, 99) for _ in range(9)])),              # ML(2^d h, n - d)
         2: Poly(1 << (n - d), fmpz_poly([rng.randrange(0, 99) for _ in range(1 << (n - d))]))}
    fine = refine(X, d)
    assert _values(fine, 1) == _values(X, 1 << d)
    assert {k: (p.off, p.poly) for k, p in onto_coarser(fine, d).items()} == {k: (p.off, p.poly) for k, p in X.items()}
    with pytest.raises(ParameterError):          # a point between the coarser lattice's points: not a reading
        onto_coarser({1: Poly(64, fmpz_poly([1, 1]))}, 1)


BASE = UpperV2(h=Q("0.001"), mantissa_bits=8, y_mantissa_bits=(5, 5, 6, 6, 5, 4, 3), top_octave=9, eta=Q("0.0005"),
               k_minus=-30000, k_plus=3000, k_top=6000, prec=100, fixed_point_bits=80, trim=Q("1e-20"))


@pytest.mark.parametrize("bad", [(5, 7, 6, 8), (6, 6, 7, 7), (5, 6, 7, 8), ()])
def test_level_bits_must_rise_to_the_top_and_hold_step_i(bad):
    with pytest.raises(ParameterError):          # falling; not ending at n; level 0 below max(y bits) = 6; empty
        replace(BASE, level_bits=bad).validate()


def test_level_bits_length_and_json_round_trip():
    m = replace(BASE, level_bits=(6, 6, 7, 8))
    m.validate()
    assert m.levels(12) == (6, 6, 7, 8) and BASE.levels(12) == (8, 8, 8, 8)
    with pytest.raises(ParameterError):
        m.levels(16)                             # floor(log2 16) + 1 = 5 levels
    assert UpperV2.from_json(m.to_json()) == m and "level_bits" not in BASE.to_json()
    assert UpperV2.from_json(BASE.to_json()) == BASE


@pytest.mark.parametrize("sigma", ["0.6", "1.1"])
def test_bounds_on_level_lattices_bracket_the_tv_and_match_the_replay(sigma):
    """M = 12, E = 3: with levels 2 bits coarser below the top, the certifier's upper and lower bounds
    bracket the numerical TV, are the independent replay's (floors and trims apart), and the coarser
    levels cost the upper side: its bound is above the one-lattice bound (a coarser two-point rounding is
    the finer one followed by another; the lower side's floors on the two lattices are not nested maps)."""
    M, E, s = 12, 3, Q(sigma)
    t2 = 1 / (s * s)
    coarse = replace(BASE, level_bits=(6, 6, 7, 8))
    tv, err = kind("tv").numerics(Claim(RANDOM_ALLOCATION, M, E, s, Q("0.5"), None), s)
    up, lo = rounding_bound_v2(M, E, t2, coarse), lower_bound_v2(M, E, t2, coarse)
    assert float(lo.exact) <= tv - err and tv + err <= float(up.ball.upper())
    assert float(up.ball.upper()) > float(rounding_bound_v2(M, E, t2, BASE).ball.upper())
    claim = dict(CLAIM_RA, steps=M, epochs=E, sigma=sigma)
    p = typed(claim, coarse.to_json())
    r = replay_v2(p["claim"], p["method"])
    assert abs(float(r.bound) - float(up.ball.upper())) < 1e-15
    lp = typed(claim, method_json(coarse), lower=True)
    lr = replay_lower_v2(lp["claim"], s, lp["lower"]["method"])
    assert abs(float(lr.bound) - float(lo.exact)) < 1e-15


def test_level_weights_are_top_heavy_and_the_schedule_keeps_its_rules():
    M, t2 = 10**7, 1 / (0.490195**2)
    cm = CellModel.at(M, 10**4, t2, 0.1)
    w = level_weights(cm, M)
    assert abs(sum(w) - 1) < 1e-12 and w[0] == 0 and w[-1] == max(w) and w[-1] > 0.25
    products = [20.0] * len(w)
    for ratio in (2.0, 4.0):
        nb = level_bits(w, products, 17, 9, ratio)
        assert nb[-1] == 17 and nb[0] >= 9 and all(a <= b for a, b in zip(nb, nb[1:]))
        assert sum(x * 4.0 ** (17 - b) for x, b in zip(w, nb)) <= ratio + 1e-12
        assert nb[0] < 17 - 3                     # the low levels do coarsen
    assert level_bits(w, products, 17, 9, 1.0) == [9] + [17] * (len(w) - 1)   # level 0 forms no sum: free


def test_the_planner_takes_a_schedule_where_the_low_levels_are_costly():
    """At (10^7, 10^4, 0.1), sigma 0.490195 (24 octaves a level at the bottom): the planned grid has level_bits,
    and its predicted step (ii) is a fraction of the one-lattice grid's at the same n and eta."""
    M, E, s = 10**7, 10**4, Q("0.490195")
    t2 = 1 / (s * s)
    plan = choose_v2(M, E, t2, 4.6e-7, 0.1)
    m = plan.method
    assert m.level_bits is not None and plan.predicted_loss <= 4.6e-7
    one = plan_v2(M, E, t2, 4.6e-7, 0.1, n=m.mantissa_bits, eta=decimal_str(m.eta))
    assert plan.detail["seconds"]["step_ii"] < one.detail["seconds"]["step_ii"] / 3


def test_the_rows_keep_a_fine_octave_0_only_where_an_epoch_value_0_is_likely():
    """With the (eps, delta) rows' range, step (i)'s octave 0 takes every point (spacing h) where all M steps
    below its first point is not negligible (M = 2 at sigma 0.25: most steps lie below 0.01); at M = 10^7 it
    need not, so the levels can coarsen."""
    s = Q("0.490196")
    big = choose_v2(10**7, 10**4, 1 / (s * s), 6e-7, 0.1, need_eps=4.0).method
    assert big.y_mantissa_bits[0] < big.mantissa_bits and big.level_bits is not None
    small = choose_v2(2, 2, 1 / (Q("0.25") ** 2), 1e-6, 0.3, need_eps=4.0).method
    assert small.y_mantissa_bits[0] == small.mantissa_bits
