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

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr

from certifier.errors import NumericsUnreliableError
from certifier.numerics.one_epoch import PLAIN_POINTS, EpochDensity, epoch_density, upper_range
from certifier.numerics.one_jump import delta_pq_bound, gauss_legendre

GRID_POINTS = 1 << 17  # points of the ln-Lambda grid
MIN_SIGMA = 0.2
V_DX = 1.0 / 512         # spacing of the V grid (C.4)
PLAIN_CUT = 1e-15        # P-mass a plain V grid may cut (bounded in its estimate) rather than invert tilted


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
    mass on the grid (1 up to round-off and the cut tails). `cuts`: bounds on one epoch's P- and Q-mass
    that the grids cut or move (`grid_cuts`, formed on first use: the TV never asks), None without a V grid.
    """
    s: np.ndarray
    f: np.ndarray
    h: float
    mass1: float
    zero: int  # index of s = 0
    epoch: EpochDensity | None = None   # the V grid it was formed from
    period: float = 0.0

    @functools.cached_property
    def cuts(self) -> tuple[float, float] | None:
        return None if self.epoch is None else grid_cuts(self.epoch, self.period)


def log_lambda_density(dens: EpochDensity, epochs: int, points: int = GRID_POINTS) -> LogLambdaDensity:
    """E-fold periodic convolution of the ln L_M density by FFT (C.4)."""
    fs, h, period = _log_grid(dens, epochs, points)
    n = fs.size
    zero = n // 2
    shifted = np.roll(fs * h, -zero)  # s = 0 first
    fe = np.fft.irfft(np.fft.rfft(shifted) ** epochs, n)
    fe = np.roll(fe, zero) / h
    s = -period / 2 + h * np.arange(n)
    return LogLambdaDensity(s, fe, h, float(fs.sum() * h), zero, dens, period)


def log_upper_tail(steps: int, t: float, y: float) -> tuple[float, float]:
    """ln of bounds on P(L_M > y) and Q(L_M > y), y > 0, in closed form and by Chernoff on truncated steps.

    With z = (ln y + t^2/2)/t (Y > y iff X > z): L_M > y implies some Y_k > y, so P <= M Phibar(z); and
    Q(L_M > y) = (1/M) sum_j E_P[Y_j; L_M > y] with E_P[Y_j; L_M > y] <= E_P[Y_j; Y_j > y] + sum_{k != j} E_P[Y_j]
    P(Y_k > y) = Phibar(z - t) + (M - 1) Phibar(z). Inside the bulk of many steps (M Phibar(z) >= 1) these say
    nothing; there the steps are cut at b = M (y - 1)/k (k of them needed): P <= M Phibar(z_b) + P(A > y) and
    Q <= Phibar(z_b - t) + (M - 1) Phibar(z_b) + E[A; A > y], A = (1/M) sum min(Y_j, b) (L_M = A where no step
    exceeds b; k from 1/2 to 32), with Chernoff on A: e^{K(l) - l y} and e^{K(l) - l y} K'(l),
    K(l) = M ln E e^{l min(Y, b)/M}."""
    def union(z: float) -> tuple[float, float]:
        others = math.log(steps - 1.0) + float(log_ndtr(-z)) if steps > 1 else -math.inf
        return math.log(steps) + float(log_ndtr(-z)), float(np.logaddexp(float(log_ndtr(t - z)), others))

    log_p, log_q = union((math.log(y) + 0.5 * t * t) / t)
    if y > 1.0 and max(log_p, log_q) > -40.0:
        for k in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0):
            cut_p, cut_q = union((math.log(steps * (y - 1.0) / k) + 0.5 * t * t) / t)
            c_p, c_q = _chernoff_truncated(steps, t, y, steps * (y - 1.0) / k)
            log_p = min(log_p, float(np.logaddexp(cut_p, c_p)))
            log_q = min(log_q, float(np.logaddexp(cut_q, c_q)))
    return min(log_p, 0.0), min(log_q, 0.0)


def _chernoff_truncated(steps: int, t: float, y: float, b: float) -> tuple[float, float]:
    """ln min_l e^{K(l) - l y} and ln min_l e^{K(l) - l y} K'(l) (log_upper_tail), the transform of min(Y, b) by
    Gauss-Legendre in z on panels halving toward z_b (the integrand e^{l Y/M} peaks there), expm1 against M ln."""
    z_b = (math.log(b) + 0.5 * t * t) / t
    lo = min(-40.0, z_b - 1.0)
    edges = np.array([lo] + [z_b - (z_b - lo) * 0.5 ** j for j in range(1, 48)] + [z_b])
    x, w = gauss_legendre(-1.0, 1.0, 1)                    # one 16-point panel, mapped onto each [edge, edge]
    half, mid = 0.5 * np.diff(edges), 0.5 * (edges[:-1] + edges[1:])
    z, w = (mid[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()
    w = w * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    m = np.exp(t * z - 0.5 * t * t)                  # Y at the nodes, below b
    p_b = float(np.exp(log_ndtr(-z_b)))

    def parts(log_l: float) -> tuple[float, float]:
        lam = math.exp(log_l) / steps
        extra = float(w @ np.expm1(lam * m)) + p_b * math.expm1(lam * b)    # E e^{l min(Y, b)/M} - 1
        slope = (float(w @ (m * np.exp(lam * m))) + p_b * b * math.exp(lam * b)) / (1.0 + extra)   # K'(l)
        return steps * math.log1p(extra) - math.exp(log_l) * y, math.log(slope)

    top = math.log(700.0 * steps / b)               # l b / M <= 700
    bounds = (min(top - 1.0, math.log(1e-3)), top)
    best_p = minimize_scalar(lambda x: parts(x)[0], bounds=bounds, method="bounded", options={"xatol": 1e-4})
    best_q = minimize_scalar(lambda x: sum(parts(x)), bounds=bounds, method="bounded", options={"xatol": 1e-4})
    return min(float(best_p.fun), 0.0), min(float(best_q.fun), 0.0)


def log_lower_tail(steps: int, t: float, y: float) -> float:
    """ln of a bound on P(L_M < y) in closed form (-inf at y <= 0)."""
    if y <= 0.0:
        return -math.inf
    # L_M < y implies every Y_j < M y: Phi(z_M)^M; and L_M >= (prod Y_j)^{1/M} = e^{t Xbar - t^2/2}, Xbar ~ N(0, 1/M),
    # so L_M < y implies Xbar < z: Phi(sqrt(M) z) (the sharper one at small t, where ln M / t makes Phi(z_M) ~ 1);
    # where y exceeds the geometric mean's e^{-t^2/2} neither says anything: Chernoff, e^{r y} (E e^{-r Y/M})^M
    z_m = (math.log(steps * y) + 0.5 * t * t) / t
    z = (math.log(y) + 0.5 * t * t) / t
    out = min(steps * float(log_ndtr(z_m)), float(log_ndtr(math.sqrt(steps) * z)), 0.0)
    if out > -40.0 and y < 1.0:
        chernoff = delta_pq_bound(steps, 1.0 / t, -math.log(y))
        out = min(out, math.log(chernoff) if chernoff > 0.0 else -math.inf)
    return out


def grid_cuts(dens: EpochDensity, period: float) -> tuple[float, float]:
    """Bounds on the P- and Q-mass of one epoch that the two grids cut or move, in closed form (not summed
    from the samples, whose round-off is ~1e-16 of the peak each).

    The V grid [x0, x_top] is an inverse FFT: the mass of V beyond x_top wraps to its bottom (and below x0 to
    its top); the ln-L grid [-period/2, period/2) holds V only inside [x0, x_top], so it cuts at s_hi = min(period/2,
    ln(1 + v x_top)) and s_lo = max(-period/2, ln(1 + v x0)). P-mass: cut above s_hi or below s_lo, wrapped from
    above x_top or below x0. Q-mass (dQ = L dP): the cut top's Q(L > e^{s_hi}); the top's wrap lands lower (at
    V - period of V), so its Q-weight is below the Q-mass it left; the cut bottom's P-mass times e^{s_lo}; the
    bottom's wrap may land as high as s_hi, P-mass times e^{s_hi}."""
    steps, t, v = dens.steps, dens.t, dens.v
    x_top = dens.x0 + dens.dx * (dens.f.size - 1)
    s_hi = min(0.5 * period, math.log1p(v * x_top))
    s_lo = max(-0.5 * period, math.log1p(v * dens.x0)) if v * dens.x0 > -1.0 else -0.5 * period
    top_p, top_q = log_upper_tail(steps, t, math.exp(s_hi))
    wrap_p, wrap_q = log_upper_tail(steps, t, 1.0 + v * x_top)
    low = log_lower_tail(steps, t, math.exp(s_lo))
    low_wrap = log_lower_tail(steps, t, 1.0 + v * dens.x0)
    cut_p = math.exp(top_p) + math.exp(wrap_p) + math.exp(low) + math.exp(low_wrap)
    cut_q = math.exp(top_q) + math.exp(wrap_q) + math.exp(low + s_lo) + math.exp(low_wrap + s_hi)
    return cut_p, cut_q


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
    return epoch_density(steps, sigma, v_max=_plain_top(steps, epochs, sigma, dx), dx=dx)


def _plain_top(steps: int, epochs: int, sigma: float, dx: float) -> float:
    """_v_top, or the top of the longest plain (untilted) V grid where the full range would need the tilted
    inversion and the plain one cuts less than PLAIN_CUT of P-mass (grid_cuts bounds what it cuts)."""
    top = _v_top(steps, epochs, sigma)
    t, v = 1.0 / sigma, math.sqrt(math.expm1(1.0 / (sigma * sigma)) / steps)
    x0 = max(-1.0 / v, -40.0)
    fit = x0 + (PLAIN_POINTS - 1) * dx
    if top <= fit:
        return top
    return fit if math.exp(log_upper_tail(steps, t, 1.0 + v * fit)[0]) <= PLAIN_CUT else top


def tv_vfft(steps: int, epochs: int, sigma: float, second_grid: bool = False) -> tuple[float, float]:
    """E_P (1 - Lambda)_+ from the V density by the FFT composition: (value, error estimate).

    The estimate is the defect of `tv_fft` and 1e-12 for the grids; `second_grid` halves both
    spacings (V and ln Lambda), the paper's "second grid" check of C.4.
    """
    k = 2 if second_grid else 1
    a, defect = tv_fft(density_for(steps, epochs, sigma, V_DX / k), epochs, k * GRID_POINTS)
    return float(a), defect + 1e-12


