"""Workers: claim a job, compute it in a limited child process, sign, record (docs/service.md).

    python -m service.worker --db DB --key PRIVATE.pem --owner NAME --parent PID --keyid HEX
                             --memory BYTES --seconds S [--cluster JSON]
    python -m service.worker --public-of PRIVATE.pem   # {"keyid", "public_pem"}: the HTTP process never reads the key

A worker holds the signing key and never computes: each job runs in its own child process
(service.sandbox: a fresh interpreter without the key, an address-space limit, killed at
the wall-clock limit). Once a second the worker renews its lease on the job and publishes
the child's progress; when the job was cancelled or taken away it kills the child and
takes the next job. With --cluster the job runs on a Dask worker instead, through a relay child
(service.cluster): the key and the signing stay here, and what the cluster returns is signed only
after the independent verifier replayed it (verifier.replay_statement, in a limited child) and its
claim is the one requested. A child over a limit is killed and its job fails with that reason;
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
    from certifier.claim import RANDOM_ALLOCATION
    from certifier.params import parse_decimal
    pred = outcome.get("predicate")
    if not isinstance(pred, dict) or not isinstance(pred.get("claim"), dict):
        return "no predicate"
    claim = dict(pred["claim"])
    claim.setdefault("scheme", RANDOM_ALLOCATION)  # formats v1 and v2 name no scheme: random allocation
    want = {"steps": req["steps"], "epochs": req["epochs"], "target": req["target"],
            "scheme": req.get("scheme", RANDOM_ALLOCATION)}
    if req.get("stages") is not None:  # format v5: the claim lists the stages in order and has no steps/epochs
        want = {"steps": None, "epochs": None, "target": req["target"], "scheme": RANDOM_ALLOCATION}
        why = _stages_differ(req["stages"], claim)
        if why:
            return why
    for k in ("sigma", "iterations"):
        if req.get(k) is not None:
            want[k] = req[k]
    for k, v in want.items():
        if claim.get(k) != v:
            return f"claim.{k} is {claim.get(k)!r}, the request asked for {v!r}"
    kind = claim.get("kind", {"name": "tv"})          # formats v1-v3 state no kind: tv
    if kind != (req.get("kind") or {"name": "tv"}):
        return f"claim.kind is {kind!r}, the request asked for {req.get('kind') or {'name': 'tv'}!r}"
    try:
        upper = pred["upper"]["bound"] if isinstance(pred.get("upper"), dict) else pred["bound"]  # v4: upper.bound
        if parse_decimal("bound", upper) > parse_decimal("target", claim["target"]):
            return f"bound {upper} exceeds the target {claim['target']}"
    except (KeyError, TypeError, ValueError):
        return "no readable bound"
    return None


def _stages_differ(stages: list, claim: dict) -> str | None:
    """Why a v5 claim's stage list is not the requested one at the one shared sigma (None: it is). A stage
    entry may carry a sigma (an optional key of format v5): it must then be the claim's sigma."""
    got = claim.get("stages")
    try:
        pairs = [(st["steps"], st["epochs"]) for st in got]
        shared = all(st.get("sigma", claim.get("sigma")) == claim.get("sigma") for st in got)
    except (KeyError, TypeError, AttributeError):
        return "claim.stages is not a stage list"
    if pairs != [(st["steps"], st["epochs"]) for st in stages] or not shared:
        return f"claim.stages is {got!r}, the request asked for {stages!r} at one sigma"
    return None


class Worker:
    def __init__(self, db: str, key_path: str, owner: str, parent: int, budget: Budget, keyid: str | None = None,
                 cluster: dict | None = None):
        from certifier.certificate.envelope import key_id
        from certifier.certificate.keys import load_private
        from service.cluster import Cluster
        from service.store import Store
        self.store, self.owner, self.parent, self.budget = Store(db, create=False), owner, parent, budget
        # jobs go to this Dask cluster through a relay child; the key stays here (service.cluster)
        self.cluster = None if cluster is None else Cluster(**cluster)
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
            finish("failed", reason=f"not signed: {why}", error_kind="rejected")
        else:
            try:
                stmt = self._statement(req, res["predicate"])
            except (KeyError, TypeError, ValueError, RecursionError) as err:
                finish("failed", reason=f"not signed: malformed predicate ({type(err).__name__})",
                       error_kind="rejected")
                return
            if self.cluster is not None and (why := self.replay(stmt, keep_going=heartbeat)) is not None:
                print(f"sigmacert worker {self.owner}: job {jid}: {why}", file=sys.stderr, flush=True)
                finish("failed", reason=why, error_kind="rejected")
                return
            finish("done", bound=res["bound"], sigma=res["sigma"], keyid=self.keyid, envelope=self._sign(stmt))

    def replay(self, stmt: dict, keep_going) -> str | None:
        """Why the Statement must not be signed (None: the independent verifier's replay accepts it).

        The replay runs in a limited child under the job's budget and the verifier's cost model; a
        predicate the cost model prices above the budget is refused, not replayed."""
        import base64

        from certifier.certificate.envelope import canonical_json
        payload = {"statement": base64.b64encode(canonical_json(stmt)).decode(), "max_memory": self.budget.memory,
                   "max_seconds": self.budget.seconds}
        out = run("replay", payload, self.budget, keep_going=keep_going)
        if out.result is None:
            return f"not signed: the independent replay of the cluster's predicate failed: {out.reason}"
        r = out.result
        if r.get("accepted") is not True:
            return (f"not signed: the independent replay rejected the cluster's predicate: "
                    f"{r.get('reason')}: {str(r.get('detail'))[:300]}")
        return None

    def compute(self, req: dict, *, on_progress, keep_going):
        """The job's Outcome: a local limited child, or the same child on a Dask worker."""
        if self.cluster is None:
            return run("certify", req, self.budget, on_progress=on_progress, keep_going=keep_going)
        from service.cluster import run_on_cluster
        return run_on_cluster(self.cluster, req, self.budget, on_progress=on_progress, keep_going=keep_going)

    @staticmethod
    def _statement(req: dict, pred: dict) -> dict:
        from certifier.certificate.envelope import claim_subject, statement
        s = req.get("subject")
        subject = {"name": s["name"], "digest": {"sha256": s["sha256"]}} if s else claim_subject(pred["claim"])
        return statement(subject, pred)

    def _sign(self, stmt: dict) -> str:
        from certifier.certificate.envelope import sign_statement
        return sign_statement(stmt, self.key).decode("utf-8")


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
    from certifier.errors import KeyFileError
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
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from certifier.certificate.envelope import key_id
    from certifier.certificate.keys import load_private
    from certifier.errors import SigmacertError
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
    ap.add_argument("--key")
    ap.add_argument("--owner")
    ap.add_argument("--parent", type=int)
    ap.add_argument("--keyid", help="the key id the server publishes; refuse any other key")
    ap.add_argument("--memory", type=int, help="address-space limit of each job process (bytes)")
    ap.add_argument("--seconds", type=float, help="wall-clock limit of each job (s)")
    ap.add_argument("--cluster", help="a Dask cluster as JSON (service.cluster.Cluster): compute jobs there")
    args = ap.parse_args(argv)
    if args.public_of:
        return _print_public(args.public_of)
    if None in (args.db, args.key, args.owner, args.parent, args.memory, args.seconds):
        ap.error("--db, --key, --owner, --parent, --memory and --seconds are required")
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
