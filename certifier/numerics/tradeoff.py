"""Numerical trade-off quantities of the Gaussian pair (Appendix B.4, Table 3).

From the density of ln Lambda under P_M^E (certifier.numerics.exact.log_lambda_density),
with Q-density e^s f(s):
  * the true-positive rate of the optimal (Neyman-Pearson) test at FPR alpha,
    which thresholds ln Lambda and randomises at the threshold;
  * the hockey-stick divergences delta_{Q||P}(eps) = E_P (Lambda - e^eps)_+ and
    delta_{P||Q}(eps) = E_P (1 - e^eps Lambda)_+, and eps at a given delta.
Floating-point numerics, not certified (certifier.bounds.privacy certifies these).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from certifier.numerics.exact import LogLambdaDensity, density_for, log_lambda_density


def pair_density(steps: int, epochs: int, sigma: float) -> LogLambdaDensity:
    """ln-Lambda density of the pair (P_M^E, Q_M^E) at sigma; M >= 2."""
    return log_lambda_density(density_for(steps, epochs, float(sigma)), epochs)


def _masses(d: LogLambdaDensity) -> tuple[np.ndarray, np.ndarray]:
    p = np.clip(d.f, 0.0, None) * d.h  # round-off negatives carry no test power
    return p, p * np.exp(d.s)


def optimal_tpr(d: LogLambdaDensity, alpha: float) -> float:
    """TPR of the Neyman-Pearson test with FPR alpha (reject when ln Lambda is large)."""
    p, q = _masses(d)
    cp = np.cumsum(p[::-1])  # FPR of "reject when s >= s_k", from the top
    cq = np.cumsum(q[::-1])
    k = int(np.searchsorted(cp, alpha))  # first index where FPR reaches alpha
    if k >= cp.size:
        return float(min(1.0, cq[-1]))
    below_p = cp[k - 1] if k else 0.0
    below_q = cq[k - 1] if k else 0.0
    frac = (alpha - below_p) / p[::-1][k]  # randomise at the threshold
    return float(below_q + frac * q[::-1][k])


def hockey_stick(d: LogLambdaDensity, eps: float) -> tuple[float, float]:
    """(delta_{Q||P}(eps), delta_{P||Q}(eps)) of the pair."""
    p, q = _masses(d)
    e = math.exp(eps)
    return float(np.clip(q - e * p, 0, None).sum()), float(np.clip(p - e * q, 0, None).sum())


def epsilon_at_delta(d: LogLambdaDensity, delta: float) -> float:
    """Smallest eps >= 0 with both hockey-stick divergences <= delta."""
    g = lambda eps: max(hockey_stick(d, eps)) - delta  # noqa: E731
    if g(0.0) <= 0:
        return 0.0
    hi = 1.0
    while g(hi) > 0:
        hi *= 2.0
    return brentq(g, 0.0, hi, xtol=1e-10)
