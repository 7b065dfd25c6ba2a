"""What a sandboxed child computes (service.sandbox): certify, verify, exact sigma.

Each task takes its JSON payload and `progress(stage, percent, elapsed)` and returns a
JSON-able dict. An error that belongs to the answer (a parameter the mathematics refuses,
a certificate the verifier rejects) is part of that dict; running out of memory raises
MemoryError, which the child reports as the memory limit.

The verifier's tasks (verify, replay) import the verifier alone: the certifier (numpy, scipy,
its numerics) is imported by the tasks that compute, when they run. A replay child starts in about
0.4 s instead of 1.5 s (measured by `import service.tasks`), once for every job the signer signs.
"""
from __future__ import annotations

import base64
import inspect
import time

from certifier.errors import SigmacertError
from verifier import load_public_key, verify_bytes
from verifier import replay_statement as replay


def _one_line(err: Exception) -> str:
    text = str(err).splitlines()[0] if str(err) else ""
    return text or type(err).__name__


def certify_job(req: dict, progress) -> dict:
    """A job of POST /v1/certificates: Lemma C.5 bound at sigma (the exact sigma when absent), for the
    request's scheme (random-allocation or fixed-bins, docs/integrations.md) and target kind (tv, or the
    request's `kind`: dp with epsilon, tpr with fpr; docs/targets.md).

    Two-sided, as `sigmacert certify` by default: sigma - 1e-6 is certified to miss the target
    when the numerics say it can (docs/two-sided.md); otherwise the certificate is one-sided. The
    predicate is returned unsigned: whoever started this computation holds the key and signs."""
    from certifier import door
    from certifier.params import parse_sigma
    from service.job import request_run, request_target
    try:
        sigma = parse_sigma(req["sigma"]) if req.get("sigma") is not None else None
        res = door.certify(request_run(req), request_target(req), sigma, two_sided=True, progress=progress)
    except (SigmacertError, ValueError, ArithmeticError, OverflowError) as err:
        return {"error": _one_line(err)}
    return {"success": res.success, "bound": res.bound, "sigma": res.sigma, "target": res.target,
            "predicate": res.predicate}


def exact_sigma(payload: dict, progress) -> dict:
    """GET /v1/sigma: the exact sigma of a cell (Theorem 4.1) for its scheme, rounded up to res(sigma)
    (1e-6 below 10, six significant digits from 10 on: certifier.resolution)."""
    from certifier import door
    from certifier.params import parse_decimal
    from service.job import request_run, request_target
    t0 = time.perf_counter()
    try:
        s = door.exact_sigma(request_run(payload), request_target(payload))
    except (SigmacertError, ValueError, ArithmeticError, OverflowError) as err:
        return {"exact": None, "exact_status": "error", "exact_error": f"{type(err).__name__}: {err}"[:300]}
    return {"exact": s, "exact_status": "done", "exact_seconds": round(time.perf_counter() - t0, 3),
            "resolution": door.resolution_str(parse_decimal("sigma", s))}


def verify_certificate(payload: dict, progress) -> dict:
    """POST /v1/verify: the independent verifier's answer against the listed keys.

    The verifier is told the same budget as this process, so its cost model (when it has
    one) rejects an over-budget certificate before any arithmetic: `cost-exceeds-limit`."""
    keys = [load_public_key(p.encode()) for p in payload["keys"]]
    accepted = inspect.signature(verify_bytes).parameters
    budget = {k: payload[k] for k in ("max_memory", "max_seconds") if k in accepted}
    r = verify_bytes(base64.b64decode(payload["data"]), keys, payload.get("subject"), **budget).as_dict()
    if r["reason"] == "internal-error" and "MemoryError" in (r.get("detail") or ""):
        raise MemoryError  # the verifier caught it; it is this process's limit, not the certificate's fault
    return r


def replay_statement(payload: dict, progress) -> dict:
    """The independent verifier's replay of an unsigned Statement (what the key holder signs next),
    under the verifier's cost model with this process's budget."""
    r = replay(base64.b64decode(payload["statement"]), max_memory=payload["max_memory"],
               max_seconds=payload["max_seconds"]).as_dict()
    if r["reason"] == "internal-error" and "MemoryError" in (r.get("detail") or ""):
        raise MemoryError
    return r


def audit_job(req: dict, progress) -> dict:
    """A job of POST /v1/audits: both sides at the claimed sigma (certifier.audit) for the request's run (a block
    or stages at the one sigma) and target, the format-v6 predicate returned unsigned (the signer replays it, then
    signs)."""
    from certifier.door import Stated, audit
    from certifier.door import build_audit as build
    from certifier.params import parse_sigma
    from service.job import request_run, request_target
    try:
        st = Stated(request_run(req), parse_sigma(req["sigma"]), request_target(req), req["audit"]["source"])
        out = audit(st, width=req["audit"]["width"], progress=progress)
    except (SigmacertError, ValueError, ArithmeticError, OverflowError) as err:
        return {"error": _one_line(err)}
    return {"success": True, "bound": out.verdict, "sigma": req["sigma"], "target": req["target"],
            "predicate": build(out)}


TASKS = {"audit": audit_job, "certify": certify_job, "sigma": exact_sigma, "verify": verify_certificate,
         "replay": replay_statement}
