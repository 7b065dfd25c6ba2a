"""Worker processes: claim a job from the store, certify, sign, record (docs/service.md).

    python -m service.worker --db DB --key PRIVATE.pem --owner NAME --parent PID

A worker holds a lease on its job and renews it from a heartbeat thread, which
also publishes progress and ends the process at once when the job was cancelled
or taken away (the server's supervisor then starts a fresh worker). A worker dies
with its server (PR_SET_PDEATHSIG, and a parent check), so after a SIGKILL of the
server no orphan keeps computing; the restarted server re-queues the job.
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
import traceback

LEASE = 60.0      # seconds a claim is valid without a heartbeat
HEARTBEAT = 1.0   # seconds between heartbeats (progress, lease, cancellation, parent)
POLL = 0.5        # seconds between queue polls when idle


def die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when the parent dies; and exit now if it already has."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(0)


class Worker:
    def __init__(self, db: str, key_path: str, owner: str, parent: int, keyid: str | None = None):
        from certifier.envelope import key_id
        from certifier.keys import load_private
        from service.store import Store
        self.store, self.owner, self.parent = Store(db), owner, parent
        self.key = load_private(key_path)
        self.keyid = key_id(self.key.public_key())
        if keyid is not None and keyid != self.keyid:  # the key file changed under a running server
            raise SystemExit(f"sigmacert worker: {key_path} is no longer the key this server publishes "
                             f"({keyid[:16]}...); restart the server to rotate keys")
        self.job = None
        self.progress = {"stage": "starting", "percent": 0.0, "elapsed": 0.0}
        threading.Thread(target=self._heartbeat, daemon=True).start()
        signal.signal(signal.SIGTERM, self._on_term)

    def _on_term(self, signum, frame):
        os._exit(0)  # the supervisor puts our job back in the queue (WorkerPool.stop / _monitor)

    def _heartbeat(self) -> None:
        while True:
            time.sleep(HEARTBEAT)
            if os.getppid() != self.parent:
                os._exit(0)
            job = self.job
            if job is None:
                continue
            p = dict(self.progress)
            try:
                ok = self.store.heartbeat(job["id"], self.owner, LEASE, p["stage"], p["percent"], p["elapsed"])
            except Exception:  # a busy database: try again next beat; the lease is long
                continue
            if not ok and self.job is job:  # cancelled, or re-queued and given to another worker
                print(f"sigmacert worker {self.owner}: job {job['id']} no longer ours; stopping",
                      file=sys.stderr, flush=True)
                os._exit(0)

    def _report(self, stage: str, percent: float, elapsed: float) -> None:
        self.progress = {"stage": stage, "percent": round(float(percent), 1), "elapsed": round(float(elapsed), 2)}

    def run_forever(self) -> None:
        while True:
            job = self.store.claim(self.owner, LEASE)
            if job is None:
                time.sleep(POLL)
                continue
            self.progress = {"stage": "starting", "percent": 0.0, "elapsed": 0.0}
            self.job = job
            try:
                self.run(job)
            finally:
                self.job = None

    def run(self, job: dict) -> None:
        from certifier.certify import certify
        from certifier.envelope import canonical_json, claim_subject, sign_envelope, statement
        from certifier.params import parse_sigma, parse_target
        req = json.loads(job["request"])
        t0 = time.perf_counter()
        try:
            sigma = parse_sigma(req["sigma"]) if req.get("sigma") is not None else None
            # two-sided (format v2) when the service searched the exact sigma itself: only then
            # can sigma - 1e-6 be certified to miss the target (docs/two-sided.md)
            res = certify(req["steps"], req["epochs"], parse_target(req["target"]), sigma,
                          progress=self._report, two_sided=sigma is None)
        except (ValueError, ArithmeticError, OverflowError, MemoryError) as err:
            msg = str(err).splitlines()[0] if str(err) else type(err).__name__
            self.store.finish(job["id"], self.owner, "failed", reason=f"error: {msg}", error_kind="error",
                              elapsed=time.perf_counter() - t0)
            return
        except Exception as err:  # logged for the operator; the API only shows one line
            traceback.print_exc(file=sys.stderr)
            self.store.finish(job["id"], self.owner, "failed", reason=f"internal error: {type(err).__name__}",
                              error_kind="error", elapsed=time.perf_counter() - t0)
            return
        elapsed = time.perf_counter() - t0
        if not res.success:
            self.store.finish(job["id"], self.owner, "failed", error_kind="not-certified", bound=res.bound,
                              sigma=res.sigma, elapsed=elapsed,
                              reason=f"not certified: the bound reached, {res.bound}, exceeds the target "
                                     f"{res.target} at sigma {res.sigma}")
            return
        pred = res.predicate
        s = req.get("subject")
        subject = ({"name": s["name"], "digest": {"sha256": s["sha256"]}} if s else claim_subject(pred["claim"]))
        env = sign_envelope(statement(subject, pred), self.key)
        self.store.finish(job["id"], self.owner, "done", bound=res.bound, sigma=res.sigma, keyid=self.keyid,
                          envelope=canonical_json(env).decode("utf-8"), elapsed=elapsed)


# ----------------------------------------------------------------------------- supervisor (server side)

class WorkerPool:
    """N worker processes, restarted when one ends; a dead worker's job goes back to the queue."""

    def __init__(self, store, db: str, key_path: str, n: int, keyid: str, log=None):
        self.store, self.db, self.key_path, self.n, self.keyid = store, db, key_path, n, keyid
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.procs: dict[int, tuple[subprocess.Popen, str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._monitor, daemon=True)

    def _spawn(self, slot: int) -> None:
        owner = f"w{slot}-{os.getpid()}-{secrets.token_hex(3)}"
        cmd = [sys.executable, "-m", "service.worker", "--db", self.db, "--key", self.key_path,
               "--owner", owner, "--parent", str(os.getpid()), "--keyid", self.keyid]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, close_fds=True)
        self.procs[slot] = (p, owner, time.monotonic())

    def start(self) -> None:
        for slot in range(self.n):
            self._spawn(slot)
        self._thread.start()

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

    def pids(self) -> list[int]:
        return [p.pid for p, _, _ in self.procs.values()]

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
    args = ap.parse_args(argv)
    die_with_parent(args.parent)
    try:
        os.nice(5)  # the API stays responsive while workers compute
    except OSError:
        pass
    try:
        Worker(args.db, args.key, args.owner, args.parent, args.keyid).run_forever()
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
