"""Certified hockey-stick divergences, eps(delta) and TPR at FPR from the b_k (certifier/bounds/privacy.py)."""
from __future__ import annotations

import math

import pytest
from flint import arb
from scipy.optimize import brentq
from scipy.stats import norm

from certifier.bounds.privacy import ALPHAS, DELTAS, Masses, privacy_rows
from certifier.bounds.upper_v1 import rounding_bound
from certifier.methods.v1.plan import choose_grid
from certifier.numerics.tradeoff import epsilon_at_delta, optimal_tpr, pair_density
from certifier.params import parse_decimal

Q = lambda s: parse_decimal("x", s)  # noqa: E731


def _rows(M, E, sigma, budget=3e-8):
    plan = choose_grid(M, E, Q(sigma), budget)
    r = rounding_bound(M, E, Q(sigma), plan.method)
    return r, plan, privacy_rows(r.b, plan.method.eta, plan.method.fixed_point_bits)


def test_keys_are_python_float_strings():
    assert DELTAS == ("1e-05", "1e-06") and ALPHAS == ("0.1", "0.01", "0.001")
    for k in DELTAS + ALPHAS:
        assert str(float(k)) == k


@pytest.mark.parametrize("M,E,sigma", [(10, 5, "2.889659"), (20, 3, "2.5")])
def test_certified_eps_and_tpr_bound_the_numerical_ones_tightly(M, E, sigma):
    r, plan, (priv, tpr) = _rows(M, E, sigma)
    d = pair_density(M, E, float(sigma))
    grid = float(priv["epsilon_grid"])
    for k, row in priv["epsilon_at_delta"].items():
        num = epsilon_at_delta(d, float(k))
        eps = float(row["epsilon"])
        assert eps >= num - 1e-9                        # certified eps is an upper bound
        assert eps <= num * 1.01 + grid                 # within 1 %
        assert arb(row["delta_qp"]).upper() <= arb(k) and arb(row["delta_pq"]).upper() <= arb(k)
    for a, row in tpr.items():
        num = optimal_tpr(d, float(a))
        t = float(row["tpr"])
        assert t >= num - 1e-12                         # certified TPR bounds the optimal test's TPR
        assert t <= 1.1 * num                           # within 10 %


def test_recorded_eps_is_the_smallest_certified_grid_point():
    r, plan, (priv, _) = _rows(10, 5, "2.889659")
    ms = Masses(r.b, plan.method.eta, plan.method.fixed_point_bits)
    g = Q(priv["epsilon_grid"])
    for k, row in priv["epsilon_at_delta"].items():
        e, delta = Q(row["epsilon"]), Q(k)
        below = e - g
        assert max(ms.dqp_ball(below).upper(), ms.dpq_ball(below).upper()) > arb(k)
        assert ms.dqp_ball(e).upper() <= arb(k) and ms.dpq_ball(e).upper() <= arb(k)
        assert e >= 0 and (e / g).q == 1 and delta in (Q("1e-5"), Q("1e-6"))   # on the grid, a recorded delta


def test_balls_are_upper_bounds_that_decrease_in_eps():
    r, plan, _ = _rows(10, 5, "2.889659")
    ms = Masses(r.b, plan.method.eta, plan.method.fixed_point_bits)
    d = pair_density(10, 5, 2.889659)
    from certifier.numerics.tradeoff import hockey_stick
    prev = (2.0, 2.0)
    for e in ("0", "0.25", "0.5", "1", "1.5"):
        a, b = ms.dqp_ball(Q(e)), ms.dpq_ball(Q(e))
        qp, pq = hockey_stick(d, float(e))
        assert a.upper() >= qp - 1e-12 and b.upper() >= pq - 1e-12
        assert float(a.upper()) - qp <= 1e-7 and float(b.upper()) - pq <= 1e-7
        assert float(a.upper()) <= prev[0] and float(b.upper()) <= prev[1]
        prev = (float(a.upper()), float(b.upper()))


def test_m1_gaussian_closed_forms():
    """M = 1: Lambda is Gaussian with mu = sqrt(E)/sigma: delta(eps) and the tradeoff curve are closed forms."""
    E, sigma = 4, 4.0
    mu = math.sqrt(E) / sigma
    r, plan, (priv, tpr) = _rows(1, E, "4", 2e-8)
    delta_of = lambda eps: norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)  # noqa: E731
    for k, row in priv["epsilon_at_delta"].items():
        exact = brentq(lambda e, k=k: delta_of(e) - float(k), 0.0, 20.0, xtol=1e-12)
        eps = float(row["epsilon"])
        assert exact - 1e-9 <= eps <= exact * 1.01 + 1e-4
    for a, row in tpr.items():
        exact = norm.cdf(mu - norm.ppf(1 - float(a)))
        assert exact - 1e-12 <= float(row["tpr"]) <= 1.1 * exact
