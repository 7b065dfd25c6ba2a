"""certifier.numerics.negative_moments: the Chernoff bound on the lower tail of Lambda (delta_{P||Q}) against the
M = 1 closed form, the tilted line at two epochs and one_jump's bound at one."""
import math

import pytest
from scipy.special import log_ndtr

from certifier.numerics import negative_moments, one_jump
from certifier.numerics.saddle import Factor, tail_delta


@pytest.mark.parametrize("epochs", [1, 2, 3])
@pytest.mark.parametrize("sigma,eps", [(0.5, 10.0), (1.0, 4.0), (2.0, 1.0), (2.0, 10.0), (10.0, 1.0), (10.0, 4.0)])
def test_chernoff_bound_above_the_m1_closed_form(epochs, sigma, eps):
    """M = 1: ln Lambda ~ N(-mu^2/2, mu^2), mu^2 = E / sigma^2, so P(Lambda < e^{-eps}) = Phi((mu^2/2 - eps) / mu):
    the bound lies above it, and within the Chernoff gap (its exponent at most ln(mu^2 ...) off: 5 + 10 %)."""
    mu = math.sqrt(epochs) / sigma
    exact = float(log_ndtr((0.5 * mu * mu - eps) / mu))
    got = negative_moments.log_pq_bound(1, sigma, epochs, eps)
    assert got >= exact
    assert got <= 0.9 * exact + 5.0


@pytest.mark.parametrize("steps,sigma,eps", [(100, 2.0, 0.3), (1000, 1.2, 0.2)])
def test_chernoff_bound_above_the_tilted_line(steps, sigma, eps):
    """Two epochs where the tilted line resolves delta_{P||Q} (to below 1e-3 of itself): the bound lies above it."""
    line = tail_delta([Factor(steps, 2, sigma)], eps, "pq")
    assert line.error < 1e-3 * line.value
    assert negative_moments.delta_pq_bound(steps, sigma, 2, eps) >= line.value + line.error


def test_one_epoch_bound_agrees_with_one_jump():
    """At E = 1 both Chernoff bounds (on the negative moments here, on the Laplace transform in one_jump) are bounds
    on the same probability: each lies within the other's Chernoff gap (a few units of the exponent)."""
    here = negative_moments.log_pq_bound(100, 1.2, 1, 2.0)
    there = math.log(one_jump.delta_pq_bound(100, 1.2, 2.0))
    assert abs(here - there) < 0.1 * abs(there) + 5.0
