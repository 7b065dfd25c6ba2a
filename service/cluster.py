"""Certification jobs on a Dask cluster: `sigmacert serve --scheduler tls://HOST:PORT` (docs/service.md).

The split is the atlas's (sigmacert/atlas): Dask workers compute, the service signs. The trust model
(docs/service.md, "Trust model") is that the cluster is NOT trusted:

* The process that holds the private key (service.worker) is never a Dask client. Dask's protocol
  unpickles what a peer sends (any `__Pickled__` frame of a message), so whoever controls a
  scheduler or a worker could run code in a Dask client. The key holder starts a relay instead: a
  fresh interpreter without the key (service.sandbox, entry `python -m service.relay`, under an
  address-space and a wall-clock limit) that is the Dask client and talks to the key holder in JSON
  lines only (progress, then the outcome).
* The relay's outcome is only a claim: the key holder builds the Statement from the predicate, has
  it replayed by the independent verifier (verifier.replay_statement, in another limited child, with
  the job's budget and the verifier's cost model) and signs only when the replay accepts and the
  claim is the one requested (service.worker).
* The connection is TLS with mutual authentication (distributed.security.Security: a CA, a client
  certificate and key for the relay; the scheduler and workers present certificates of the same CA).
  A plain tcp:// scheduler is accepted only with an explicit --insecure-scheduler.

SQLite stays the archive and the queue's system of record (leases, fencing, re-queueing unchanged).
Progress travels as Dask events (`Worker.log_event` on topic `sigmacert-job-<id>`) that the relay
reads once a second; a cancelled job's relay gets SIGTERM, sets the Dask Event `topic` that the
remote side checks once a second before it kills its child, and exits.
"""
from __future__ import annotations

import json
import os
import re
import signal
import time
import uuid
from dataclasses import asdict, dataclass

from certifier.door import __version__
from certifier.errors import ParameterError
from service.sandbox import Budget, Outcome, run
from service.sandbox import run as run_child

CONNECT_TIMEOUT = "20s"
TICK = 1.0          # seconds between progress reads in the relay
GRACE = 60.0        # seconds past the budget before the relay gives up on a remote job
MAX_LOST = 2        # a job whose Dask worker died is run again at most this many times, then fails
NO_WORKER = 60.0    # seconds a job may wait with no Dask worker in the cluster before it fails
RELAY = Budget(memory=3 << 30, seconds=120.0)  # the relay's own limits (a Dask client: threads, imports)
ADDRESS = re.compile(r"(tcp|tls)://[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}")


def parse_scheduler(text: str) -> str:
    """A Dask scheduler address tls://HOST:PORT (or tcp://), else ParameterError."""
    t = str(text).strip()
    if len(t) > 300 or not ADDRESS.fullmatch(t):
        raise ParameterError(f"scheduler must be a Dask address such as tls://127.0.0.1:8786, got {text!r}")
    return t


@dataclass(frozen=True)
class Cluster:
    """Where jobs compute and how the relay authenticates: a CA, a client certificate and its key (TLS)."""
    address: str
    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    @classmethod
    def parse(cls, address: str, ca=None, cert=None, key=None, insecure: bool = False) -> Cluster:
        addr = parse_scheduler(address)
        files = {"--scheduler-ca": ca, "--scheduler-cert": cert, "--scheduler-key": key}
        if addr.startswith("tls://"):
            missing = [k for k, v in files.items() if not v]
            if missing:
                raise ParameterError(f"a tls:// scheduler needs {', '.join(missing)} (mutual TLS: the CA of the "
                                     "cluster, this service's client certificate and its key)")
            for flag, path in files.items():
                if not os.path.isfile(path):
                    raise ParameterError(f"{flag}: no such regular file: {path}")
            return cls(addr, *(os.path.abspath(p) for p in (ca, cert, key)))
        if any(files.values()):
            raise ParameterError("--scheduler-ca/--scheduler-cert/--scheduler-key need a tls:// scheduler")
        if not insecure:
            raise ParameterError(f"{addr} is a plain tcp:// scheduler: unauthenticated and unencrypted, anyone who "
                                 "reaches it can submit or alter tasks; use tls:// with --scheduler-ca, "
                                 "--scheduler-cert, --scheduler-key, or pass --insecure-scheduler")
        return cls(addr)

    def as_dict(self) -> dict:
        return asdict(self)

    def security(self):
        if self.ca is None:
            return None
        from distributed.security import Security
        return Security(tls_ca_file=self.ca, tls_client_cert=self.cert, tls_client_key=self.key,
                        require_encryption=True)


def worker_version() -> str:
    return __version__


# ----------------------------------------------------------------------------- on the Dask worker

def remote_certify(req_json: str, memory: int, seconds: float, topic: str) -> str:
    """The job's sandboxed child on this Dask worker; progress as events on `topic`; stops when the
    relay sets the Event `topic`. Returns the Outcome's fields as JSON text (no pickle on the way back)."""
    from distributed import Event, get_worker

    try:
        worker, stop = get_worker(), Event(topic)
        worker.log_event(topic, {"attempt": worker.address})  # the relay counts attempts: a rerun is a lost worker
        out = run_child("certify", json.loads(req_json), Budget(memory, seconds),
                        on_progress=lambda **p: worker.log_event(topic, p), keep_going=lambda: not stop.is_set())
    except Exception as err:  # an answer, not a Dask task error (whose traceback the relay cannot use)
        return json.dumps({"result": None, "failure": "crashed", "reason": f"{type(err).__name__}: {err}"[:300],
                           "seconds": 0.0})
    return json.dumps({"result": out.result, "failure": out.failure, "reason": out.reason, "seconds": out.seconds})


# ----------------------------------------------------------------------------- in the relay (no key)

def _connect(cluster: Cluster):
    """A distributed.Client on the cluster whose workers run this certifier version; ParameterError if not."""
    try:
        import distributed
    except ImportError as err:
        raise ParameterError(f"--scheduler needs Dask (pip install 'sigmacert[atlas]'): {err}") from None
    try:
        client = distributed.Client(cluster.address, timeout=CONNECT_TIMEOUT, security=cluster.security())
    except (OSError, ValueError, TypeError) as err:
        raise ParameterError(f"cannot reach the Dask scheduler at {cluster.address}: {err}"[:400]) from None
    try:
        versions = client.run(worker_version)
    except Exception as err:  # the workers cannot import the certifier: no job could run there
        client.close()
        raise ParameterError(f"the Dask workers cannot run sigmacert: {type(err).__name__}: {err}"[:400]) from None
    bad = {w: v for w, v in versions.items() if v != __version__}
    if bad:
        client.close()
        raise ParameterError(f"Dask workers run another sigmacert version than this service ({__version__}): "
                             f"{bad}"[:400])
    return client


def relay_check(payload: dict, progress) -> dict:
    """Can jobs run on this cluster? {"workers": n} or {"error": one line}."""
    try:
        client = _connect(Cluster(**payload["cluster"]))
    except ParameterError as err:
        return {"error": str(err)}
    try:
        return {"workers": len(client.scheduler_info().get("workers", {}))}
    finally:
        client.close()


def relay_certify(payload: dict, progress) -> dict:
    """One job on the cluster: submit, relay progress, return the remote outcome (a plain dict)."""
    from distributed import Event, KilledWorker
    try:
        client = _connect(Cluster(**payload["cluster"]))
    except ParameterError as err:
        return {"result": None, "failure": "crashed", "reason": str(err), "seconds": 0.0}
    memory, seconds = payload["memory"], payload["seconds"]
    topic = f"sigmacert-job-{uuid.uuid4().hex}"
    stopped = []

    def stop(signum, frame):  # the key holder stops this job: stop the remote child too
        stopped.append(signum)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    t0 = time.monotonic()
    fut = client.submit(remote_certify, json.dumps(payload["request"]), memory, seconds, topic, key=topic,
                        pure=False)
    watch = _Watch(client, topic, progress)
    try:
        while True:
            try:
                text = fut.result(timeout=TICK)
                break
            except TimeoutError:
                if fut.done():  # the task itself raised a TimeoutError (a TLS or socket timeout): an error
                    text = None
                    break
            except Exception:  # the task failed; fut.status tells how
                text = None
                break
            why = watch.tick(time.monotonic() - t0)
            if why is None and time.monotonic() - t0 > seconds + GRACE:
                why = "seconds"
            if why is not None:
                Event(topic, client).set()
                fut.cancel()
                failure, reason = ("seconds", Budget(memory, seconds).seconds_reason()) if why == "seconds" \
                    else ("crashed", why)
                return {"result": None, "failure": failure, "reason": reason, "seconds": time.monotonic() - t0}
        if fut.status == "finished" and isinstance(text, str):
            out = json.loads(text)  # only JSON text is accepted from the cluster
            return out if isinstance(out, dict) else {"result": None, "failure": "crashed",
                                                      "reason": "the Dask task answered no JSON object"}
        if fut.status not in ("error", "finished"):  # cancelled by the cluster (scheduler lost or restarted):
            # the job's lease runs out and it is claimed again (at most MAX_ATTEMPTS times, service.store)
            return {"result": None, "failure": "stopped", "reason": f"the Dask task was {fut.status}",
                    "seconds": time.monotonic() - t0}
        try:
            err = fut.exception()
            reason = ("the Dask workers running it died (out of memory?)" if isinstance(err, KilledWorker)
                      else f"the Dask task failed: {type(err).__name__}: {err}")
        except Exception as e:
            reason = f"the Dask task failed: {type(e).__name__}"
        return {"result": None, "failure": "crashed", "reason": reason[:300], "seconds": time.monotonic() - t0}
    except KeyboardInterrupt:
        if stopped:
            try:
                Event(topic, client).set()
            except Exception:
                pass
        return {"result": None, "failure": "stopped", "reason": "stopped", "seconds": time.monotonic() - t0}
    finally:
        try:
            fut.release()
            client.close(timeout=5)
        except Exception:
            pass


class _Watch:
    """What the relay learns once a tick from the job's events and the scheduler: progress for the key holder;
    why to give up now (None: keep waiting): the task started more than MAX_LOST + 1 times (Dask reruns a task
    whose worker died), or the cluster had no worker for NO_WORKER seconds."""

    def __init__(self, client, topic: str, progress):
        self.client, self.topic, self.progress = client, topic, progress
        self.last, self.attempts, self.workerless_since = float("-inf"), 0, None

    def tick(self, elapsed: float) -> str | None:
        try:
            events = self.client.get_events(self.topic)
        except Exception:  # the scheduler is unreachable for now: no progress this tick
            events = ()
        new = [(e[0], e[1]) for e in events if isinstance(e, (tuple, list)) and len(e) == 2  # a bounded deque:
               and isinstance(e[0], (int, float)) and e[0] > self.last]
        self.last = max([self.last] + [t for t, _ in new])                                  # read by time
        steps = [m for _, m in new if isinstance(m, dict)]  # Dask adds the worker's address to each event
        self.attempts += sum("attempt" in m for m in steps)
        shown = [m for m in steps if isinstance(m.get("stage"), str)]
        if shown:
            self.progress(**{k: shown[-1][k] for k in ("stage", "percent", "elapsed")
                             if isinstance(shown[-1].get(k), (str, int, float))})
        if self.attempts > MAX_LOST + 1:
            return (f"the Dask workers running it died {self.attempts - 1} times (at most {MAX_LOST} reruns; "
                    "out of memory?)")
        try:
            workers = len(self.client.scheduler_info().get("workers", {}))
        except Exception:
            workers = 1  # unknown: the budget's deadline still holds
        if workers:
            self.workerless_since = None
        elif self.workerless_since is None:
            self.workerless_since = elapsed
        elif elapsed - self.workerless_since > NO_WORKER:
            return f"no Dask worker in the cluster for {NO_WORKER:g} s"
        return None


RELAY_TASKS = {"check": relay_check, "certify": relay_certify}


# ----------------------------------------------------------------------------- in the key holder

def check(cluster: Cluster) -> int:
    """The number of workers of the cluster, asked through a relay; ParameterError (one line) if unusable."""
    out = run("check", {"cluster": cluster.as_dict()}, RELAY, entry="service.relay")
    if out.result is None:
        raise ParameterError(f"cannot use the Dask scheduler at {cluster.address}: {out.reason}")
    if "error" in out.result:
        raise ParameterError(str(out.result["error"]))
    return int(out.result["workers"])


def run_on_cluster(cluster: Cluster, req: dict, budget: Budget, *, on_progress, keep_going) -> Outcome:
    """Like service.sandbox.run("certify", ...), on a Dask worker through a relay: an Outcome, never an
    exception. The Outcome's result is what the cluster claims; the caller replays it before signing."""
    relay = Budget(RELAY.memory, budget.seconds + 2 * GRACE)
    out = run("certify", {"cluster": cluster.as_dict(), "request": req, "memory": budget.memory,
                          "seconds": budget.seconds}, relay, entry="service.relay",
              on_progress=on_progress, keep_going=keep_going, grace=5.0)
    if out.result is None:
        return Outcome(failure=out.failure if out.failure in ("stopped", "seconds") else "crashed",
                       reason=f"the Dask relay failed: {out.reason}" if out.failure == "crashed" else out.reason,
                       seconds=out.seconds)
    r = out.result
    failure = r.get("failure")
    result = r.get("result") if isinstance(r.get("result"), dict) else None
    if result is None and failure is None:
        failure, r["reason"] = "crashed", "the Dask task answered neither a result nor a failure"
    return Outcome(result, failure if result is None else None, None if r.get("reason") is None
                   else str(r["reason"])[:300], out.seconds)


