"""The multiscale sum of method v2 against a literal enumeration of docs/method-v2.md §2 (ii)."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest
from flint import fmpz_poly

from certifier.bounds.fixedpoint import Ledger, Poly
from certifier.bounds.lattice import FLOOR, ROUND, Lattice, ms_mass, oplus, trim_ms

F = 40


def _random_dist(lat: Lattice, rng: random.Random, octaves) -> dict:
    """Random masses (units 2^-F, total about 1) on a few octaves of ML(1, n)."""
    out = {}
    for k in octaves:
        lo = lat.lowest(k)
        coeffs = [rng.randrange(0, 1 << 20) for _ in range(lo, 2 * lat.N)]
        out[k] = Poly(lo, fmpz_poly(coeffs))
    return out


def _points(X: dict) -> dict:
    """{(octave, index): mass} of a distribution."""
    return {(k, p.off + j): int(c) for k, p in X.items() for j, c in enumerate(p.poly.coeffs()) if int(c)}


def _value(k: int, m: int) -> int:
    return m << k                                   # in units of h


def _octave(v: int, N: int) -> int:
    k = 0
    while v >= (2 * N) << k:
        k += 1
    return k


def _halve(dist: dict, mode: str) -> dict:
    """Index m on a lattice -> the lattice twice as coarse (two-point or floor)."""
    out: dict = {}
    for m, w in dist.items():
        if m % 2 == 0 or mode == FLOOR:
            out[m // 2] = out.get(m // 2, 0) + w
        else:
            out[(m - 1) // 2] = out.get((m - 1) // 2, 0) + w / 2
            out[(m + 1) // 2] = out.get((m + 1) // 2, 0) + w / 2
    return out


def _spec_sum(X: dict, Y: dict, lat: Lattice, mode: str) -> dict:
    """X (+) Y literally: pairs of points, the smaller summand re-rounded by successive halvings onto
    the larger one's lattice, the sum's part in the next octave halved, octaves above `top` clamped."""
    N, out = lat.N, {}
    for (i, mx), wx in _points(X).items():
        for (j, my), wy in _points(Y).items():
            (a, ma), (b, mb) = ((i, mx), (j, my)) if i >= j else ((j, my), (i, mx))
            small = {mb: Fraction(1)}
            for _ in range(a - b):                  # lattice 2^b h -> 2^a h, one halving at a time
                small = _halve(small, mode)
            for ms, ps in small.items():
                z = ma + ms                          # on the lattice 2^a h
                if z < 2 * N:
                    targets = {(a, z): Fraction(1)}
                else:
                    targets = {(a + 1, m2): p for m2, p in _halve({z: Fraction(1)}, mode).items()}
                for (k, m), p in targets.items():
                    if k > lat.top:
                        k, m = lat.top, 2 * N - 1    # moved down to the largest point of the top octave
                    out[(k, m)] = out.get((k, m), 0) + Fraction(wx * wy) * ps * p
    return {key: v / (1 << F) for key, v in out.items()}   # back to units 2^-F


@pytest.mark.parametrize("mode", [ROUND, FLOOR])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_oplus_matches_the_literal_rule(mode, seed):
    rng = random.Random(seed)
    lat = Lattice(n=2, top=3)
    X = _random_dist(lat, rng, rng.sample(range(4), 3))
    Y = _random_dist(lat, rng, rng.sample(range(4), 2))
    led = Ledger(F)
    got = _points(oplus(X, Y, lat, led, mode))
    want = _spec_sum(X, Y, lat, mode)
    assert set(got) <= set(want)
    for key, w in want.items():
        g = got.get(key, 0)
        assert g <= w, (key, g, float(w))          # a lower bound: floors only
        slack = 4 * (2 * lat.N) if key == (lat.top, 2 * lat.N - 1) else 4   # the clamped point gathers many
        assert w - g < slack, (key, g, float(w))   # within the floors of one sum and two halvings
    # the recorded floor losses (units 2^-2F) bound what the result misses of the exact product mass
    exact, kept = ms_mass(X) * ms_mass(Y), ms_mass(oplus(X, Y, lat, Ledger(F), mode)) << F
    assert kept <= exact <= kept + led.fixed_point


def test_square_is_the_sum_of_two_independent_copies():
    rng = random.Random(7)
    lat = Lattice(n=3, top=4)
    X = _random_dist(lat, rng, [0, 1, 3])
    a = _points(oplus(X, X, lat, Ledger(F), ROUND, square=True))
    b = _points(oplus(X, dict(X), lat, Ledger(F), ROUND))
    assert a == b


def test_the_top_octave_clamp_moves_and_records():
    lat = Lattice(n=2, top=1)
    X = {1: Poly(4, fmpz_poly([0, 0, 0, 1 << 20]))}  # the point 2 h 7 = 14 h in octave 1
    led = Ledger(F)
    Z = oplus(X, X, lat, led, ROUND)                 # 28 h lies in octave 2 > top: moved to 2 h 7
    assert _points(Z) == {(1, 7): (1 << 40) >> F}
    assert led.moved_top == (1 << 40) >> F


def test_trim_deletes_only_the_low_end_within_budget():
    X = {0: Poly(0, fmpz_poly([3, 5, 0, 100])), 2: Poly(4, fmpz_poly([7, 0, 0, 1]))}
    led = Ledger(F)
    T = trim_ms(X, 2 * 8, led)                       # at most 8 units from the bottom
    assert _points(T) == {(0, 3): 100, (2, 4): 7, (2, 7): 1} and led.trim == 8
