"""certifier.numerics.big_step_tails: the far tails of one to three epochs (delta near 1e-12) on the big-step routes
where the primary route keeps only a few digits, and the exact sigma those tails make answerable."""
import math

import pytest

from certifier.errors import NumericsUnreliableError
from certifier.numerics import few_epochs_jump, few_steps_tails, one_jump
from certifier.numerics.big_step_tails import MANY_STEPS, SWITCH, BigStepTails
from certifier.numerics.pair_routes import primary
from certifier.numerics.profile import Route
from certifier.numerics.targets import exact_sigma_dp, route_at


def _without_tails(route: Route) -> Route:
    return Route(route.name, route.main, route.variants, route.u_max, route.factors, route.second_tails)


@pytest.mark.parametrize("steps,sigma,eps", [(1000, 0.839482, 2.0), (10**5, 0.504145, 4.0)])
def test_the_primary_route_takes_the_one_big_step_value_where_its_own_estimate_is_too_wide(steps, sigma, eps):
    """At delta about 1e-12 the primary's tilted line / direct sum is not within SWITCH of delta; with the one-epoch
    tails the route's estimate is at most 1e-6 of delta and its value is one_jump's (within that estimate)."""
    route = primary(steps, 1, sigma)
    assert route.big_step is not None
    own = _without_tails(route).delta_qp(eps)
    assert own.error > SWITCH * own.value
    got = route.delta_qp(eps)
    ref = one_jump.delta_qp(steps, sigma, eps)
    assert got.error <= 1e-6 * got.value
    assert abs(got.value - ref.value) <= ref.error + 1e-15 * ref.value
    assert abs(got.value - own.value) <= own.error          # the primary's own estimate holds the better value


def test_few_steps_and_levels_inside_the_bulk_are_not_served():
    """Below MANY_STEPS the big step is not alone (two epochs of few steps have no far-tail object; one epoch takes
    the few-steps lattice, tests/certifier/numerics/test_few_steps_tails.py); a level inside the bulk of L_M is
    refused before any transform; delta_{P||Q} is [0, the Chernoff bound]."""
    assert primary(10, 2, 2.41299).big_step is None
    tails = BigStepTails(MANY_STEPS, 1, 1.2)
    pq = tails.delta("pq", 2.0)                                # delta_{P||Q}: the Chernoff bound, as an interval
    assert pq.value == pq.error == 0.5 * one_jump.delta_pq_bound(MANY_STEPS, 1.2, 2.0) < 1e-20
    assert BigStepTails(MANY_STEPS - 1, 2, 1.2).delta("pq", 2.0) is None
    few = BigStepTails(MANY_STEPS - 1, 1, 1.2).delta("pq", 2.0)   # one epoch: the lattice's value, not a bound
    assert few is not None and few.value < 1e-30 and few.error <= few_steps_tails.TWO_BIG
    assert not one_jump.beyond_bulk(100, 6.1942, 0.1)         # eps = 0.1 at sigma 6: the level is in the bulk
    assert BigStepTails(100, 1, 6.1942).delta("qp", 0.1) is None
    assert one_jump.beyond_bulk(100, 1.1105, 2.0)


def test_an_epoch_at_delta_1e12_is_answered_and_the_answer_is_decided_by_the_one_big_step_route():
    """(3000, 1, eps 3, delta 1e-12) was refused ("not reliable", estimate 1 - 15 % of delta); now the least grid sigma
    with delta <= 1e-12, checked on one_jump alone: its value meets the target, one step less misses it, both decided
    beyond the estimates."""
    sigma = float(exact_sigma_dp(3000, 1, "3", "1e-12"))
    at, below = one_jump.delta_qp(3000, sigma, 3.0), one_jump.delta_qp(3000, sigma - 1e-6, 3.0)
    assert at.value + at.error <= 1e-12 < below.value - below.error
    first, _ = route_at(3000, 1, sigma, check=False)
    pq = first.delta_pq(3.0)
    assert pq.value + pq.error < 1e-3 * at.value             # the max of the two directions is the Q||P side


@pytest.mark.parametrize("steps,sigma,eps", [(10**4, 0.690616, 2.0), (10**6, 0.54867, 1.0)])
def test_two_epochs_take_the_two_epoch_big_step_value_where_the_tilted_line_is_too_wide(steps, sigma, eps):
    """E = 2, many steps, delta about 1e-12: the saddle point lies beyond c = 2.9 and the route's own estimate is
    10 % - 10^6 of delta; with the big-step tails it is within SWITCH, its value few_epochs_jump's, and the P||Q
    side is decided by its Chernoff bound, far below."""
    route = primary(steps, 2, sigma)
    assert route.big_step is not None and route.big_step.epochs == 2
    own = _without_tails(route).delta_qp(eps)
    assert own.error > SWITCH * max(own.value, 1e-12)
    got = route.delta_qp(eps)
    ref = few_epochs_jump.delta_qp(steps, sigma, 2, eps)
    assert 1e-13 < got.value < 1e-11 and got.error <= SWITCH * got.value
    assert abs(got.value - ref.value) <= 1e-12 * ref.value
    both = route.delta(eps)
    assert both.value == got.value and both.error <= got.error * (1.0 + 1e-9)


def test_two_epochs_at_delta_1e12_are_answered_within_the_estimate():
    """(10^4, 2, eps 2, delta 1e-12) was refused ("not reliable"); now the exact sigma answers, and on
    few_epochs_jump alone its value meets the target within the estimate while 0.2 % less sigma misses it."""
    sigma = float(exact_sigma_dp(10**4, 2, "2", "1e-12"))
    at, below = (few_epochs_jump.delta_qp(10**4, s, 2, 2.0) for s in (sigma, 0.998 * sigma))
    assert at.value - at.error <= 1e-12 < below.value - below.error


def test_the_refusal_names_a_target_the_numerics_resolve():
    """Where the routes' estimates stay wide (300 epochs of 10^6 steps at eps 0.5, delta 1e-12: no single big step
    carries the tail), the search's refusal says which target size the numerics resolve there. (One epoch of ten
    steps, then ten epochs of 10^6 steps were the examples until the few-steps lattice and the big step in any of
    up to 10^4 epochs answered them.)"""
    with pytest.raises(NumericsUnreliableError) as err:
        exact_sigma_dp(10**6, 300, "0.5", "1e-12")
    text = str(err.value)
    assert "is not reliable" in text and "or more is resolved here" in text
    named = float(text.split("a target of about ")[1].split()[0])
    assert 1e-12 < named < 1e-9 and math.isfinite(named)


def test_far_from_its_regime_the_route_declines_quietly():
    """Ten epochs of 100 steps at sigma 180 (a small-eps search passes there): the big step's transforms overflow;
    the route answers None for delta_{Q||P} without a RuntimeWarning on the console (it printed eight), and at
    (10^6, 10, sigma 0.5588, eps 1) it answers with an estimate below 0.5 % of the value."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert BigStepTails(100, 10, 180.0).delta("qp", 0.01) is None
        far = BigStepTails(10**6, 10, 0.558792).delta("qp", 1.0)
    assert 9e-13 < far.value < 1.1e-12 and far.error < 5e-3 * far.value
