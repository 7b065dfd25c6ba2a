"""What a sandboxed child computes (service.sandbox): certify, verify, exact sigma.

Each task takes its JSON payload and `progress(stage, percent, elapsed)` and returns a
JSON-able dict. An error that belongs to the answer (a parameter the mathematics refuses,
a certificate the verifier rejects) is part of that dict; running out of memory raises
MemoryError, which the child reports as the memory limit.
"""
from __future__ import annotations

import base64
import inspect
import time


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
    from certifier.certificate.claim import RANDOM_ALLOCATION
    from certifier.certify import certify
    from certifier.errors import SigmacertError
    from certifier.params import parse_decimal, parse_sigma, parse_target
    try:
        sigma = parse_sigma(req["sigma"]) if req.get("sigma") is not None else None
        kind = req.get("kind")            # dp / tpr: target is delta / the TPR bound; tv requests have none
        target = parse_target(req["target"]) if kind is None else parse_decimal("target", req["target"])
        by_kind = {} if kind is None else {"kind_name": kind["name"],
                                           "kind_params": {k: v for k, v in kind.items() if k != "name"}}
        if req.get("stages") is not None:  # a run in stages at one sigma: format v5 (certifier.stages_certify)
            from certifier.stages_certify import certify_stages
            res = certify_stages([(s["steps"], s["epochs"]) for s in req["stages"]], target, sigma, two_sided=True,
                                 progress=progress, **by_kind)
        else:
            res = certify(req["steps"], req["epochs"], target, sigma, progress=progress,
                          scheme=req.get("scheme", RANDOM_ALLOCATION), iterations=req.get("iterations"),
                          two_sided=True, **by_kind)
    except (SigmacertError, ValueError, ArithmeticError, OverflowError) as err:
        return {"error": _one_line(err)}
    return {"success": res.success, "bound": res.bound, "sigma": res.sigma, "target": res.target,
            "predicate": res.predicate}


def exact_sigma(payload: dict, progress) -> dict:
    """GET /v1/sigma: the exact sigma of a cell (Theorem 4.1) for its scheme, rounded up to res(sigma)
    (1e-6 below 10, six significant digits from 10 on: certifier.resolution)."""
    from certifier.certificate.claim import RANDOM_ALLOCATION
    from certifier.errors import SigmacertError
    from certifier.numerics.schemes import exact_sigma as search
    from certifier.params import parse_decimal, parse_target
    t0 = time.perf_counter()
    try:
        kind = payload.get("kind")        # dp / tpr: the kind's exact sigma (certifier.numerics.targets)
        if payload.get("stages") is not None:
            s = _exact_sigma_stages(payload, kind)
        elif kind is None:
            s = search(payload["steps"], payload["epochs"], parse_target(payload["target"]),
                       payload.get("scheme", RANDOM_ALLOCATION))
        else:
            from certifier.numerics import targets as nt
            x, t = float(parse_decimal("kind", kind.get("epsilon", kind.get("fpr")))), float(
                parse_decimal("target", payload["target"]))
            find = nt.exact_sigma_dp if kind["name"] == "dp" else nt.exact_sigma_tpr
            s = find(payload["steps"], payload["epochs"], x, t, "1e-6", scheme=payload.get("scheme", RANDOM_ALLOCATION))
    except (SigmacertError, ValueError, ArithmeticError, OverflowError) as err:
        return {"exact": None, "exact_status": "error", "exact_error": f"{type(err).__name__}: {err}"[:300]}
    from certifier.resolution import issued, resolution_str
    s = issued(s)
    return {"exact": s, "exact_status": "done", "exact_seconds": round(time.perf_counter() - t0, 3),
            "resolution": resolution_str(parse_decimal("sigma", s))}


def _exact_sigma_stages(payload: dict, kind: dict | None) -> str:
    """The exact sigma shared by the stages (certifier.numerics.stages for tv, stages_profile for dp / tpr)."""
    from certifier.numerics.stages import Stage, exact_sigma_stages
    from certifier.params import parse_decimal, parse_target
    run = [Stage(s["steps"], s["epochs"]) for s in payload["stages"]]
    if kind is None:
        return exact_sigma_stages(run, parse_target(payload["target"]))
    from certifier.numerics import stages_profile as sp
    x, t = float(parse_decimal("kind", kind.get("epsilon", kind.get("fpr")))), float(
        parse_decimal("target", payload["target"]))
    find = sp.exact_sigma_dp_stages if kind["name"] == "dp" else sp.exact_sigma_tpr_stages
    return find(run, x, t, "1e-6")


def verify_certificate(payload: dict, progress) -> dict:
    """POST /v1/verify: the independent verifier's answer against the listed keys.

    The verifier is told the same budget as this process, so its cost model (when it has
    one) rejects an over-budget certificate before any arithmetic: `cost-exceeds-limit`."""
    from verifier import load_public_key, verify_bytes
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
    from verifier import replay_statement as replay
    r = replay(base64.b64decode(payload["statement"]), max_memory=payload["max_memory"],
               max_seconds=payload["max_seconds"]).as_dict()
    if r["reason"] == "internal-error" and "MemoryError" in (r.get("detail") or ""):
        raise MemoryError
    return r


def audit_job(req: dict, progress) -> dict:
    """A job of POST /v1/audits: both sides at the claimed sigma (certifier.audit), the format-v6 predicate
    returned unsigned (the signer replays it, then signs)."""
    from certifier.audit import Stated, audit
    from certifier.certificate.audit import build
    from certifier.certificate.claim import RANDOM_ALLOCATION
    from certifier.errors import SigmacertError
    from certifier.params import parse_decimal, parse_sigma
    try:
        kind = req.get("kind") or {"name": "tv"}
        params = tuple((k, v) for k, v in kind.items() if k != "name")
        st = Stated(req["steps"], req["epochs"], parse_sigma(req["sigma"]), kind["name"], params,
                    parse_decimal("target", req["target"]), req.get("scheme", RANDOM_ALLOCATION),
                    req.get("iterations"), req["audit"]["source"])
        out = audit(st, width=req["audit"]["width"], progress=progress)
    except (SigmacertError, ValueError, ArithmeticError, OverflowError) as err:
        return {"error": _one_line(err)}
    return {"success": True, "bound": out.verdict, "sigma": req["sigma"], "target": req["target"],
            "predicate": build(out)}


TASKS = {"audit": audit_job, "certify": certify_job, "sigma": exact_sigma, "verify": verify_certificate,
         "replay": replay_statement}
