"""The numbers behind the report's plots: floating point, not certified, and labelled so.

Bounded work: the exact TV (Theorem 4.1) is evaluated at a handful of sigma only, by the
FFT route of Appendix C.4; a point the numerics refuse (NumericsUnreliableError) is left out and
listed. The trade-off and eps(delta) curves come from one ln-Lambda density (Appendix B.4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
from scipy.stats import norm

from certifier.door import (
    FIXED_BINS,
    RANDOM_ALLOCATION,
    c_E,
    chi2_tpr_bound,
    closed_form_sigma_up,
    closed_form_tv_bound,
    hockey_stick,
    optimal_tpr,
    pair_density,
)
from certifier.door import exact_tv_scheme as exact_tv
from certifier.errors import NumericsUnreliableError

WIDE_POINTS = 5                     # exact-TV evaluations across the wide view, besides sigma, sigma_low
ALPHAS = np.logspace(-4, 0, 49)     # false-positive rates of the trade-off plot
EPSILONS = 60                       # points of the eps(delta) curve
SMALLEST_DELTA = 1e-9               # the eps(delta) curve stops below this delta


@dataclass(frozen=True)
class TVCurves:
    sigma: np.ndarray           # a dense sigma grid around the certified sigma and the closed form
    bound: np.ndarray           # U(c_E) on it (Theorem 3.3)
    exact: dict                 # sigma -> exact TV (numerical) at the few points computed
    refused: tuple              # sigmas at which the exact-TV numerics refused
    closed_form_sigma: Decimal  # Corollary 3.4 rounded up to 1e-6: U(c_E) <= lambda


def tv_curves(steps: int, epochs: int, sigma: float, target, sigma_low: float | None,
              scale: float = 1.0, closed_form_sigma: Decimal | None = None) -> TVCurves:
    """The closed-form bound on a dense grid and the exact TV at a few points, sigma and sigma_low included.

    Noise multipliers are the claim's; the pair (P_M^E, Q_M^E) is taken at sigma / scale (scale = sqrt(E)
    with E = 1 for the fixed-bins scheme, docs/method-v2.md §3; 1 for random allocation). closed_form_sigma
    is the claim's (closed_form_sigma_up); by default that of the pair at the decimal target."""
    if closed_form_sigma is None:
        fixed = scale != 1.0
        closed_form_sigma = closed_form_sigma_up(steps, round(scale * scale) if fixed else epochs,
                                                         str(target), FIXED_BINS if fixed else RANDOM_ALLOCATION)
    closed = float(closed_form_sigma)
    lo, hi = 0.92 * min(sigma, closed), 1.06 * max(sigma, closed)
    grid = np.linspace(lo, hi, 241)
    bound = np.array([closed_form_tv_bound(steps, epochs, s / scale) for s in grid])
    points = {*np.linspace(lo, hi, WIDE_POINTS).tolist(), sigma} | ({sigma_low} if sigma_low else set())
    exact, refused = {}, []
    for s in sorted(points):
        try:
            exact[s] = exact_tv(steps, epochs, s / scale, check=False).tv
        except NumericsUnreliableError:
            refused.append(s)
    return TVCurves(grid, bound, exact, tuple(refused), closed_form_sigma)


class _GaussianShift:
    """M = 1: the pair is N(0, I_E) against N(t 1, I_E), a Gaussian shift by mu = t sqrt(E) (C.4)."""

    def __init__(self, epochs: int, sigma: float):
        self.mu = math.sqrt(epochs) / sigma

    def tpr(self, alpha: float) -> float:  # Neyman-Pearson: Phi(mu - Phi^{-1}(1 - alpha))
        return float(norm.sf(norm.isf(alpha) - self.mu))

    def delta(self, eps: float) -> float:  # both directions coincide for a Gaussian shift
        m = self.mu
        return float(norm.cdf(m / 2 - eps / m) - math.exp(eps) * norm.cdf(-m / 2 - eps / m))


class _Density:
    """M >= 2: the ln-Lambda density of the pair (Appendix C.4), read as in Appendix B.4."""

    def __init__(self, steps: int, epochs: int, sigma: float):
        self.d = pair_density(steps, epochs, sigma)

    def tpr(self, alpha: float) -> float:
        return optimal_tpr(self.d, alpha)

    def delta(self, eps: float) -> float:  # the larger of delta_{Q||P}, delta_{P||Q}
        return max(hockey_stick(self.d, eps))


def gaussian_pair(steps: int, epochs: int, sigma: float):
    """The pair's optimal TPR and hockey-stick curve at sigma, or None when the numerics refuse."""
    try:
        return _GaussianShift(epochs, sigma) if steps == 1 else _Density(steps, epochs, sigma)
    except NumericsUnreliableError:
        return None


@dataclass(frozen=True)
class TradeOff:
    alpha: np.ndarray
    exact: np.ndarray | None    # TPR of the optimal test on the pair (numerical)
    chi2: np.ndarray            # alpha + sqrt(c_E alpha (1 - alpha)) (Proposition B.2)
    tv: np.ndarray              # alpha + lambda (the TV bound, eq. 19)


def trade_off(pair, steps: int, epochs: int, sigma: float, target: float, c: float | None = None) -> TradeOff:
    """c: the pair's chi-square (default c_E of (M, E, sigma); a run in stages passes its product's)."""
    c = c_E(steps, epochs, sigma) if c is None else c
    chi2 = np.array([chi2_tpr_bound(float(a), c) for a in ALPHAS])
    exact = None if pair is None else np.array([pair.tpr(float(a)) for a in ALPHAS])
    return TradeOff(ALPHAS, exact, chi2, np.minimum(1.0, ALPHAS + target))


def epsilon_curve(pair) -> tuple[np.ndarray, np.ndarray] | None:
    """(delta, eps) with delta = max of both hockey-stick divergences at eps: the numerical eps(delta)."""
    if pair is None:
        return None
    top = 0.5
    while pair.delta(top) > SMALLEST_DELTA and top < 64.0:
        top *= 2.0
    eps = np.linspace(0.0, top, EPSILONS)
    delta = np.array([pair.delta(float(e)) for e in eps])
    keep = delta >= SMALLEST_DELTA
    return delta[keep], eps[keep]
