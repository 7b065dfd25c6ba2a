"""A bound on the lower tail of the likelihood ratio, hence on delta_{P||Q}: Chernoff on the negative moments.

delta_{P||Q}(eps) = E_P (1 - a Lambda)_+ <= P(Lambda < 1/a) <= min over r > 0 of G(-r) a^{-r}, G(-r) = F_M(-r)^E
(Theorem 4.1), the negative moments finite since L_M >= Y_i / M. With Y = e^{tZ - t^2/2} (Section 3),

    F_M(-r) = E L_M^{-r} = (1 / Gamma(r)) int_0^inf s^{r-1} (E e^{-s Y / M})^M ds,

every integrand positive: summed in logarithms, the s-integral in u = ln s and each Laplace transform in z on
windows about their peaks (checked to close). At M = 1 the bound is the Gaussian one, exp(min_r E r(r+1)t^2/2 - r eps),
above P(Lambda < 1/a) = Phi((mu^2/2 - eps) / mu) by the Chernoff gap. Big steps only lift L_M, so the bound
serves where the upper tail is the big-step routes' (certifier.numerics.big_step_tails). Floating point, not a
certificate.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import gammaln, logsumexp

from certifier.numerics.one_jump import gauss_legendre

ORDERS = range(-4, 13)      # the Chernoff orders r = 2^k tried first, then a bounded search in ln r
SEARCH_STEPS = 10
LN2 = math.log(2.0)
WIDTHS = 30.0               # the s-integral of F(-r) spans this many widths of its peak in ln s either side
CLOSE = 40.0                # a window closes where its log-integrand at the ends is this far below its largest
MAX_LOG_S = 700.0           # a u-window reaching beyond ln s = 700 is not formed (the order is skipped)


def delta_pq_bound(steps: int, sigma: float, epochs: int, eps: float) -> float:
    """An upper bound on delta_{P||Q}(eps) of E epochs (0.0 where it lies below the floating-point range)."""
    return math.exp(log_pq_bound(steps, sigma, epochs, eps))


def log_pq_bound(steps: int, sigma: float, epochs: int, eps: float) -> float:
    """The logarithm of an upper bound on delta_{P||Q}(eps) of E epochs: min over r > 0 of E ln F_M(-r) - r eps, on
    r = 2^k (k in ORDERS) and then by Brent's bounded search in ln r between the best one's neighbours. ln F_M(-r)
    by _log_negative_moment; an order whose integrals do not close within their windows counts as the trivial
    bound 0. Floating point: a bound up to the quadratures' errors."""
    t = 1.0 / sigma
    v2 = math.expm1(min(t * t, 700.0)) / steps

    def log_bound(log_r: float) -> float:
        r = math.exp(log_r)
        f = _log_negative_moment(steps, t, r, v2)
        return 0.0 if f is None else min(0.0, epochs * f - r * eps)

    grid = [k * LN2 for k in ORDERS]
    values = [log_bound(x) for x in grid]
    k = int(np.argmin(values))
    best = minimize_scalar(log_bound, bounds=(grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]),
                           method="bounded", options={"maxiter": SEARCH_STEPS, "xatol": 1e-2})
    return min(values[k], float(best.fun))


def _log_negative_moment(steps: int, t: float, r: float, v2: float) -> float | None:
    """ln F_M(-r) = ln int e^{ru} (E e^{-e^u Y / M})^M du - ln Gamma(r), or None where a window does not close.

    The u-window is centred where the GDP model puts the weight L^{-r} (ln L = -r v^2, u = ln r + r v^2), WIDTHS
    widths (1 / r + v^2)^{1/2} either side; below it the integral is at most e^{r lo} / r (E e^{-sL} <= 1). Each
    E e^{-sY/M} is a z-integral of the log-concave e^{-s y(z) - z^2/2} (y(z) = e^{tz - t^2/2} / M), its window
    about the mode z* (z* + s t y(z*) = 0, by Newton) 40 wide below it (curvature >= 1) and 40 / (1 + t |z*|)^{1/2}
    above (curvature >= 1 + t |z*| there): beyond them it is below e^{-800} of its peak. Both windows must close:
    the log-integrand at their ends at least CLOSE below its largest value."""
    half = WIDTHS * math.sqrt(1.0 / r + v2)
    centre = math.log(r) + r * v2
    lo = centre - half
    if centre + half > MAX_LOG_S:
        return None
    u, wu = gauss_legendre(lo, centre + half, 32)
    s = np.exp(u)
    z = np.minimum(0.0, -(np.log(np.maximum(s * t / steps, 1e-300)) - 0.5 * t * t) / t)   # a start left of z*
    for _ in range(60):
        y = np.exp(t * z - 0.5 * t * t) / steps
        z = z - (z + s * t * y) / (1.0 + s * t * t * y)
    above = 40.0 / np.sqrt(1.0 - t * np.minimum(z, 0.0))
    x, wx = gauss_legendre(-1.0, 1.0, 24)                 # nodes on [-1, 1], scaled per row below
    low = np.where(x < 0.0, 40.0, 0.0)[None, :]
    zz = z[:, None] + x[None, :] * np.where(x < 0.0, low, above[:, None])
    ww = wx[None, :] * np.where(x < 0.0, low, above[:, None])
    log_terms = -s[:, None] * np.exp(t * zz - 0.5 * t * t) / steps - 0.5 * zz * zz
    if np.any(np.maximum(log_terms[:, 0], log_terms[:, -1]) > log_terms.max(axis=1) - CLOSE):
        return None
    log_laplace = logsumexp(log_terms + np.log(ww), axis=1) - 0.5 * math.log(2.0 * math.pi)   # ln E e^{-sY/M}
    terms = r * u + steps * log_laplace
    if max(terms[0], terms[-1]) > terms.max() - CLOSE:
        return None
    inner = logsumexp(terms + np.log(wu))
    return float(np.logaddexp(inner, r * lo - math.log(r))) - float(gammaln(r))
