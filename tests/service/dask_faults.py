"""A Dask worker preload (`dask worker --preload tests/service/dask_faults.py`) that injects one fault into the
service's certification tasks, chosen by the environment variable SIGMACERT_DASK_FAULT:

* `raise`: the task raises a TimeoutError (as a TLS or socket timeout would) instead of computing;
* `die`: the worker process SIGKILLs itself as the task starts, every time (a worker lost mid-job);
* `die-once:PATH`: the same, only while PATH does not exist (it is created first): one lost worker, then honest.

The service pickles `service.cluster.remote_certify` by reference, so the worker runs the replacement."""
from __future__ import annotations

import os
import signal

import service.cluster as cluster

_honest = cluster.__dict__.setdefault("_honest_remote_certify", cluster.remote_certify)


def faulty(req_json: str, memory: int, seconds: float, topic: str) -> str:
    from distributed import get_worker
    fault = os.environ.get("SIGMACERT_DASK_FAULT", "")
    if fault == "raise":
        raise TimeoutError("TLS handshake with the peer timed out")
    if fault == "die" or (fault.startswith("die-once:") and not os.path.exists(fault[9:])):
        if fault.startswith("die-once:"):
            open(fault[9:], "w").close()
        get_worker().log_event(topic, {"attempt": get_worker().address})  # as the honest task does first
        os.kill(os.getpid(), signal.SIGKILL)
    return _honest(req_json, memory, seconds, topic)


cluster.remote_certify = faulty
