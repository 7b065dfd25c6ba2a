"""Exact TV (Theorem 4.1) and exact sigma (C.4) against independent references.

References: the closed form at M = 1, one-dimensional quadrature at M = 2, Monte Carlo with
standard errors, certified brackets [lower, upper] of method v2 at heavy tails (tests/certifier/bounds/test_lower_v1.py
checks the v1 brackets at light ones), the paper's Table 4.
Every comparison also checks the returned error estimate: |value - reference| <= error.
"""
import math
import warnings

import pytest
from scipy import integrate
from scipy.special import ndtr
from scipy.stats import norm

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import closed_form as cf
from certifier.numerics.exact import MAX_ERROR, exact_sigma, exact_tv, tv_m1
from certifier.numerics.montecarlo import monte_carlo_tv

TABLE_4 = {(100, 10): "1.426215", (100, 20): "1.907073", (100, 40): "2.610518",
           (250, 10): "1.024495", (250, 20): "1.309428", (250, 40): "1.732809",
           (500, 10): "0.834432", (500, 20): "1.025964", (500, 40): "1.310146"}


def tv_m2_quadrature(sigma: float) -> float:
    """M = 2, E = 1: E_P (1 - (Y1 + Y2)/2)_+ as a 1-D integral over X1 of a closed form in X2.

    Given Y1 with a = 1 - Y1/2 > 0: E (a - Y2/2)_+ = a Phi((ln 2a + t^2/2)/t) - Phi((ln 2a - t^2/2)/t)/2.
    The integrand has a log singularity where a -> 0, so the pieces shrink geometrically there.
    """
    t = 1.0 / sigma

    def h(x1):
        a = 1.0 - 0.5 * math.exp(t * x1 - 0.5 * t * t)
        if a <= 0.0:
            return 0.0
        la = math.log(2.0 * a)
        return (a * ndtr((la + 0.5 * t * t) / t) - 0.5 * ndtr((la - 0.5 * t * t) / t)) * math.exp(-0.5 * x1 * x1)

    top = (math.log(2.0) + 0.5 * t * t) / t
    cuts = [-40.0] + [top - 40.0 * 2.0 ** -k for k in range(50)] + [top]
    cuts = sorted(c for c in set(cuts) if c >= -40.0)
    with warnings.catch_warnings():  # quad reports that 1e-17 is below its round-off: it is a target
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        total = sum(integrate.quad(h, a, b, epsabs=1e-17, epsrel=1e-14, limit=200)[0] for a, b in zip(cuts, cuts[1:]))
    return total / math.sqrt(2.0 * math.pi)


@pytest.mark.parametrize("epochs,sigma", [(1, 0.1), (1, 0.3), (3, 0.7), (10, 2.0), (125, 5.039)])
def test_m1_is_the_closed_form(epochs, sigma):
    r = exact_tv(1, epochs, sigma)
    assert abs(r.tv - (2.0 * norm.cdf(math.sqrt(epochs) / (2.0 * sigma)) - 1.0)) <= max(r.error, 1e-15)


@pytest.mark.parametrize("sigma", [0.3, 0.7, 1.5])
def test_m2_against_one_dimensional_quadrature(sigma):
    """Heavy tails included: at sigma = 0.3 the lognormal Y has E Y^2 = e^11."""
    ref = tv_m2_quadrature(sigma)
    r = exact_tv(2, 1, sigma)
    assert r.error <= 1e-11
    assert abs(r.tv - ref) <= r.error + 1e-14


@pytest.mark.parametrize("steps,epochs,sigma,seed", [(10, 2, 0.5, 1), (3, 4, 0.6, 2), (20, 5, 0.45, 3)])
def test_heavy_tails_agree_with_monte_carlo(steps, epochs, sigma, seed):
    """Cells method v1 of the numerics refused (density not resolved): within 4 standard errors."""
    mc = monte_carlo_tv(steps, epochs, sigma, samples=200_000, seed=seed)
    r = exact_tv(steps, epochs, sigma)
    assert mc.se > 0 and r.error <= MAX_ERROR
    assert abs(mc.tv - r.tv) < 4 * mc.se


@pytest.mark.parametrize("steps,epochs,sigma", [(2, 1, "0.7"), (10, 2, "0.7"), (5, 5, "0.6")])
def test_heavy_tails_inside_certified_v2_brackets(steps, epochs, sigma):
    """Method v2 (moves instead of deletions) brackets the TV rigorously where v1 cannot."""
    from certifier.bounds.lower_v2 import lower_bound_v2
    from certifier.bounds.upper_v2 import rounding_bound_v2
    from certifier.methods.v2.plan import choose_v2
    from certifier.params import parse_decimal
    s = parse_decimal("sigma", sigma)
    t2 = 1 / (s * s)
    r = exact_tv(steps, epochs, float(s))
    plan = choose_v2(steps, epochs, t2, 1e-5, r.tv)
    upper = float(rounding_bound_v2(steps, epochs, t2, plan.method).bound)
    lower = float(lower_bound_v2(steps, epochs, t2, plan.method).exact)
    assert lower - r.error <= r.tv <= upper + r.error
    assert upper - lower < 1e-4  # a bracket that can fail


@pytest.mark.parametrize("steps,epochs,sigma", [(2, 1, 0.7), (2, 1, 1.0), (3, 1, 0.5), (10, 1, 0.5),
                                                (5, 5, 0.6), (10, 2, 0.3)])
def test_cells_refused_before_are_answered(steps, epochs, sigma):
    r = exact_tv(steps, epochs, sigma)
    assert 0.0 < r.tv < 1.0 and r.error <= MAX_ERROR
    assert r.tv <= cf.tv_bound(steps, epochs, sigma)                               # Theorem 3.3
    assert r.tv >= 2 * norm.cdf(math.sqrt(epochs / steps) / (2 * sigma)) - 1       # lower bound of C.4


def test_tv_decreases_in_sigma_across_the_heavy_tail():
    sigmas = [0.15, 0.25, 0.35, 0.5, 0.7, 1.0, 1.5, 2.5]
    tvs = [exact_tv(10, 3, s, check=False).tv for s in sigmas]
    assert all(a > b for a, b in zip(tvs, tvs[1:]))


def test_small_ratio_tends_to_sqrt_pi_over_2():
    # C.6: U(c_E)/TV -> sqrt(pi/2) as E/M -> 0; Section 4 reports 1.253314-1.253413 at E=1
    r = cf.tv_bound(4096, 1, 1.5) / exact_tv(4096, 1, 1.5, check=False).tv
    assert 1.2533 < r < 1.2535


@pytest.mark.parametrize("cell,want", list(TABLE_4.items()))
def test_exact_sigma_reproduces_table_4(cell, want):
    assert exact_sigma(*cell, "0.1") == want


@pytest.mark.parametrize("steps,epochs,lam", [(100, 10, 0.9), (3, 2, 0.5), (10, 2, 0.2), (30, 3, 0.2)])
def test_exact_sigma_is_the_least_on_its_grid(steps, epochs, lam):
    s = exact_sigma(steps, epochs, lam)
    q = float(s)
    above, below = exact_tv(steps, epochs, q), exact_tv(steps, epochs, q - 1e-6)
    assert above.tv + above.error <= lam < below.tv - below.error
    assert len(s.split(".")[1]) <= 6


def test_exact_sigma_at_m1_solves_the_closed_form():
    s = float(exact_sigma(1, 4, 0.3))
    assert tv_m1(4, s) <= 0.3 < tv_m1(4, s - 1e-6)


def test_small_sigma_is_one_within_a_proven_gap():
    """1 - TV <= (sqrt(M) e^{-1/(8 sigma^2)})^E: TV = 1 is returned once that is below 1e-17."""
    from certifier.numerics.exact import one_minus_tv_bound
    from certifier.numerics.tv_laplace import tv_laplace
    near = exact_tv(10, 2, 0.06)  # the bound is 7e-30 here
    assert near.tv == 1.0 and 0 < near.error < 1e-17
    for steps, epochs, sigma in [(3, 1, 0.1), (100, 2, 0.2), (10, 1, 0.5)]:
        assert 1 - tv_laplace(steps, epochs, sigma).tv <= one_minus_tv_bound(steps, epochs, sigma)
    assert exact_tv(10, 2, 0.1).tv > 1 - 1e-9  # sigma = 0.1 is answered by the laplace route
    with pytest.raises(NumericsUnreliableError, match="1 - TV <="):  # below 0.05: refused, with the bound
        exact_tv(10, 2, 0.04)


def test_bad_input():
    for args in [(0, 1, 1.0), (2, 0, 1.0), (2, 1, -1.0), (2, 1, float("nan")), (2.5, 1, 1.0), (True, 1, 1.0)]:
        with pytest.raises(ParameterError):
            exact_tv(*args)
    with pytest.raises(ParameterError):
        exact_sigma(10, 1, 1.5)
