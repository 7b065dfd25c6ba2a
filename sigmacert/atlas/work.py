"""What the workers run. Only cell parameters, certificate bytes and the PUBLIC key reach them.

`certify_cell` computes the two-sided predicate of one cell at its exact sigma (Theorem 4.1
for sigma, Lemma C.5 for the upper bound, data processing for sigma_low); `verify_certificate`
replays an existing certificate with the independent verifier. Neither signs anything.
"""
from __future__ import annotations

import inspect
import time

from certifier.errors import ParameterError, SigmacertError

DEFAULT_SCHEME = "random-allocation"
SCHEMES = ("random-allocation", "fixed-bins")


def scheme_kwargs(scheme: str) -> dict:
    """Keyword arguments for certifier.certify.certify: the scheme only when it is not the default."""
    return {} if scheme == DEFAULT_SCHEME else {"scheme": scheme}


def check_scheme(scheme: str) -> None:
    """Refuse a scheme this installation's certifier cannot certify (before any work is sent)."""
    from certifier.certify import certify
    if scheme not in SCHEMES:
        raise ParameterError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    if scheme_kwargs(scheme) and "scheme" not in inspect.signature(certify).parameters:
        raise ParameterError(f"this certifier certifies only the {DEFAULT_SCHEME} scheme, not {scheme}")


def worker_version() -> str:
    """The certifier version a worker runs (the driver refuses a mixed cluster)."""
    from certifier import __version__
    return __version__


def certify_cell(steps: int, epochs: int, target: str, scheme: str) -> dict:
    """One cell, two-sided, at its exact sigma: {"ok": True, "predicate", "sigma", ...} or
    {"ok": False, "reason"}. Unexpected exceptions propagate (the driver records them)."""
    from certifier.certify import certify
    from certifier.params import parse_target
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        out = certify(steps, epochs, parse_target(target), None, two_sided=True, **scheme_kwargs(scheme))
    except SigmacertError as err:
        return {"ok": False, "reason": str(err), "seconds": round(time.perf_counter() - t0, 3)}
    seconds, cpu = round(time.perf_counter() - t0, 3), round(time.process_time() - c0, 3)
    if not out.success:
        return {"ok": False, "seconds": seconds,
                "reason": f"not certified: the bound reached, {out.bound}, exceeds the target {out.target} "
                          f"at sigma {out.sigma}"}
    return {"ok": True, "predicate": out.predicate, "sigma": out.sigma, "sigma_low": out.sigma_low,
            "bound": out.bound, "two_sided": out.two_sided, "seconds": seconds, "cpu_seconds": cpu}


def verify_certificate(data: bytes, public_pem: bytes) -> dict:
    """The independent verifier's verdict on certificate bytes: {"accepted", "reason", "detail"}."""
    from verifier import load_public_key, verify_bytes
    r = verify_bytes(data, [load_public_key(public_pem)])
    return {"accepted": r.accepted, "reason": r.reason, "detail": r.detail}
