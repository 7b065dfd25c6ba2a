"""Workers: claim a job, compute it in a limited child process, have it replayed and signed, record (docs/service.md).

    python -m service.worker --db DB --key PRIVATE.pem --owner NAME --parent PID --keyid HEX
                             --memory BYTES --seconds S [--cluster JSON]
    python -m service.worker --public-of PRIVATE.pem   # {"keyid", "public_pem"}: the HTTP process never reads the key

A worker never computes and never holds the signing key: each job runs in its own child process
(service.sandbox: a fresh interpreter, an address-space limit, killed at the wall-clock limit), or on a
Dask worker through a relay child (--cluster, service.cluster). Either way the unsigned predicate goes
to a signer process (service.signer), the only holder of the key, which signs it only after the
independent verifier replayed it and its claim is the one requested. Once a second the worker renews
its lease on the job and publishes the child's progress; when the job was cancelled or taken away it
kills the child (or the signer) and takes the next job. A child over a limit is killed and its job
fails with that reason; the worker carries on. A worker dies with its server (PR_SET_PDEATHSIG, and a parent
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

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from certifier.door import key_id, load_private
from certifier.errors import KeyFileError, ParameterError, SigmacertError
from service import spool
from service.cluster import Cluster, run_on_cluster
from service.sandbox import Budget, die_with_parent, run
from service.signer import sign_job
from service.store import Store

LEASE = 60.0      # seconds a claim is valid without a heartbeat
POLL = 0.5        # seconds between queue polls when idle
RECORD = 30.0     # seconds a worker keeps trying to record an outcome while the database fails (disk full)


class Worker:
    def __init__(self, db: str, key_path: str, owner: str, parent: int, budget: Budget, keyid: str | None = None,
                 cluster: dict | None = None):
        self.store, self.owner, self.parent, self.budget = Store(db, create=False), owner, parent, budget
        # jobs go to this Dask cluster through a relay child (service.cluster)
        self.cluster = None if cluster is None else Cluster(**cluster)
        # the key's path and the id the server publishes: only the signer process reads the key (service.signer)
        self.key_path, self.keyid = key_path, keyid
        self.spool = spool.spool_of(db)   # the signer's spool: a job is signed once (service.spool)
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

        if self.record_spooled(jid, req):
            return
        out = self.compute(req, on_progress=lambda **p: progress.update(p), keep_going=heartbeat)
        finish = lambda status, **kw: self.record(jid, status, elapsed=out.seconds, **kw)  # noqa: E731
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
        else:
            self.sign(jid, req, res, finish, progress, heartbeat)

    def record_spooled(self, jid: str, req: dict) -> bool:
        """Record the envelope the signer spooled for this job on an earlier run (the server died before the
        database heard of it), instead of computing and signing the job again; False when there is none."""
        prior = spool.get(self.spool, jid, req)
        if prior is None or prior.get("keyid") != self.keyid:
            return False
        print(f"sigmacert worker {self.owner}: job {jid} was signed on an earlier run; recording its spooled "
              "envelope", file=sys.stderr, flush=True)
        if self.record(jid, "done", bound=prior.get("bound"), sigma=prior.get("sigma"), keyid=prior["keyid"],
                       envelope=prior["envelope"]):
            spool.drop(self.spool, jid)
        return True

    def record(self, jid: str, status: str, **kw) -> bool:
        """Store the outcome (fenced on our lease), trying again for RECORD seconds while the database fails:
        a disk full for a moment must not cost a computed and signed job its run (it would be run again)."""
        deadline = time.monotonic() + RECORD
        while True:
            try:
                return self.store.finish(jid, self.owner, status, **kw)
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def sign(self, jid: str, req: dict, res: dict, finish, progress: dict, heartbeat) -> None:
        """Hand the predicate to a signer process (service.signer): replayed, then signed, or refused."""
        out = sign_job(self.key_path, self.keyid, req, res["predicate"], self.budget, keep_going=heartbeat,
                       on_progress=lambda **p: progress.update(p), job=jid, spool_dir=self.spool,
                       record={"bound": res["bound"], "sigma": res["sigma"]})
        if out.failure == "stopped":
            return
        r = out.result or {}
        if "envelope" in r:
            if finish("done", bound=res["bound"], sigma=res["sigma"], keyid=r["keyid"], envelope=r["envelope"]):
                spool.drop(self.spool, jid)
            return
        why = r.get("refused") or f"not signed: the signer failed: {out.reason}"
        print(f"sigmacert worker {self.owner}: {why}", file=sys.stderr, flush=True)
        limit = r.get("limit") or out.failure in ("memory", "seconds")
        finish("failed", reason=why, error_kind="limit" if limit else "rejected")

    def compute(self, req: dict, *, on_progress, keep_going):
        """The job's Outcome: a local limited child, or the same child on a Dask worker."""
        if self.cluster is None or "audit" in req:    # an audit (routes/audits.py) runs here
            return run("audit" if "audit" in req else "certify", req, self.budget, on_progress=on_progress,
                       keep_going=keep_going)
        return run_on_cluster(self.cluster, req, self.budget, on_progress=on_progress, keep_going=keep_going)


# ----------------------------------------------------------------------------- supervisor (server side)

class WorkerPool:
    """N worker processes, restarted when one ends; a dead worker's job goes back to the queue."""

    def __init__(self, store, db: str, key_path: str, n: int, keyid: str, budget: Budget, log=None,
                 cluster=None):
        self.store, self.db, self.key_path, self.n, self.keyid = store, db, key_path, n, keyid
        self.budget, self.cluster = budget, cluster
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.procs: dict[int, tuple[subprocess.Popen, str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._monitor, daemon=True)

    def _spawn(self, slot: int) -> None:
        owner = f"w{slot}-{os.getpid()}-{secrets.token_hex(3)}"
        cmd = [sys.executable, "-m", "service.worker", "--db", self.db, "--key", self.key_path,
               "--owner", owner, "--parent", str(os.getpid()), "--keyid", self.keyid,
               "--memory", str(self.budget.memory), "--seconds", repr(self.budget.seconds)]
        if self.cluster is not None:
            cmd += ["--cluster", json.dumps(self.cluster.as_dict())]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, close_fds=True)
        self.procs[slot] = (p, owner, time.monotonic())

    def start(self) -> None:
        self.prune_spool()
        for slot in range(self.n):
            self._spawn(slot)
        self._thread.start()

    def prune_spool(self) -> int:
        """Drop the spooled envelopes of jobs that are over (or unknown): only a queued or running job can
        still need its own. The number dropped."""
        d, n = spool.spool_of(self.db), 0
        for jid in spool.jobs(d):
            try:
                row = self.store.get(jid)
            except Exception:   # the database fails: keep them all, the next start prunes
                return n
            if row is None or row["status"] not in ("queued", "running"):
                spool.drop(d, jid)
                n += 1
        return n

    def alive(self) -> int:
        return sum(p.poll() is None for p, _, _ in self.procs.values())

    def _monitor(self) -> None:
        while not self._stop.wait(0.5):
            for slot, (p, owner, started) in list(self.procs.items()):
                if p.poll() is None or self._stop.is_set():
                    continue
                try:
                    n = self.store.requeue(owner)
                except Exception as err:  # the database fails: respawn anyway; the dead worker's lease
                    n = f"none ({type(err).__name__}: lease left to expire)"  # runs out and its job is claimed again
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


def public_of(key_path: str) -> tuple[str, str]:
    """(key id, public PEM) of the private key file, read in a child: the caller never holds the key.
    KeyFileError (one line) when the file is unusable."""
    out = subprocess.run([sys.executable, "-m", "service.worker", "--public-of", key_path], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120)
    try:
        r = json.loads(out.stdout)
    except ValueError:
        r = {"error": f"cannot read the issuer key {key_path} (exit {out.returncode})"}
    if "error" in r:
        raise KeyFileError(r["error"])
    return r["keyid"], r["public_pem"]


def _print_public(key_path: str) -> int:

    try:
        pub = load_private(key_path).public_key()
    except SigmacertError as err:
        print(json.dumps({"error": str(err)}))
        return 2
    print(json.dumps({"keyid": key_id(pub),
                      "public_pem": pub.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()}))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m service.worker")
    ap.add_argument("--public-of", metavar="PRIVATE.pem", help="print the key id and public PEM of a key, as JSON")
    ap.add_argument("--db")
    ap.add_argument("--key", help="the private key's path, handed to the signer process (this one never reads it)")
    ap.add_argument("--owner")
    ap.add_argument("--parent", type=int)
    ap.add_argument("--keyid", help="the key id the server publishes; refuse any other key")
    ap.add_argument("--memory", type=int, help="address-space limit of each job process (bytes)")
    ap.add_argument("--seconds", type=float, help="wall-clock limit of each job (s)")
    ap.add_argument("--cluster", help="a Dask cluster as JSON (service.cluster.Cluster): compute jobs there")
    args = ap.parse_args(argv)
    if args.public_of:
        return _print_public(args.public_of)
    if None in (args.db, args.key, args.owner, args.parent, args.keyid, args.memory, args.seconds):
        ap.error("--db, --key, --owner, --parent, --keyid, --memory and --seconds are required")
    die_with_parent(args.parent)
    try:
        Worker(args.db, args.key, args.owner, args.parent, Budget(args.memory, args.seconds),
               args.keyid, None if args.cluster is None else json.loads(args.cluster)).run_forever()
    except KeyboardInterrupt:
        return 0
    except ParameterError as err:  # the cluster is gone or changed: say why; the pool restarts us
        print(f"sigmacert worker: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
