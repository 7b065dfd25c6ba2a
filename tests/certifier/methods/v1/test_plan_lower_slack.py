"""The lower planner prices the replay slack it records (lower_v1.replay_slack: 2 M E products (trim +
width 2^-F)): at (10^6, 1, sigma 0.709635) that slack at 80 bits is 1.1e-7, the whole margin, and every
lower-v1 grid fell short (tv_lower 0.00099989 for a TV of 0.001000003, worse as h got finer). The planner
now takes 128-bit fixed point there, and keeps 80 bits where the slack is negligible."""
from __future__ import annotations

import dataclasses

import pytest
from flint import fmpq

from certifier.bounds.lower_v1 import replay_slack
from certifier.methods.v1.plan import TRIM, WIDE_SHARE, choose_lower_grid
from certifier.params import parse_decimal


def test_the_slack_decides_the_fixed_point_at_a_million_steps():
    budget = 2.47e-9
    plan = choose_lower_grid(10**6, 1, parse_decimal("sigma", "0.709635"), budget)
    m = plan.method
    narrow = dataclasses.replace(m, fixed_point_bits=80, trim=TRIM)
    assert float(replay_slack(10**6, 1, narrow)) > 10 * budget                          # 80 bits: hopeless
    assert m.fixed_point_bits == 128
    assert plan.detail["replay_slack"] < 1e-6 * budget
    assert plan.predicted_loss <= budget


@pytest.mark.parametrize("M,E,s", [(100, 10, "1.426215"), (250, 20, "1.309428"), (500, 40, "1.310146")])
def test_eighty_bits_stay_where_the_slack_is_negligible(M, E, s):
    plan = choose_lower_grid(M, E, parse_decimal("sigma", s), 1e-8)
    m = plan.method
    assert m.fixed_point_bits == 80
    assert plan.detail["replay_slack"] <= WIDE_SHARE * 1e-8


def test_planned_slack_is_the_recorded_one_without_the_bucket_range():
    plan = choose_lower_grid(10**6, 1, parse_decimal("sigma", "0.709635"), 2.47e-9)
    m = plan.method
    exact = replay_slack(10**6, 1, m) - 2 * 10**6 * (5 * 20 + 4) * (m.b_max - m.b_min) / fmpq(2) ** 128
    assert abs(plan.detail["replay_slack"] - float(exact)) <= 1e-9 * float(exact)


def test_many_steps_times_epochs_take_wide_fixed_point_too():
    """(10^4, 100): at 80 bits the slack is about 4e-8, four times a 1e-8 budget."""
    plan = choose_lower_grid(10**4, 100, parse_decimal("sigma", "4.0"), 1e-8)
    assert plan.method.fixed_point_bits == 128 and plan.predicted_loss <= 1e-8


def test_wide_fixed_point_takes_a_wide_arb_precision():
    """128-bit masses from balls at prec 100: the floors of the balls' lower ends lost ~1e-21 a step, carried
    M times into the epoch (mass 1 - 1e-15 at M = 10^6), and a replay at its own precision lost 100 times
    more (enclosure-mismatch). Wide grids, upper and lower, take prec >= F + 64."""
    from certifier.methods.v1.plan import choose_grid
    sigma = parse_decimal("sigma", "0.709636")
    up = choose_grid(10**6, 1, sigma, 5e-11, allow_moved=True).method
    low = choose_lower_grid(10**6, 1, sigma, 2.47e-9).method
    for m in (up, low):
        assert m.fixed_point_bits == 128 and m.prec >= 128 + 64
    narrow = choose_grid(100, 10, parse_decimal("sigma", "1.426215"), 1e-8).method
    assert narrow.fixed_point_bits == 80 and narrow.prec == 100
