"""The exact TV by formula (14) with the moments of certifier.numerics.laplace_moments (any tail weight).

    d_TV = 1 - (1/pi) int_0^inf Re F_M(1/2 + iu)^E / (u^2 + 1/4) du          (14)

The integrand is even in u and analytic for |Im u| < 1/2, and |F_M(q)| <= 1 for
0 <= Re q <= 1 (Jensen: E L^a <= (E L)^a = 1), so the trapezoid rule with step du
on [0, inf) errs by at most 2 B / (e^{2 pi a / du} - 1) with a = 0.45 and B the
integral of |u^2 + 1/4|^{-1} on Im u = a. The sum stops where |F|^E has decayed
(or |F| reached its round-off floor); what is left is estimated from the last values.
Every other error is estimated from the coarse sums of the moment line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from certifier.errors import NumericsUnreliableError
from certifier.numerics.laplace_moments import FIRST, SECOND, Discretization, moment_line
from certifier.numerics.one_epoch import bulk_sd

DU = 0.05           # trapezoid step in u
STRIP = 0.45        # half-width used for the aliasing bound (poles of 1/(u^2 + 1/4) at +-i/2)
TAIL_LEVEL = 1e-17  # |F|^E below this ends the u-sum
MAX_TRIES = 6


def _aliasing_bound(du: float) -> float:
    """2 B / (e^{2 pi a/du} - 1), B = int |(x + ia)^2 + 1/4|^{-1} dx at a = STRIP."""
    x, dx = np.linspace(-200.0, 200.0, 400_001, retstep=True)
    y = 1.0 / np.abs((x + 1j * STRIP) ** 2 + 0.25)
    b = float((y.sum() - 0.5 * (y[0] + y[-1])) * dx) + 2.0 / 200.0  # trapezoid, plus the tails beyond 200
    return 2.0 * b / math.expm1(2.0 * math.pi * STRIP / du)


ALIASING = _aliasing_bound(DU)


@dataclass(frozen=True)
class LaplaceTV:
    tv: float
    error: float
    u_max: float     # where the u-sum stopped: a hint for the next sigma
    parts: dict      # the error budget, term by term


def u_guess(steps: int, epochs: int, sigma: float) -> float:
    """u where exp(-E s^2 u^2/2) = TAIL_LEVEL, s the bulk sd of ln L_M: |F| decays at least this fast
    near its mode (measured: 1.1 to 10 times the u needed)."""
    sd = bulk_sd(steps, sigma)
    return max(2.0, math.sqrt(2.0 * math.log(1.0 / TAIL_LEVEL) / epochs) / sd)


def next_u(u: np.ndarray, mag: np.ndarray, epochs: int, u_top: float) -> float:
    """Extrapolate ln|F| ~ a - b u^2 from the decayed part of the line to |F|^E = TAIL_LEVEL."""
    fit = mag > 1e-10  # well above the round-off floor
    if fit.sum() >= 8:
        uu, ll = u[fit][-fit.sum() // 2:], np.log(mag[fit][-fit.sum() // 2:])
        b = -float(np.polyfit(uu * uu, ll, 1)[0])
        if b > 0:
            need = uu[-1] ** 2 + (epochs * ll[-1] - math.log(TAIL_LEVEL)) / (epochs * b)
            return float(min(max(1.2 * math.sqrt(need), 1.3 * u_top), 20.0 * u_top))
    return 2.0 * u_top


def decayed_line(steps: int, epochs: int, sigma: float, u_hint: float | None = None,
                 disc: Discretization = FIRST):
    """(line, cut): the moment line F_M(1/2 + iu), grown in u until |F|^E has decayed (or reached round-off)
    inside it, and the index after which every value is small. Shared by (14) and the privacy profile."""
    u_top = u_hint or u_guess(steps, epochs, sigma)
    for _ in range(MAX_TRIES):
        line = moment_line(steps, sigma, u_top, DU, disc)
        mag = np.abs(line.f)
        log_mag = np.log(np.maximum(mag, 1e-300))
        done = (epochs * log_mag < math.log(TAIL_LEVEL)) | (mag < 3.0 * line.roundoff)  # decayed, or round-off
        loud = np.nonzero(~done)[0]
        cut = int(loud[-1]) + 1 if loud.size else 1  # every later value is small
        if cut < 0.9 * mag.size:
            return line, cut
        u_top = next_u(line.u, mag, epochs, u_top)
    raise NumericsUnreliableError(f"|F_M(1/2 + iu)|^E has not decayed by u = {u_top:.0f} "
                                  f"(M={steps}, E={epochs}, sigma={sigma:g})")


def tv_laplace(steps: int, epochs: int, sigma: float, u_hint: float | None = None,
               disc: Discretization = FIRST) -> LaplaceTV:
    """(14) on the moment line, growing u_max until |F|^E has decayed inside it."""
    line, cut = decayed_line(steps, epochs, sigma, u_hint, disc)
    value = formula14(line.f[:cut + 1], DU, epochs)
    n = value.n
    slope = epochs * np.maximum(np.abs(line.f[:n]), 1e-300) ** (epochs - 1)  # |d F^E / d F|
    parts = {
        "r_step": abs(formula14(line.f_coarse_r[:n], DU, epochs).tv - value.tv),
        "x_step": abs(formula14(line.f_coarse_x[:n], DU, epochs).tv - value.tv),
        "r_cut": float(value.weight @ (slope * line.truncation[:n])),
        "roundoff": float(value.weight @ (slope * line.roundoff[:n])),
        "u_step": ALIASING,
        "u_cut": value.tail,
    }
    return LaplaceTV(value.tv, sum(parts.values()), float(line.u[n - 1]), parts)


@dataclass(frozen=True)
class Formula14:
    tv: float
    tail: float          # estimate of the part beyond the last u
    weight: np.ndarray   # trapezoid weights du / (pi (u^2 + 1/4)), halved at u = 0
    n: int


def formula14(f: np.ndarray, du: float, epochs: int) -> Formula14:
    """(14) by the trapezoid on u_j = j du, from F_M(1/2 + i u_j) (the caller has cut where |F|^E decayed)."""
    n = f.size
    u = du * np.arange(n)
    weight = np.full(n, du / math.pi) / (u * u + 0.25)
    weight[0] *= 0.5
    # beyond the last u: as if |F|^E stayed at its last value (it decays; at the floor it is noise)
    tail = float(np.abs(f[-1]) ** epochs) * (2.0 / math.pi) * math.atan(1.0 / (2.0 * max(u[-1], du)))
    return Formula14(1.0 - float(weight @ np.real(f ** epochs)), tail, weight, n)


def tv_laplace_second(steps: int, epochs: int, sigma: float, u_hint: float | None = None) -> LaplaceTV:
    """The same formula on the second discretization (other ray, contour, steps and cut-offs)."""
    return tv_laplace(steps, epochs, sigma, None if u_hint is None else 1.1 * u_hint, SECOND)
