"""Route "vfft" of the exact TV (Appendix C.4): the density of V = (L_M - 1)/v, then ln Lambda.

d_TV(P_M^E, Q_M^E) = E_P (1 - Lambda)_+ with ln Lambda = sum_e ln L_{M,e}.

From the one-epoch density of certifier.numerics.one_epoch: the density of s = ln L_M on an
equispaced grid, its E-fold periodic convolution by FFT, then the integral of
(1 - e^s)_+ with the h^2 f(0)/12 kink correction (C.4). The same density of ln Lambda
serves certifier.numerics.tradeoff. The V grid must resolve the density of L_M, so this route
suits light tails (large M or sigma); certifier.numerics.tv_laplace has no such limit.
Floating point with an error estimate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline

from certifier.errors import NumericsUnreliableError
from certifier.numerics.one_epoch import EpochDensity, epoch_density, upper_range

GRID_POINTS = 1 << 17  # points of the ln-Lambda grid
MIN_SIGMA = 0.2
V_DX = 1.0 / 512         # spacing of the V grid (C.4)


def log_period(steps: int, epochs: int, sigma: float) -> float:
    """Period of the ln-Lambda grid: covers 24 sd of E epochs (C.4) and one epoch's tail."""
    t = 1.0 / sigma
    v2 = math.expm1(t * t) / steps
    one_epoch = 2.0 * math.log1p(math.sqrt(v2) * upper_range(steps, t, math.sqrt(v2)))
    return max(24.0 * math.sqrt(epochs * v2) + 2.0 * epochs * v2, min(8.0, one_epoch))


def _log_grid(dens: EpochDensity, epochs: int, points: int) -> tuple[np.ndarray, float, float]:
    """Samples of the density of ln L_M on the periodic grid used for composition."""
    v = dens.v
    period = log_period(dens.steps, epochs, 1.0 / dens.t)
    h = period / points
    s = -period / 2 + h * np.arange(points)  # s = 0 is a grid point
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


def log_lambda_density(dens: EpochDensity, epochs: int, points: int = GRID_POINTS) -> LogLambdaDensity:
    """E-fold periodic convolution of the ln L_M density by FFT (C.4)."""
    fs, h, period = _log_grid(dens, epochs, points)
    n = fs.size
    zero = n // 2
    shifted = np.roll(fs * h, -zero)  # s = 0 first
    fe = np.fft.irfft(np.fft.rfft(shifted) ** epochs, n)
    fe = np.roll(fe, zero) / h
    s = -period / 2 + h * np.arange(n)
    return LogLambdaDensity(s, fe, h, float(fs.sum() * h), zero)


def tv_fft(dens: EpochDensity, epochs: int, points: int = GRID_POINTS) -> tuple[float, float]:
    """E_P (1 - Lambda)_+ against the composed density, with the kink correction (C.4),
    and its defect: the one-epoch mass missing from the grid (times E) and the round-off."""
    d = log_lambda_density(dens, epochs, points)
    z = d.zero
    negative = float(-d.f[d.f < 0].sum() * d.h)  # round-off noise, kept signed
    tv = float(np.dot(-np.expm1(d.s[:z]), d.f[:z]) * d.h)
    tv += d.h * d.h * d.f[z] / 12.0  # kink of (1 - e^s)_+ at the grid point s = 0
    defect = abs(1.0 - d.mass1) * epochs + 10.0 * negative
    return tv, defect


def _v_top(steps: int, epochs: int, sigma: float) -> float:
    """Top of the V range: the ln-Lambda grid's top or the one-epoch tail, whichever is lower."""
    v = math.sqrt(math.expm1(1.0 / (sigma * sigma)) / steps)
    top = math.expm1(min(log_period(steps, epochs, sigma) / 2.0, 700.0)) / v
    return min(top, upper_range(steps, 1.0 / sigma, v))


def v_grid_points(steps: int, epochs: int, sigma: float) -> int:
    """Points of the V grid `density_for` would use before any tilt (a cost predictor)."""
    v = math.sqrt(math.expm1(1.0 / (sigma * sigma)) / steps)
    width = _v_top(steps, epochs, sigma) - max(-1.0 / v, -40.0)
    return 1 << int(math.ceil(math.log2(width / V_DX)))


def density_for(steps: int, epochs: int, sigma: float, dx: float = V_DX) -> EpochDensity:
    """The one-epoch density on a V range matched to the ln-Lambda grid of E epochs."""
    if sigma < MIN_SIGMA:
        raise NumericsUnreliableError(f"the density of L_M is computed for sigma >= {MIN_SIGMA} "
                                 "(e^(1/sigma^2) is too heavy-tailed below)")
    return epoch_density(steps, sigma, v_max=_v_top(steps, epochs, sigma), dx=dx)


def tv_vfft(steps: int, epochs: int, sigma: float, second_grid: bool = False) -> tuple[float, float]:
    """E_P (1 - Lambda)_+ from the V density by the FFT composition: (value, error estimate).

    The estimate is the defect of `tv_fft` and 1e-12 for the grids; `second_grid` halves both
    spacings (V and ln Lambda), the paper's "second grid" check of C.4.
    """
    k = 2 if second_grid else 1
    a, defect = tv_fft(density_for(steps, epochs, sigma, V_DX / k), epochs, k * GRID_POINTS)
    return float(a), defect + 1e-12


