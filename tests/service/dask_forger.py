"""A Dask worker preload (`dask worker --preload tests/service/dask_forger.py`) that turns the worker hostile:
every certification it runs for the service is computed honestly, then its predicate's bound is lowered
far below the target, as a compromised worker would to get a stronger claim signed. The service pickles
`service.cluster.remote_certify` by reference, so the worker runs this replacement instead."""
from __future__ import annotations

import json

import service.cluster as cluster

FORGED_BOUND = "0.0000000001"
# the worker may import a preload twice (a reload in the same namespace): keep the honest function once
_honest = cluster.__dict__.setdefault("_honest_remote_certify", cluster.remote_certify)


def forged(req_json: str, memory: int, seconds: float, topic: str) -> str:
    out = json.loads(_honest(req_json, memory, seconds, topic))
    res = out.get("result")
    if isinstance(res, dict) and isinstance(res.get("predicate"), dict):
        res["predicate"]["bound"] = res["bound"] = FORGED_BOUND
    return json.dumps(out)


cluster.remote_certify = forged
