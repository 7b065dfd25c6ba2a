"""The fixed-bins scheme (jax_privacy BallsInBinsSampling): the reduction to the one-epoch pair at
sigma/sqrt(E), checked against a Monte Carlo of the UNREDUCED pair, the ceil(T/M) rule, the closed form."""
from __future__ import annotations

import math

import numpy as np
import pytest
from flint import fmpq

from certifier.errors import ParameterError
from certifier.numerics import closed_form as cf
from certifier.numerics import exact, schemes


def monte_carlo_tv(rounds: list[int], sigma: float, n: int, seed: int) -> tuple[float, float]:
    """E_P (1 - Lambda)_+ for the fixed-bins pair itself: bin j is observed rounds[j] times, and
    Lambda = (1/M) sum_j prod_e exp(t x_{j,e} - t^2/2) is the likelihood ratio of all coordinates."""
    rng = np.random.default_rng(seed)
    t, total, total2, done = 1.0 / sigma, 0.0, 0.0, 0
    while done < n:
        k = min(200_000, n - done)
        log_ratio = np.stack([(t * rng.standard_normal((k, r)) - t * t / 2).sum(axis=1) for r in rounds], axis=1)
        v = np.maximum(1.0 - np.exp(log_ratio).mean(axis=1), 0.0)
        total, total2, done = total + v.sum(), total2 + (v * v).sum(), done + k
    mean = total / n
    return mean, math.sqrt((total2 / n - mean * mean) / n)


def test_scheme_names_and_iterations():
    assert schemes.parse_scheme(None) == "random-allocation"
    assert schemes.parse_scheme(" Fixed-Bins ") == "fixed-bins"
    with pytest.raises(ParameterError, match="scheme must be one of"):
        schemes.parse_scheme("balls-in-bins")
    assert [schemes.epochs_for_iterations(t, 10) for t in (1, 9, 10, 11, 20, 21)] == [1, 1, 1, 2, 2, 3]
    for bad in (0, -3, 2.5, True, "10"):
        with pytest.raises(ParameterError):
            schemes.epochs_for_iterations(bad, 10)
    assert schemes.resolve_epochs(10, None, "fixed-bins", 25) == 3
    assert schemes.resolve_epochs(10, 3, "fixed-bins", 25) == 3
    with pytest.raises(ParameterError, match="disagree"):
        schemes.resolve_epochs(10, 2, "fixed-bins", 25)
    with pytest.raises(ParameterError, match="only for the fixed-bins"):
        schemes.resolve_epochs(10, None, "random-allocation", 25)


def test_reduced_pair_is_exact():
    r = schemes.reduce("fixed-bins", 100, 10)
    assert (r.steps, r.epochs, r.scale2) == (100, 1, 10)
    assert r.t2(fmpq(2140793, 10**6)) == fmpq(10 * 10**12, 2140793**2)   # t'^2 = E / sigma^2, exactly
    assert schemes.reduce("random-allocation", 100, 10) == schemes.Reduced(100, 10, 1)


@pytest.mark.parametrize("epochs,sigma", [(1, 0.9), (4, 1.3), (25, 3.0)])
def test_one_bin_makes_the_schemes_equal(epochs, sigma):
    """M = 1: both schemes put the record in every step, so both pairs are N(0, I_E) vs N(t1, I_E)."""
    fixed = schemes.exact_tv(1, epochs, sigma, "fixed-bins").tv
    assert fixed == pytest.approx(exact.exact_tv(1, epochs, sigma).tv, abs=1e-14)
    assert fixed == pytest.approx(math.erf(math.sqrt(epochs) / (2 * math.sqrt(2) * sigma)), abs=1e-14)


def test_reduction_matches_monte_carlo_of_the_full_pair():
    """M = 4 bins, E = 4 rounds, sigma = 3: the 16-dimensional pair against TV(4, 1, 3/2)."""
    reduced = schemes.exact_tv(4, 4, 3.0, "fixed-bins", check=False).tv
    mc, se = monte_carlo_tv([4, 4, 4, 4], 3.0, 1_000_000, seed=11)
    assert abs(mc - reduced) < 4 * se, (mc, se, reduced)
    # the test can fail: random allocation at the same M, E, sigma is another pair, 20+ se away
    assert abs(mc - exact.exact_tv(4, 4, 3.0, check=False).tv) > 20 * se


def test_unfinished_last_round_is_covered_by_ceil():
    """T = 7 iterations over M = 3 bins: bin 0 seen 3 times, bins 1, 2 twice.  Its TV lies between
    the pairs with 2 and with ceil(7/3) = 3 rounds for every bin (data processing both ways)."""
    mc, se = monte_carlo_tv([3, 2, 2], 3.0, 1_000_000, seed=12)
    low = schemes.exact_tv(3, 2, 3.0, "fixed-bins", check=False).tv
    high = schemes.exact_tv(3, schemes.epochs_for_iterations(7, 3), 3.0, "fixed-bins", check=False).tv
    assert low - 4 * se < mc < high + 4 * se
    assert high - mc > 20 * se and mc - low > 20 * se      # neither end is the pair itself


@pytest.mark.parametrize("steps,epochs,lam", [(100, 10, 0.1), (250, 40, 0.2), (7, 3, 0.05)])
def test_closed_form_is_sqrt_E_times_one_epoch(steps, epochs, lam):
    s = schemes.closed_form_sigma(steps, epochs, lam, "fixed-bins")
    assert s == pytest.approx(math.sqrt(epochs) * cf.closed_form_sigma(steps, 1, lam), rel=1e-15)
    assert schemes.tv_bound(steps, epochs, s, "fixed-bins") == pytest.approx(lam, rel=1e-9)  # U(c) = lambda
    chi2 = schemes.chi2(steps, epochs, s, "fixed-bins")
    assert chi2 == pytest.approx(math.expm1(epochs / s**2) / steps, rel=1e-12)
    # one bin for the whole run is never cheaper than re-allocating every epoch (proofs row 17)
    assert s >= schemes.closed_form_sigma(steps, epochs, lam, "random-allocation")


def test_random_allocation_is_unchanged():
    assert schemes.closed_form_sigma(100, 10, 0.1) == cf.closed_form_sigma(100, 10, 0.1)
    assert schemes.tv_bound(100, 10, 1.5) == cf.tv_bound(100, 10, 1.5)
    assert schemes.exact_tv(1, 10, 1.5).tv == exact.exact_tv(1, 10, 1.5).tv
