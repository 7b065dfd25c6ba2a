"""The M = 2 routes at large sigma (certifier.numerics.two_steps) against independent references.

References: a 30-digit one-dimensional quadrature at E = 1 (the inner X2 expectation in closed form),
route "vfft" (C.4) where it still works, Monte Carlo with standard errors, M = 1's closed form at
sigma sqrt 2 (the GDP scaling, to relative order t^2), and the decomposition ln L_2 = G + ln cosh(aD)
pointwise. Every comparison also checks the returned error estimates.
"""
import math

import numpy as np
import pytest

from certifier.errors import NumericsUnreliableError
from certifier.numerics import two_steps
from certifier.numerics.exact import exact_sigma, exact_tv, tv_m1
from certifier.numerics.montecarlo import monte_carlo_tv
from certifier.numerics.tv_vfft import tv_vfft


def tv_e1_mpmath(sigma: float, dps: int = 30) -> float:
    """M = 2, E = 1 at `dps` digits: E_{X1} [a Phi((ln 2a + t^2/2)/t) - Phi((ln 2a - t^2/2)/t)/2], a = 1 - Y1/2 > 0."""
    import mpmath as mp
    with mp.workdps(dps):
        t = 1 / mp.mpf(sigma)

        def f(x1):
            a = 1 - mp.exp(t * x1 - t * t / 2) / 2
            if a <= 0:
                return mp.mpf(0)
            la = mp.log(2 * a)
            return (a * mp.ncdf((la + t * t / 2) / t) - mp.ncdf((la - t * t / 2) / t) / 2) * mp.npdf(x1)
        top = (mp.log(2) + t * t / 2) / t      # a = 0 there; beyond, the integrand vanishes
        return float(mp.quad(f, [-40, -10, 0, 10, min(top, 40)]))


def test_the_decomposition_holds_pointwise():
    """(Y1 + Y2)/2 = exp(t U/sqrt 2 - t^2/2) cosh(t D/sqrt 2) with U, D the rotated coordinates."""
    rng = np.random.default_rng(3)
    x1, x2 = rng.standard_normal(1000), rng.standard_normal(1000)
    for t in (0.3, 0.01, 1e-5):
        lhs = np.log1p(0.5 * (np.expm1(t * x1 - t * t / 2) + np.expm1(t * x2 - t * t / 2)))
        u, d = (x1 + x2) / math.sqrt(2), (x1 - x2) / math.sqrt(2)
        rhs = t * u / math.sqrt(2) - t * t / 2 + np.log1p(2 * np.sinh(t * d / math.sqrt(8)) ** 2)  # ln cosh
        assert np.max(np.abs(lhs - rhs)) <= 1e-13 * t


@pytest.mark.parametrize("sigma", [100.0, 1000.0, 30000.0])
def test_one_epoch_against_a_30_digit_quadrature(sigma):
    ref = tv_e1_mpmath(sigma)
    for tv, err in (two_steps.tv_series(1, sigma), two_steps.tv_lattice(1, sigma)):
        assert err <= 1e-12 * ref
        assert abs(tv - ref) <= err + 1e-15 * ref


@pytest.mark.parametrize("epochs,sigma", [(10, 100.0), (10, 300.0), (100, 2820.947224), (10000, 28209.471795)])
def test_series_lattice_and_vfft_agree_where_vfft_works(epochs, sigma):
    (s, es), (lat, el) = two_steps.tv_series(epochs, sigma), two_steps.tv_lattice(epochs, sigma)
    v, ev = tv_vfft(2, epochs, sigma)
    assert abs(s - lat) <= es + el
    assert abs(s - v) <= es + ev
    assert es < 1e-14 * s and ev < 1e-11   # the new route is the sharper one, by far


def test_monte_carlo_at_a_small_epoch_analogue():
    mc = monte_carlo_tv(2, 10, 100.0, samples=200_000, seed=11)
    tv, err = two_steps.tv_series(10, 100.0)
    assert mc.se > 0 and abs(mc.tv - tv) < 4 * mc.se


@pytest.mark.parametrize("epochs,sigma", [(1, 100.0), (10, 100.0), (10000, 100.0), (1, 1e6), (10000, 282095.0)])
def test_m1_scaling_to_relative_order_t_squared(epochs, sigma):
    """For small t, ln L_2 is Gaussian with variance t^2/2 up to O(t^2) relative terms: M = 1 at sigma sqrt 2."""
    tv, _ = two_steps.tv_series(epochs, sigma)
    m1 = tv_m1(epochs, sigma * math.sqrt(2.0))
    t2 = 1.0 / (sigma * sigma)
    assert abs(tv / m1 - 1.0) <= 0.5 * t2
    if t2 > 1e-9:                                  # above round-off: the correction is really there
        assert abs(tv / m1 - 1.0) >= 0.01 * t2


def test_exact_tv_uses_the_routes_from_sigma_100():
    r = exact_tv(2, 10000, 282095.0)
    assert r.method == "m2-series+m2-lattice" and r.error <= 1e-15
    assert exact_tv(2, 10, 99.0).method != r.method            # below 100 the routes of before
    with pytest.raises(NumericsUnreliableError):
        two_steps.tv_series(10, 99.0)


def test_exact_sigma_at_the_edge_cell_is_answered():
    """(2, 10^4, 10^-4) was refused after 10 s (the V density at sigma = 282095 was not resolved)."""
    from certifier.resolution import issued
    s = exact_sigma(2, 10000, 0.0001)
    q = float(issued(s))
    above, below = exact_tv(2, 10000, q), exact_tv(2, 10000, q - 1.0)   # res(sigma) = 1 at 10^5 <= sigma < 10^6
    assert above.tv + above.error <= 1e-4 < below.tv - below.error


@pytest.mark.parametrize("epochs,sigma", [(10, 300.0), (100, 2820.96)])
def test_profile_route_agrees_with_the_v_density_route(epochs, sigma):
    """The privacy profile and trade-off curve from the m2 lattice against route vfft where it still works."""
    from certifier.numerics.pair_routes import two_steps_route, vfft_route
    a, b = two_steps_route(epochs, sigma).main, vfft_route(2, epochs, sigma).main
    for eps in (0.0, 0.001, 0.003, 0.01):
        assert abs(a.dqp(eps) - b.dqp(eps)) <= 1e-11 + 1e-7 * b.dqp(eps)
        assert abs(a.dpq(eps) - b.dpq(eps)) <= 1e-11 + 1e-7 * b.dpq(eps)
    assert abs(a.tpr(0.001)[0] - b.tpr(0.001)[0]) <= 1e-11
    assert a.dqp(0.0) > a.dqp(0.003) > 0                       # a profile that can fail: decreasing in eps


def test_profile_at_the_edge_cell_is_answered():
    """(2, 10^4, sigma 282095): the moment line needed 4e7 x 95 nodes and was refused after 11 s."""
    from certifier.numerics.targets import route_at
    first, second = route_at(2, 10000, 282095.0, check=True)
    assert (first.name, second.name) == ("m2-lattice", "m2-lattice'")
    tv = exact_tv(2, 10000, 282095.0).tv
    assert abs(first.main.dqp(0.0) - tv) <= 1e-14 and abs(second.main.dqp(0.0) - tv) <= 1e-14
