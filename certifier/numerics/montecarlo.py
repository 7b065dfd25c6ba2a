"""Monte Carlo estimate of the TV of the Gaussian pair (Appendix C.4 check).

d_TV = E_P (1 - Lambda)_+ with Lambda = prod_e (1/M) sum_j exp(t X_ej - t^2/2),
X ~ N(0, I_{EM}) under P. Chunked, so memory stays bounded for any sample size.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MonteCarloTV:
    tv: float
    se: float
    samples: int


def monte_carlo_tv(steps: int, epochs: int, sigma: float, samples: int, seed: int = 0,
                   chunk_values: int = 1 << 22, progress=None) -> MonteCarloTV:
    """Mean and standard error of (1 - Lambda)_+ over `samples` draws under P."""
    t = 1.0 / float(sigma)
    rng = np.random.default_rng(seed)
    per_chunk = max(1, chunk_values // (steps * epochs))
    total = total_sq = 0.0
    done = 0
    while done < samples:
        n = min(per_chunk, samples - done)
        log_lam = np.zeros(n)
        for _ in range(epochs):  # one epoch at a time: n x M normals
            x = rng.standard_normal((n, steps))
            log_lam += np.log(np.mean(np.exp(t * x - 0.5 * t * t), axis=1))
        g = -np.expm1(np.minimum(log_lam, 0.0))  # (1 - Lambda)_+
        total += float(g.sum())
        total_sq += float(np.dot(g, g))
        done += n
        if progress:
            progress(done / samples)
    mean = total / samples
    var = max(0.0, total_sq / samples - mean * mean) * samples / max(1, samples - 1)
    return MonteCarloTV(mean, math.sqrt(var / samples), samples)
