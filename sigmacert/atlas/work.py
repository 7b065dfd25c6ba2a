"""What the workers run. Only cell parameters, certificate bytes and the PUBLIC key reach them.

`certify_cell` computes the two-sided predicate of one cell at its exact sigma (Theorem 4.1 for
sigma; Lemma C.5, or its generalisation in docs/method-v2.md, for the upper bound; data processing
for sigma_low); `verify_certificate` replays an existing certificate with the independent
verifier. Neither signs anything.
"""
from __future__ import annotations

import time

from certifier import door
from certifier.door import __version__
from certifier.errors import SigmacertError
from verifier import load_public_key, verify_bytes


def worker_version() -> str:
    """The certifier version a worker runs (the driver refuses a mixed cluster)."""
    return __version__


def certify_cell(steps: int, epochs: int, target: str, scheme: str, kind: str = "tv",
                 param: str | None = None) -> dict:
    """One cell, two-sided, at its exact sigma for its kind (tv: TV <= lambda; dp: target delta at eps = param;
    tpr: target beta at FPR = param; certifier.targets): {"ok": True, "predicate", "sigma", ...} or
    {"ok": False, "reason"}. Unexpected exceptions propagate (the driver records them)."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        goal = door.make(kind, target, param)
        out = door.certify(door.Run.block(steps, epochs, scheme), goal, None, two_sided=True)
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
    r = verify_bytes(data, [load_public_key(public_pem)])
    return {"accepted": r.accepted, "reason": r.reason, "detail": r.detail}
