"""The exact TV at M = 2 and large sigma: two routes in variables scaled to t (docs/exact.md §2b).

With X1, X2 iid N(0, 1), U = (X1 + X2)/sqrt 2 and D = (X1 - X2)/sqrt 2 are iid N(0, 1), and

    L_2 = (Y1 + Y2)/2 = exp(t U/sqrt 2 - t^2/2) cosh(a D),   a = t/sqrt 2,

so ln L_2 = G + C with G ~ N(-t^2/2, a^2) independent of C = ln cosh(a D) >= 0. Over E epochs
ln Lambda = S_G + S_C, S_G ~ N(mu, tau^2) (mu = -E t^2/2, tau^2 = E a^2), S_C = sum_e C_e, and
conditionally on S_C the Gaussian part is integrated in closed form:

    TV = E_P (1 - Lambda)_+ = E h(mu + S_C),   h(m) = Phi(-m/tau) - e^{m + tau^2/2} Phi(-m/tau - tau).

  * route "m2-series" (primary): h is entire and S_C spreads by about t tau/2 around its mean, so
    E h(mu + S_C) = sum_k h^(k)(m0) E(S_C - E S_C)^k / k!, with h^(k) in closed form (Hermite
    polynomials) and the central moments of S_C from E x the cumulants of C (Gauss-Hermite in D).
    The terms fall like (t/2)^k: at sigma >= 100 a dozen reach 1e-18 of the sum.
  * route "m2-lattice" (the check, shares none of the above): the characteristic function of
    ln L_2 by two-dimensional Gauss-Hermite in (X1, X2) (ln L_2 = log1p of a mean of expm1's, so
    it keeps its relative accuracy at tiny t), raised to the power E, inverted by FFT on a grid
    centred on ln Lambda = 0 with spacing tau/170; then E_P (1 - e^s)_+ by the trapezoid with
    the kink's Euler-Maclaurin corrections (h^2 and h^4 terms). The V-density route (C.4) fails
    here: Y - 1 ~ t carries the absolute round-off of exp, and |phi_V| stalls at 1e-13.
Floating point with a-posteriori estimates, not a certificate.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import erf, ndtr

from certifier.errors import NumericsUnreliableError
from certifier.numerics.series import exp_minus_one_plus, log1p_minus
from certifier.numerics.tv_vfft import LogLambdaDensity

MIN_SIGMA = 100.0        # the routes' domain at M = 2 (the series' ratio t/2 <= 0.005)
SERIES_NODES = 160       # Gauss-Hermite nodes in D (the estimate compares with half of them)
SERIES_TERMS = 40        # most terms of the moment series
LATTICE_NODES = 96       # Gauss-Hermite nodes per coordinate of (X1, X2)
LATTICE_POINTS = 1 << 13  # points of the ln-Lambda grid (the estimate compares with half of them)
LATTICE_SDS = 24.0       # half-width of the grid in sd of ln Lambda
PHI_LEVEL = 1e-22        # |phi_S| below this: the rest of the frequencies are dropped (and counted)
_EPS = float(np.finfo(float).eps)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _check(sigma: float) -> float:
    if not sigma >= MIN_SIGMA:
        raise NumericsUnreliableError(f"the M = 2 routes in scaled variables serve sigma >= {MIN_SIGMA:g}, "
                                      f"got {sigma:g}")
    return 1.0 / sigma


def _ln_cosh(x: np.ndarray) -> np.ndarray:
    """ln cosh x = log1p(2 sinh^2(x/2)), with its relative accuracy at small x."""
    s = np.sinh(0.5 * x)
    return np.log1p(2.0 * s * s)


@lru_cache(maxsize=8)
def _gauss_hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for E f(Z), Z ~ N(0, 1)."""
    x, w = hermegauss(n)
    return x, w / _SQRT_2PI


def cumulants_of_c(a: float, order: int, nodes: int = SERIES_NODES) -> np.ndarray:
    """Mean and cumulants 2..order of xi = ln cosh(a D)/a^2, D ~ N(0, 1) (index j: the j-th; 0 unused)."""
    x, w = _gauss_hermite(nodes)
    xi = _ln_cosh(a * x) / (a * a)
    mean = float(w @ xi)
    d = xi - mean
    central = np.array([float(w @ d ** j) for j in range(order + 1)])
    central[1] = 0.0
    kappa = np.zeros(order + 1)
    kappa[1] = mean
    for n in range(2, order + 1):  # kappa_n = m_n - sum_{k=2}^{n-1} C(n-1, k-1) kappa_k m_{n-k} (central m)
        kappa[n] = central[n] - sum(math.comb(n - 1, k - 1) * kappa[k] * central[n - k] for k in range(2, n - 1))
    return kappa


def central_moments(kappa: np.ndarray) -> np.ndarray:
    """Central moments 0..n from cumulants 2..n (kappa_1 ignored): m_n = sum_k C(n-1, k-1) kappa_k m_{n-k}."""
    n = kappa.size - 1
    m = np.zeros(n + 1)
    m[0] = 1.0
    for j in range(2, n + 1):
        m[j] = sum(math.comb(j - 1, k - 1) * kappa[k] * m[j - k] for k in range(2, j + 1))
    return m


def h_and_scaled_derivatives(m: float, tau: float, order: int) -> tuple[float, float, np.ndarray]:
    """h(m), its rounding scale, and d_k = tau^k h^(k)(m) for k = 0..order.

    h'(m) = -e^{m + tau^2/2} Phi(-x - tau) and h'' = h' + g with g(m) = phi(x)/tau, x = m/tau
    (e^{m + tau^2/2} phi(x + tau) = phi(x)), so h^(k) = h' + sum_{j <= k-2} g^(j) and
    g^(j)(m) = (-1)^j He_j(x) phi(x) / tau^{j+1}.
    """
    x = m / tau
    r2 = math.sqrt(2.0)
    head = 0.5 * (erf(-x / r2) - erf((-x - tau) / r2))     # Phi(-x) - Phi(-x - tau), no cancellation near 0
    tail = math.expm1(m + 0.5 * tau * tau) * float(ndtr(-x - tau))
    h = float(head) - tail
    scale = abs(float(head)) + abs(tail)
    h1 = -math.exp(m + 0.5 * tau * tau) * float(ndtr(-x - tau))
    phi = math.exp(-0.5 * x * x) / _SQRT_2PI
    he = [1.0, x]                                          # He_j(x): He_{j+1} = x He_j - j He_{j-1}
    for j in range(1, order):
        he.append(x * he[j] - j * he[j - 1])
    d = np.zeros(order + 1)
    d[0] = h
    for k in range(1, order + 1):
        acc = h1 * tau ** k
        for j in range(0, k - 1):
            acc += (-1) ** j * he[j] * phi * tau ** (k - 1 - j)
        d[k] = acc
    return h, scale, d


def _series(epochs: int, t: float, nodes: int) -> tuple[float, float, float]:
    """(TV, the last terms' size, rounding scale) of the moment series with `nodes` in D."""
    a = t / math.sqrt(2.0)
    tau = a * math.sqrt(epochs)
    kappa = cumulants_of_c(a, SERIES_TERMS, nodes)
    m0 = -epochs * t * t / 2.0 + epochs * a * a * kappa[1]   # mu + E E[C]
    ky = np.zeros_like(kappa)
    for j in range(2, kappa.size):                            # cumulants of y = (S_C - E S_C)/tau
        ky[j] = epochs * (a * a / tau) ** j * kappa[j]
    my = central_moments(ky)
    h, scale, d = h_and_scaled_derivatives(m0, tau, SERIES_TERMS)
    terms = d * my / np.array([math.factorial(k) for k in range(SERIES_TERMS + 1)])
    total = 0.0
    for k in range(SERIES_TERMS + 1):
        total += terms[k]
        last = abs(terms[k]) + abs(terms[k - 1]) + abs(terms[k - 2]) if k >= 4 else math.inf
        if last <= 1e-18 * abs(total):      # three in a row: odd terms are small near x = 0 by symmetry alone
            return total, 2.0 * last, scale
    raise NumericsUnreliableError(f"the moment series at M=2, E={epochs}, sigma={1 / t:g} does not converge "
                                  f"in {SERIES_TERMS} terms")


def tv_series(epochs: int, sigma: float) -> tuple[float, float]:
    """Route "m2-series": (TV, error estimate) = the series' value and the sum of the quadrature's change
    (half the nodes), the last terms and the rounding of h."""
    t = _check(sigma)
    tv, last, scale = _series(epochs, t, SERIES_NODES)
    coarse, _, _ = _series(epochs, t, SERIES_NODES // 2)
    return tv, abs(tv - coarse) + last + 8.0 * _EPS * scale


def _log_l(t: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """ln L_2 at the 2-D Gauss-Hermite nodes (relative accuracy kept: log1p of a mean of expm1's) and weights."""
    x, w = _gauss_hermite(nodes)
    y1 = np.expm1(t * x - 0.5 * t * t)                    # Y - 1
    ell = np.log1p(0.5 * (y1[:, None] + y1[None, :]))
    weight = w[:, None] * w[None, :]
    keep = weight > 1e-30 * weight.max()
    return ell[keep], weight[keep]


def _phi_line(epochs: int, t: float, dw: float, nodes: int) -> tuple[np.ndarray, float]:
    """phi_S(w_j) = (E e^{i w_j ln L_2})^E for w_j = j dw up to where |phi_S| <= PHI_LEVEL is proven:
    |E e^{iw ln L_2}| <= |E e^{iw G}| = e^{-w^2 a^2/2} (ln L_2 = G + C, independent), so
    |phi_S(w)| <= e^{-w^2 tau^2/2}. Also that bound at the first dropped frequency."""
    a = t / math.sqrt(2.0)
    tau = a * math.sqrt(epochs)
    top = math.sqrt(2.0 * math.log(1.0 / PHI_LEVEL)) / tau
    count = int(math.ceil(top / dw)) + 1
    ell, weight = _log_l(t, nodes)
    mean = float(weight @ ell)
    out = []
    for j in range(0, count, 64):
        w = dw * np.arange(j, min(j + 64, count))
        rest = exp_minus_one_plus(-1j * w[:, None] * ell[None, :]) @ weight   # E[e^{iw l} - 1 - iw l]
        z = 1j * w * mean + rest                                               # E e^{iw l} - 1
        out.append(np.exp(epochs * (z + log1p_minus(z))))                      # (1 + z)^E
    return np.concatenate(out), math.exp(-0.5 * (count * dw * tau) ** 2)


def _tv_on_grid(phi: np.ndarray, period: float, points: int) -> tuple[float, float]:
    """E_P (1 - e^S)_+ from phi_S on the periodic grid s_k = -period/2 + k h (s = 0 at k = points/2):
    the trapezoid below 0 plus the Euler-Maclaurin terms of the kink, h^2 f(0)/12 + h^4 g'''(0-)/720
    with g = (1 - e^s) f, g'''(0-) = -(f + 3 f' + 3 f'')(0). Also the density's mass."""
    h = period / points
    n = min(phi.size, points // 2 + 1)
    w = 2.0 * math.pi / period * np.arange(n)
    sign = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)                # e^{i w_j period/2} = (-1)^j
    coeff = np.zeros(points // 2 + 1, dtype=complex)
    coeff[:n] = np.conj(phi[:n]) * sign
    f = np.fft.irfft(coeff, points) * (points / period)
    zero = points // 2
    s = -period / 2 + h * np.arange(points)
    tv = float(np.dot(-np.expm1(s[:zero]), f[:zero]) * h)
    # f(0), f'(0), f''(0) spectrally: f(s) = (1/period) sum_j phi_j e^{-i w_j s} (both signs of j)
    base = phi[:n] / period
    f0 = float(base[0].real + 2.0 * np.sum(base[1:]).real)
    f1 = float(2.0 * np.sum((-1j * w[1:]) * base[1:]).real)
    f2 = float(2.0 * np.sum((-w[1:] ** 2) * base[1:]).real)
    tv += h * h * f0 / 12.0 - h ** 4 * (f0 + 3.0 * f1 + 3.0 * f2) / 720.0
    return tv, float(f.sum() * h)


def lattice_period(epochs: int, t: float) -> float:
    """Period of the ln-Lambda grid: LATTICE_SDS sd of ln Lambda each side of 0, plus its mean."""
    a = t / math.sqrt(2.0)
    sd = a * math.sqrt(epochs) * (1.0 + a)
    return 2.0 * (LATTICE_SDS * sd + epochs * t * t)


def tv_lattice(epochs: int, sigma: float) -> tuple[float, float]:
    """Route "m2-lattice": (TV, error estimate) = the fine grid's value and the sum of its change from the
    grid of half the points, the change to half the Gauss-Hermite nodes, E x the mass defect x the
    payoff's scale, and the dropped frequencies."""
    t = _check(sigma)
    period = lattice_period(epochs, t)
    dw = 2.0 * math.pi / period
    phi, last = _phi_line(epochs, t, dw, LATTICE_NODES)
    if phi.size > LATTICE_POINTS // 2:
        raise NumericsUnreliableError("the characteristic function of ln Lambda is too wide for the lattice")
    tv, mass = _tv_on_grid(phi, period, LATTICE_POINTS)
    half, _ = _tv_on_grid(phi, period, LATTICE_POINTS // 2)
    phi_c, _ = _phi_line(epochs, t, dw, LATTICE_NODES // 2)
    coarse, _ = _tv_on_grid(phi_c, period, LATTICE_POINTS)
    scale = period / 2.0                     # (1 - e^s)_+ <= |s| <= period/2 on the grid
    err = abs(tv - half) + abs(tv - coarse) + scale * (abs(1.0 - mass) + last) + 16.0 * _EPS * (abs(tv) + 1e-300)
    return tv, err


def log_lambda_lattice(epochs: int, sigma: float, points: int = LATTICE_POINTS):
    """The density of ln Lambda under P on the lattice of route "m2-lattice" (a LogLambdaDensity)."""
    t = _check(sigma)
    period = lattice_period(epochs, t)
    phi, _ = _phi_line(epochs, t, 2.0 * math.pi / period, LATTICE_NODES)
    n = min(phi.size, points // 2 + 1)
    sign = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    coeff = np.zeros(points // 2 + 1, dtype=complex)
    coeff[:n] = np.conj(phi[:n]) * sign
    f = np.fft.irfft(coeff, points) * (points / period)
    h = period / points
    s = -period / 2 + h * np.arange(points)
    return LogLambdaDensity(s, f, h, float(f.sum() * h) ** (1.0 / epochs), points // 2)
