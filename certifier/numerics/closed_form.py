"""The closed-form chi-square bound of Section 3 and its noise multiplier.

Everything here is a small pure function of floats, written so that it neither
overflows for small sigma (e^{1/sigma^2} astronomically large) nor loses digits
for large sigma (e^{1/sigma^2} - 1 tiny): we work with log(e^{1/sigma^2} - 1)
and with expm1/log1p throughout.

Paper objects:
  b      = e^{1/sigma^2} - 1                 (one-step chi-square, Section 3)
  c_E    = (1 + b/M)^E - 1                   (eq. 9, chi-square of E epochs)
  U(c)   = sqrt(c)/2 (c <= 1), c/(1+c) (c >= 1)          (Theorem 3.3)
  sigma(M, E, lambda) = [ln{1 + M((1+c_lambda)^{1/E} - 1)}]^{-1/2}  (Cor. 3.4)
"""
from __future__ import annotations

import math
import sys

from scipy.special import ndtri

from certifier.errors import ParameterError

_LOG_HUGE = math.log(sys.float_info.max)  # exp() of more than this overflows a double


def log_b(sigma: float) -> float:
    """log(e^{1/sigma^2} - 1), finite for every sigma > 0."""
    a = 1.0 / (sigma * sigma)
    if a > 30.0:
        return a + math.log1p(-math.exp(-a))
    return math.log(math.expm1(a))


def _log1p_b_over_m(sigma: float, steps: int) -> float:
    """log(1 + b/M), the per-epoch log of 1 + chi-square (eq. 9)."""
    lb = log_b(sigma) - math.log(steps)
    if lb > 30.0:
        return lb + math.log1p(math.exp(-lb))
    return math.log1p(math.exp(lb))


def c_E(steps: int, epochs: int, sigma: float) -> float:
    """c_E = (1 + (e^{1/sigma^2} - 1)/M)^E - 1 (eq. 9); +inf when it overflows."""
    x = epochs * _log1p_b_over_m(sigma, steps)
    return math.inf if x > _LOG_HUGE else math.expm1(x)


def c_E_sandwich(steps: int, epochs: int, sigma: float) -> tuple[float, float]:
    """(x, e^x - 1) with x = E(e^{1/sigma^2} - 1)/M, so x <= c_E <= e^x - 1 (B.2)."""
    lx = math.log(epochs) + log_b(sigma) - math.log(steps)
    if lx > math.log(_LOG_HUGE):
        return math.exp(lx) if lx < _LOG_HUGE else math.inf, math.inf
    x = math.exp(lx)
    return x, math.expm1(x)


def U(c: float) -> float:
    """U(c) of Theorem 3.3: the largest TV at chi-square c (both branches)."""
    if c < 0:
        raise ParameterError("chi-square must be >= 0")
    if c <= 1.0:
        return 0.5 * math.sqrt(c)
    if math.isinf(c):
        return 1.0
    return c / (1.0 + c)


def tv_bound(steps: int, epochs: int, sigma: float) -> float:
    """U(c_E), computed without forming c_E when it is huge (Theorem 3.3)."""
    x = epochs * _log1p_b_over_m(sigma, steps)  # = log(1 + c_E)
    if x <= math.log(2.0):
        return 0.5 * math.sqrt(math.expm1(x))
    return -math.expm1(-x)  # c/(1+c) = 1 - 1/(1+c)


def accuracy_bound(steps: int, epochs: int, sigma: float) -> float:
    """Bound 1/2 + U(c_E)/2 on every membership test's accuracy (eq. 10)."""
    return 0.5 + 0.5 * tv_bound(steps, epochs, sigma)


def c_lambda(lam: float) -> float:
    """The chi-square level with U(c_lambda) = lambda (Corollary 3.4)."""
    if not 0.0 < lam < 1.0:
        raise ParameterError("target lambda must lie in (0, 1)")
    return 4.0 * lam * lam if lam <= 0.5 else lam / (1.0 - lam)


def _per_epoch_level(epochs: int, lam: float) -> float:
    """(1 + c_lambda)^{1/E} - 1, the admissible one-epoch chi-square."""
    return math.expm1(math.log1p(c_lambda(lam)) / epochs)


def closed_form_sigma(steps: int, epochs: int, lam: float) -> float:
    """sigma(M, E, lambda) of Corollary 3.4 (eq. 12): U(c_E) = lambda exactly."""
    return math.log1p(steps * _per_epoch_level(epochs, lam)) ** -0.5


def largest_epochs(steps: int, sigma: float, lam: float) -> int:
    """Largest E with U(c_E) <= lambda (eq. 12 solved for E); 0 if none."""
    per_epoch = _log1p_b_over_m(sigma, steps)
    epochs = int(math.floor(math.log1p(c_lambda(lam)) / per_epoch))
    while epochs > 0 and tv_bound(steps, epochs, sigma) > lam:
        epochs -= 1
    return epochs


def smallest_steps(epochs: int, sigma: float, lam: float) -> int:
    """Smallest M with U(c_E) <= lambda (eq. 12 solved for M)."""
    lm = log_b(sigma) - math.log(_per_epoch_level(epochs, lam))
    if lm > 60:
        raise ParameterError("the smallest M exceeds 2^86; sigma is far too small")
    steps = max(1, int(math.ceil(math.exp(lm))))
    while tv_bound(steps, epochs, sigma) > lam:
        steps += 1
    return steps


def gdp_limit_sigma(steps: int, epochs: int, lam: float) -> float:
    """The GDP-limit multiplier of Appendix B.3.

    Solves Phi(mu/2) = 1/2 + lambda/2 with mu = sqrt((E/M)(e^{1/sigma^2} - 1)).
    A LIMIT as M -> infinity with E/M fixed (Theorem 3.5), NOT a bound: a run
    calibrated with it may exceed the target at finite M and E.
    """
    if not 0.0 < lam < 1.0:
        raise ParameterError("target lambda must lie in (0, 1)")
    z = float(ndtri(0.5 + 0.5 * lam))
    return math.log1p(4.0 * z * z * steps / epochs) ** -0.5


def chi2_tpr_bound(alpha: float, c: float) -> float:
    """TPR <= alpha + sqrt(c alpha (1 - alpha)) at FPR alpha (Proposition B.2)."""
    if not 0.0 <= alpha <= 1.0:
        raise ParameterError("false-positive rate must lie in [0, 1]")
    return min(1.0, alpha + math.sqrt(c * alpha * (1.0 - alpha)))


def pinsker_renyi2_sigma(steps: int, epochs: int, lam: float) -> float:
    """sigma from Pinsker with the order-2 Renyi divergence (B.2, Mahloujifar et al.).

    d_TV <= sqrt(D_2/2), D_2 = E ln(1 + (e^{1/sigma^2} - 1)/M); solved for sigma.
    A valid bound, but it needs 25-39 % more noise than Corollary 3.4 at lambda = 0.1.
    """
    if not 0.0 < lam < 1.0:
        raise ParameterError("target lambda must lie in (0, 1)")
    return math.log1p(steps * math.expm1(2.0 * lam * lam / epochs)) ** -0.5


def log1p_b_over_m(sigma: float, steps: int) -> float:
    """log(1 + (e^{1/sigma^2} - 1)/M), one epoch's log(1 + chi-square) (eq. 9); public for the stages."""
    return _log1p_b_over_m(sigma, steps)
