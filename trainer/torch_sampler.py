"""Algorithm 1's sampler as a PyTorch batch sampler (extra `torch`): random allocation, lines 2 and 4.

`RandomAllocationBatchSampler(num_examples, steps, epochs, seed, n0)` pads the data set to the public
size N0 with ghost records, puts the N0 records in a random order, and in every epoch allocates each
index to one of the M steps uniformly and independently (trainer.allocation, the same streams as the
NumPy trainer for the same seed).  It yields the E*M batches of the WHOLE run as lists of genuine
record indices; ghosts are never yielded, so a batch may be empty.  An empty batch must still go
through the training step: forward, backward and `optimizer.step()` on a zero-length batch, so that
the step adds its noise N(0, sigma^2 C^2 I) and updates the model (Algorithm 1: every run makes
exactly E*M updates; Opacus clips an empty batch to a zero sum and still adds the noise).

One pass over the sampler is the whole certified run; a second pass is refused, because repeating
the allocation would be a run the certificate does not cover.  The seed selects the allocation: the
attacker must not know it, so a real run uses a secret seed (seed=None draws one from the OS).
"""
from __future__ import annotations

import secrets

import numpy as np
from torch.utils.data import Sampler

from certifier.errors import ParameterError, RefusedError
from trainer.algorithm import streams
from trainer.allocation import Allocation


class RunExhaustedError(RefusedError, RuntimeError):
    """More steps than the certified run's E*M were asked for."""


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class RandomAllocationBatchSampler(Sampler):
    """Batches of Algorithm 1 for `DataLoader(dataset, batch_sampler=...)`: E*M lists of indices."""

    def __init__(self, num_examples: int, steps: int, epochs: int, seed: int | None = 0, n0: int | None = None):
        self.num_examples = _positive_int("num_examples", num_examples)
        self.steps = _positive_int("steps M", steps)
        self.epochs = _positive_int("epochs E", epochs)
        self.n0 = self.num_examples if n0 is None else _positive_int("N0", n0)
        if self.num_examples > self.n0:
            raise ParameterError(f"the dataset has {self.num_examples} records, more than N0 = {self.n0}; "
                                 "refusing to train")
        self.seed = secrets.randbits(128) if seed is None else int(seed)
        self.b0 = self.n0 / self.steps      # the public expected batch size of line 7
        self.empty_steps = 0                # batches without a genuine record, counted as yielded
        self._started = False

    def __len__(self) -> int:
        return self.epochs * self.steps

    def __iter__(self):
        if self._started:
            raise RunExhaustedError(f"this sampler has already yielded its run of E*M = {len(self)} steps; one pass "
                               "over the data loader is the whole certified run (do not wrap it in an epoch "
                               "loop); a new run needs a new sampler and its own certificate")
        self._started = True
        alloc = Allocation(self.n0, self.steps, self.epochs, streams(self.seed)[0])
        for members in alloc.epochs_iter():
            for records in members:
                genuine = records[records < self.num_examples]   # positions >= n are ghost records
                self.empty_steps += int(genuine.size == 0)
                yield [int(i) for i in genuine]
