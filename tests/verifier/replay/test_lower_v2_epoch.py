"""verifier/replay/lower_v2.py: step (b)'s binary powering (epoch_lower), which drops each operand as soon as
no later sum reads it, forms the same P and Q sides as the loop it replaced (kept here as the reference), on
one lattice and with a lattice per level (refined operands), and consumes step (a)'s images."""
from __future__ import annotations

import random

import pytest
from flint import fmpz_poly

from verifier.replay.lattice import Lattice, Tally, place, refine
from verifier.replay.lower_v2 import epoch_lower, mix, mix_consuming

N_BITS, T, F = 4, 5, 40


def _reference(B, BQ, M, nb, budget):
    """The loop of replay_lower_v2 before epoch_lower (every operand alive to the end)."""
    A = AQ = None
    done, at, lats = 0, nb[0], {}
    for i in range(M.bit_length()):
        for other in lats.values():
            if other.n != nb[i]:
                other.memo = []
        lat = lats.setdefault(nb[i], Lattice(nb[i], T, F, False, budget, Tally()))
        if i:
            B0, BQ0 = refine(B, nb[i] - nb[i - 1]), refine(BQ, nb[i] - nb[i - 1])
            BQ, B = lat.oplus(BQ0, B0), lat.oplus(B0, B0)
            lat.forget(B0, BQ0)
        if M >> i & 1:
            if A is None:
                A, AQ, done = B, BQ, 1 << i
            else:
                A0, AQ0 = refine(A, nb[i] - at), refine(AQ, nb[i] - at)
                AQ = mix(lat.oplus(AQ0, B), done, lat.oplus(A0, BQ), 1 << i)
                A, done = lat.oplus(A0, B), done + (1 << i)
                lat.forget(A0, AQ0)
            at = nb[i]
    return A, AQ


def _images(seed, nb0):
    rng = random.Random(seed)
    pts = sorted(rng.sample(range(1, (1 << nb0) << (T - 1)), 40))
    p = [(1 << F) // 40 - rng.getrandbits(F - 8) for _ in pts]  # probability masses (units 2^-F), floored
    q = [(1 << F) // 40 - rng.getrandbits(F - 8) for _ in pts]
    return pts, p, q


def _lattices(T_, F_, budget):
    lats = {}

    def lattice(b):
        for other in lats.values():
            if other.n != b:
                other.memo = []
        return lats.setdefault(b, Lattice(b, T_, F_, False, budget, Tally()))
    return lattice


@pytest.mark.parametrize("M", [1, 2, 3, 5, 6, 7, 10, 13])
@pytest.mark.parametrize("coarse", [False, True])
def test_epoch_lower_forms_the_reference_sums(M, coarse):
    nb = [N_BITS] * M.bit_length()
    if coarse:  # lower levels on coarser lattices (§10): operands refined onto the next level
        nb = [max(N_BITS - 2 + min(i, 2), 1) for i in range(M.bit_length())]
    budget = 1 << 12
    pts, p, q = _images(M, nb[0])
    ref = _reference(*place(pts, nb[0], T, p, q), M, nb, budget)
    placed = place(pts, nb[0], T, p, q)
    got = epoch_lower(placed, M, _lattices(T, F, budget), nb)
    assert placed == []
    assert got == ref
    assert any(x is not None and not x.is_zero() for x in got[1])


def test_mix_consuming_is_mix_and_empties_its_operands():
    X = [None, fmpz_poly([3, 5]), fmpz_poly([7]), None]
    Y = [fmpz_poly([1]), None, fmpz_poly([2, 9]), None]
    want = mix(X, 3, Y, 5)
    assert mix_consuming(X, 3, Y, 5) == want
    assert X == [None] * 4 and Y == [None] * 4
