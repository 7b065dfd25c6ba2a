"""The exact total variation of Theorem 4.1 and the exact sigma (Appendix C.4).

d_TV(P_M^E, Q_M^E) = E_P (1 - Lambda)_+ with ln Lambda = sum_e ln L_{M,e}.

Two independent routes from the one-epoch density of certifier.one_epoch:
  * `tv_fft`: density of s = ln L_M on an equispaced grid, E-fold periodic
    convolution by FFT, then integral of (1 - e^s)_+ with the h^2 f(0)/12 kink
    correction (C.4);
  * `tv_mellin`: formula (14), (1/pi) int_0^inf (1 - Re F_M(1/2 + iu)^E)/(u^2 + 1/4) du
    with F_M(q) = E L_M^q summed directly over the density of V.
At M = 1 both are replaced by the closed form 2 Phi(t sqrt(E)/2) - 1 (C.4).
These are floating-point numerics with an error estimate, not a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq
from scipy.special import erf

from certifier.closed_form import closed_form_sigma, gdp_limit_sigma
from certifier.errors import NumericsUnreliable
from certifier.one_epoch import EpochDensity, epoch_density, upper_range
from certifier.params import decimal_str, parse_positive_decimal

GRID_POINTS = 1 << 17  # points of the ln-Lambda grid
MIN_SIGMA = 0.2
MAX_ERROR = 1e-6  # an error estimate above this is refused, not returned


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


def log_period(steps: int, epochs: int, sigma: float) -> float:
    """Period of the ln-Lambda grid: covers 24 sd of E epochs (C.4) and one epoch's tail."""
    t = 1.0 / sigma
    v2 = math.expm1(t * t) / steps
    one_epoch = 2.0 * math.log1p(math.sqrt(v2) * upper_range(steps, t, math.sqrt(v2)))
    return max(24.0 * math.sqrt(epochs * v2) + 2.0 * epochs * v2, min(8.0, one_epoch))


def _log_grid(dens: EpochDensity, epochs: int) -> tuple[np.ndarray, float, float]:
    """Samples of the density of ln L_M on the periodic grid used for composition."""
    v = dens.v
    period = log_period(dens.steps, epochs, 1.0 / dens.t)
    h = period / GRID_POINTS
    s = -period / 2 + h * np.arange(GRID_POINTS)  # s = 0 is a grid point
    spline = CubicSpline(dens.x(), dens.f, extrapolate=False)
    x = np.expm1(s) / v  # V at these s
    fv = spline(x)
    fv[np.isnan(fv)] = 0.0
    fs = np.exp(s) * fv / v  # change of variables s = ln(1 + v V)
    return fs, h, period


@dataclass(frozen=True)
class LogLambdaDensity:
    """Density f of ln Lambda under P_M^E on the grid s_k = s0 + k h (C.4).

    Under Q the density is e^s f(s) (dQ/dP = Lambda). `mass1` is the one-epoch
    mass on the grid (1 up to round-off and the cut tails).
    """
    s: np.ndarray
    f: np.ndarray
    h: float
    mass1: float
    zero: int  # index of s = 0


def log_lambda_density(dens: EpochDensity, epochs: int) -> LogLambdaDensity:
    """E-fold periodic convolution of the ln L_M density by FFT (C.4)."""
    fs, h, period = _log_grid(dens, epochs)
    n = fs.size
    zero = n // 2
    shifted = np.roll(fs * h, -zero)  # s = 0 first
    fe = np.fft.irfft(np.fft.rfft(shifted) ** epochs, n)
    fe = np.roll(fe, zero) / h
    s = -period / 2 + h * np.arange(n)
    return LogLambdaDensity(s, fe, h, float(fs.sum() * h), zero)


def tv_fft(dens: EpochDensity, epochs: int) -> ExactTV:
    """E_P (1 - Lambda)_+ against the composed density, with the kink correction (C.4)."""
    d = log_lambda_density(dens, epochs)
    z = d.zero
    negative = float(-d.f[d.f < 0].sum() * d.h)  # round-off noise, kept signed
    tv = float(np.dot(-np.expm1(d.s[:z]), d.f[:z]) * d.h)
    tv += d.h * d.h * d.f[z] / 12.0  # kink of (1 - e^s)_+ at the grid point s = 0
    defect = abs(1.0 - d.mass1) * epochs + 10.0 * negative
    return ExactTV(tv, defect + 1e-12, "fft")


def tv_from_moments(moment, epochs: int, var_log: float, nodes: int = 16, panels: int = 32) -> float:
    """Formula (14): (1/pi) int_0^inf (1 - Re F(1/2 + iu)^E)/(u^2 + 1/4) du.

    `moment(u)` returns F_M(1/2 + iu) for an array u; `var_log` = Var ln L_M
    sets the cut-off u_max, beyond which |F|^E ~ exp(-E var u^2 / 2) <= e^-45
    and only the "1" part remains: (2/pi) arctan(1/(2 u_max)) (Lemma C.3).
    """
    umax = math.sqrt(2.0 * 45.0 / (epochs * var_log))
    gx, gw = np.polynomial.legendre.leggauss(nodes)
    edges = np.linspace(0.0, umax, panels + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        u = 0.5 * (hi - lo) * gx + 0.5 * (hi + lo)
        integrand = (1.0 - np.real(moment(u) ** epochs)) / (u * u + 0.25)
        total += 0.5 * (hi - lo) * float(gw @ integrand)
    return total / math.pi + (2.0 / math.pi) * math.atan(1.0 / (2.0 * umax))


def tv_mellin(dens: EpochDensity, epochs: int) -> ExactTV:
    """Formula (14) with F_M(1/2 + iu) = E L^{1/2+iu} summed over the V density."""
    stride = max(1, dens.f.size // 65536)  # the density is smooth on this scale
    x, f = dens.x()[::stride], dens.f[::stride] * (dens.dx * stride)
    keep = (np.abs(f) > 1e-22 * f.max()) & (dens.v * x > -1.0)  # signed: see one_epoch
    lnl = np.log1p(dens.v * x[keep])
    a = np.exp(0.5 * lnl) * f[keep]  # sqrt(L) times mass
    fp = np.clip(f[keep], 0.0, None)  # Var ln L only sets the cut-off: ignore round-off signs
    var = float(np.dot(fp, lnl * lnl) / fp.sum() - (np.dot(fp, lnl) / fp.sum()) ** 2)
    moment = lambda u: np.exp(1j * np.outer(u, lnl)) @ a  # noqa: E731
    return ExactTV(tv_from_moments(moment, epochs, var), 1e-12, "mellin")


def density_for(steps: int, epochs: int, sigma: float) -> EpochDensity:
    """The one-epoch density on a V range matched to the ln-Lambda grid of E epochs."""
    if sigma < MIN_SIGMA:
        raise NumericsUnreliable(f"the exact TV is computed for sigma >= {MIN_SIGMA} "
                                 "(e^(1/sigma^2) is too heavy-tailed below)")
    v = math.sqrt(math.expm1(1.0 / (sigma * sigma)) / steps)
    top = math.expm1(min(log_period(steps, epochs, sigma) / 2.0, 700.0)) / v  # V of the grid's top
    return epoch_density(steps, sigma, v_max=min(top, upper_range(steps, 1.0 / sigma, v)))


def exact_tv(steps: int, epochs: int, sigma, check: bool = True) -> ExactTV:
    """d_TV(P_M^E, Q_M^E) (Theorem 4.1), with an error estimate.

    With check=True both routes run and their difference enters the error.
    """
    sigma = float(sigma)
    if steps == 1:
        return ExactTV(tv_m1(epochs, sigma), 1e-15, "closed-form M=1")
    dens = density_for(steps, epochs, sigma)
    a = tv_fft(dens, epochs)
    if check:
        b = tv_mellin(dens, epochs)
        a = ExactTV(a.tv, a.error + abs(a.tv - b.tv), "fft+mellin")
    if not (math.isfinite(a.tv) and a.error <= MAX_ERROR):
        raise NumericsUnreliable(f"the exact TV at M={steps}, E={epochs}, sigma={sigma:g} is not reliable "
                         f"(error estimate {a.error:.1e}); use the closed-form bound or Monte Carlo")
    return a


def exact_sigma(steps: int, epochs: int, lam, resolution="1e-6") -> str:
    """Least sigma on the resolution grid with exact TV <= lambda (C.4), as a decimal.

    TV decreases in sigma (C.4), so the feasible sigma form [sigma_lambda, inf);
    we bracket sigma_lambda starting from the GDP-limit sigma (B.3, close but not
    a bound) and never above the closed form (feasible by Cor. 3.4), solve by
    Brent, then round UP to the grid and check the grid point below misses.
    """
    lam = float(lam)
    res = parse_positive_decimal("resolution", resolution)
    f = lambda s: exact_tv(steps, epochs, s, check=False).tv - lam  # noqa: E731
    closed = closed_form_sigma(steps, epochs, lam)  # feasible: TV <= U(c_E) = lambda
    seed = min(gdp_limit_sigma(steps, epochs, lam), closed)  # B.3: usually within 0.5 %
    lo, hi = seed, seed
    if f(seed) > 0:  # seed infeasible: step up towards the closed form
        while f(hi) > 0:
            if hi >= closed:
                raise NumericsUnreliable("exact TV above the target at the closed-form sigma")
            lo, hi = hi, min(hi * 1.01, closed)
    else:
        while f(lo) <= 0:
            hi, lo = lo, lo * 0.99
    root = brentq(f, lo, hi, xtol=float(res) * 1e-3, rtol=1e-13) if lo < hi else hi
    k = math.ceil(root / float(res))
    while f(float(res * (k - 1))) <= 0:  # round up: the grid point below must miss
        k -= 1
    while f(float(res * k)) > 0:
        k += 1
    return decimal_str(res * k)
