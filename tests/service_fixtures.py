"""A real `sigmacert serve` in a subprocess on a free loopback port, with a temporary DB and key."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import httpx

BIN = os.path.dirname(sys.executable)


def cli(name: str, module: str) -> list[str]:
    """The installed console script beside this interpreter, else `python -m module`."""
    path = os.path.join(BIN, name)
    return [path] if os.path.exists(path) else [sys.executable, "-m", module]


SIGMACERT = cli("sigmacert", "sigmacert.cli")
VERIFY = cli("sigmacert-verify", "verifier")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> set[int]:
    """All live descendants of pid, from /proc."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for c, pp in parent.items():
            if pp == p and c not in out:
                out.add(c)
                todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Checked(httpx.Client):
    """Every response must be < 500 and carry no traceback."""

    def request(self, *a, **kw):
        r = super().request(*a, **kw)
        assert r.status_code < 500, (r.status_code, r.text[:500])
        assert "Traceback" not in r.text
        return r


class Server:
    def __init__(self, workdir: str, key: str, tokens: str, *extra: str):
        self.dir, self.key, self.tokens, self.extra = workdir, key, tokens, list(extra)
        self.db = os.path.join(workdir, "archive.db")
        self.proc = None
        self.log_path = os.path.join(workdir, "server.log")
        self.known: set[int] = set()

    def start(self, timeout: float = 90.0) -> "Server":
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [*SIGMACERT, "serve", "--port", str(self.port), "--db", self.db, "--key", self.key,
             "--tokens", self.tokens, "--no-access-log", "--log-level", "warning", *self.extra],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        if getattr(self, "http", None) is not None:
            self.http.close()
        self.http = Checked(base_url=self.url, timeout=60.0)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: {self.log()}")
            try:
                if self.http.get("/healthz").status_code == 200:
                    self.known |= descendants(self.proc.pid)
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server did not come up: {self.log()}")

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()[-3000:]

    def children(self) -> set[int]:
        kids = descendants(self.proc.pid)
        self.known |= kids
        return kids

    def sigkill(self) -> None:
        self.children()
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.children()
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for pid in self.known:  # safety net: never leave a worker behind
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if getattr(self, "http", None) is not None:
            self.http.close()


def make_token(tokens: str, name: str) -> str:
    out = subprocess.run([*SIGMACERT, "token", "create", "--tokens", tokens, "--name", name],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def make_key(directory: str) -> str:
    out = subprocess.run([*SIGMACERT, "keygen", "-o", directory], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return os.path.join(directory, "private.pem")


def wait_for(fn, timeout: float, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s")
        time.sleep(interval)


def wait_done(srv: Server, jid: str, timeout: float = 180.0) -> dict:
    seen = []

    def check():
        j = srv.http.get(f"/v1/certificates/{jid}").json()
        if not seen or seen[-1] != j["status"]:
            seen.append(j["status"])
        return j if j["status"] in ("done", "failed", "cancelled") else None
    j = wait_for(check, timeout)
    j["_seen"] = seen
    return j


def cleanup(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def resign(envelope: bytes, private_key: str, mutate) -> bytes:
    """The certificate `envelope` with mutate(predicate) applied, signed again with `private_key`:
    what a careless or hostile holder of the issuer's key could publish."""
    import base64
    import json

    from certifier.certificate.envelope import canonical_json, sign_envelope, statement
    from certifier.certificate.keys import load_private
    stmt = json.loads(base64.b64decode(json.loads(envelope)["payload"]))
    mutate(stmt["predicate"])
    subject = stmt["subject"][0]
    return canonical_json(sign_envelope(statement(subject, stmt["predicate"]), load_private(private_key)))


def cost_bomb(kind: str):
    """A mutation of a method v1 (docs/certificate.md section 4) that passes every static check of
    the format but is expensive to replay (docs/verifier.md, "Cost model"): `memory` asks for a
    lattice of 2e7 points of 1024 bits and 1e7 log-grid cells at 4096 bits (about 100 GB of
    products); `time` asks for eta = 7e9 (cell edges of about 1e10 bits, hours)."""
    def mutate(pred):
        m = pred["method"]
        if kind == "memory":
            m.update(h="0.0000008", tail_start="16", cap="16", prec=4096, fixed_point_bits=1024,
                     k_minus=-5000000, k_plus=5000000)
        else:
            m.update(eta="7000000000", k_minus=-1, k_plus=2)
    return mutate


@contextlib.contextmanager
def serving(prefix: str, *extra: str):
    """A started Server with a fresh key and one token (srv.token, srv.auth); stopped and removed after."""
    d = tempfile.mkdtemp(prefix=prefix)
    key = make_key(os.path.join(d, "keys"))
    tokens = os.path.join(d, "tokens.txt")
    token = make_token(tokens, "tester")
    srv = Server(d, key, tokens, *extra)
    try:
        srv.start()
        srv.token, srv.auth = token, {"Authorization": f"Bearer {token}"}
        yield srv
    finally:
        srv.stop()
        cleanup(d)


def issuer_pem(srv: Server, path) -> str:
    """The active issuer key the service publishes, written to `path` (for sigmacert-verify --key)."""
    keys = srv.http.get("/v1/keys").json()["keys"]
    with open(path, "w") as f:
        f.write(keys[0]["public_pem"])
    return str(path)


def verify_cli(cert_path, key_path) -> subprocess.CompletedProcess:
    return subprocess.run([*VERIFY, str(cert_path), "--key", str(key_path)], capture_output=True, text=True,
                          timeout=300)
