"""The automatic v1 planners never propose a grid the method refuses: at the cells where the fastest
candidate's cap/h exceeded the method's limit (M = 10^6 and 10^7 at small sigma), the planner takes the
next candidate within the limits, or says "no grid" (CannotCertifyError, so the search goes on to the band
or method v2), never the method's "grid too fine" ParameterError."""
from __future__ import annotations

import pytest

from certifier.bounds.upper_v1 import BAND_POINTS, CAP_POINTS
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.errors import CannotCertifyError
from certifier.methods.auto import planned_upper
from certifier.methods.v1.plan import choose_grid, choose_lower_grid
from certifier.methods.v1.two_scale_plan import with_two_scale
from certifier.params import parse_decimal

# (M, E, exact sigma): cells whose first plan was refused as "grid too fine"
CELLS = [(10**6, 1, "0.709636"), (10**7, 1, "0.489948"), (10**6, 10**4, "0.708859"),
         (10**7, 10**4, "0.490195"), (10**4, 1000, "0.718165")]
BUDGETS = (1e-9, 1e-10, 3e-11, 1e-11)


def _within_limits(method) -> None:
    lo = method.band_low or 0
    assert (method.cap - lo) / method.h <= CAP_POINTS
    assert (method.tail_start - lo) / method.h <= BAND_POINTS


@pytest.mark.parametrize("M,E,s", CELLS)
@pytest.mark.parametrize("two_scale", [False, True])
def test_planner_stays_within_the_method_limits(M, E, s, two_scale):
    sigma = parse_decimal("sigma", s)
    choose = lambda b: choose_grid(M, E, sigma, b, allow_moved=True)  # noqa: E731
    planned = 0
    for b in BUDGETS:
        try:
            plan = with_two_scale(choose, M, E, sigma, b) if two_scale else choose(b)
        except CannotCertifyError:
            continue
        plan.method.validate(M)            # raises ParameterError on a grid beyond the limits
        _within_limits(plan.method)
        assert plan.predicted_loss <= b
        planned += 1
    if M == 10**6 and E == 1:               # here a grid within the limits exists at every budget
        assert planned == len(BUDGETS)


def test_fastest_candidate_beyond_the_limit_gives_way_to_the_next():
    """At (10^6, 1, 0.709636) and budget 3e-11 the fastest candidate had cap/h = 3.35e7 (> 3e7); the plan
    is now the fastest one within the limit, still a fine grid (cap/h above 10^7)."""
    plan = choose_grid(10**6, 1, parse_decimal("sigma", "0.709636"), 3e-11, allow_moved=True)
    plan.method.validate(10**6)
    assert 10**7 < plan.method.cap / plan.method.h <= CAP_POINTS


@pytest.mark.parametrize("M,E,s", CELLS)
def test_lower_planner_and_admission_say_no_grid_not_too_fine(M, E, s):
    sigma = parse_decimal("sigma", s)
    for b in BUDGETS:
        try:
            plan = choose_lower_grid(M, E, sigma, b)
        except CannotCertifyError:
            continue
        plan.method.validate(M)
    claim = Claim(RANDOM_ALLOCATION, M, E, sigma, parse_decimal("lambda", "0.1"))
    assert planned_upper(claim, sigma, 5e-8).predicted_seconds > 0      # v1, band or v2: a plan, no error


def test_lower_planner_counts_the_cells_of_its_map_against_the_step_i_limit(monkeypatch):
    """The lower map's cells of (a) run to its cap, as a v1 step (i)'s to tail_start, so the method refuses more
    than BAND_POINTS of them; the planner said "no grid" only above CAP_POINTS, so a cap between the two limits
    gave a plan the run then refused with "grid too fine"."""
    import certifier.methods.v1.plan as g1
    from certifier.params import ParameterError
    sigma = parse_decimal("sigma", "1.426215")
    h = float(choose_lower_grid(100, 10, sigma, 1e-8).method.h)
    monkeypatch.setattr(g1, "lower_cap", lambda mod, b, factor=g1.LOWER_CAP_FACTOR: 2 * BAND_POINTS * h)
    with pytest.raises(CannotCertifyError, match="cells"):
        choose_lower_grid(100, 10, sigma, 1e-8)
    plan = g1.choose_grid(100, 10, sigma, 1e-8)   # the same grid with a cap of 2e7 cells: the method refuses it
    from certifier.bounds.lower_v1 import LowerV1
    with pytest.raises(ParameterError, match="too fine"):
        LowerV1.from_v1(plan.method, plan.method.h * 2 * BAND_POINTS).validate(100)
