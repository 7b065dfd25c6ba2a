"""verifier/replay/stages.py: a line waiting for step (iv) / (d) is kept packed and comes back exactly, and the
last line's powering consumes step (a)'s images (docs/reliability.md §3)."""
from __future__ import annotations

import random

from flint import fmpz_poly

from verifier.replay import stages as st


def test_a_packed_line_comes_back_exactly():
    rng = random.Random(7)
    r = {j: rng.getrandbits(rng.choice([1, 63, 64, 84, 200])) for j in rng.sample(range(-500, 900), 400)}
    r[-500], r[899] = 1, 2**84 - 1                      # the ends, with gaps of zero masses between entries
    lo, poly = st._unpacked(st._packed(r))
    assert lo == -500
    assert poly == fmpz_poly([r.get(j, 0) for j in range(-500, 900)])
    assert st._unpacked(st._packed({})) == (0, fmpz_poly([]))
    big = st._packed({j: 2**79 + j for j in range(10000)})
    assert len(big[3]) == 10000 * 11                     # 11 bytes a mass of 80 bits, not an fmpz's ~50


def test_the_last_line_consumes_the_placed_images():
    class Lat:                                           # a lattice that adds lists: only the bookkeeping matters
        def oplus(self, x, y):
            return [a + b for a, b in zip(x, y)]

        def forget(self, x):
            pass
    placed = [([1, 0], [0, 1])]
    A, AQ = st._epoch_lower(placed, 1, Lat(), consume=False)
    assert placed == [([1, 0], [0, 1])] and (A, AQ) == ([1, 0], [0, 1])
    A, AQ = st._epoch_lower(placed, 4, Lat(), consume=True)
    assert placed == [] and A == [4, 0]
