"""Verify-then-read: the run parameters (scheme, M, E, sigma) a trainer may take from a certificate.

A certificate is checked with the independent `verifier` first; a rejected one is refused with the
verifier's reason.  Only then is its claim read, and only a claim for the sampling scheme the trainer
runs is accepted: a fixed-bins certificate (jax_privacy's BallsInBinsSampling) says nothing about
Algorithm 1's random allocation, and vice versa (docs/integrations.md).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from decimal import Decimal

from certifier.errors import CertificateRefusedError, ParameterError
from certifier.numerics.schemes import FIXED_BINS, RANDOM_ALLOCATION, SCHEMES
from verifier import Reject, load_public_key, read_limited, verify_or_raise

MECHANISMS = {"dp-sgd/random-allocation": RANDOM_ALLOCATION, "dp-sgd/fixed-bins": FIXED_BINS}
DESCRIPTION = {RANDOM_ALLOCATION: "random allocation (Algorithm 1: a fresh allocation every epoch)",
               FIXED_BINS: "fixed bins (jax_privacy BallsInBinsSampling: one bin per record for the run)"}


@dataclass(frozen=True)
class CertifiedRun:
    """The parameters of a verified claim."""
    scheme: str
    steps: int
    epochs: int
    sigma_text: str          # the claim's exact decimal
    sigma: float             # the nearest double not below it
    target: str
    iterations: int | None
    keyid: str
    claim: dict


def claim_scheme(claim: dict) -> str | None:
    """The sampling scheme a claim names (its `scheme`, else its `mechanism`), or None if unknown."""
    mech = claim.get("mechanism")
    named = claim.get("scheme")
    if named is None:
        return MECHANISMS.get(mech)
    if named in SCHEMES and isinstance(mech, str) and mech.startswith("dp-sgd/"):
        return named
    return None


def sigma_float(text: str) -> float:
    """The certified decimal sigma as a float never below it (round up to the next double)."""
    x = float(Decimal(text))
    if Decimal(x) < Decimal(text):
        x = math.nextafter(x, math.inf)
    return x


def _verify(certificate, public_key):
    """The verifier's accepted Result (its raising twin), or CertificateRefusedError with its reason."""
    try:
        data = certificate if isinstance(certificate, bytes) else read_limited(os.fspath(certificate))
        if isinstance(public_key, bytes):
            key = load_public_key(public_key)
        elif isinstance(public_key, (str, os.PathLike)):
            key = load_public_key(read_limited(os.fspath(public_key)))
        else:
            key = public_key
    except (OSError, ValueError, TypeError) as err:
        raise ParameterError(f"cannot read certificate or public key: {err}") from None
    try:
        return verify_or_raise(data, [key])
    except Reject as r:
        detail = f": {r.detail}" if r.detail else ""
        raise CertificateRefusedError(f"certificate rejected ({r.reason}){detail}; refusing to train") from None


def verified_run(certificate, public_key, *, scheme: str) -> CertifiedRun:
    """Verify `certificate` (path or bytes) against `public_key` (PEM path, PEM bytes or key object)
    and return its run, or raise CertificateRefusedError (with the verifier's reason) / ParameterError."""
    res = _verify(certificate, public_key)
    claim = dict(res.claim or {})
    found = claim_scheme(claim)
    if found is None or claim.get("adjacency") != "zero-out":
        raise CertificateRefusedError(f"certificate claim (mechanism {claim.get('mechanism')!r}, adjacency "
                                 f"{claim.get('adjacency')!r}) is not for DP-SGD under zero-out adjacency "
                                 "with a known sampling scheme; refusing to train")
    if found != scheme:
        raise CertificateRefusedError(f"certificate is for {DESCRIPTION[found]}, but this run uses "
                                 f"{DESCRIPTION[scheme]}; the two need different sigma; refusing to train")
    for k in ("steps", "epochs", "sigma", "target"):
        if k not in claim:
            raise CertificateRefusedError(f"certificate claim lacks {k!r}; refusing to train")
    iterations = claim.get("iterations")
    return CertifiedRun(found, int(claim["steps"]), int(claim["epochs"]), str(claim["sigma"]),
                        sigma_float(str(claim["sigma"])), str(claim["target"]),
                        None if iterations is None else int(iterations), res.keyid, claim)
