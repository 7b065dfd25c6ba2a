"""e^{-z} - 1 + z and log(1 + a) - a for complex arguments, without cancellation.

Both appear wherever a characteristic function or Laplace transform of the likelihood
ratio is raised to the power M (C.4): the leading terms cancel exactly, and what is
left must keep its relative accuracy. numpy's complex log1p does not (it computes
log|1 + a| from hypot), hence the series here.
"""
from __future__ import annotations

import numpy as np


def exp_minus_one_plus(z: np.ndarray) -> np.ndarray:
    """e^{-z} - 1 + z for complex z with Re z >= 0 (or |z| small)."""
    out = np.exp(-z) - 1.0 + z
    small = np.abs(z) < 0.5
    w = -z[small]
    acc = np.zeros_like(w)
    for k in range(20, 1, -1):  # sum_{k >= 2} w^k / k!; remainder below 0.5^19/20! < 1e-23
        acc = (acc * w + 1.0) / k
    out[small] = w * w * acc
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
