"""Soak: the service under a stream of mixed jobs while workers, the server and the disk fail.

    python benchmarks/bench_soak.py [--minutes 5] [--workers 2] [--seed 1] [--json OUT] [--small]

On loopback it starts `sigmacert serve` (2 workers, a temporary key and three teams' tokens) with its
database on a small tmpfs of its own (as root; otherwise in a temporary directory and without the disk fault),
then for N minutes submits a bounded stream of small jobs from three teams -- tv, dp, tpr, a run in stages,
fixed bins, and requests that must be refused (invalid bodies, over the service's limits) -- cancels some,
and polls them, while a fault injector in turn
  * SIGKILLs a worker (the supervisor restarts it and re-queues its job),
  * SIGKILLs the server and restarts it on the same database and port (running jobs go back to the queue),
  * fills the database's filesystem (ENOSPC) for a few seconds, then frees it,
and a poller asks /healthz twice a second. Then it waits until every accepted job is done, failed or
cancelled, and checks:
  * lost: accepted jobs that are unknown or not finished at the end (must be 0);
  * failed without a reason (0);
  * duplicate signatures: jobs for which the signer signed two different certificates (0; the signer's audit
    line in the server log names the job and the envelope's SHA-256);
  * unreplayed signatures: archived certificates whose envelope the signer did not log as signed after an
    accepted replay (0);
  * every archived certificate verifies (verifier.verify_bytes against the issuer key: a full replay);
  * /healthz told the truth: no "ok" asked within 4 s after an API write was refused for storage ("lies"),
    and no 503 outside any fault window and its recovery (15 s) ("false alarms");
  * refusals: every invalid or over-limit request was refused with a 4xx, never accepted or a 5xx other than
    the documented storage 503;
and prints jobs, faults, those counts and the p50/p95 latency of the API calls.
`--small`: about 45 seconds (an 18 s stream, a fault every 4.5 s: at least one of each kind; the stream goes on,
without new faults, until 6 jobs were accepted or 120 s passed, so a slow machine still puts 6 jobs through the
faults) (the test suite runs it); exit 1 when a check fails.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx

PY = sys.executable
RECOVERY = 15.0          # seconds after a fault during which /healthz may still say 503
DISK_FULL = 4.0          # seconds the filesystem stays full
TMPFS = "64m"
SMALL_LEAST, SMALL_MOST = 6, 120.0   # --small: jobs accepted before its stream ends, and its longest stream (s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(xs: list, p: float) -> float:
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100 * len(xs) + 0.5)) - 1))] if xs else float("nan")


def cli(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "sigmacert", *args], capture_output=True, text=True, timeout=120, **kw)


# ----------------------------------------------------------------------------- the job stream

def bodies(rng: random.Random, n: int) -> list[tuple[str, dict]]:
    """A bounded pool of (kind, body): small cells (seconds each, both sides and the replay)."""
    out = []
    sig = lambda: f"{rng.uniform(2.5, 6.0):.2f}"  # noqa: E731
    makers = {
        "tv": lambda: {"steps": rng.choice([2, 3]), "epochs": rng.choice([1, 2, 4]), "target": "0.3", "sigma": sig()},
        "dp": lambda: {"steps": 2, "epochs": rng.choice([1, 2]), "epsilon": "1", "delta": "0.1", "sigma": sig()},
        "tpr": lambda: {"steps": 2, "epochs": rng.choice([1, 2]), "fpr": "0.1", "tpr": "0.5", "sigma": sig()},
        "stages": lambda: {"stages": rng.choice(["2x1,3x1", "3x1,2x1", "2x2,3x1"]), "target": "0.3", "sigma": sig()},
        "fixed-bins": lambda: {"steps": 2, "iterations": rng.choice([3, 5]), "scheme": "fixed-bins", "target": "0.3",
                               "sigma": sig()},
        "cancel": lambda: {"steps": 3, "epochs": 4, "target": "0.3", "sigma": sig()},
        "invalid": lambda: rng.choice([{"steps": 0, "epochs": 1, "target": "0.3"},
                                       {"steps": 2, "epochs": 1, "target": "1.5"},
                                       {"steps": 2, "epochs": 1, "target": "0.3", "colour": "red"}]),
        "over-limit": lambda: rng.choice([{"steps": 20000, "epochs": 1, "target": "0.3"},     # above --max-steps
                                          {"stages": "10000x50,5000x50", "target": "0.1"}]),  # predicted ~80 s > 40 s
    }
    weights = {"tv": 4, "dp": 2, "tpr": 2, "stages": 2, "fixed-bins": 2, "cancel": 2, "invalid": 1, "over-limit": 1}
    kinds = [k for k, w in weights.items() for _ in range(w)]
    for _ in range(n):
        k = rng.choice(kinds)
        out.append((k, makers[k]()))
    return out


# ----------------------------------------------------------------------------- the server

class Service:
    def __init__(self, root: str, workers: int, data: str):
        self.root, self.workers, self.data = root, workers, data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.key = os.path.join(root, "keys", "private.pem")
        self.tokens = os.path.join(root, "tokens.txt")
        self.log_path = os.path.join(root, "server.log")
        self.proc = None
        out = cli("keygen", "-o", os.path.join(root, "keys"))
        assert out.returncode == 0, out.stderr
        self.team = {}
        for team in ("red", "green", "blue"):
            out = cli("token", "create", "--tokens", self.tokens, "--name", team)
            assert out.returncode == 0, out.stderr
            self.team[team] = out.stdout.strip()

    def start(self, timeout: float = 120.0) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [PY, "-m", "sigmacert", "serve", "--port", str(self.port), "--db", os.path.join(self.data, "archive.db"),
                 "--key", self.key, "--tokens", self.tokens, "--workers", str(self.workers), "--job-seconds", "120",
                 "--max-predicted-seconds", "40", "--team-quota", "6", "--max-queued", "30", "--no-access-log",
                 "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"bench_soak: the server exited {self.proc.returncode}: {self.log()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code in (200, 503):
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise SystemExit("bench_soak: the server did not come up")

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def worker_pids(self) -> list[int]:
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/cmdline", "rb") as f:
                        cmd = f.read().split(b"\0")
                    with open(f"/proc/{d}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if ppid == self.proc.pid and b"service.worker" in cmd:
                    pids.append(int(d))
        return pids

    def kill(self) -> None:
        """SIGKILL the server process alone: its workers and their children die with it (PR_SET_PDEATHSIG)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            try:  # the server's own session: nothing of it is left behind
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ----------------------------------------------------------------------------- the run

class Soak:
    def __init__(self, svc: Service, seconds: float, rng: random.Random, disk: bool, fault_every: float,
                 least_accepted: int = 0, most_seconds: float | None = None):
        self.svc, self.seconds, self.rng, self.disk, self.fault_every = svc, seconds, rng, disk, fault_every
        # the stream goes on past `seconds` (faults no longer started) until this many jobs were accepted, or
        # most_seconds: a slow machine still puts that many jobs through the faults
        self.least_accepted, self.most_seconds = least_accepted, most_seconds or seconds
        self.http = httpx.Client(base_url=svc.url, timeout=30)
        self.lat: list[float] = []
        self.accepted: dict[str, dict] = {}     # id -> {"kind", "body", "team"}
        self.refusals = {"expected": 0, "wrongly accepted": 0, "5xx": 0, "429": 0, "503": 0, "transport": 0}
        self.faults: list[dict] = []            # {"kind", "start", "end"}
        self.health: list[tuple] = []           # (t, status, ok, workers)
        self.pending: list[tuple] = []          # (kind, body, team): no answer seen, sent again later
        self.storage_503: list[float] = []      # when an API write answered "storage unavailable"
        self.stop = threading.Event()            # the end of the health poll
        self.stream_over = threading.Event()     # the end of the stream: the injector's last faults
        self.t0 = time.monotonic()

    def call(self, method: str, path: str, **kw):
        t = time.monotonic()
        try:
            r = self.http.request(method, path, **kw)
        except httpx.TransportError:
            self.refusals["transport"] += 1
            return None
        self.lat.append(time.monotonic() - t)
        if r.status_code >= 500 and r.status_code != 503:
            self.refusals["5xx"] += 1
        return r

    def submit(self, kind: str, body: dict, team: str) -> None:
        r = self.call("POST", "/v1/certificates", json=body, headers={"Authorization": f"Bearer {self.svc.team[team]}"})
        must_refuse = kind in ("invalid", "over-limit")
        if r is None or r.status_code == 503:
            if r is not None:
                self.refusals["503"] += 1
                self.storage_503.append(time.monotonic() - self.t0)
            self.pending.append((kind, body, team))   # the answer is unknown: the same request again later
            return
        if r.status_code == 429:
            self.refusals["429"] += 1
            return
        if must_refuse:
            self.refusals["expected" if 400 <= r.status_code < 500 else "wrongly accepted"] += 1
            return
        if r.status_code in (200, 202):
            jid = r.json()["id"]
            self.accepted.setdefault(jid, {"kind": kind, "body": body, "team": team})
            if kind == "cancel":
                time.sleep(self.rng.uniform(0, 1.5))
                self.call("DELETE", f"/v1/certificates/{jid}",
                          headers={"Authorization": f"Bearer {self.svc.team[team]}"})
        else:
            print(f"bench_soak: {kind} {body} answered {r.status_code}: {r.text[:200]}", file=sys.stderr)

    def poll_health(self) -> None:
        while not self.stop.wait(0.5):
            t = time.monotonic() - self.t0
            try:
                r = httpx.get(f"{self.svc.url}/healthz", timeout=5)
                j = r.json()
                self.health.append((t, r.status_code, j.get("ok"), j.get("workers"), j.get("reasons")))
            except (httpx.TransportError, ValueError):
                self.health.append((t, None, None, None, None))

    def inject(self) -> None:
        """A fault every `fault_every` s (±30 %) in turn; when the stream ends, each kind not yet injected once
        (a slow machine may not reach the last kind within a short stream)."""
        order = ["worker", "server", "disk"] if self.disk else ["worker", "server"]
        i = 0
        while not self.stream_over.wait(self.fault_every * self.rng.uniform(0.7, 1.3)):
            i += self.fault(order[i % len(order)])
        for kind in order:
            if not any(f["kind"] == kind for f in self.faults):
                self.fault(kind)

    def fault(self, kind: str) -> bool:
        """Inject one fault of `kind` (False: no worker to kill yet)."""
        start = time.monotonic() - self.t0
        if kind == "worker":
            pids = self.svc.worker_pids()
            if not pids:
                return False
            os.kill(self.rng.choice(pids), signal.SIGKILL)
        elif kind == "server":
            self.svc.kill()
            time.sleep(1.0)
            self.svc.start()
        else:
            filler = os.path.join(self.svc.data, "filler")
            with open(filler, "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * (1 << 20))
                        f.flush()
                except OSError:
                    pass
            time.sleep(DISK_FULL)
            os.unlink(filler)
        self.faults.append({"kind": kind, "start": start, "end": time.monotonic() - self.t0})
        return True

    def run(self) -> None:
        pool = bodies(self.rng, 10_000)
        threads = [threading.Thread(target=self.poll_health, daemon=True),
                   threading.Thread(target=self.inject, daemon=True)]
        for t in threads:
            t.start()
        teams = list(self.svc.team)
        k = 0
        while True:
            t = time.monotonic() - self.t0
            if t >= self.seconds:
                self.stream_over.set()     # no fault starts after the stream's stated length
                if len(self.accepted) >= self.least_accepted or t >= self.most_seconds:
                    break
            if self.pending and self.rng.random() < 0.5:
                self.submit(*self.pending.pop(0))
            else:
                kind, body = pool[k % len(pool)]
                k += 1
                self.submit(kind, body, self.rng.choice(teams))
            for jid in self.rng.sample(list(self.accepted), min(3, len(self.accepted))):
                self.call("GET", f"/v1/certificates/{jid}")
            time.sleep(self.rng.uniform(0.3, 1.2))
        self.stream_over.set()
        threads[1].join(120)   # the injector's last faults, while /healthz is still polled
        self.stop.set()
        threads[0].join(60)
        if self.svc.proc.poll() is not None:
            self.svc.start()
        while self.pending:  # every request whose answer was lost, once more
            kind, body, team = self.pending.pop(0)
            self.submit(kind, body, team)

    def settle(self, timeout: float) -> dict:
        deadline, jobs = time.monotonic() + timeout, {}
        while time.monotonic() < deadline:
            jobs = {}
            for jid in self.accepted:
                r = self.call("GET", f"/v1/certificates/{jid}")
                jobs[jid] = r.json() if r is not None and r.status_code == 200 else None
            if all(j is not None and j["status"] in ("done", "failed", "cancelled") for j in jobs.values()):
                break
            time.sleep(2.0)
        return jobs


def health_truth(health: list, faults: list, storage_503: list) -> tuple[int, int]:
    """(lies, false alarms). A lie: /healthz asked after an API write was refused for storage said ok within
    the 5 s it must remember that failure (service/routes/health.py RECENT; its own small write may still fit
    where the refused one did not). A false alarm: a 503 outside every fault window and its recovery."""
    lies = sum(1 for th, _, ok, _, _ in health if ok and any(t < th <= t + 4.0 for t in storage_503))
    alarms = sum(1 for t, status, _, _, _ in health
                 if status == 503 and not any(f["start"] - 1 <= t <= f["end"] + RECOVERY for f in faults))
    return lies, alarms


def check(soak: Soak, jobs: dict) -> dict:
    from verifier import load_public_key, verify_bytes
    log = soak.svc.log()
    signed: dict[str, set] = {}
    for m in re.finditer(r"sigmacert signer: signed job=(\S+) envelope sha256=([0-9a-f]{64}) after the replay "
                         r"accepted it", log):
        signed.setdefault(m.group(1), set()).add(m.group(2))
    keys = soak.http.get("/v1/keys").json()["keys"]
    public = [load_public_key(k["public_pem"].encode()) for k in keys]
    status = {s: 0 for s in ("done", "failed", "cancelled")}
    lost = no_reason = unreplayed = not_verified = attempts_over_1 = 0
    for jid, j in jobs.items():
        if j is None or j["status"] not in status:
            lost += 1
            continue
        status[j["status"]] += 1
        attempts_over_1 += (j.get("attempts") or 0) > 1
        if j["status"] == "failed" and not j.get("reason"):
            no_reason += 1
        if j["status"] == "done":
            raw = soak.http.get(f"/v1/certificates/{jid}/envelope").content.removesuffix(b"\n")  # the file's newline
            if hashlib.sha256(raw).hexdigest() not in signed.get(jid, set()):
                unreplayed += 1
            if not verify_bytes(raw, public).accepted:
                not_verified += 1
    lies, alarms = health_truth(soak.health, soak.faults, soak.storage_503)
    up = [h for h in soak.health if h[1] is not None]
    return {"seconds": round(time.monotonic() - soak.t0, 1), "jobs accepted": len(jobs), **status,
            "refused as expected": soak.refusals["expected"], "wrongly accepted": soak.refusals["wrongly accepted"],
            "429": soak.refusals["429"], "storage 503": soak.refusals["503"], "other 5xx": soak.refusals["5xx"],
            "faults": {k: sum(f["kind"] == k for f in soak.faults) for k in ("worker", "server", "disk")},
            "lost": lost, "failed without reason": no_reason,
            "duplicate signatures": sum(len(v) > 1 for v in signed.values()),
            "jobs signed twice": {j: jobs.get(j, {}).get("attempts") for j, v in signed.items() if len(v) > 1},
            "unreplayed signatures": unreplayed, "not verified": not_verified,
            "jobs run more than once": attempts_over_1,
            "re-runs recorded from the spool": len(set(re.findall(r"job (\S+) was signed on an earlier run", log))
                                                   | set(re.findall(r"signer: job=(\S+) was signed before", log))),
            "healthz answers": len(up), "healthz 503": sum(h[1] == 503 for h in up),
            "healthz lies": lies, "healthz false alarms": alarms,
            "api calls": len(soak.lat), "p50 ms": round(1000 * percentile(soak.lat, 50), 1),
            "p95 ms": round(1000 * percentile(soak.lat, 95), 1),
            "mean ms": round(1000 * statistics.fmean(soak.lat), 1) if soak.lat else None}


def mount_tmpfs(path: str) -> bool:
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS},mode=0700", "tmpfs", path],
                          capture_output=True).returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_soak.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--small", action="store_true", help="about 45 s, one fault of each kind")
    args = ap.parse_args(argv)
    seconds, every = (18.0, 4.5) if args.small else (60 * args.minutes, 25.0)
    root = tempfile.mkdtemp(prefix="sigmacert-soak-")
    data = os.path.join(root, "data")
    os.makedirs(data)
    disk = mount_tmpfs(data)
    svc = Service(root, args.workers, data)
    try:
        svc.start()
        soak = Soak(svc, seconds, random.Random(args.seed), disk, every, *((SMALL_LEAST, SMALL_MOST) if args.small
                                                                          else (0, None)))
        soak.run()
        jobs = soak.settle(240.0 if args.small else 900.0)
        out = check(soak, jobs)
    finally:
        svc.stop()
        if disk:
            subprocess.run(["umount", "-l", data], capture_output=True)
        subprocess.run(["rm", "-rf", root], capture_output=True)
    out["disk fault"] = "tmpfs filled (ENOSPC)" if disk else "not available (needs root for a tmpfs)"
    out["load"] = os.getloadavg()[0]
    width = max(map(len, out))
    for k, v in out.items():
        print(f"{k:<{width}}  {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    bad = (out["lost"] or out["failed without reason"] or out["duplicate signatures"] or out["unreplayed signatures"]
           or out["not verified"] or out["healthz lies"] or out["healthz false alarms"] or out["wrongly accepted"]
           or out["other 5xx"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
