"""The one-epoch likelihood ratio L_M of the Gaussian pair, numerically.

Under P_M = N(0, I_M) the likelihood ratio of one epoch is
L_M = (1/M) sum_j Y_j with Y_j = exp(t X_j - t^2/2), t = 1/sigma (Section 3).
We standardise V = (L_M - 1)/v, v^2 = Var L_M = (e^{t^2} - 1)/M, and obtain
its density from the characteristic function (eq. 15 of Theorem 4.1):

    phi_V(w) = exp(-i w / v) phi_Y(w / (M v))^M = exp(M log1p(z(w / (M v)))),
    z(u) = e^{-iu} phi_Y(u) - 1 = E[e^{iu(Y-1)} - 1 - iu(Y-1)]      (C.4)

z(u) is computed by the trapezoidal rule on the contour x + ic, 0 < tc <= pi/2,
where e^{iuY} decays instead of oscillating (the contour shift of C.4); the
density of V then follows from one inverse FFT. Everything is float64 with
a-posteriori checks; nothing here is certified (see certifier.bounds.upper_v1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, ndtri

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics.series import exp_minus_one_plus, log1p_minus

_SQRT_2PI = math.sqrt(2.0 * math.pi)
PLAIN_POINTS = 1 << 19  # longer V grids are replaced by a tilted inversion


def z_of_u(u: np.ndarray, t: float, dx: float = 0.03) -> np.ndarray:
    """z(u) = e^{-iu} phi_Y(u) - 1 for Re u >= 0, Im u >= 0 (C.4), by the shifted-contour trapezoid.

    On the contour Y = A e^{i theta}, 0 < theta <= pi/2, so |e^{iuY}| <= 1 there for such u.
    """
    c = min(math.pi / (2.0 * t), 3.0)  # keeps e^{c^2/2} <= 90: little cancellation
    half = math.sqrt(2.0 * 40.0 + c * c) + 1.0
    x = np.arange(-half, half + dx / 2, dx)
    zeta = x + 1j * c
    weight = np.exp(-0.5 * zeta * zeta) * (dx / _SQRT_2PI)  # Gaussian density on the contour
    ym1 = np.exp(t * zeta - 0.5 * t * t) - 1.0  # Y - 1 on the contour
    out = np.empty(u.shape, dtype=complex)
    for lo in range(0, u.size, 256):  # bounded memory: 256 frequencies at a time
        uu = u[lo:lo + 256, None]
        out[lo:lo + 256] = exp_minus_one_plus(-1j * uu * ym1[None, :]) @ weight  # e^w - 1 - w
    return out


_PHI: dict = {}    # the last few blocks of phi_V: the second grid (dx halved, the same period) reuses them
PHI_CACHE = 64


def _phi_block(steps: int, t: float, v: float, dw: float, alpha: float, j0: int, block: int) -> np.ndarray:
    """phi_V(w_j + i alpha) = exp(M log1p(z(.))) at w_j = j dw, j0 <= j < j0 + block (read-only)."""
    key = (steps, t, v, dw, alpha, j0, block)
    if key not in _PHI:
        if len(_PHI) >= PHI_CACHE:
            _PHI.pop(next(iter(_PHI)))
        w = dw * np.arange(j0, j0 + block)
        zz = z_of_u((w + 1j * alpha) / (steps * v), t)
        phi = np.exp(steps * (zz + log1p_minus(zz)))  # exp(M log1p(z)), see epoch_density
        phi.flags.writeable = False
        _PHI[key] = phi
    return _PHI[key]


@dataclass(frozen=True)
class EpochDensity:
    """Density of V = (L_M - 1)/v on the grid x_k = x0 + k*dx (values f, floats)."""
    steps: int
    t: float
    v: float
    x0: float
    dx: float
    f: np.ndarray
    cutoff: float           # largest angular frequency used
    phi_at_cutoff: float    # |phi_V| there: a truncation diagnostic
    negative_mass: float    # mass of the (round-off) negative values, a diagnostic

    def x(self) -> np.ndarray:
        return self.x0 + self.dx * np.arange(self.f.size)


def bulk_sd(steps: int, sigma: float) -> float:
    """Standard deviation of ln L_M in its bulk: the steps beyond the level z that about one of
    the M steps exceeds are dropped. With X <= z, E Y = Phi(z - t), E Y^2 = e^{t^2} Phi(z - 2t)
    (in logs: both underflow at small sigma); the relative variance of L_M is then
    (E Y^2 / (E Y)^2 - 1)/M, and of ln L_M about its log1p."""
    t = 1.0 / sigma
    z = -float(ndtri(1.0 / (steps + 1.0)))
    log_ratio = t * t + log_ndtr(z - 2.0 * t) + log_ndtr(z) - 2.0 * log_ndtr(z - t)  # ln(E Y^2/(E Y)^2)
    rel_var = math.expm1(min(float(log_ratio), 700.0)) / steps
    return math.sqrt(min(t * t, max(math.log1p(rel_var), 1e-24)))


def upper_range(steps: int, t: float, v: float, tail: float = 1e-17) -> float:
    """A V beyond which the mass of V is below `tail` (one big Y_j dominates: L_M - 1 ~ (y - 1)/M)."""
    z = -float(ndtri(tail / steps))  # M Pr(Y > y) <= tail
    y = math.exp(t * z - 0.5 * t * t)
    return max(40.0, (y - 1.0) / (steps * v))


def epoch_density(steps: int, sigma: float, v_max: float | None = None,
                  dx: float = 1.0 / 512, tol: float = 1e-17) -> EpochDensity:
    """Density of V on [x0, x0 + n dx) by inverse FFT of phi_V (eq. 15)."""
    if steps < 2:
        raise ParameterError("epoch_density needs M >= 2 (M = 1 has a closed form)")
    t = 1.0 / sigma
    v = math.sqrt(math.expm1(t * t) / steps)
    x0 = max(-1.0 / v, -40.0)
    hi = upper_range(steps, t, v) if v_max is None else v_max
    width = hi - x0
    n = 1 << int(math.ceil(math.log2(width / dx)))
    alpha = 0.0
    if n > PLAIN_POINTS:
        # Heavy tail (small M, small sigma): rather than a period long enough for the whole
        # tail, invert the tilted density g(x) = e^{-alpha x} f(x), whose transform is
        # phi_V(w + i alpha), and recover f = e^{alpha x} g. The tail beyond the period is
        # dropped (it lowers the grid's mass, which the error estimate of `exact` counts);
        # what wraps around is damped by e^{-alpha period} = 1e-3.
        n = PLAIN_POINTS
        alpha = math.log(1e3) / (n * dx)
    period = n * dx
    dw = 2.0 * math.pi / period
    # frequencies in blocks until |phi_V| stays below tol
    phis, j0, block = [], 0, 512
    while True:
        phi = _phi_block(steps, t, v, dw, alpha, j0, block)
        phis.append(phi)
        j0 += block
        if np.abs(phi[-64:]).max() < tol:
            break
        if j0 >= n // 2:  # the grid cannot resolve this density
            raise NumericsUnreliableError(f"the density of L_M at M={steps}, sigma={sigma:g} is not resolved by the "
                                          f"grid (|phi_V| = {np.abs(phi[-64:]).max():.1e} at the Nyquist frequency); "
                             "the exact TV is not available there (use the closed-form bound)")
    phi = np.concatenate(phis)
    w = dw * np.arange(phi.size)
    # phi here is E exp(i w (L - 1) / v) = phi_V(w): log1p(z) already removed e^{-iu}
    keep = np.abs(phi) >= tol * 1e-3
    last = int(np.nonzero(keep)[0].max()) + 1 if keep.any() else 1
    phi, w = phi[:last], w[:last]
    # density on x0 + k dx: f(x) = (1/period) sum_j phi(w_j) e^{-i w_j x} (both signs)
    coeff = np.zeros(n // 2 + 1, dtype=complex)
    coeff[:last] = phi * np.exp(-1j * w * x0)
    f = np.fft.irfft(np.conj(coeff), n) * (n / period)
    if alpha:
        f *= np.exp(alpha * (x0 + dx * np.arange(n)))  # undo the tilt
    # FFT round-off leaves tiny negative values; they are kept (signed) so the
    # total mass stays exactly phi_V(0) = 1 -- clipping them would add mass
    # that the E-fold composition multiplies by E.
    negative = float(-f[f < 0].sum() * dx)
    return EpochDensity(steps, t, v, x0, dx, f, float(w[-1]), float(abs(phi[-1])), negative)
