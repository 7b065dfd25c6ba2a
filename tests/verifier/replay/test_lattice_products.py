"""The verifier's lattice products shift out low zero coefficients before multiplying (FLINT does not
skip them): the product must be exactly the plain product, at every corner of where the support sits."""
from __future__ import annotations

import random

import pytest
from flint import fmpz_poly

from verifier.replay.lattice import _low_zeros, _mul


def _poly(rng: random.Random, zeros: int, n: int) -> fmpz_poly:
    cs = [rng.getrandbits(64) for _ in range(n)]
    cs[0] = cs[0] or 1
    return fmpz_poly([0] * zeros + cs)


@pytest.mark.parametrize("zeros", [0, 1, 2, 3, 63, 64, 65, 1000, 4096])
def test_low_zeros_counts_the_zero_coefficients_below_the_support(zeros):
    p = _poly(random.Random(zeros), zeros, 5)
    assert _low_zeros(p) == zeros
    assert _low_zeros(fmpz_poly([0] * zeros + [7])) == zeros     # a single coefficient at the top


@pytest.mark.parametrize("za,zb", [(0, 0), (0, 17), (300, 0), (1, 1), (5000, 123)])
def test_the_shifted_product_is_the_plain_product(za, zb):
    rng = random.Random(za * 7 + zb)
    a, b = _poly(rng, za, 200), _poly(rng, zb, 50)
    assert _mul(a, b) == a * b
    assert _mul(b, a) == b * a
    assert _mul(a, a) == a * a                                   # the square (same object)
