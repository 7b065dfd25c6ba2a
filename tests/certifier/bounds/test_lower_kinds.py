"""The data-processing lower bounds of the dp and tpr kinds (certifier.bounds.lower_kinds).

Hand-made pmfs (exact answers by hand, the corners: deleted mass, a cell with no P mass, a budget
below zero), the M = 1 closed forms bracketed by the two sides, and the exact numerics of
certifier.numerics.targets above every lower value and below every upper value.
"""
from __future__ import annotations

import math

import pytest
from flint import fmpq
from scipy.stats import norm

from certifier import methods as mt
from certifier.bounds.lower_kinds import delta_pq_lower, delta_qp_lower, dp_lower, exp_upper, tpr_lower
from certifier.bounds.lower_v1 import replay_slack
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.methods.v1.plan import choose_grid, choose_lower_grid
from certifier.numerics.targets import exact_privacy_scheme
from certifier.targets import kind

F = 4                                   # units 1/16
U, W = [8, 8, 0], [2, 6, 8]             # P: 1/2, 1/2, 0; Q: 1/8, 3/8, 1/2 (nothing deleted)


def test_exp_upper_is_a_rational_just_above_e_to_the_eps():
    for eps in (fmpq(0), fmpq(1, 2), fmpq(1), fmpq(7)):
        c = exp_upper(eps)
        assert isinstance(c, fmpq) and float(c) >= math.exp(float(eps)) * (1 - 1e-15)
        assert float(c) - math.exp(float(eps)) < 1e-12 * math.exp(float(eps))
    assert exp_upper(fmpq(0)) == 1


def test_hockey_stick_at_zero_is_the_tv_lower_bound_and_decreases():
    assert dp_lower((U, W, F), fmpq(0)) == fmpq(1, 2)            # TV of the two pmfs
    assert delta_qp_lower((U, W, F), fmpq(0)) == fmpq(1, 2)      # A = {2}
    assert delta_pq_lower((U, W, F), fmpq(0)) == fmpq(1, 2)      # A' = {0, 1}
    # eps = ln 2: Q||P: A = {2} gives 1/2; P||Q: A' = {0}: 1/2 - 2/8 = 1/4 (rational e^eps just above 2)
    ln2 = fmpq(693147, 10**6)
    assert delta_qp_lower((U, W, F), ln2) == fmpq(1, 2)
    assert delta_pq_lower((U, W, F), ln2) == (8 - exp_upper(ln2) * 2) / 16
    assert dp_lower((U, W, F), ln2) == fmpq(1, 2)
    assert delta_pq_lower((U, W, F), fmpq(2)) == 0 and delta_qp_lower((U, W, F), fmpq(2)) == fmpq(1, 2)


def test_deleted_mass_is_charged_at_e_to_the_eps():
    Ud = [8, 6, 0]                                              # 2/16 of P deleted
    c = exp_upper(fmpq(1))
    assert delta_qp_lower((Ud, W, F), fmpq(1)) == (8 - c * 2) / 16   # A = {2}: W = 8, U(A) + deleted = 0 + 2
    Wd = [2, 6, 6]                                              # 2/16 of Q deleted
    assert delta_pq_lower((U, Wd, F), fmpq(0)) == fmpq(8 - 2, 16)


def test_tpr_lower_neyman_pearson_with_fractional_last_cell():
    assert tpr_lower((U, W, F), fmpq(1, 2)) == fmpq(14, 16)     # the U = 0 cell free, then cell 1 whole
    assert tpr_lower((U, W, F), fmpq(1, 4)) == fmpq(8 + 3, 16)  # cell 1 half
    assert tpr_lower((U, W, F), fmpq(1)) == 1
    Ud = [8, 6, 0]                                              # deleted 2/16 shrinks the budget
    assert tpr_lower((Ud, W, F), fmpq(1, 4)) == fmpq(8 + 2, 16)
    assert tpr_lower((Ud, W, F), fmpq(1, 16)) == 0              # budget 1/16 - 2/16 < 0: no test is valid


def _two_sides(M, E, sigma, budget=1e-4):
    """(upper result with its method, lower result) on grids of the given predicted loss."""
    claim = Claim(RANDOM_ALLOCATION, M, E, sigma, fmpq(1, 2))
    up = choose_grid(M, E, sigma, budget, prec=100).method
    r = mt.UPPER_V1.run(claim, sigma, up)
    r.method = up
    low = mt.LOWER_V1.run(claim, sigma, choose_lower_grid(M, E, sigma, budget, prec=100).method)
    return r, low


@pytest.mark.parametrize("eps", ["0.5", "1", "2"])
def test_m1_closed_form_delta_is_bracketed(eps):
    r, low = _two_sides(1, 16, fmpq(4))                      # mu = sqrt(E)/sigma = 1
    mu, e = 1.0, float(eps)
    exact = norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)
    upper = float(kind("dp", {"epsilon": eps}).upper_bound(r))
    lower = float(kind("dp", {"epsilon": eps}, fmpq(1, 10)).lower_value(low))
    assert lower <= exact <= upper
    assert upper - lower < 1e-3                               # and both sides near it on this grid


@pytest.mark.parametrize("alpha", ["0.001", "0.01", "0.1"])
def test_m1_closed_form_tpr_is_bracketed(alpha):
    r, low = _two_sides(1, 16, fmpq(4))
    a = float(alpha)
    exact = 1 - norm.cdf(norm.ppf(1 - a) - 1.0)              # 1 - T(alpha), T = Phi(Phi^-1(1 - alpha) - mu)
    k = kind("tpr", {"fpr": alpha}, fmpq(1, 10))
    assert float(k.lower_value(low)) <= exact <= float(k.upper_bound(r))
    assert float(k.upper_bound(r)) - float(k.lower_value(low)) < 2e-3


def test_lower_and_upper_bracket_the_exact_numerics_at_m10():
    sigma = fmpq(3, 2)
    r, low = _two_sides(10, 5, sigma)
    p = exact_privacy_scheme(10, 5, 1.5, epsilons=(0.0, 1.0), fprs=(0.01,))
    for eps in ("0", "1"):
        x = p.delta[float(eps)]
        k = kind("dp", {"epsilon": eps}, fmpq(1, 10))
        assert float(k.lower_value(low)) <= x.value + x.error
        assert float(k.upper_bound(r)) >= x.value - x.error
    x = p.tpr[0.01]
    k = kind("tpr", {"fpr": "0.01"}, fmpq(1, 10))
    assert float(k.lower_value(low)) <= x.value + x.error <= float(k.upper_bound(r)) + 2 * x.error
    assert dp_lower(low.pmfs, fmpq(0)) >= low.exact              # at eps = 0 the set {W > U} gives the TV bound


@pytest.mark.parametrize("name,param", [("dp", {"epsilon": "1"}), ("tpr", {"fpr": "0.01"})])
def test_a_kinds_lower_value_holds_for_every_replay_within_the_slack(name, param):
    """Another correct replay floors by its own rule: its pmfs may hold up to the recorded slack less mass
    (docs/verifier.md, "What is accepted exactly"). The TV lower bound takes the slack off; a kind's value
    must too, or a replay whose P-side floors fall outside the test set lands below the recorded value."""
    M, E, sigma = 100, 10, fmpq(7, 5)
    k = kind(name, param, fmpq(1, 10))
    claim = Claim(RANDOM_ALLOCATION, M, E, sigma, fmpq(1, 10))
    L = mt.LOWER_V1.run(claim, sigma, choose_lower_grid(M, E, sigma, 1e-8).method)
    slack = replay_slack(M, E, L.method)                 # what the TV bound takes off
    assert slack > 0
    U0, W0, F0 = L.pmfs
    value = (lambda pm: dp_lower(pm, fmpq(1))) if name == "dp" else (lambda pm: tpr_lower(pm, fmpq(1, 100)))
    recorded = k.lower_value(L)
    assert recorded < value(L.pmfs)
    for outside in (True, False):                        # the slack spent on P-masses outside / inside A
        U, left = list(U0), int(slack * (1 << F0))
        for i in range(len(U)):
            if left and (W0[i] <= U0[i]) == outside:
                take = min(U[i], left)
                U[i], left = U[i] - take, left - take
        assert value((U, W0, F0)) >= recorded            # what that replay reaches
