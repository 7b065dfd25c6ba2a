"""The random-allocation sampler of Algorithm 1 (lines 2 and 4).

The N0 records (genuine and ghost) are put in a uniformly random order, which gives each record an
index in {0, ..., N0-1}; in every epoch each index is assigned to one of the M steps uniformly and
independently (a fresh allocation per epoch).  A step may be empty; its size is Binomial(N0, 1/M).
"""
from __future__ import annotations

import numpy as np

from certifier.errors import ParameterError


def random_order(n0: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation: position i holds the record with index i."""
    if n0 < 1:
        raise ParameterError("N0 must be at least 1")
    return rng.permutation(n0)


def allocate_epoch(n0: int, steps: int, rng: np.random.Generator, size=None) -> np.ndarray:
    """Step of each index for one epoch: integers in [0, steps), uniform and independent.

    With `size=T` returns a (T, n0) array: T independent allocations (used to vectorize trials)."""
    if steps < 1:
        raise ParameterError("M must be at least 1")
    shape = (n0,) if size is None else (size, n0)
    return rng.integers(0, steps, size=shape)


def step_members(assignment: np.ndarray, steps: int) -> list[np.ndarray]:
    """For a 1-D assignment, the indices assigned to each step (list of length `steps`, some empty)."""
    order = np.argsort(assignment, kind="stable")
    counts = np.bincount(assignment, minlength=steps)
    return np.split(order, np.cumsum(counts)[:-1])


class Allocation:
    """The whole sampling schedule of one run: random order once, then a fresh allocation per epoch."""

    def __init__(self, n0: int, steps: int, epochs: int, rng: np.random.Generator):
        self.n0, self.steps, self.epochs = int(n0), int(steps), int(epochs)
        self.order = random_order(self.n0, rng)
        self._rng = rng

    def epochs_iter(self):
        """Yield, per epoch, a list of M arrays of *record* positions (into the padded data set)."""
        for _ in range(self.epochs):
            a = allocate_epoch(self.n0, self.steps, self._rng)
            yield [self.order[idx] for idx in step_members(a, self.steps)]
