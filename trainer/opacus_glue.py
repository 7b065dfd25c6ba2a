"""Opacus 1.6 wired to Algorithm 1 from a verified certificate (extra `torch`; docs/integrations.md).

`make_private` verifies the certificate with the independent verifier, takes M, E and sigma from its
claim (random allocation only), and calls Opacus's `PrivacyEngine.make_private` with

    noise_multiplier = sigma, max_grad_norm = C, poisson_sampling = False,
    the data loader of `RandomAllocationBatchSampler` (empty batches collated to zero-length tensors),

then sets the optimizer's divisor to the public expected batch size B0 = N0/M of line 7 (Opacus
would derive int(len(dataset)/len(loader)) instead).  Each `optimizer.step()` then computes
(sum of clipped per-record gradients + N(0, sigma^2 C^2 I)) / B0, also for an empty batch.

Opacus's accountants assume Poisson sampling and do not describe this run, so the engine's
accountant is replaced by `CertificateAccountant`: it counts the steps, refuses a step beyond the
certified E*M, and raises on every request for an epsilon, pointing to the certificate instead.
"""
from __future__ import annotations

import math

from opacus import PrivacyEngine
from opacus.accountants import IAccountant
from opacus.data_loader import dtype_safe, shape_safe, wrap_collate_with_empty
from torch.utils.data import DataLoader
from torch.utils.data._utils.collate import default_collate

from certifier.errors import ParameterError, SigmacertError
from certifier.numerics.schemes import RANDOM_ALLOCATION
from trainer.certificates import CertifiedRun, verified_run
from trainer.torch_sampler import RandomAllocationBatchSampler, RunExhausted


class NoOpacusEpsilon(SigmacertError, RuntimeError):
    """Opacus's accountant was asked for an epsilon; the certificate is the guarantee of this run."""
    exit_code = 1


def guarantee(run: CertifiedRun) -> str:
    return (f"TV <= {run.target} at sigma = {run.sigma_text}, M = {run.steps}, E = {run.epochs} (random "
            f"allocation, zero-out): every membership-inference test has accuracy <= 1/2 + {run.target}/2")


class CertificateAccountant(IAccountant):
    """Stands in for Opacus's accountant: counts steps, refuses extra ones, never returns an epsilon."""

    def __init__(self, run: CertifiedRun):
        self.history = []
        self.run = run
        self.steps = 0

    def step(self, *, noise_multiplier: float, sample_rate: float):
        if self.steps >= self.run.steps * self.run.epochs:
            raise RunExhausted(f"step {self.steps + 1} is beyond the certified run of E*M = "
                               f"{self.run.steps * self.run.epochs} updates; refusing it")
        self.steps += 1

    def get_epsilon(self, delta: float, *args, **kwargs) -> float:
        raise NoOpacusEpsilon("Opacus's accountants assume Poisson sampling and do not apply to this run. "
                              f"Its guarantee is the sigmacert certificate (key id {self.run.keyid}): "
                              f"{guarantee(self.run)}; `sigmacert show CERT.json` prints its certified "
                              "(epsilon, delta) rows")

    def __len__(self) -> int:
        return self.steps

    @classmethod
    def mechanism(cls) -> str:
        return "sigmacert-certificate"


def private_engine(run: CertifiedRun) -> PrivacyEngine:
    """An Opacus PrivacyEngine whose accountant is the certificate's (it never reports an epsilon)."""
    engine = PrivacyEngine()
    engine.accountant = CertificateAccountant(run)
    return engine


class CertifiedDataLoader(DataLoader):
    """The data loader of a certified run; `run`, `accountant` and `b0` describe it."""

    def __init__(self, dataset, sampler: RandomAllocationBatchSampler, run: CertifiedRun, collate_fn=None):
        first = dataset[0]
        first = first if isinstance(first, (tuple, list)) else (first,)
        collate = wrap_collate_with_empty(collate_fn=collate_fn or default_collate,
                                          sample_empty_shapes=[(0, *shape_safe(x)) for x in first],
                                          dtypes=[dtype_safe(x) for x in first])
        super().__init__(dataset, batch_sampler=sampler, collate_fn=collate)
        self.run = run
        self.b0 = sampler.b0
        self.accountant = None


def public_size(num_examples: int, steps: int, n0=None, batch_size_hint=None) -> int:
    """N0: given, or B * M from an expected batch size hint B, or the data set size; never below it."""
    if n0 is not None and batch_size_hint is not None and int(n0) != int(batch_size_hint) * steps:
        raise ParameterError(f"n0 = {n0} and batch_size_hint = {batch_size_hint} disagree (N0 = B0 * M, M = {steps})")
    if batch_size_hint is not None:
        if isinstance(batch_size_hint, bool) or int(batch_size_hint) != batch_size_hint or batch_size_hint < 1:
            raise ParameterError(f"batch_size_hint must be a positive integer, got {batch_size_hint!r}")
        n0 = int(batch_size_hint) * steps
    n0 = num_examples if n0 is None else n0
    if isinstance(n0, bool) or int(n0) != n0 or n0 < 1:
        raise ParameterError(f"n0 must be a positive integer, got {n0!r}")
    if num_examples > n0:
        raise ParameterError(f"the dataset has {num_examples} records, more than N0 = {n0}; refusing to train")
    return int(n0)


def make_private(module, optimizer, dataset, *, certificate, public_key, clip_norm: float, seed: int | None = 0,
                 n0: int | None = None, batch_size_hint: int | None = None, collate_fn=None):
    """(module, optimizer, data_loader) for Algorithm 1 at the certificate's sigma, M and E.

    certificate: path or bytes; public_key: PEM path, PEM bytes or key object.  N0 is n0, or
    batch_size_hint * M, or len(dataset).  seed selects the allocation (keep it secret; None draws one).
    One pass over the returned loader is the whole run: E*M steps, empty ones included.
    Raises CertificateRefused (rejected or wrong-scheme certificate), ParameterError (bad input).
    """
    if not (isinstance(clip_norm, (int, float)) and math.isfinite(clip_norm) and clip_norm > 0):
        raise ParameterError(f"clip_norm C must be a positive number, got {clip_norm!r}")
    run = verified_run(certificate, public_key, scheme=RANDOM_ALLOCATION)
    size = public_size(len(dataset), run.steps, n0, batch_size_hint)
    sampler = RandomAllocationBatchSampler(len(dataset), run.steps, run.epochs, seed, n0=size)
    loader = CertifiedDataLoader(dataset, sampler, run, collate_fn)
    engine = private_engine(run)
    module, optimizer, loader = engine.make_private(
        module=module, optimizer=optimizer, data_loader=loader, noise_multiplier=run.sigma,
        max_grad_norm=float(clip_norm), poisson_sampling=False, loss_reduction="mean")
    optimizer.expected_batch_size = sampler.b0   # line 7: divide by the public B0 = N0/M
    loader.accountant = engine.accountant
    return module, optimizer, loader
