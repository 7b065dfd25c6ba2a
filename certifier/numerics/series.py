"""e^{-z} - 1 + z and log(1 + a) - a for complex arguments, without cancellation.

Both appear wherever a characteristic function or Laplace transform of the likelihood
ratio is raised to the power M (C.4): the leading terms cancel exactly, and what is
left must keep its relative accuracy. numpy's complex log1p does not (it computes
log|1 + a| from hypot), hence the series here.
"""
from __future__ import annotations

import numpy as np

# (|z| below, terms to k = K): the remainder of sum_{k >= 2} w^k/k! after k = K is below
# 2.2 |w|^{K-1}/(K+1)! < 1e-22 of the leading w^2/2 in each band (|z| < 0.5 took K = 20 in every band)
SERIES_BANDS = ((1e-3, 7), (1e-2, 9), (0.1, 13), (0.5, 20))


def exp_minus_one_plus(z: np.ndarray) -> np.ndarray:
    """e^{-z} - 1 + z for complex z with Re z >= 0 (or |z| small)."""
    z = np.asarray(z)
    out = np.empty_like(z, dtype=complex)
    mag = np.abs(z)
    big = mag >= SERIES_BANDS[-1][0]
    out[big] = np.exp(-z[big]) - 1.0 + z[big]
    lo = 0.0
    for top, terms in SERIES_BANDS:  # sum_{k >= 2} w^k / k! by Horner, w = -z, as many terms as the band needs
        band = (mag >= lo) & (mag < top)
        lo = top
        if not band.any():
            continue
        w = -z[band]
        acc = np.zeros_like(w, dtype=complex)
        for k in range(terms, 1, -1):
            acc = (acc * w + 1.0) / k
        out[band] = w * w * acc
    return out


def log1p_minus(a: np.ndarray) -> np.ndarray:
    """log(1 + a) - a for complex a (principal branch), accurate for small |a|."""
    out = np.empty_like(a)
    small = np.abs(a) < 0.1
    s = a[small]
    acc = np.zeros_like(s)
    for k in range(17, 1, -1):  # -a^2/2 + a^3/3 - ...; remainder below 0.1^16/17
        acc = s * acc + ((-1) ** (k + 1)) / k
    out[small] = s * s * acc
    big = a[~small]
    out[~small] = np.log1p(big) - big  # |a| >= 0.1: numpy's complex log1p loses nothing here
    return out
