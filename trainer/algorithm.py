"""Algorithm 1 of the paper, exactly: DP-SGD with random allocation (Section 2).

    pad the data set to the public size N0 with ghost records (gradient zero)
    put the N0 records in a uniformly random order                       (line 2)
    for each of E epochs:
        assign every index to one of the M steps uniformly, independently (line 4)
        for each of the M steps (also the empty ones):
            S = sum of clip_C(per-record gradient) over the step's records (line 6)
            S = (S + N(0, sigma^2 C^2 I)) / B0,   B0 = N0 / M                (line 7)
            update the model with S (fixed, data-independent optimizer)
    release only the final model                                         (line 11)

Every run makes exactly E*M updates.  The random order, the allocations, the noise and the initial
model use independent streams spawned from one seed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from certifier.errors import ParameterError
from trainer.allocation import Allocation


def clip(v: np.ndarray, C: float) -> np.ndarray:
    """clip_C(v) = v / max{1, ||v||/C}, row-wise for a 2-D array (one record per row)."""
    v = np.asarray(v, dtype=np.float64)
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(1.0, norms / C)


@dataclass
class TrainResult:
    theta: np.ndarray        # the released (final) model
    updates: int             # number of model updates, always E*M
    empty_steps: int         # steps with no genuine record (they still add noise and update)
    b0: float                # the public divisor N0/M


class SGD:
    """Plain SGD with a fixed learning rate: theta <- theta - lr * S."""

    def __init__(self, lr: float):
        self.lr = float(lr)

    def __call__(self, theta: np.ndarray, S: np.ndarray) -> np.ndarray:
        return theta - self.lr * S


def streams(seed: int):
    """Independent generators for (order+allocation, noise, initial model)."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]


def check_run(n: int, n0: int, steps: int, epochs: int, sigma: float, clip_norm: float) -> None:
    """Refuse a run Algorithm 1 does not cover: more genuine records than N0, or bad M, E, sigma, C."""
    if n > n0:
        raise ParameterError(f"the dataset has {n} records, more than N0 = {n0}; refusing to train")
    if steps < 1 or epochs < 1 or not (sigma > 0) or not (clip_norm > 0):
        raise ParameterError("need M >= 1, E >= 1, sigma > 0, C > 0")


def train(model, X, y, *, n0: int, steps: int, epochs: int, sigma: float, clip_norm: float,
          optimizer=None, lr: float = 1.0, seed: int = 0, theta0=None) -> TrainResult:
    """Run Algorithm 1 on the genuine records (X, y); returns only the final model."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    n = len(X)
    check_run(n, n0, steps, epochs, sigma, clip_norm)
    alloc_rng, noise_rng, init_rng = streams(seed)
    update = optimizer if optimizer is not None else SGD(lr)
    theta = model.init(init_rng) if theta0 is None else np.array(theta0, dtype=np.float64)
    b0 = n0 / steps
    sd = float(sigma) * float(clip_norm)
    alloc = Allocation(n0, steps, epochs, alloc_rng)
    updates = empty = 0
    for members in alloc.epochs_iter():
        for records in members:
            genuine = records[records < n]          # positions >= n are ghost records
            S = np.zeros_like(theta)
            if len(genuine):
                g = model.per_example_grads(theta, X[genuine], y[genuine])
                S += clip(g, clip_norm).sum(axis=0)
            else:
                empty += 1
            S = (S + sd * noise_rng.standard_normal(theta.shape)) / b0
            theta = update(theta, S)
            updates += 1
    return TrainResult(theta=theta, updates=updates, empty_steps=empty, b0=b0)


def accuracy(model, theta, X, y) -> float:
    return float(np.mean(model.predict(theta, X) == np.asarray(y)))
