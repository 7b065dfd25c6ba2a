"""Upper v1 spends at most 1e-7 of its margin, or 2e-7 where the grid at 1e-7 is predicted slower than
WIDE_SECONDS and the wider one is faster (a sigma step leaves a margin of 4e-7 at (10^6, 10^4, 0.1), and the
grid at 6e-8 took 220 of the cell's 332 s)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from certifier.errors import CannotCertifyError
from certifier.methods.search import SAFETY, WIDE_SECONDS, Side, plan_within
from certifier.methods.v1.plan import choose_grid
from certifier.methods.v1.search import UPPER_V1_CEILING, UPPER_V1_WIDE_CEILING, plain_v1
from certifier.params import parse_decimal


def _side(margin, seconds_at, wide=UPPER_V1_WIDE_CEILING):
    def plan(b):
        s = seconds_at(b)
        if s is None:
            raise CannotCertifyError("no grid")
        return SimpleNamespace(predicted_seconds=s, budget=b)
    return Side("upper", margin, SAFETY, UPPER_V1_CEILING, plan, None, None, None, wide_ceiling=wide)


def test_a_slow_grid_at_the_ceiling_gives_way_to_a_faster_wider_one():
    plan, b = plan_within(_side(4e-7, lambda b: 400.0 if b < 1e-7 else 250.0), 0)
    assert b == pytest.approx(SAFETY[0] * UPPER_V1_WIDE_CEILING) and plan.predicted_seconds == 250.0
    plan, b = plan_within(_side(4e-7, lambda b: 1e-5 / b), 2)       # each try its own safety
    assert b == pytest.approx(SAFETY[2] * UPPER_V1_WIDE_CEILING) and plan.predicted_seconds < 1e-5 / (
        SAFETY[2] * UPPER_V1_CEILING)


@pytest.mark.parametrize("margin, seconds_at, wide", [
    (4e-7, lambda b: WIDE_SECONDS * 0.9 if b < 1e-7 else 1.0, UPPER_V1_WIDE_CEILING),  # fast enough already
    (4e-7, lambda b: 400.0 if b < 1e-7 else 500.0, UPPER_V1_WIDE_CEILING),             # the wider one is slower
    (4e-7, lambda b: 400.0 if b < 1e-7 else None, UPPER_V1_WIDE_CEILING),              # no wider grid
    (1.5e-7, lambda b: 400.0 if b <= 0.9e-7 else 1.0, UPPER_V1_WIDE_CEILING),          # margin below the ceiling
    (4e-7, lambda b: 400.0 if b < 1e-7 else 1.0, None),                                # a kind: no wide ceiling
])
def test_the_ceiling_stays_where_the_wider_one_buys_nothing(margin, seconds_at, wide):
    plan, b = plan_within(_side(margin, seconds_at, wide), 0)
    assert b == pytest.approx(SAFETY[0] * min(margin, UPPER_V1_CEILING))


def test_at_the_measured_cell_the_planner_predicts_the_wider_grid_faster():
    M, E, s = 10**6, 10**4, parse_decimal("sigma", "0.70886")
    choose = lambda b: choose_grid(M, E, s, b, allow_moved=True)  # noqa: E731
    side = Side("upper", 4.0e-7, SAFETY, UPPER_V1_CEILING, lambda b: plain_v1(choose, True, M, E, s, b),
                None, None, None, wide_ceiling=UPPER_V1_WIDE_CEILING)
    plan, b = plan_within(side, 0)
    narrow = plain_v1(choose, True, M, E, s, SAFETY[0] * UPPER_V1_CEILING)
    assert narrow.predicted_seconds > WIDE_SECONDS
    assert b > SAFETY[0] * UPPER_V1_CEILING and plan.predicted_seconds < 0.8 * narrow.predicted_seconds
    assert plan.predicted_loss <= b
