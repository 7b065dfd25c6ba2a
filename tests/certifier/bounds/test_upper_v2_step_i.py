"""Step (i) of method v2 and step (a) of its lower map, formed one grid point at a time: the same integers as the
whole-list form (every ball of doubled_tails, two_point_masses and floor_cell_masses kept), at random grids."""
from __future__ import annotations

import random

import pytest
from flint import arb, fmpq

from certifier.bounds.fixedpoint import floor_fixed, working_prec
from certifier.bounds.lattice import packed
from certifier.bounds.lognormal import doubled_tails, floor_cell_masses, two_point_masses
from certifier.bounds.lower_v2 import step_a
from certifier.bounds.upper_v2 import UpperV2, grid_size, step_i, y_grid


def _method(rng: random.Random) -> UpperV2:
    n = rng.randint(3, 9)
    ys = tuple(rng.randint(0, n) for _ in range(rng.randint(1, 5)))
    return UpperV2(h=fmpq(rng.randint(1, 50), 10 ** rng.randint(1, 4)), mantissa_bits=n, y_mantissa_bits=ys,
                   top_octave=len(ys) + 1, eta=fmpq(1, 100), k_minus=-5, k_plus=5, k_top=5,
                   prec=rng.choice([64, 100, 115]), fixed_point_bits=rng.choice([40, 80, 95]))


def _whole_lists(t2: fmpq, m: UpperV2):
    """Step (i) as one list per quantity: the tails, the two-point masses, the cap's tail added, the floors."""
    grid = y_grid(m)
    units = [j << k for k, j in grid]
    e0, e1 = doubled_tails(t2, units, m.h, m.prec)
    with working_prec(m.prec):
        masses = two_point_masses(e0, e1, units, m.h)
        masses[-1] += e0[-1]
        ints = [floor_fixed(x, m.fixed_point_bits - 1) for x in masses]
        loss = arb(1) - arb(sum(ints)) / arb(2) ** m.fixed_point_bits
        ps = [floor_fixed(x, m.fixed_point_bits - 1) for x in floor_cell_masses(e0)]
        qs = [floor_fixed(x, m.fixed_point_bits - 1) for x in floor_cell_masses(e1)]
        moved = e0[-1] / 2
    return packed(zip(grid, ints)), moved, loss, packed(zip(grid, ps)), packed(zip(grid, qs))


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k].off == b[k].off and a[k].poly == b[k].poly for k in a)


def _same_ball(x: arb, y: arb) -> bool:
    return x.mid() == y.mid() and x.rad() == y.rad()


@pytest.mark.parametrize("seed", range(12))
def test_step_i_one_point_at_a_time_is_the_whole_list_form(seed):
    rng = random.Random(seed)
    m, t2 = _method(rng), fmpq(rng.randint(1, 400), rng.randint(1, 400))
    P, moved, loss, Pa, Qa = _whole_lists(t2, m)
    got = step_i(t2, m)
    assert _same(got[0], P) and _same_ball(got[1], moved) and _same_ball(got[2], loss)
    assert grid_size(m) == len(y_grid(m))
    lower = step_a(t2, m)
    assert _same(lower[0], Pa) and _same(lower[1], Qa)


def test_the_comparison_sees_a_lost_cap_tail():
    """The check above can fail: without the cap's tail added the cap's mass differs (cap 0.64, Pr(Y > cap) large)."""
    m = UpperV2(h=fmpq(1, 100), mantissa_bits=4, y_mantissa_bits=(2, 2), top_octave=3, eta=fmpq(1, 100),
                k_minus=-5, k_plus=5, k_top=5)
    t2 = fmpq(1, 3)
    grid = y_grid(m)
    units = [j << k for k, j in grid]
    e0, e1 = doubled_tails(t2, units, m.h, m.prec)
    with working_prec(m.prec):
        ints = [floor_fixed(x, m.fixed_point_bits - 1) for x in two_point_masses(e0, e1, units, m.h)]
    assert not _same(step_i(t2, m)[0], packed(zip(grid, ints)))
