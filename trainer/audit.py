"""Membership-inference audit of the linear model (Section 5.3, Table 2 of the paper).

The model is w in R^16 with per-record loss -<w, x>; the data set D has twelve all-zero records,
D+ adds the target 2C*x_hat (or the all-zero target with `zero_target`), N0 = 16, and training is
Algorithm 1 with plain SGD from w = 0 and learning rate B0 = N0/M.  Each trial runs Algorithm 1 on
D and on D+ with the same random order, allocations and noise (zero-out adjacency: on D the
target's slot holds a ghost), and the attacker applies the optimal test to each released model:
project on x_hat, normalise by sigma*C*sqrt(E*M), and say "member" iff the result exceeds mu/2,
mu = sqrt(E/M)/sigma.  The optimal test is correct with probability Phi(mu/2) under each hypothesis.

Trials are vectorised: all trials and both worlds advance together, step by step, E*M updates.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from certifier.errors import ParameterError
from certifier.numerics.closed_form import tv_bound
from certifier.numerics.exact import exact_tv
from trainer.algorithm import clip

DIM = 16
N0 = 16
N_ZERO = 12


@dataclass
class AuditResult:
    sigma: float
    steps: int
    epochs: int
    trials: int
    zero_target: bool
    measured: float      # balanced accuracy of the attack
    se: float            # one standard error (over trials)
    optimal: float       # Phi(mu/2) (0.5 for the zero target)
    pair: float | None   # 1/2 + 1/2 exact TV of the Gaussian pair (Theorem 4.1)
    bound: float | None  # 1/2 + 1/2 U(c_E) (Theorem 3.3)
    tpr: float           # fraction of D+ models called member
    tnr: float           # fraction of D models called non-member
    seconds: float

    def as_dict(self):
        return asdict(self)


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def optimal_accuracy(steps: int, epochs: int, sigma: float, zero_target: bool = False) -> float:
    if zero_target:
        return 0.5
    return _phi(math.sqrt(epochs / steps) / sigma / 2.0)


def linear_grads(w: np.ndarray, records: np.ndarray) -> np.ndarray:
    """Per-record gradient of the loss -<w, x>: it is -x at every model w (shape of `records`)."""
    return -records + 0.0 * w[..., None, :]


def simulate(sigma: float, steps: int = 128, epochs: int = 125, trials: int = 300, *,
             zero_target: bool = False, clip_norm: float = 1.0, seed: int = 0):
    """Run the paired trials; returns (released models (2, T, 16), x_hat).  World 0 is D, 1 is D+."""
    rng = np.random.default_rng(seed)
    C = float(clip_norm)
    x_hat = np.zeros(DIM)
    x_hat[0] = 1.0
    target = np.zeros(DIM) if zero_target else 2.0 * C * x_hat
    T, M, E = int(trials), int(steps), int(epochs)
    b0 = N0 / M
    lr = b0                                   # plain SGD with learning rate B0
    # Records by position: 0..11 zero records, 12 the target (ghost on D), 13..15 ghosts.
    base = np.zeros((2, T, N0, DIM))
    base[1, :, N_ZERO, :] = target
    # Line 2: a uniformly random order per trial (same in both worlds).
    order = np.argsort(rng.random((T, N0)), axis=1)        # order[t, i] = record at index i
    records = np.take_along_axis(base, order[None, :, :, None], axis=2)
    w = np.zeros((2, T, DIM))
    sd = sigma * C
    for _ in range(E):
        assign = rng.integers(0, M, size=(T, N0))                       # line 4
        onehot = (assign[:, :, None] == np.arange(M)).astype(np.float64)  # (T, N0, M)
        noise = rng.standard_normal((T, M, DIM))                        # shared by both worlds
        # The gradient of -<w,x> does not depend on w, so clipping it once per epoch gives the
        # same per-step sums as clipping at every step.
        g = clip(linear_grads(w, records), C)                            # (2, T, N0, DIM)
        sums = np.einsum("tnm,wtnd->wtmd", onehot, g)                    # line 6, every step
        for s in range(M):                                               # every step updates
            S = (sums[:, :, s, :] + sd * noise[None, :, s, :]) / b0      # line 7
            w -= lr * S
    return w, x_hat


def audit(sigma, steps: int = 128, epochs: int = 125, trials: int = 300, *, zero_target: bool = False,
          seed: int = 0, clip_norm: float = 1.0, with_pair: bool = True) -> AuditResult:
    t0 = time.perf_counter()
    sig = float(sigma)
    if not (sig > 0) or not math.isfinite(sig):
        raise ParameterError("sigma must be a positive number")
    if trials < 2:
        raise ParameterError("need at least 2 trials")
    w, x_hat = simulate(sig, steps, epochs, trials, zero_target=zero_target, clip_norm=clip_norm, seed=seed)
    mu = math.sqrt(epochs / steps) / sig
    u = (w @ x_hat) / (sig * clip_norm * math.sqrt(epochs * steps))   # (2, T)
    member = u > mu / 2.0
    correct_out = ~member[0]
    correct_in = member[1]
    per_trial = 0.5 * (correct_out.astype(float) + correct_in.astype(float))
    measured = float(per_trial.mean())
    se = float(per_trial.std(ddof=1) / math.sqrt(trials))
    pair = bound = None
    if with_pair:
        pair = 0.5 + 0.5 * float(exact_tv(steps, epochs, sig).tv)
        bound = 0.5 + 0.5 * float(tv_bound(steps, epochs, sig))
    return AuditResult(sigma=sig, steps=steps, epochs=epochs, trials=trials, zero_target=zero_target,
                       measured=measured, se=se, optimal=optimal_accuracy(steps, epochs, sig, zero_target),
                       pair=pair, bound=bound, tpr=float(correct_in.mean()), tnr=float(correct_out.mean()),
                       seconds=time.perf_counter() - t0)
