"""certifier.numerics.few_epochs_jump: the far upper tail of two and three epochs with one big step in any epoch,
against a conditional Monte Carlo."""
import math

import numpy as np
import pytest
from scipy.special import erfcx

from certifier.numerics import few_epochs_jump


def _one_big_step_mc(steps: int, epochs: int, sigma: float, eps: float, samples: int,
                     seed: int = 7) -> tuple[float, float]:
    """EM times the mean over samples of E[(L_1 ... L_E - a)_+ | every step but the first] (the first step's
    E (Y - c)_+ = c phi(z_c) (R(z_c - t) - R(z_c)) in closed form, R the Mills ratio, the other EM - 1 steps
    drawn): with no other step big in any sample (a big one has probability about delta), this is the sum over
    the EM steps of the term in which that step alone is big, as few_epochs_jump's sums are; with its standard
    error."""
    t, a = 1.0 / sigma, math.exp(eps)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(samples // 500):
        y = np.exp(t * rng.standard_normal((500, epochs * steps - 1)) - 0.5 * t * t)
        rest = y[:, :steps - 1].sum(axis=1)
        second = np.prod(y[:, steps - 1:].reshape(500, epochs - 1, steps).sum(axis=2) / steps, axis=1)
        c = steps * a / second - rest
        z = (np.log(c) + 0.5 * t * t) / t
        mills = math.sqrt(math.pi / 2.0) * (erfcx((z - t) / math.sqrt(2.0)) - erfcx(z / math.sqrt(2.0)))
        out.append((second / steps) * c * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi) * mills)
    g = epochs * steps * np.concatenate(out)
    return float(g.mean()), float(g.std() / math.sqrt(g.size))


@pytest.mark.parametrize("steps,epochs,sigma,eps,samples", [
    (1000, 2, 0.850932, 2.0, 40000), (3000, 2, 0.72, 3.0, 12000), (1000, 3, 0.858107, 2.0, 30000)])
def test_one_big_step_against_conditional_monte_carlo(steps, epochs, sigma, eps, samples):
    """delta_{Q||P} about 1e-12 of two and three epochs: the sums agree with the Monte Carlo within 4 standard errors
    plus their estimate, and the estimate (the two cuts' change, mostly the terms with two big steps) is below 1 %."""
    got = few_epochs_jump.delta_qp(steps, sigma, epochs, eps)
    mean, se = _one_big_step_mc(steps, epochs, sigma, eps, samples)
    assert 1e-14 < got.value < 1e-10
    assert got.error < 1e-2 * got.value
    assert abs(got.value - mean) <= 4.0 * se + got.error


def test_the_estimate_holds_where_the_big_step_is_not_alone():
    """Few steps (M = 30, eps 3): the kink of the big step's law lies near the bulk of the small steps' mean and the
    terms with two big steps are large; the estimate says so (above 1 % of the value) and still holds the Monte
    Carlo value."""
    got = few_epochs_jump.delta_qp(30, 1.0, 2, 3.0)
    mean, se = _one_big_step_mc(30, 2, 1.0, 3.0, 100000)
    assert got.error > 1e-2 * abs(got.value)
    assert abs(got.value - mean) <= 4.0 * se + got.error
