"""Workers: claim a job, compute it in a limited child process, sign, record (docs/service.md).

    python -m service.worker --db DB --key PRIVATE.pem --owner NAME --parent PID --keyid HEX
                             --memory BYTES --seconds S [--scheduler tcp://HOST:PORT]

A worker holds the signing key and never computes: each job runs in its own child process
(service.sandbox: a fresh interpreter without the key, an address-space limit, killed at
the wall-clock limit). Once a second the worker renews its lease on the job and publishes
the child's progress; when the job was cancelled or taken away it kills the child and
takes the next job. With --scheduler the child runs on a Dask worker instead (service.cluster):
the key and the signing stay here. A child over a limit is killed and its job fails with that reason;
the worker carries on. A worker dies with its server (PR_SET_PDEATHSIG, and a parent
check), and its child with it, so after a SIGKILL of the server no orphan keeps computing;
the restarted server re-queues the job.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time

from certifier.errors import ParameterError
from service.sandbox import Budget, die_with_parent, run

LEASE = 60.0      # seconds a claim is valid without a heartbeat
POLL = 0.5        # seconds between queue polls when idle


def matches_request(req: dict, outcome: dict) -> str | None:
    """Why a child's certified predicate must not be signed for `req` (None: it may).

    The computation is our own code, but the key signs only a claim that is the one requested
    and a bound that meets the target, read back from the predicate itself."""
    from certifier.certificate.claim import RANDOM_ALLOCATION
    from certifier.params import parse_decimal
    pred = outcome.get("predicate")
    if not isinstance(pred, dict) or not isinstance(pred.get("claim"), dict):
        return "no predicate"
    claim = dict(pred["claim"])
    claim.setdefault("scheme", RANDOM_ALLOCATION)  # formats v1 and v2 name no scheme: random allocation
    want = {"steps": req["steps"], "epochs": req["epochs"], "target": req["target"],
            "scheme": req.get("scheme", RANDOM_ALLOCATION)}
    for k in ("sigma", "iterations"):
        if req.get(k) is not None:
            want[k] = req[k]
    for k, v in want.items():
        if claim.get(k) != v:
            return f"claim.{k} is {claim.get(k)!r}, the request asked for {v!r}"
    try:
        if parse_decimal("bound", pred["bound"]) > parse_decimal("target", claim["target"]):
            return f"bound {pred['bound']} exceeds the target {claim['target']}"
    except (KeyError, TypeError, ValueError):
        return "no readable bound"
    return None


class Worker:
    def __init__(self, db: str, key_path: str, owner: str, parent: int, budget: Budget, keyid: str | None = None,
                 scheduler: str | None = None):
        from certifier.certificate.envelope import key_id
        from certifier.certificate.keys import load_private
        from service.store import Store
        self.store, self.owner, self.parent, self.budget = Store(db), owner, parent, budget
        self.cluster = None
        if scheduler is not None:  # jobs go to this Dask cluster; the key stays here (service.cluster)
            from service.cluster import connect
            self.cluster = connect(scheduler)
        self.key = load_private(key_path)
        self.keyid = key_id(self.key.public_key())
        if keyid is not None and keyid != self.keyid:  # the key file changed under a running server
            raise SystemExit(f"sigmacert worker: {key_path} is no longer the key this server publishes "
                             f"({keyid[:16]}...); restart the server to rotate keys")
        signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))  # the child dies with us;
        # the supervisor puts our job back in the queue (WorkerPool.stop / _monitor)

    def _check_parent(self) -> None:
        if os.getppid() != self.parent:
            os._exit(0)

    def run_forever(self) -> None:
        while True:
            self._check_parent()
            job = self.store.claim(self.owner, LEASE)
            if job is None:
                time.sleep(POLL)
                continue
            self.run(job)

    def run(self, job: dict) -> None:
        jid, req = job["id"], json.loads(job["request"])
        progress = {"stage": "starting", "percent": 0.0, "elapsed": 0.0}

        def heartbeat() -> bool:  # once a second: lease, progress; False once the job is not ours
            self._check_parent()
            try:
                ok = self.store.heartbeat(jid, self.owner, LEASE, **progress)
            except Exception:  # a busy database: try again next beat; the lease is long
                return True
            if not ok:
                print(f"sigmacert worker {self.owner}: job {jid} no longer ours; stopping it",
                      file=sys.stderr, flush=True)
            return ok

        out = self.compute(req, on_progress=lambda **p: progress.update(p), keep_going=heartbeat)
        finish = lambda status, **kw: self.store.finish(jid, self.owner, status, elapsed=out.seconds, **kw)  # noqa: E731
        if out.failure == "stopped":
            return  # cancelled or given to another worker: nothing of ours to record
        if out.failure is not None:
            finish("failed", reason=out.reason, error_kind="limit" if out.failure in ("memory", "seconds")
                   else "error")
            return
        res = out.result
        if "error" in res:
            finish("failed", reason=f"error: {res['error']}", error_kind="error")
        elif not res["success"]:
            finish("failed", error_kind="not-certified", bound=res["bound"], sigma=res["sigma"],
                   reason=f"not certified: the bound reached, {res['bound']}, exceeds the target "
                          f"{res['target']} at sigma {res['sigma']}")
        elif (why := matches_request(req, res)) is not None:
            finish("failed", reason=f"internal error: not signed: {why}", error_kind="error")
        else:
            finish("done", bound=res["bound"], sigma=res["sigma"], keyid=self.keyid,
                   envelope=self._sign(req, res["predicate"]))

    def compute(self, req: dict, *, on_progress, keep_going):
        """The job's Outcome: a local limited child, or the same child on a Dask worker."""
        if self.cluster is None:
            return run("certify", req, self.budget, on_progress=on_progress, keep_going=keep_going)
        from service.cluster import run_on_cluster
        return run_on_cluster(self.cluster, req, self.budget, on_progress=on_progress, keep_going=keep_going)

    def _sign(self, req: dict, pred: dict) -> str:
        from certifier.certificate.envelope import canonical_json, claim_subject, sign_envelope, statement
        s = req.get("subject")
        subject = {"name": s["name"], "digest": {"sha256": s["sha256"]}} if s else claim_subject(pred["claim"])
        return canonical_json(sign_envelope(statement(subject, pred), self.key)).decode("utf-8")


# ----------------------------------------------------------------------------- supervisor (server side)

class WorkerPool:
    """N worker processes, restarted when one ends; a dead worker's job goes back to the queue."""

    def __init__(self, store, db: str, key_path: str, n: int, keyid: str, budget: Budget, log=None,
                 scheduler: str | None = None):
        self.store, self.db, self.key_path, self.n, self.keyid = store, db, key_path, n, keyid
        self.budget, self.scheduler = budget, scheduler
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.procs: dict[int, tuple[subprocess.Popen, str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._monitor, daemon=True)

    def _spawn(self, slot: int) -> None:
        owner = f"w{slot}-{os.getpid()}-{secrets.token_hex(3)}"
        cmd = [sys.executable, "-m", "service.worker", "--db", self.db, "--key", self.key_path,
               "--owner", owner, "--parent", str(os.getpid()), "--keyid", self.keyid,
               "--memory", str(self.budget.memory), "--seconds", repr(self.budget.seconds)]
        if self.scheduler is not None:
            cmd += ["--scheduler", self.scheduler]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, close_fds=True)
        self.procs[slot] = (p, owner, time.monotonic())

    def start(self) -> None:
        for slot in range(self.n):
            self._spawn(slot)
        self._thread.start()

    def alive(self) -> int:
        return sum(p.poll() is None for p, _, _ in self.procs.values())

    def _monitor(self) -> None:
        while not self._stop.wait(0.5):
            for slot, (p, owner, started) in list(self.procs.items()):
                if p.poll() is None or self._stop.is_set():
                    continue
                try:
                    n = self.store.requeue(owner)
                except Exception:
                    continue  # database busy: next round
                if p.returncode != 0:
                    self.log(f"sigmacert serve: worker {owner} exited with {p.returncode}; "
                             f"{n} job(s) re-queued; restarting it")
                if time.monotonic() - started < 2.0:
                    time.sleep(2.0)  # a worker that cannot start must not spin
                self._spawn(slot)

    def stop(self, grace: float = 10.0) -> None:
        self._stop.set()
        for p, _, _ in self.procs.values():
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + grace
        for p, owner, _ in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            try:
                self.store.requeue(owner)
            except Exception:
                pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m service.worker")
    ap.add_argument("--db", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--owner", required=True)
    ap.add_argument("--parent", type=int, required=True)
    ap.add_argument("--keyid", help="the key id the server publishes; refuse any other key")
    ap.add_argument("--memory", type=int, required=True, help="address-space limit of each job process (bytes)")
    ap.add_argument("--seconds", type=float, required=True, help="wall-clock limit of each job (s)")
    ap.add_argument("--scheduler", help="a Dask scheduler address: compute jobs there (service.cluster)")
    args = ap.parse_args(argv)
    die_with_parent(args.parent)
    try:
        Worker(args.db, args.key, args.owner, args.parent, Budget(args.memory, args.seconds),
               args.keyid, args.scheduler).run_forever()
    except KeyboardInterrupt:
        return 0
    except ParameterError as err:  # the cluster is gone or changed: say why; the pool restarts us
        print(f"sigmacert worker: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
