"""The routes of the exact TV, one by one: Laplace-Mellin moments, log-domain convolution, V-FFT."""
import math

import numpy as np
import pytest
from scipy.stats import norm

from certifier.numerics.laplace_moments import SECOND, moment_line
from certifier.numerics.log_convolution import gaussian, log_sum, mean_density, moments, tv_logconv
from certifier.numerics.series import exp_minus_one_plus, log1p_minus
from certifier.numerics.tv_laplace import DU, formula14, tv_laplace, tv_laplace_second
from certifier.numerics.tv_vfft import tv_vfft


def test_series_keep_relative_accuracy():
    import mpmath as mp
    mp.mp.dps = 100
    z = np.array([1e-9 + 1e-10j, 0.3 - 0.2j, 2.0 + 5.0j, 1e-30 + 0j])
    want_e = np.array([complex(mp.exp(-mp.mpc(v.real, v.imag)) - 1 + mp.mpc(v.real, v.imag)) for v in z])
    want_l = np.array([complex(mp.log(1 + mp.mpc(v.real, v.imag)) - mp.mpc(v.real, v.imag)) for v in z])
    got_e, got_l = exp_minus_one_plus(z), log1p_minus(z)
    for g, w in ((got_e, want_e), (got_l, want_l)):
        ok = np.abs(g - w) <= 1e-14 * np.abs(w) + 1e-320
        assert ok.all(), (g, w)


@pytest.mark.parametrize("epochs,sigma", [(1, 0.7), (4, 1.3), (40, 3.5), (125, 5.039)])
def test_formula_14_reproduces_m1_closed_form(epochs, sigma):
    # C.4: with F_1(q) = exp(q(q-1)t^2/2), formula (14) must give 2 Phi(t sqrt(E)/2) - 1
    t = 1.0 / sigma
    u = DU * np.arange(int(20.0 / (t * math.sqrt(epochs)) / DU) + 2)
    q = 0.5 + 1j * u
    got = formula14(np.exp(q * (q - 1.0) * t * t / 2.0), DU, epochs).tv
    assert abs(got - (2.0 * norm.cdf(t * math.sqrt(epochs) / 2.0) - 1.0)) < 1e-13


@pytest.mark.parametrize("sigma", [0.1, 0.2, 0.5, 1.0, 3.0])
def test_laplace_moments_at_m1_match_the_closed_form(sigma):
    """F_1(1/2 + iu) = e^{q(q-1)t^2/2} tests the Laplace transform, the rays and both r-tails."""
    t = 1.0 / sigma
    for line in (moment_line(1, sigma, 4.0, DU), moment_line(1, sigma, 4.0, DU, SECOND)):
        q = 0.5 + 1j * line.u
        err = np.abs(line.f - np.exp(q * (q - 1.0) * t * t / 2.0))
        assert err.max() < 1e-12
        assert np.all(err <= np.abs(line.f - line.f_coarse_r) + line.roundoff + 1e-14)


@pytest.mark.parametrize("steps,sigma,kappa", [(10_000, 0.1668, 2.0), (3, 0.3, 1.0), (100, 2.0, 2.0)])
def test_laplace_gap_against_mpmath(steps, sigma, kappa):
    """e^{-w} - psi_Y(w/M)^M on the ray, both branches (|w/M| < 1 and beyond) and the region where
    e^{-w} underflows while psi_L does not, against a 25-digit contour quadrature."""
    import mpmath as mp

    from certifier.numerics.laplace_moments import FIRST, contour, laplace_gap, ray_grid
    mp.mp.dps = 25
    t = 1.0 / sigma
    delta = kappa / 18.7
    theta = -math.pi / 2 + delta
    c = contour(t, theta, FIRST)[0]
    g = ray_grid(t, theta, delta / 7, -8.0, 40.0, FIRST)
    gap = laplace_gap(steps, g)[0]
    r = g.k * g.dr

    def psi_y(o):
        f = lambda x: mp.exp(-o * mp.exp(t * (x + 1j * c) - t * t / 2) - (x + 1j * c) ** 2 / 2)  # noqa: E731
        return mp.quad(f, [-12, -6, -3, 0, 3, 6, 9, 12, 18, 24]) / mp.sqrt(2 * mp.pi)
    for x in (-6.0, 0.0, 3.0, math.log(steps) - 0.3, math.log(steps) + 0.3, 12.0, 20.0, 35.0):
        i = int(np.argmin(np.abs(r - x)))
        w = mp.exp(mp.mpf(r[i]) + 1j * mp.mpf(theta))
        ref = complex(mp.exp(-w) - psi_y(w / steps) ** steps)
        # relative 1e-11 (M log psi_Y carries M times the rounding of psi_Y), or negligible in (14)
        assert abs(gap[i] - ref) <= 1e-11 * max(abs(ref), math.exp(r[i] / 2) * 1e-3), (r[i], gap[i], ref)


def test_log_sum_of_two_gaussians_matches_a_direct_integral():
    """Density of W = ln(e^A + e^B), A ~ N(0, 1), B ~ N(-1, 0.25), against the direct formula
    f_W(w) = int_{a < w} p(a) q(ln(e^w - e^a)) e^w / (e^w - e^a) da, taken with a = w - e^y."""
    h = 0.05
    w = log_sum(gaussian(0.0, 1.0, h), gaussian(-1.0, 0.5, h))
    y = np.linspace(-40.0, 4.0, 440001)
    x = np.exp(y)  # w - a
    for s in (-0.5, 0.7, 2.0, 4.0):
        g = norm.pdf(s - x) * norm.pdf(s + np.log(-np.expm1(-x)), -1.0, 0.5) * x / -np.expm1(-x)
        direct = float(np.sum(g) * (y[1] - y[0]))
        got = w.f[round(s / h) - w.lo]
        assert abs(got - direct) < 1e-9 * direct


@pytest.mark.parametrize("steps,sigma", [(2, 0.7), (7, 1.0), (64, 0.6)])
def test_log_density_has_mass_one_and_mean_one(steps, sigma):
    """F(0) = E 1 = 1 and F(1) = E L_M = 1 exactly; F(2) = E L^2 = 1 + (e^{t^2} - 1)/M (Section 3)."""
    d = mean_density(steps, sigma, 0.05)
    s = d.h * (d.lo + np.arange(d.f.size))
    mass, mean, second = (float(np.sum(d.f * np.exp(k * s)) * d.h) for k in (0, 1, 2))
    assert abs(mass - 1) < 1e-13
    # under Q the far right tail weighs e^s or e^{2s} times more: it is cut at the round-off floor
    assert abs(mean - 1) < 1e-10
    assert abs(second - (1 + math.expm1(1 / sigma**2) / steps)) < 1e-5 * second
    f = moments(d, DU, 3)
    assert abs(f[0] - float(np.sum(d.f * np.exp(s / 2)) * d.h)) < 1e-14


@pytest.mark.parametrize("steps,epochs,sigma", [(2, 3, 1.5), (10, 2, 0.7), (100, 10, 0.45), (100, 10, 1.426215)])
def test_three_independent_routes_agree(steps, epochs, sigma):
    """Laplace-Mellin vs log-domain convolution vs (where it runs) the V-density FFT of C.4."""
    a = tv_laplace(steps, epochs, sigma)
    b, b_err = tv_logconv(steps, epochs, sigma)
    assert abs(a.tv - b) <= a.error + b_err
    assert a.error < 1e-11 and b_err < 1e-10
    if steps >= 100 and sigma > 1:
        c, c_err = tv_vfft(steps, epochs, sigma)
        assert abs(a.tv - c) <= a.error + c_err


def test_second_discretization_and_the_error_budget():
    a = tv_laplace(1000, 10, 0.4)
    b = tv_laplace_second(1000, 10, 0.4)
    assert abs(a.tv - b.tv) <= a.error + b.error
    assert set(a.parts) == {"r_step", "x_step", "r_cut", "roundoff", "u_step", "u_cut"}
    assert a.error == pytest.approx(sum(a.parts.values()))


def test_u_range_grows_from_a_small_hint():
    """A hint far too small (u = 1) is extended until |F|^E has decayed; the value does not change."""
    good = tv_laplace(100, 1, 0.7)
    small = tv_laplace(100, 1, 0.7, u_hint=1.0)
    assert small.u_max > 10 and abs(small.tv - good.tv) <= good.error + small.error


def test_a_loud_coarse_grid_estimate_gets_a_finer_line_not_a_refusal():
    """(10^6, 10^4, sigma 0.438135), inside the stated domain: route laplace's error estimate (the difference of
    its line and a coarser one) was 1.4e-9 > MAX_ERROR and the exact sigma of lambda = 0.5 was refused; the same
    line with more nodes per strip estimates 1.9e-12, and the second discretization agrees to that."""
    from certifier.numerics.exact import MAX_ERROR, exact_sigma, exact_tv
    from certifier.numerics.tv_laplace import tv_laplace, tv_laplace_second
    loud = tv_laplace(10**6, 10**4, 0.438135)
    assert loud.error > MAX_ERROR                       # what the first line alone estimates
    r = exact_tv(10**6, 10**4, 0.438135)
    other = tv_laplace_second(10**6, 10**4, 0.438135)
    assert r.error < 1e-10 and abs(r.tv - other.tv) < 1e-11 and abs(r.tv - loud.tv) < 1e-11
    assert 0.4376 < float(exact_sigma(10**6, 10**4, 0.5)) < 0.4377


@pytest.mark.parametrize("M, E, sigma", [(10**6, 1, 0.382364), (10**7, 1, 0.338142), (10**7, 10, 0.393912)])
def test_a_loud_v_density_gives_way_to_the_laplace_route(M, E, sigma):
    """ln L_M narrow (the V-density route first): its estimate was 1.2e-9 to 5.9e-9 > MAX_ERROR and the exact sigma
    of lambda = 0.01 was refused at these cells; route laplace estimates ~1e-14 there, and its second
    discretization agrees."""
    from certifier.numerics.exact import MAX_ERROR, exact_tv
    from certifier.numerics.tv_laplace import tv_laplace_second
    from certifier.numerics.tv_vfft import tv_vfft
    assert tv_vfft(M, E, sigma)[1] > MAX_ERROR
    r = exact_tv(M, E, sigma)
    assert r.method.startswith("laplace") and r.error < 1e-12
    assert abs(r.tv - tv_laplace_second(M, E, sigma).tv) < 1e-12
