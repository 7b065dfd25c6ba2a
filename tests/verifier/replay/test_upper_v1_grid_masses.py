"""The verifier's step-(i) masses (verifier.replay.upper_v1.grid_masses, one cell's slope at a time) against the
certifier's step (i) on the same grids: two independent formulas (the jump of G's slope, the two-point cells) give
the same integers up to their balls' floors, and every kept mass sums with the tail to 1."""
from __future__ import annotations

import random

import pytest
from flint import fmpq

from certifier.bounds.upper_v2 import UpperV2, step_i
from verifier.format.strict import working_prec
from verifier.replay.lattice import grid_points
from verifier.replay.upper_v1 import grid_masses


def _cell(seed: int):
    rng = random.Random(seed)
    n = rng.randint(4, 9)
    ys = [rng.randint(0, n) for _ in range(rng.randint(1, 5))]
    sigma = fmpq(rng.randint(40, 600), 100)
    m = UpperV2(h=fmpq(rng.randint(1, 50), 10 ** rng.randint(2, 4)), mantissa_bits=n, y_mantissa_bits=tuple(ys),
                top_octave=len(ys) + 1, eta=fmpq(1, 100), k_minus=-5, k_plus=5, k_top=5, prec=120,
                fixed_point_bits=80)
    return sigma, m


@pytest.mark.parametrize("seed", range(8))
def test_the_verifiers_masses_are_the_certifiers_up_to_the_floors(seed):
    sigma, m = _cell(seed)
    n, F = m.mantissa_bits, m.fixed_point_bits
    points = grid_points(n, list(m.y_mantissa_bits))
    with working_prec(m.prec):
        q, tail = grid_masses(sigma, m.h, points, F, moved=True)
    P, moved, _ = step_i(1 / (sigma * sigma), m)
    ours = {}
    for k, p in P.items():
        for i in range(p.poly.length()):
            ours[(p.off + i) << k] = int(p.poly[i])
    # the certifier keeps an octave's point j as j << k in units of h, the verifier the point itself (octave 0's
    # points below N share both forms)
    theirs = {u: c for u, c in zip(points, q)}
    assert set(u for u, c in ours.items() if c) <= set(theirs)
    worst = max(abs(theirs[u] - ours.get(u, 0)) for u in theirs)
    assert worst <= 4, worst
    assert abs(sum(q) - 2**F) <= 4 * len(points)      # every mass kept: Y above the cap moved onto it
    assert abs(float(tail.mid()) - float(moved.mid())) <= 1e-15


def test_the_comparison_sees_a_shifted_slope():
    """The check above can fail: the masses of a neighbouring sigma differ by far more than the floors."""
    sigma, m = _cell(1)
    points = grid_points(m.mantissa_bits, list(m.y_mantissa_bits))
    with working_prec(m.prec):
        q = grid_masses(sigma, m.h, points, m.fixed_point_bits, moved=True)[0]
        q2 = grid_masses(sigma * fmpq(101, 100), m.h, points, m.fixed_point_bits, moved=True)[0]
    assert max(abs(a - b) for a, b in zip(q, q2)) > 10**6
