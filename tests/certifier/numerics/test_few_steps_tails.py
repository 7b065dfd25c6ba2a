"""certifier.numerics.few_steps_tails: one epoch of a few steps in the far tail, against the direct convolution of
helpers (no split level, no closed-form big step), and the exact sigma it gives at delta = 1e-12."""
import pytest
from helpers import one_epoch_delta_by_convolution

from certifier.errors import NumericsUnreliableError
from certifier.numerics import few_steps_tails
from certifier.numerics.big_step_tails import FEW_STEPS
from certifier.numerics.pair_routes import big_step_tails, primary
from certifier.numerics.targets import exact_sigma_dp


def _reference(steps: int, sigma: float, eps: float, side: str) -> tuple[float, float]:
    """(the lattice 0.0025's value, Richardson's correction from 0.005) of the independent convolution."""
    coarse, fine = (one_epoch_delta_by_convolution(steps, sigma, eps, h, side) for h in (0.005, 0.0025))
    return fine + (fine - coarse) / 3.0, abs(fine - coarse)


@pytest.mark.parametrize("steps,sigma,eps,side", [(10, 2.41299, 1.0, "qp"), (5, 3.12904, 1.0, "pq"),
                                                  (3, 2.28806, 2.0, "qp")])
def test_delta_against_the_direct_convolution(steps, sigma, eps, side):
    """delta 8e-14 - 1e-12: the lattice's value lies within its estimate (and the reference's own h-change) of the
    reference, and its estimate is below 1e-4 of delta (the moment line's was 14 %, the density's 0.6 %). At larger
    M e^eps the reference's lattice 0.0025 is slow: (10, sigma 1.67321, eps 2) is checked in test_profile.py."""
    value, err = few_steps_tails.delta(steps, sigma, eps, side)
    ref, ref_err = _reference(steps, sigma, eps, side)
    assert 5e-14 < ref < 2e-12
    assert err < 1e-4 * value
    assert abs(value - ref) <= err + ref_err


def test_the_exact_sigma_is_the_least_grid_point_by_the_reference():
    """(10, 1, eps 1, delta 1e-12) was refused (the density's round-off was the estimate); it answers 2.413007, and the
    independent convolution puts delta(1) at that sigma below 1e-12 and one grid step less above it."""
    assert exact_sigma_dp(10, 1, "1", "1e-12") == "2.413007"
    meets, _ = _reference(10, 2.413007, 1.0, "qp")
    misses, _ = _reference(10, 2.413006, 1.0, "qp")
    assert meets < 1e-12 < misses


def test_the_split_and_the_cut_are_below_the_estimate():
    """The N >= 2 part and the sums' cut are bounded (TWO_BIG each): a split level and a cut 100 times further out give
    the same value within the two estimates."""
    value, err = few_steps_tails.delta(10, 1.1392, 4.0, "qp")
    saved = few_steps_tails.TWO_BIG
    try:
        few_steps_tails.TWO_BIG = saved / 100.0
        wider, wider_err = few_steps_tails.delta(10, 1.1392, 4.0, "qp")
    finally:
        few_steps_tails.TWO_BIG = saved
    assert 9e-13 < value < 1.1e-12 and err < 1e-5 * value
    assert abs(value - wider) <= err + wider_err
    z = few_steps_tails.split_level(10, 1.0 / 1.1392)
    assert few_steps_tails._two_big(10, 1.0 / 1.1392, z) <= few_steps_tails.TWO_BIG


def test_refuses_where_it_does_not_serve():
    with pytest.raises(NumericsUnreliableError):
        few_steps_tails.delta(2, 2.0, 1.0, "qp")            # M = 2: its one integral
    with pytest.raises(NumericsUnreliableError):
        few_steps_tails.delta(10**4, 0.6, 1.0, "qp")        # the lattice would be far too long
    assert few_steps_tails.points(10**4, 0.6, 1.0) > few_steps_tails.MAX_POINTS


def test_the_primary_takes_the_lattice_as_its_last_resort():
    """At (10, 1, sigma 1.1392, eps 4) the tilted line's value (the density's direct sum, the better of its two)
    carries about 7 % of delta; the primary route's tail resort (big_step_tails: one epoch of 3 ... 29 steps)
    answers from the lattice. Two steps keep their one integral; from 30 steps the big step serves."""
    route = primary(10, 1, 1.1392)
    got = route.delta_qp(4.0, 1e-12)
    value, err = few_steps_tails.delta(10, 1.1392, 4.0, "qp")
    assert (got.value, got.error) == (value, err) and err <= 1e-5 * value
    assert big_step_tails(2, 1, 2.0) is None and big_step_tails(10, 2, 2.0) is None
    assert big_step_tails(FEW_STEPS, 1, 2.0) is not None and FEW_STEPS == 3
