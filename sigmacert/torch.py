"""PyTorch and Opacus for Algorithm 1 (extra `torch`: torch 2.13 CPU, Opacus 1.6; docs/integrations.md).

    from sigmacert.torch import make_private
    model, optimizer, loader = make_private(model, optimizer, dataset, certificate="cert.json",
                                            public_key="public.pem", clip_norm=1.0, seed=secret_seed)
    for x, y in loader:          # ONE pass = the whole certified run: E*M steps, empty ones included
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()         # (sum of clipped gradients + N(0, sigma^2 C^2 I)) / B0, B0 = N0/M

`RandomAllocationBatchSampler` is the sampler alone, for a training loop of your own.
"""
from certifier.numerics.schemes import FIXED_BINS, RANDOM_ALLOCATION
from trainer.certificates import CertificateRefused, CertifiedRun, verified_run
from trainer.opacus_glue import CertificateAccountant, CertifiedDataLoader, NoOpacusEpsilon, make_private
from trainer.torch_sampler import RandomAllocationBatchSampler, RunExhausted

__all__ = ["RandomAllocationBatchSampler", "make_private", "verified_run", "CertifiedRun", "CertifiedDataLoader",
           "CertificateAccountant", "CertificateRefused", "NoOpacusEpsilon", "RunExhausted", "RANDOM_ALLOCATION",
           "FIXED_BINS"]
