"""The verifier's step (i) / step (a) masses skip the far tails without changing a single integer.

Points whose mass is provably below 2^-F are 0 in units 2^-F however they are computed; the replay
no longer evaluates two erfc there (at (2, 100, 10^-3) most of the 5.2M grid points). Reference: the
loops of before, every point evaluated, on grids that reach deep into both tails.
"""
import pytest
from flint import arb, ctx, fmpq

from verifier.replay.arith import dyadic, units
from verifier.replay.lower_v2 import masses
from verifier.replay.upper_v1 import grid_masses

CASES = [(fmpq(282096, 100), fmpq(1, 10**7), list(range(0, 16777216, 4999)) + [16777216], 132),
         (fmpq(1426215, 10**6), fmpq(1, 1000), list(range(0, 4001)), 84),
         (fmpq(4040653, 10**6), fmpq(25, 10**6), list(range(0, 369111, 41)), 84),
         (fmpq(1, 2), fmpq(1, 100), list(range(0, 1500)), 84)]


def grid_masses_every_point(sigma, h, points, F, moved=False):
    r2 = arb(2).sqrt()
    a, c = arb(sigma) / r2, 1 / (2 * arb(sigma) * r2)
    ah, lnh, hp, hq = arb(h), arb(h).log(), int(h.p), int(h.q)

    def two_v(u, call):
        if u == 0:
            return arb(2) if call else arb(0)
        y, x = ah * u, a * (arb(u).log() + lnh)
        return (x - c).erfc() - y * (x + c).erfc() if call else y * (-(x + c)).erfc() - (-(x - c)).erfc()
    call = [points[k + 1] * hp > hq for k in range(len(points) - 1)]
    slopes, prev = [], two_v(points[0], call[0])
    for k in range(len(points) - 1):
        nxt = two_v(points[k + 1], call[k])
        slopes.append((nxt - prev) * (1 / (ah * (points[k + 1] - points[k]))))
        if k + 1 < len(call) and call[k + 1] != call[k]:
            nxt = two_v(points[k + 1], True)
        prev = nxt
    tail = ((arb(points[-1]).log() + lnh) * a + c).erfc()
    last = (arb(0) if call[-1] else arb(2)) if moved else (-tail if call[-1] else 2 - tail)
    ext = [(arb(0), False)] + list(zip(slopes, call)) + [(last, call[-1])]
    return [units(((ext[k + 1][0] - ext[k][0]) + (2 if ext[k + 1][1] and not ext[k][1] else 0)) / 2, F)
            for k in range(len(points))]


def masses_every_point(t2, h, points, F):
    a = 1 / arb(t2).sqrt() / arb(2).sqrt()
    b0, c = a * arb(h).log(), 1 / (4 * a)

    def tails(u):
        if u == 0:
            return arb(2), arb(2)
        x = a * arb(u).log() + b0
        return (x + c).erfc(), (x - c).erfc()
    down = lambda x: max(dyadic(x, False, F - 1), 0) if x.is_finite() else 0  # noqa: E731
    p, q, prev = [], [], tails(points[0])
    for u in points[1:]:
        cur = tails(u)
        p.append(down(prev[0] - cur[0]))
        q.append(down(prev[1] - cur[1]))
        prev = cur
    return p + [down(prev[0])], q + [down(prev[1])]


@pytest.mark.parametrize("sigma,h,points,F", CASES)
def test_step_i_masses_are_unchanged(sigma, h, points, F):
    old = ctx.prec
    ctx.prec = 148
    try:
        for moved in (False, True):
            got, _ = grid_masses(sigma, h, points, F, moved)
            assert got == grid_masses_every_point(sigma, h, points, F, moved)
        assert sum(1 for x in got if x) > 10          # masses there, not an all-zero grid
    finally:
        ctx.prec = old


@pytest.mark.parametrize("sigma,h,points,F", CASES)
def test_lower_step_a_masses_are_unchanged(sigma, h, points, F):
    old = ctx.prec
    ctx.prec = 148
    try:
        t2 = 1 / (sigma * sigma)
        got = masses(t2, h, points, F)
        assert got == masses_every_point(t2, h, points, F)
        assert sum(1 for x in got[0] if x) > 10
    finally:
        ctx.prec = old


def lower_v1_masses_every_point(sigma, h, K, F):
    s, r2, lnh = arb(sigma), arb(2).sqrt(), arb(h).log()
    c = 1 / (2 * s)

    def tails(u):
        if u == 0:
            return arb(2), arb(2)
        x = s * (arb(u).log() + lnh)
        return ((x + c) / r2).erfc(), ((x - c) / r2).erfc()
    p, q, prev = [], [], tails(0)
    for u in range(1, K + 1):
        cur = tails(u)
        p.append(units((prev[0] - cur[0]) / 2, F))
        q.append(units((prev[1] - cur[1]) / 2, F))
        prev = cur
    return p + [units(prev[0] / 2, F)], q + [units(prev[1] / 2, F)]


@pytest.mark.parametrize("sigma,h,K,F", [(fmpq(398944, 1000), fmpq(1, 10**5), 120000, 132),
                                         (fmpq(1426215, 10**6), fmpq(1, 1000), 4000, 84),
                                         (fmpq(126159, 1000), fmpq(2, 10**4), 9000, 132)])
def test_lower_v1_step_a_masses_are_unchanged(sigma, h, K, F):
    from verifier.replay.lower_v1 import _masses
    old = ctx.prec
    ctx.prec = 148
    try:
        got = _masses(sigma, h, K, F)
        assert got == lower_v1_masses_every_point(sigma, h, K, F)
        assert sum(1 for x in got[0] if x) > 10
    finally:
        ctx.prec = old
