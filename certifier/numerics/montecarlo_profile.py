"""Monte Carlo checks of the privacy profile and trade-off curve (standard errors from the draws).

ln Lambda = sum_e ln L_e with L = (1/M) sum_j exp(t X_j - t^2/2); under P every X_j ~ N(0, 1), under
Q one step J per epoch (uniform) has X_J ~ N(t, 1) (the pair (6)). Bounded integrands only:

    delta_{P||Q}(eps) = E_P (1 - e^eps Lambda)_+,     delta_{Q||P}(eps) = E_Q (1 - e^eps / Lambda)_+,
    FPR(K) = P_P(Lambda > K),                         TPR(K) = P_Q(Lambda > K).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    value: float
    se: float


def log_lambda_samples(steps: int, epochs: int, sigma: float, samples: int, under_q: bool,
                       seed: int = 0, chunk_values: int = 1 << 22) -> np.ndarray:
    """`samples` draws of ln Lambda under P (under_q=False) or Q."""
    t = 1.0 / float(sigma)
    rng = np.random.default_rng(seed)
    out = np.empty(samples)
    per_chunk = max(1, chunk_values // (steps * epochs))
    for lo in range(0, samples, per_chunk):
        n = min(per_chunk, samples - lo)
        acc = np.zeros(n)
        for _ in range(epochs):
            x = rng.standard_normal((n, steps))
            if under_q:
                x[np.arange(n), rng.integers(0, steps, n)] += t
            z = t * x - 0.5 * t * t
            top = z.max(axis=1)
            acc += top + np.log(np.exp(z - top[:, None]).sum(axis=1)) - math.log(steps)
        out[lo:lo + n] = acc
    return out


def _mean(x: np.ndarray) -> Estimate:
    return Estimate(float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)))


def delta_pq(log_lam_p: np.ndarray, eps: float) -> Estimate:
    return _mean(np.clip(-np.expm1(eps + log_lam_p), 0.0, None))


def delta_qp(log_lam_q: np.ndarray, eps: float) -> Estimate:
    return _mean(np.clip(-np.expm1(eps - log_lam_q), 0.0, None))


def rate_above(log_lam: np.ndarray, log_k: float) -> Estimate:
    return _mean((log_lam > log_k).astype(float))
