"""Certification jobs on a Dask cluster: `sigmacert serve --scheduler tcp://HOST:PORT` (docs/service.md).

The split is the atlas's (sigmacert/atlas): Dask workers compute, the service signs. A service
worker (service.worker) that claimed a job from SQLite submits `remote_certify(request)` instead of
starting a local child; on the Dask worker that function runs the same sandboxed child as a local
job (service.sandbox: address-space cap, wall-clock kill) and returns the unsigned predicate. The
private key stays in the service worker: only the request goes out, the outcome comes back, and
SQLite stays the archive and the queue's system of record (leases, fencing, re-queueing unchanged).

Progress travels as Dask events (`Worker.log_event` on topic `sigmacert-job-<id>`), read by the
service worker once a second and written to the job row; a cancelled or lost job sets a Dask
Event that the remote side checks once a second before it kills its child. A Dask worker that
dies mid-job costs only the job's attempt: Dask reschedules it on another worker.
"""
from __future__ import annotations

import re
import time
import uuid

from certifier.errors import ParameterError
from service.sandbox import Budget, Outcome

CONNECT_TIMEOUT = "20s"
TICK = 1.0          # seconds between progress reads and keep_going() calls
GRACE = 60.0        # seconds past the budget before the service gives up on a remote job
ADDRESS = re.compile(r"(tcp|tls)://[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}")


def parse_scheduler(text: str) -> str:
    """A Dask scheduler address tcp://HOST:PORT (or tls://), else ParameterError."""
    t = str(text).strip()
    if len(t) > 300 or not ADDRESS.fullmatch(t):
        raise ParameterError(f"scheduler must be a Dask address such as tcp://127.0.0.1:8786, got {text!r}")
    return t


def worker_version() -> str:
    from certifier import __version__
    return __version__


def connect(address: str):
    """A distributed.Client on `address` whose workers run this certifier version; ParameterError if not."""
    try:
        import distributed
    except ImportError as err:
        raise ParameterError(f"--scheduler needs Dask (pip install 'sigmacert[atlas]'): {err}") from None
    from certifier import __version__
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, ValueError, TypeError) as err:
        raise ParameterError(f"cannot reach the Dask scheduler at {address}: {err}") from None
    try:
        versions = client.run(worker_version)
    except Exception as err:  # the workers cannot import the certifier: no job could run there
        client.close()
        raise ParameterError(f"the Dask workers cannot run sigmacert: {type(err).__name__}: {err}") from None
    bad = {w: v for w, v in versions.items() if v != __version__}
    if bad:
        client.close()
        raise ParameterError(f"Dask workers run another sigmacert version than this service ({__version__}): {bad}")
    return client


# ----------------------------------------------------------------------------- on the Dask worker

def remote_certify(req: dict, budget: Budget, topic: str) -> dict:
    """The job's sandboxed child on this Dask worker; progress as events on `topic`; stops when the
    service sets the Event `topic`. Returns the Outcome's fields."""
    from distributed import Event, get_worker

    from service.sandbox import run
    worker, stop = get_worker(), Event(topic)
    out = run("certify", req, budget, on_progress=lambda **p: worker.log_event(topic, p),
              keep_going=lambda: not stop.is_set())
    return {"result": out.result, "failure": out.failure, "reason": out.reason, "seconds": out.seconds}


# ----------------------------------------------------------------------------- in the service worker

def run_on_cluster(client, req: dict, budget: Budget, *, on_progress, keep_going) -> Outcome:
    """Like service.sandbox.run("certify", ...), on a Dask worker: an Outcome, never an exception."""
    from distributed import Event, KilledWorker
    topic = f"sigmacert-job-{uuid.uuid4().hex}"
    t0 = time.monotonic()
    fut = client.submit(remote_certify, req, budget, topic, key=topic, pure=False)
    seen = 0
    try:
        while True:
            try:
                fut.result(timeout=TICK)
                break
            except TimeoutError:
                pass
            except Exception:  # the task failed; fut.status and fut.exception() tell how
                break
            try:
                events = client.get_events(topic)
            except Exception:  # the scheduler is unreachable for now: no progress this tick
                events = ()
            if len(events) > seen:
                seen = len(events)
                msg = events[-1][1]  # Dask adds the worker's address to each event
                on_progress(**{k: msg[k] for k in ("stage", "percent", "elapsed") if k in msg})
            if not keep_going():
                Event(topic, client).set()
                return Outcome(failure="stopped", reason="stopped", seconds=time.monotonic() - t0)
            if time.monotonic() - t0 > budget.seconds + GRACE:
                Event(topic, client).set()
                return Outcome(failure="seconds", reason=budget.seconds_reason(), seconds=time.monotonic() - t0)
        if fut.status == "finished":
            r = fut.result()
            return Outcome(r["result"], r["failure"], r["reason"], time.monotonic() - t0)
        if fut.status != "error":  # cancelled by the cluster (scheduler lost or restarted): record nothing;
            # the job's lease runs out and it is claimed again (at most MAX_ATTEMPTS times, service.store)
            return Outcome(failure="stopped", reason=f"the Dask task was {fut.status}", seconds=time.monotonic() - t0)
        err = fut.exception()
        reason = ("the Dask workers running it died (out of memory?)" if isinstance(err, KilledWorker)
                  else f"the Dask task failed: {type(err).__name__}: {err}"[:300])
        return Outcome(failure="crashed", reason=reason, seconds=time.monotonic() - t0)
    finally:
        fut.release()
