"""The exact total variation of Theorem 4.1 and the exact sigma (Appendix C.4).

d_TV(P_M^E, Q_M^E) = E_P (1 - Lambda)_+, Lambda = prod_e L_{M,e} (Theorem 4.1).

  * M = 1: the closed form 2 Phi(t sqrt(E)/2) - 1 (C.4).
  * small sigma: TV = 1 within 1 - TV <= E Lambda^{1/2} = F_M(1/2)^E <= (sqrt(M) e^{-t^2/8})^E
    (min{1, x} <= sqrt(x), and sqrt of a sum <= the sum of sqrts), once that is below 1e-17.
  * otherwise route "laplace" (certifier.numerics.tv_laplace): formula (14) with F_M(1/2 + iu) from
    the Laplace transform of the lognormal Y, for every tail weight; where ln L_M is so
    narrow that its moment line gets long, route "vfft" (certifier.numerics.tv_vfft, C.4).
  * M = 2 at sigma >= 100: route "m2-series" (certifier.numerics.two_steps: ln L_2 = G + ln cosh(a D)
    with G Gaussian, the Gaussian part in closed form, a moment series in the rest), checked by
    route "m2-lattice" (the ln-Lambda density on a grid scaled to t); the routes above lose their
    digits to the round-off of Y - 1 ~ t there.
  * check=True adds an independent second route and widens the error by any
    disagreement beyond the two estimates: route "logconv" (certifier.numerics.log_convolution,
    the density of ln L_M by log-domain convolutions) where it is affordable, else "vfft"
    where its grid is small, else the primary route on a second discretization (it
    checks the quadratures, not the formula).
These are floating-point numerics with error estimates, not a certificate (docs/exact.md).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from scipy.optimize import brentq
from scipy.special import erf

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import two_steps
from certifier.numerics.closed_form import closed_form_sigma, gdp_limit_sigma
from certifier.numerics.laplace_moments import FINE
from certifier.numerics.log_convolution import logconv_affordable, tv_logconv
from certifier.numerics.tv_laplace import tv_laplace, tv_laplace_second, u_guess
from certifier.numerics.tv_vfft import MIN_SIGMA as VFFT_MIN_SIGMA
from certifier.numerics.tv_vfft import LogLambdaDensity, density_for, log_lambda_density, tv_vfft, v_grid_points
from certifier.params import decimal_str
from certifier.resolution import search_step

__all__ = ["ExactTV", "exact_tv", "exact_sigma", "tv_m1", "LogLambdaDensity", "density_for",
           "log_lambda_density", "MIN_SIGMA", "MAX_ERROR", "one_minus_tv_bound"]

MIN_SIGMA = 0.05        # below, refused (NumericsUnreliableError) with the bound on 1 - TV in the message
MAX_STEP_DOWN = 0.16    # the search's largest relative step down from the seed
MAX_ERROR = 1e-9        # an error estimate above this is refused, not returned
ONE_LEVEL = 1e-17       # 1 - TV below this (proven): TV = 1 is returned
VFFT_MAX_POINTS = 1 << 18  # the V grid of the check route (larger grids are slow and tilted)
LAPLACE_MAX_U = 300.0      # beyond, the moment line is long and route "vfft" is the cheaper primary


@dataclass(frozen=True)
class ExactTV:
    """The exact TV as a float with an a-posteriori error estimate (numerical, not certified)."""
    tv: float
    error: float
    method: str

    def __post_init__(self):  # plain floats, whatever numpy scalar computed them
        object.__setattr__(self, "tv", float(self.tv))
        object.__setattr__(self, "error", float(self.error))


def tv_m1(epochs: int, sigma: float) -> float:
    """M = 1: TV(N(0, I_E), N(t 1, I_E)) = 2 Phi(t sqrt(E)/2) - 1 = erf(t sqrt(E)/(2 sqrt 2))."""
    return float(erf(math.sqrt(epochs) / (sigma * 2.0 * math.sqrt(2.0))))


def validate_cell(steps, epochs, sigma) -> float:
    """M, E integers >= 1 and sigma a finite positive number (ParameterError otherwise); sigma as a float."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ParameterError(f"steps M must be an integer >= 1, got {steps!r}")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ParameterError(f"epochs E must be an integer >= 1, got {epochs!r}")
    try:
        s = float(sigma)
    except (TypeError, ValueError):
        raise ParameterError(f"sigma must be a number, got {sigma!r}") from None
    if not (math.isfinite(s) and s > 0.0):
        raise ParameterError(f"sigma must be finite and > 0, got {sigma!r}")
    return s


def one_minus_tv_bound(steps: int, epochs: int, sigma: float) -> float:
    """(sqrt(M) e^{-1/(8 sigma^2)})^E >= E min{1, Lambda} = 1 - TV (capped at 1).

    min{1, x} <= x^{1/2}; E Lambda^{1/2} = F_M(1/2)^E (Theorem 4.1); and
    F_M(1/2) = E (sum_j Y_j / M)^{1/2} <= M^{-1/2} sum_j E Y_j^{1/2} = sqrt(M) e^{-t^2/8}.
    """
    log_f = 0.5 * math.log(steps) - (1.0 / (8.0 * sigma * sigma) if sigma * sigma > 1e-300 else math.inf)
    return math.exp(epochs * log_f) if log_f < 0 else 1.0


@dataclass(frozen=True)
class RouteValue:
    tv: float
    error: float
    name: str
    u_max: float | None = None  # the laplace route's u-range, a hint for a nearby sigma


def _laplace(steps: int, epochs: int, sigma: float, u_hint: float | None = None) -> RouteValue:
    """Route "laplace"; where its error estimate (dominated by the coarse-r sum, a difference of two grids)
    exceeds MAX_ERROR / 10, the same line with more nodes per strip (FINE) when that estimates less: at
    (10^6, 10^4, sigma 0.438) FIRST estimated 1.4e-9 (over MAX_ERROR: the exact sigma was refused) and FINE
    1.9e-12, the two values 4e-16 apart."""
    r = tv_laplace(steps, epochs, sigma, u_hint)
    if r.error > MAX_ERROR / 10:
        fine = tv_laplace(steps, epochs, sigma, u_hint, FINE)
        r = fine if fine.error < r.error else r
    return RouteValue(r.tv, r.error, "laplace", r.u_max)


def _vfft(steps: int, epochs: int, sigma: float, second_grid: bool = False) -> RouteValue:
    tv, err = tv_vfft(steps, epochs, sigma, second_grid)
    return RouteValue(tv, err, "vfft'" if second_grid else "vfft")


def _light(steps: int, epochs: int, sigma: float) -> bool:
    """|F|^E decays only beyond u = LAPLACE_MAX_U (ln L_M is narrow): the V-density route is cheaper."""
    return u_guess(steps, epochs, sigma) > LAPLACE_MAX_U and sigma >= VFFT_MIN_SIGMA


def _two_steps(steps: int, sigma: float) -> bool:
    """M = 2 at large sigma: the routes in variables scaled to t (certifier.numerics.two_steps)."""
    return steps == 2 and sigma >= two_steps.MIN_SIGMA


def primary(steps: int, epochs: int, sigma: float, u_hint: float | None = None) -> RouteValue:
    """Route "laplace", or route "vfft" where ln L_M is so narrow that the moment line gets long,
    or at M = 2 and sigma >= 100 route "m2-series"."""
    if _two_steps(steps, sigma):
        tv, err = two_steps.tv_series(epochs, sigma)
        return RouteValue(tv, err, "m2-series")
    if _light(steps, epochs, sigma) and not u_hint:
        v = None
        try:
            v = _vfft(steps, epochs, sigma)
            if v.error <= MAX_ERROR / 10:
                return v
        except NumericsUnreliableError:
            pass
        try:   # the V density's estimate is loud (at (10^7, 1, sigma 0.338) 5.9e-9, laplace's 8.7e-15)
            r = _laplace(steps, epochs, sigma, u_hint)
        except NumericsUnreliableError:
            if v is None:
                raise
            return v
        return r if v is None or r.error < v.error else v
    try:
        return _laplace(steps, epochs, sigma, u_hint)
    except NumericsUnreliableError:
        if sigma < VFFT_MIN_SIGMA:
            raise
        return _vfft(steps, epochs, sigma)


def second(steps: int, epochs: int, sigma: float, first: RouteValue) -> RouteValue:
    """An independent value for check=True: another route where one is affordable, else the
    same route on a second discretization (it checks the quadratures, not the formula)."""
    if first.name == "m2-series":
        tv, err = two_steps.tv_lattice(epochs, sigma)
        return RouteValue(tv, err, "m2-lattice")
    if first.name == "vfft":
        if u_guess(steps, epochs, sigma) <= 2 * LAPLACE_MAX_U:
            return _laplace(steps, epochs, sigma)
        return _vfft(steps, epochs, sigma, second_grid=True)
    if logconv_affordable(steps, epochs, sigma):
        tv, err = tv_logconv(steps, epochs, sigma)
        return RouteValue(tv, err, "logconv")
    if sigma >= VFFT_MIN_SIGMA and v_grid_points(steps, epochs, sigma) <= VFFT_MAX_POINTS:
        return _vfft(steps, epochs, sigma)
    r = tv_laplace_second(steps, epochs, sigma, first.u_max)
    return RouteValue(r.tv, r.error, "laplace'")


def exact_tv(steps: int, epochs: int, sigma, check: bool = True) -> ExactTV:
    """d_TV(P_M^E, Q_M^E) (Theorem 4.1), with an error estimate that bounds its error.

    With check=True a second route runs; if the two differ by more than their two
    estimates, the error grows by the excess (so it still covers both). Raises
    NumericsUnreliableError when the estimate exceeds MAX_ERROR, ParameterError for bad input.
    """
    s = validate_cell(steps, epochs, sigma)
    if steps == 1:
        return ExactTV(tv_m1(epochs, s), 1e-15, "closed-form M=1")
    gap = one_minus_tv_bound(steps, epochs, s)
    if s < MIN_SIGMA:
        raise NumericsUnreliableError(f"the exact TV is computed for sigma >= {MIN_SIGMA}; at sigma = {s:g} "
                                 f"1 - TV <= (sqrt(M) e^(-1/(8 sigma^2)))^E = {gap:.1e}")
    if gap <= ONE_LEVEL:
        return ExactTV(1.0, max(gap, sys.float_info.min), "bound 1 - TV <= (sqrt(M) e^{-1/(8 sigma^2)})^E")
    first = primary(steps, epochs, s)
    error, method = first.error, first.name
    if check:
        other = second(steps, epochs, s, first)
        error += max(0.0, abs(first.tv - other.tv) - first.error - other.error)
        method += "+" + other.name
    if not (math.isfinite(first.tv) and error <= MAX_ERROR):
        raise NumericsUnreliableError(f"the exact TV at M={steps}, E={epochs}, sigma={s:g} is not reliable "
                                 f"(error estimate {error:.1e}); use the closed-form bound or Monte Carlo")
    return ExactTV(min(1.0, max(0.0, first.tv)), error, method)


class _TvCurve:
    """sigma -> exact TV - lambda for the search, cached, with the laplace u_max carried along."""

    def __init__(self, steps: int, epochs: int, lam: float):
        self.steps, self.epochs, self.lam = steps, epochs, lam
        self.u_hint = None
        self.values: dict[float, float] = {}

    def __call__(self, sigma: float) -> float:
        if sigma not in self.values:
            if self.steps == 1:
                tv = tv_m1(self.epochs, sigma)
            elif one_minus_tv_bound(self.steps, self.epochs, sigma) <= ONE_LEVEL:
                tv = 1.0
            else:
                if sigma < MIN_SIGMA:
                    raise NumericsUnreliableError(f"the exact sigma lies below {MIN_SIGMA} (M={self.steps}, "
                                             f"E={self.epochs}, lambda={self.lam:g})")
                try:
                    r = primary(self.steps, self.epochs, sigma, self.u_hint)
                except NumericsUnreliableError:
                    if self.u_hint is None:
                        raise
                    r = primary(self.steps, self.epochs, sigma)   # a hint carried from a far sigma can overshoot
                if r.error > MAX_ERROR:
                    raise NumericsUnreliableError(f"the exact TV at sigma={sigma:g} is not reliable "
                                             f"(error estimate {r.error:.1e})")
                self.u_hint, tv = (1.25 * r.u_max if r.u_max else None), r.tv
            self.values[sigma] = tv - self.lam
        return self.values[sigma]


def _bracket(f: _TvCurve, seed: float, ceiling: float) -> tuple[float, float]:
    """(lo, hi) with f(lo) > 0 >= f(hi): steps of 1 %, 2 %, 4 %, ... from the seed; hi <= ceiling."""
    step = 0.01
    if f(seed) > 0:
        lo, hi = seed, min(seed * (1 + step), ceiling)
        while f(hi) > 0:
            if hi >= ceiling:
                raise NumericsUnreliableError("exact TV above the target at the closed-form sigma")
            step *= 2.0
            lo, hi = hi, min(hi * (1 + step), ceiling)
        return lo, hi
    hi, lo = seed, seed / (1 + step)
    while f(lo) <= 0:
        step = min(2.0 * step, MAX_STEP_DOWN)      # toward small sigma the numerics get costly: no big jumps
        hi, lo = lo, lo / (1 + step)
    return lo, hi


def exact_sigma(steps: int, epochs: int, lam, resolution="1e-6") -> str:
    """Least sigma on the resolution grid with exact TV <= lambda (C.4), as a decimal.

    TV decreases in sigma (C.4), so the feasible sigma form [sigma_lambda, inf). We bracket
    sigma_lambda from the GDP-limit sigma (B.3: close, but not a bound) and never above the
    closed form (feasible by Cor. 3.4), solve by Brent, round UP to the grid and check
    that the grid point below misses.
    """
    lam = float(lam)
    if not 0.0 < lam < 1.0:
        raise ParameterError(f"target lambda must lie strictly between 0 and 1, got {lam!r}")
    search_step(resolution, 1.0)            # a bad resolution is refused before any evaluation
    f = _TvCurve(steps, epochs, lam)
    closed = closed_form_sigma(steps, epochs, lam)  # feasible: TV <= U(c_E) = lambda
    lo, hi = _bracket(f, min(gdp_limit_sigma(steps, epochs, lam), closed), closed)
    res = search_step(resolution, lo)
    step = float(res)
    root = brentq(f, lo, hi, xtol=0.05 * step, rtol=1e-15)
    k = math.ceil(root / step)
    while f(step * (k - 1)) <= 0:  # round up: the grid point below must miss
        k -= 1
    while f(step * k) > 0:
        k += 1
    return decimal_str(res * k)


def bracket(f, seed: float, ceiling: float) -> tuple[float, float]:
    """(lo, hi) with f(lo) > 0 >= f(hi), hi <= ceiling: the exact-sigma search's bracket, for any TV curve."""
    return _bracket(f, seed, ceiling)
