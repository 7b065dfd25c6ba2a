"""jax_privacy's balls-in-bins sampler gets a certified sigma (extra `jax`; docs/integrations.md).

    from jax_privacy.batch_selection import BallsInBinsSampling
    import sigmacert.jax
    strategy = BallsInBinsSampling(iterations=1000, cycle_length=100)
    sigmacert.jax.sigma_for(strategy, "0.1")                       # exact sigma, fixed-bins scheme
    sigmacert.jax.sigma_for(strategy, epsilon=1, delta="1e-5")     # ... for (eps, delta)-DP both ways
    sigmacert.jax.epsilon_for(strategy, sigma, delta="1e-5")       # eps of the run at sigma
    cert = sigmacert.jax.certify_for(strategy, "0.1", key="keys/private.pem")
    sigma = sigmacert.jax.noise_multiplier("cert.json", "keys/public.pem", strategy)  # verify, then read

BallsInBinsSampling keeps each example in ONE bin for the whole run (fixed bins), unlike Algorithm 1,
which re-allocates every epoch; with M = cycle_length and E = ceil(iterations / M) the pair is the
one-epoch pair at sigma / sqrt(E), so it needs more noise than random allocation at the same M, E.
"""
from __future__ import annotations

from decimal import Decimal

from certifier.door import FIXED_BINS
from sigmacert import api
from trainer.certificates import CertificateRefusedError, verified_run
from trainer.jax_glue import StrategyRun, strategy_run


def sigma_for(strategy, target=None, *, epsilon=None, delta=None, fpr=None, tpr=None, resolution="1e-6") -> Decimal:
    """The exact sigma for the strategy's run at one target kind: TV target lambda, or epsilon= with
    delta= ((eps, delta)-DP both ways), or fpr= with tpr= (docs/targets.md). Numerical; `certify_for`
    proves a TV target."""
    r = strategy_run(strategy)
    return api.exact_sigma(r.steps, r.epochs, target, epsilon=epsilon, delta=delta, fpr=fpr, tpr=tpr,
                           resolution=resolution, scheme=r.scheme, iterations=r.iterations)


def epsilon_for(strategy, sigma, *, delta) -> float:
    """eps(delta) of the strategy's run at sigma (both directions; numerical, with its error estimate added)."""
    r = strategy_run(strategy)
    p = api.exact_privacy(r.steps, r.epochs, sigma, delta=delta, scheme=r.scheme, iterations=r.iterations)
    (v,) = p.epsilon.values()
    return v.value + v.error


def closed_form_sigma_for(strategy, target) -> Decimal:
    """The closed-form sigma for the strategy's run: sqrt(E) * sigma(M, 1, lambda), a proven bound."""
    r = strategy_run(strategy)
    return api.closed_form_sigma(r.steps, r.epochs, target, scheme=r.scheme, iterations=r.iterations)


def certify_for(strategy, target, sigma=None, *, key=None, two_sided: bool = True, subject=None,
                progress=None) -> api.Certificate:
    """Certify the strategy's run (fixed-bins scheme; the claim names it and its iterations)."""
    r = strategy_run(strategy)
    return api.certify(r.steps, r.epochs, target, sigma, key=key, two_sided=two_sided, subject=subject,
                       progress=progress, scheme=r.scheme, iterations=r.iterations)


def noise_multiplier(certificate, public_key, strategy) -> float:
    """Verify a fixed-bins certificate, check that it covers the strategy's run, and return its sigma
    (the nearest double not below the claim's decimal) for jax_privacy's noise addition.

    It covers the run when it has the same M and at least E = ceil(iterations / M) rounds per bin
    (fewer observed rounds are a sub-run: data processing)."""
    run = verified_run(certificate, public_key, scheme=FIXED_BINS)
    r = strategy_run(strategy)
    if run.steps != r.steps or run.epochs < r.epochs:
        raise CertificateRefusedError(f"certificate is for M={run.steps} bins, E={run.epochs} rounds; the strategy "
                                 f"runs M={r.steps}, E={r.epochs} ({r.iterations} iterations); refusing it")
    return run.sigma


__all__ = ["sigma_for", "epsilon_for", "closed_form_sigma_for", "certify_for", "noise_multiplier", "strategy_run",
           "StrategyRun", "CertificateRefusedError", "CertificateRefused"]
CertificateRefused = CertificateRefusedError  # the name before it ended in Error (public API of sigmacert.jax)
