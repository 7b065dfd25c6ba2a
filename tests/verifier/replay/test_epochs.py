"""verifier/replay/epochs.py: the trimming rule stays exact where the mass is beyond a float."""
from flint import fmpq, fmpz_poly

from verifier.replay.epochs import Epochs, _weighted_at_most


def test_weighted_comparison_beyond_a_float():
    big = 2**1100  # units 2^-F with F = 1028: a mass a float cannot hold
    assert _weighted_at_most(1.0, big, big) and _weighted_at_most(0.5, big, big // 2)
    assert not _weighted_at_most(1.0, big + 1, big) and not _weighted_at_most(0.75, big, big // 2)
    assert _weighted_at_most(0.5, 3, 2) and not _weighted_at_most(1.0, 3, 2)  # the float path agrees


def test_trim_low_at_1024_fixed_point_bits():
    F = 1028
    ep = Epochs(F, fmpq(1, 100), 10**6, budget=2**(F - 40), shift=None)
    p = fmpz_poly([2**(F - 41), 2**(F - 42), 2**(F + 30), 2**(F + 31)])  # coefficient sums beyond 2^1024
    off, q = ep.trim_low(0, p)
    # the two lowest coefficients fit the budget together (3 * 2^(F-42) <= 2^(F-40)); the third does not
    assert off == 2 and q == fmpz_poly([2**(F + 30), 2**(F + 31)]) and ep.trim == 3 * 2**(F - 42)
