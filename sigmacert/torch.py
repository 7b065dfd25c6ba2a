"""PyTorch and Opacus for Algorithm 1 (extra `torch`: torch 2.13 CPU, Opacus 1.6; docs/integrations.md).

    from sigmacert.torch import make_private
    model, optimizer, loader = make_private(model, optimizer, dataset, certificate="cert.json",
                                            public_key="public.pem", clip_norm=1.0, seed=secret_seed)
    for x, y in loader:          # ONE pass = the whole certified run: E*M steps, empty ones included
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()         # (sum of clipped gradients + N(0, sigma^2 C^2 I)) / B0, B0 = N0/M

`RandomAllocationBatchSampler` is the sampler alone, for a training loop of your own.

Importing this module registers the Opacus accountant `random_allocation` (trainer.opacus_accountant,
docs/targets.md): `PrivacyEngine(accountant="random_allocation").make_private_with_epsilon(...,
poisson_sampling=False)` with the loader of `random_allocation_loader` calibrates sigma to the exact
(eps, delta) of Algorithm 1 (numerical, not certified). `get_noise_multiplier(target_epsilon=, target_delta=,
sample_rate=1/M, epochs=E, accountant="random_allocation")` is Opacus's function answering with the exact sigma,
held to the stated target domain as every face (certifier.domain: one-line refusals naming the nearest target).
"""
from certifier.door import FIXED_BINS, RANDOM_ALLOCATION
from trainer.certificates import CertificateRefusedError, CertifiedRun, verified_run
from trainer.opacus_accountant import (
    HeterogeneousHistoryError,
    RandomAllocationAccountant,
    RandomAllocationEpochSampler,
    get_noise_multiplier,
    random_allocation_loader,
)
from trainer.opacus_accountant import register as _register_accountant
from trainer.opacus_glue import CertificateAccountant, CertifiedDataLoader, NoOpacusEpsilonError, make_private
from trainer.torch_sampler import RandomAllocationBatchSampler, RunExhaustedError

_register_accountant()

__all__ = ["RandomAllocationBatchSampler", "make_private", "verified_run", "CertifiedRun", "CertifiedDataLoader",
           "CertificateAccountant", "CertificateRefusedError", "NoOpacusEpsilonError", "RunExhaustedError",
           "RANDOM_ALLOCATION", "FIXED_BINS", "CertificateRefused", "NoOpacusEpsilon", "RunExhausted",
           "RandomAllocationAccountant", "RandomAllocationEpochSampler", "random_allocation_loader",
           "HeterogeneousHistoryError", "get_noise_multiplier"]
# The names before they ended in Error (public API of sigmacert.torch)
CertificateRefused, NoOpacusEpsilon, RunExhausted = CertificateRefusedError, NoOpacusEpsilonError, RunExhaustedError
