"""The certification service over real HTTP: a `sigmacert serve` subprocess on a
loopback port with a temporary database and key; certificates checked with sigmacert-verify."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import tempfile
import time

import pytest
from service_fixtures import (
    SIGMACERT,
    VERIFY,
    Server,
    alive,
    cleanup,
    cost_bomb,
    make_key,
    make_token,
    resign_envelope,
    wait_done,
    wait_for,
)

CELL = {"steps": 4, "epochs": 2, "target": "0.3", "sigma": "2"}  # certifies in a few seconds
SLOW = {"steps": 100, "epochs": 10, "target": "0.1"}  # exact sigma first, then certify: ~5-15 s
# Address space of a job process (RLIMIT_AS, interpreter and libraries included): CELL needs about
# 290 MiB; BIG passes 400 MiB within seconds of computing (its resident set grows past 430 MiB), yet is admitted
# under --job-memory 400M (predicted 510-700 MB resident: within twice the limit, so admission lets the job
# process's own limit decide; service.admission.MEMORY_TOLERANCE).
# LONG (exact sigma, then both sides of M=1000, E=100 at lambda 0.5) computes for about 60 s (CLI),
# more when the machine is loaded. (M=500, E=10 no longer does either: two-scale partial sums made it cheap.)
BIG = {"steps": 1000, "epochs": 100, "target": "0.5", "sigma": "0.57228"}
LONG = {"steps": 1000, "epochs": 100, "target": "0.5"}


@pytest.fixture(scope="module")
def svc():
    d = tempfile.mkdtemp(prefix="sigmacert-svc-")
    key = make_key(os.path.join(d, "keys"))
    tokens = os.path.join(d, "tokens.txt")
    token = make_token(tokens, "alice")
    srv = Server(d, key, tokens, "--verify-rate", "6", "--verify-burst", "4").start()
    srv.token = token
    srv.auth = {"Authorization": f"Bearer {token}"}
    try:
        yield srv
    finally:
        srv.stop()
        cleanup(d)


def post(srv, body, auth=True, **kw):
    return srv.http.post("/v1/certificates", json=body, headers=srv.auth if auth else {}, **kw)


def verify_api(srv, data: bytes, tries: int = 4):
    for _ in range(tries):
        r = srv.http.post("/v1/verify", content=data, headers={"Content-Type": "application/json"})
        if r.status_code != 429:
            return r
        time.sleep(min(15, int(r.headers["Retry-After"])))
    return r


# ----------------------------------------------------------------------------- basics

def test_health_page_and_openapi(svc):
    h = svc.http.get("/healthz").json()
    assert h["ok"] and h["workers"] == 1 and len(h["keyid"]) == 64
    page = svc.http.get("/")
    assert page.status_code == 200 and "Request a certificate" in page.text
    for el in ('id="kind"', 'value="dp"', 'value="tpr"', 'id="epsilon"', 'id="delta"', 'id="fpr"', 'id="tpr"'):
        assert el in page.text, el   # the form asks dp and tpr targets besides TV
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert svc.http.get("/static/app.js").status_code == 200
    assert svc.http.get("/static/app.py").status_code == 404
    spec = svc.http.get("/openapi.json").json()
    for path in ("/v1/certificates", "/v1/certificates/{jid}", "/v1/keys", "/v1/verify", "/v1/sigma", "/healthz"):
        assert path in spec["paths"], path
    docs = svc.http.get("/docs")
    assert docs.status_code == 200 and "/docs-assets/swagger-ui-bundle.js" in docs.text
    assert "cdn" not in docs.text.lower()  # served offline, from the swagger-ui-bundle package
    js = svc.http.get("/docs-assets/swagger-ui-bundle.js")
    assert js.status_code == 200 and len(js.content) > 100_000
    assert svc.http.get("/docs-assets/index.html").status_code == 404


def test_token_create_prints_once_and_stores_only_the_hash(tmp_path):
    path = str(tmp_path / "tokens")
    out = subprocess.run([*SIGMACERT, "token", "create", "--tokens", path, "--name", "bob"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    token = out.stdout.strip()
    assert out.stdout == token + "\n" and token.startswith("sct_") and len(token) > 40
    text = open(path).read()
    assert token not in text
    assert text == f"{hashlib.sha256(token.encode()).hexdigest()} bob\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    second = make_token(path, "carol")
    assert second != token and len(open(path).read().splitlines()) == 2
    bad = subprocess.run([*SIGMACERT, "token", "create", "--tokens", path, "--name", "no spaces"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1


def test_unauthenticated_and_wrong_tokens_are_refused(svc):
    body = {**CELL, "sigma": "2.01"}
    for headers in ({}, {"Authorization": "Bearer sct_wrong"}, {"Authorization": f"Basic {svc.token}"},
                    {"Authorization": "Bearer"}, {"Authorization": f"Bearer {svc.token}x"}):
        r = svc.http.post("/v1/certificates", json=body, headers=headers)
        assert r.status_code == 401, headers
        assert r.headers["www-authenticate"] == "Bearer" and r.json()["detail"]
    assert all(j["sigma"] != "2.01" for j in svc.http.get("/v1/certificates", params={"limit": 200}).json()["items"])
    assert svc.http.delete("/v1/certificates/cdeadbeef").status_code == 401


def test_token_added_while_running_is_accepted(svc):
    new = make_token(svc.tokens, "dave")

    def accepted():
        r = svc.http.post("/v1/certificates", json={"steps": 4, "epochs": 2, "target": "0.3", "sigma": "9.5"},
                          headers={"Authorization": f"Bearer {new}"})
        return r if r.status_code in (200, 202) else None
    r = wait_for(accepted, 10)
    jid = r.json()["id"]
    assert svc.http.delete(f"/v1/certificates/{jid}", headers={"Authorization": f"Bearer {new}"}).status_code \
        in (200, 409)  # its own team's token: another team's would be refused (tests/test_service_hardening.py)


BAD_BODIES = [
    ({"steps": 0, "epochs": 2, "target": "0.3"}, "steps"),
    ({"steps": -4, "epochs": 2, "target": "0.3"}, "steps"),
    ({"steps": 4.5, "epochs": 2, "target": "0.3"}, "steps"),
    ({"steps": True, "epochs": 2, "target": "0.3"}, "steps"),
    ({"steps": 10**6, "epochs": 2, "target": "0.3"}, "steps"),
    ({"steps": "1" * 100, "epochs": 2, "target": "0.3"}, "steps"),
    ({"steps": 4, "epochs": 0, "target": "0.3"}, "epochs"),
    ({"steps": 4, "epochs": 10**5, "target": "0.3"}, "epochs"),
    ({"steps": 4, "epochs": 2, "target": "1"}, "target"),
    ({"steps": 4, "epochs": 2, "target": "0"}, "target"),
    ({"steps": 4, "epochs": 2, "target": "-0.1"}, "target"),
    ({"steps": 4, "epochs": 2, "target": "0.1.2"}, "target"),
    ({"steps": 4, "epochs": 2, "target": "nan"}, "target"),
    ({"steps": 4, "epochs": 2, "target": "0.1234567890123"}, "target"),
    ({"steps": 4, "epochs": 2, "target": None}, "target"),
    ({"steps": 4, "epochs": 2}, "target"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "sigma": "0"}, "sigma"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "sigma": "-1"}, "sigma"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "sigma": "1e9"}, "sigma"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "sigma": "inf"}, "sigma"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "sigma": [1]}, "sigma"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "extra": 1}, "extra"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "subject": {"name": "m.bin", "sha256": "zz"}}, "sha256"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "subject": {"name": "", "sha256": "0" * 64}}, "name"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "subject": {"name": "a\nb", "sha256": "0" * 64}}, "name"),
    ({"steps": 4, "epochs": 2, "target": "0.3", "subject": "x"}, "subject"),
    ([4, 2, "0.3"], "body"),
]


@pytest.mark.parametrize("body,word", BAD_BODIES, ids=[str(i) for i in range(len(BAD_BODIES))])
def test_bad_inputs_get_422_with_a_reason(svc, body, word):
    r = post(svc, body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and word in detail.lower() and "\n" not in detail


def test_malformed_bodies_and_queries(svc):
    for raw in (b"", b"{", b"not json", b"\xff\xfe", b"null"):
        r = svc.http.post("/v1/certificates", content=raw, headers={**svc.auth, "Content-Type": "application/json"})
        assert r.status_code == 422 and isinstance(r.json()["detail"], str), raw
    big = json.dumps({**CELL, "subject": {"name": "x" * 100_000, "sha256": "0" * 64}})
    r = svc.http.post("/v1/certificates", content=big, headers={**svc.auth, "Content-Type": "application/json"})
    assert r.status_code == 413 and "larger than" in r.json()["detail"]
    for q in ({"steps": "x", "epochs": 2, "target": "0.1"}, {"steps": 4, "epochs": 2, "target": "2"},
              {"steps": 4, "epochs": 2}, {"steps": 10**9, "epochs": 2, "target": "0.1"}):
        r = svc.http.get("/v1/sigma", params=q)
        assert r.status_code == 422 and r.json()["detail"], q
    for q in ({"limit": 0}, {"limit": 10**6}, {"offset": -1}, {"status": "weird"}, {"steps": "abc"},
              {"target": "7"}):
        r = svc.http.get("/v1/certificates", params=q)
        assert r.status_code == 422 and r.json()["detail"], q
    assert svc.http.get("/v1/certificates/nosuchjob").status_code == 404
    assert svc.http.get("/v1/certificates/nosuchjob/envelope").status_code == 404
    assert svc.http.get("/v1/certificates/" + "c" * 500).status_code == 404
    r = verify_api(svc, b"[1, 2]")     # waits out a rate limit instead of accepting it
    assert r.status_code == 422 and r.json()["detail"]


# ----------------------------------------------------------------------------- end to end

def test_issue_a_certificate_end_to_end_and_verify_it(svc, tmp_path):
    r = post(svc, CELL)
    assert r.status_code == 202, r.text
    jid = r.json()["id"]
    assert r.headers["location"] == f"/v1/certificates/{jid}"
    again = post(svc, dict(CELL))  # identical request while in flight: the same job
    assert again.json()["id"] == jid
    job = wait_done(svc, jid)
    assert job["status"] == "done", (job.get("reason"), svc.log())
    assert job["bound"] and float(job["bound"]) <= 0.3 and job["sigma"] == "2"
    assert job["envelope"]["payloadType"] == "application/vnd.in-toto+json"
    stmt = json.loads(base64.b64decode(job["envelope"]["payload"]))
    assert stmt["predicate"]["claim"]["steps"] == 4 and stmt["subject"][0]["name"] == "claim"

    # the file, checked by the independent verifier CLI against the key the service publishes
    cert = tmp_path / "cert.json"
    env = svc.http.get(f"/v1/certificates/{jid}/envelope")
    assert env.status_code == 200 and json.loads(env.content) == job["envelope"]
    cert.write_bytes(env.content)
    keys = svc.http.get("/v1/keys").json()["keys"]
    assert [k["status"] for k in keys] == ["active"] and keys[0]["keyid"] == job["keyid"]
    pub = tmp_path / "issuer.pem"
    pub.write_text(keys[0]["public_pem"])
    out = subprocess.run([*VERIFY, str(cert), "--key", str(pub)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.startswith("ACCEPT"), out.stdout + out.stderr
    assert open(svc.key.replace("private.pem", "public.pem")).read() == keys[0]["public_pem"]

    # idempotent: the same request (numbers instead of strings, same exact values) -> the archive
    r2 = post(svc, {"steps": "4", "epochs": 2, "target": 0.30, "sigma": 2})
    assert r2.status_code == 200 and r2.json()["id"] == jid and r2.json()["envelope"] == job["envelope"]
    listing = svc.http.get("/v1/certificates", params={"steps": 4, "epochs": 2, "target": "0.30"}).json()
    assert jid in [j["id"] for j in listing["items"]] and "envelope" not in listing["items"][0]

    # the service's own verifier: accepts this, rejects a tampered copy
    v = verify_api(svc, env.content)
    assert v.status_code == 200 and v.json()["accepted"] is True and v.json()["result"] == "ACCEPT"
    bad = dict(job["envelope"])
    bad["payload"] = base64.b64encode(base64.b64decode(bad["payload"]).replace(b'"0.3"', b'"0.2"')).decode()
    v = verify_api(svc, json.dumps(bad).encode())
    assert v.status_code == 200 and v.json()["accepted"] is False and v.json()["reason"]

    # cancelling a finished job is refused
    assert svc.http.delete(f"/v1/certificates/{jid}", headers=svc.auth).status_code == 409


def test_a_subject_is_certified_as_given(svc):
    digest = hashlib.sha256(b"model weights").hexdigest()
    r = post(svc, {**CELL, "subject": {"name": "model.bin", "sha256": digest}})
    assert r.status_code in (200, 202)
    job = wait_done(svc, r.json()["id"])
    assert job["status"] == "done"
    stmt = json.loads(base64.b64decode(job["envelope"]["payload"]))
    assert stmt["subject"] == [{"name": "model.bin", "digest": {"sha256": digest}}]


def test_a_bound_above_the_target_fails_with_the_reason(svc):
    body = {**CELL, "target": "0.14"}  # TV at sigma 2 is about 0.1464
    r = post(svc, body)
    job = wait_done(svc, r.json()["id"])
    assert job["status"] == "failed" and "envelope" not in job
    assert job["reason"].startswith("not certified: the bound reached") and float(job["bound"]) > 0.14
    again = post(svc, body)  # a definite answer is archived like a certificate
    assert again.status_code == 200 and again.json()["id"] == job["id"] and again.json()["status"] == "failed"
    assert svc.http.get(f"/v1/certificates/{job['id']}/envelope").status_code == 409


def test_cancel_a_running_job(svc):
    r = post(svc, {"steps": 250, "epochs": 10, "target": "0.1"})  # the hardest Table 4 cell: tens of seconds
    jid = r.json()["id"]
    wait_for(lambda: svc.http.get(f"/v1/certificates/{jid}").json()["status"] == "running", 60)
    c = svc.http.delete(f"/v1/certificates/{jid}", headers=svc.auth)
    assert c.status_code == 200 and c.json()["status"] == "cancelled"
    assert svc.http.delete(f"/v1/certificates/{jid}", headers=svc.auth).status_code == 409
    time.sleep(3)  # the worker notices, stops; a fresh worker takes its place
    assert svc.http.get(f"/v1/certificates/{jid}").json()["status"] == "cancelled"
    wait_for(lambda: svc.http.get("/healthz").json()["workers"] == 1, 30)
    again = post(svc, {"steps": 250, "epochs": 10, "target": "0.1"})  # re-requested: queued again
    assert again.json()["id"] == jid and again.json()["status"] == "queued"
    assert svc.http.delete(f"/v1/certificates/{jid}", headers=svc.auth).status_code == 200


def test_sigma_is_computed_once_then_cached(svc):
    q = {"steps": 100, "epochs": 10, "target": "0.1"}

    def ready():
        r = svc.http.get("/v1/sigma", params=q)
        assert r.status_code in (200, 202)
        return r.json() if r.status_code == 200 else None
    first = wait_for(ready, 240, interval=2)
    assert first["exact"] == "1.426215" and first["closed_form"] == "1.736983"  # rounded up
    t0 = time.perf_counter()
    second = svc.http.get("/v1/sigma", params={"steps": "100", "epochs": "10", "target": "0.10"}).json()
    assert second["cached"] is True and second["exact"] == "1.426215"
    assert time.perf_counter() - t0 < 2.0


def test_verify_is_rate_limited(svc):
    codes, retry = [], None
    for _ in range(12):
        r = svc.http.post("/v1/verify", content=b"x", headers={"Content-Type": "application/json"})
        codes.append(r.status_code)
        if r.status_code == 429:
            retry = r.headers["Retry-After"]
    assert set(codes) <= {422, 429} and 429 in codes and int(retry) >= 1


# ----------------------------------------------------------------------------- crash safety

def test_sigkill_mid_job_then_restart_finishes_everything(tmp_path):
    d = str(tmp_path)
    key = make_key(os.path.join(d, "keys"))
    tokens = os.path.join(d, "tokens.txt")
    auth = {"Authorization": f"Bearer {make_token(tokens, 'ci')}"}
    srv = Server(d, key, tokens).start()
    try:
        ids = []
        for body in (SLOW, {**SLOW, "epochs": 20}, CELL):
            r = srv.http.post("/v1/certificates", json=body, headers=auth)
            assert r.status_code == 202
            ids.append(r.json()["id"])

        def computing():
            for j in ids:
                v = srv.http.get(f"/v1/certificates/{j}").json()
                if v["status"] == "running" and v.get("stage") not in (None, "starting"):
                    return j
        wait_for(computing, 60, 0.1)
        workers = srv.children()
        assert workers
        srv.sigkill()  # mid-job: no shutdown code runs
        wait_for(lambda: not any(alive(p) for p in workers), 15, 0.2)  # workers die with the server
        db = sqlite3.connect(srv.db)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        states = dict(db.execute("SELECT id, status FROM jobs").fetchall())
        db.close()
        running = [j for j in ids if states[j] == "running"]
        assert len(running) == 1 and set(states.values()) <= {"done", "running", "queued"}, states
        assert "queued" in states.values()

        srv.start()  # same database, same key: the interrupted job is taken up at once (no lease wait)
        wait_for(lambda: srv.http.get(f"/v1/certificates/{running[0]}").json()["attempts"] == 2, 20, 0.2)
        jobs = {j: wait_done(srv, j, 240) for j in ids}
        assert [jobs[j]["status"] for j in ids] == ["done"] * 3, jobs
        assert jobs[running[0]]["attempts"] == 2
        assert all(jobs[j]["attempts"] == 1 for j in ids if j != running[0])
        for j in ids:
            if states[j] == "done":  # finished before the kill: the archive kept it unchanged
                assert jobs[j]["attempts"] == 1
        listing = srv.http.get("/v1/certificates").json()
        assert listing["total"] == 3 and {j["id"] for j in listing["items"]} == set(ids)
        jobs = [jobs[j] for j in ids]
        pub = os.path.join(d, "keys", "public.pem")
        for j in jobs:
            path = os.path.join(d, f"{j['id']}.json")
            with open(path, "wb") as f:
                f.write(srv.http.get(f"/v1/certificates/{j['id']}/envelope").content)
            out = subprocess.run([*VERIFY, path, "--key", pub], capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stdout + out.stderr
        old_keyid = jobs[0]["keyid"]
        srv.stop()

        # key rotation: a new key signs from now on; the old one is listed as retired and still verifies
        srv.key = make_key(os.path.join(d, "keys2"))
        srv.start()
        keys = srv.http.get("/v1/keys").json()["keys"]
        assert [k["status"] for k in keys] == ["active", "retired"] and keys[1]["keyid"] == old_keyid
        assert keys[0]["keyid"] != old_keyid
        v = srv.http.post("/v1/verify", content=open(os.path.join(d, f"{ids[0]}.json"), "rb").read())
        assert v.status_code == 200 and v.json()["accepted"] is True
        assert "PRIVATE" not in srv.log() and open(key).read() not in srv.log()
    finally:
        srv.stop()
    db = sqlite3.connect(srv.db)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT COUNT(*) FROM jobs WHERE status='done'").fetchone()[0] == 3
    db.close()


# ----------------------------------------------------------------------------- limits

@pytest.fixture(scope="module")
def limited():
    """Two workers; each job process may use 400 MiB, each verification 400 MiB and 5 s."""
    d = tempfile.mkdtemp(prefix="sigmacert-limits-")
    key = make_key(os.path.join(d, "keys"))
    tokens = os.path.join(d, "tokens.txt")
    srv = Server(d, key, tokens, "--workers", "2", "--job-memory", "400M", "--verify-memory", "400M",
                 "--verify-seconds", "5")
    srv.auth = {"Authorization": f"Bearer {make_token(tokens, 'ci')}"}
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
        cleanup(d)


def elapsed_of(srv, jid: str) -> float:
    db = sqlite3.connect(srv.db)
    try:
        return db.execute("SELECT elapsed FROM jobs WHERE id=?", (jid,)).fetchone()[0]
    finally:
        db.close()


def test_a_job_over_the_memory_limit_fails_while_a_normal_job_completes(limited):
    workers = limited.children()
    assert len(workers) == 2
    r = post(limited, BIG)
    assert r.status_code == 202, r.text
    big = r.json()["id"]
    normal = post(limited, CELL).json()["id"]
    jobs = {j: wait_done(limited, j, 240) for j in (big, normal)}
    assert jobs[big]["status"] == "failed", jobs[big]
    assert jobs[big]["reason"] == "exceeded the memory limit of 400 MiB" and "envelope" not in jobs[big]
    assert jobs[normal]["status"] == "done" and float(jobs[normal]["bound"]) <= 0.3
    # the worker that ran the job lives on (no restart); its job process is gone
    assert wait_for(lambda: limited.children() == workers, 10)
    h = limited.http.get("/healthz").json()
    assert h["workers"] == 2 and h["jobs"] == {"failed": 1, "done": 1}


def test_hostile_certificates_are_rejected_in_bounded_time(limited):
    job = wait_done(limited, post(limited, CELL).json()["id"], 240)
    assert job["status"] == "done"
    env = limited.http.get(f"/v1/certificates/{job['id']}/envelope").content
    for kind, seconds in (("memory", 15), ("time", 20)):
        bomb = resign_envelope(env, limited.key, cost_bomb(kind))  # signed with the service's own key
        t0 = time.monotonic()
        v = limited.http.post("/v1/verify", content=bomb, headers={"Content-Type": "application/json"})
        took = time.monotonic() - t0
        assert v.status_code == 200, v.text
        body = v.json()
        assert body["result"] == "REJECT" and body["accepted"] is False
        assert body["reason"] == "cost-exceeds-limit" and body["detail"], body
        assert took < seconds, (kind, took)
    assert limited.http.get("/healthz").json()["ok"]


def test_a_job_over_the_wall_clock_limit_is_killed_while_a_normal_job_completes(limited):
    # the same archive, restarted with a wall-clock limit of 15 s per job and the default memory limit
    # (15 s: a job process pays its imports, about 1 s on an idle machine and 5 s when it is overloaded,
    # then CELL takes 1.5 s; LONG needs about 60 s)
    limited.stop()
    limited.extra = ["--workers", "2", "--job-seconds", "15"]
    limited.start()
    workers = limited.children()
    long = post(limited, LONG).json()["id"]
    normal = post(limited, {**CELL, "subject": {"name": "m.bin", "sha256": "ab" * 32}}).json()["id"]
    jobs = {j: wait_done(limited, j, 240) for j in (long, normal)}
    assert jobs[long]["status"] == "failed", jobs[long]
    assert jobs[long]["reason"] == "exceeded the wall-clock limit of 15 s" and jobs[long]["attempts"] == 1
    assert 15 <= elapsed_of(limited, long) < 18  # killed at the limit, not when its computation ends
    assert jobs[normal]["status"] == "done", jobs[normal]["reason"]
    assert wait_for(lambda: limited.children() == workers, 10)
    again = post(limited, LONG)  # a failure at a limit is not final: the same request is queued again
    assert again.status_code == 202 and again.json()["id"] == long
    assert limited.http.delete(f"/v1/certificates/{long}", headers=limited.auth).status_code == 200


def test_limits_are_read_as_sizes_and_whole_seconds():
    from certifier.params import ParameterError
    from service.config import parse_memory, parse_seconds
    assert parse_memory("m", "400M") == 400 << 20 and parse_memory("m", "4G") == 4 << 30
    assert parse_memory("m", "512") == 512 << 20 and parse_seconds("s", "30") == 30.0
    for bad in ("12X", "1M", "0G", "2048G", "-5M", "1.5G", ""):
        with pytest.raises(ParameterError, match="must"):
            parse_memory("--job-memory", bad)
    for bad in ("0", "1.5", "x", "10000000"):
        with pytest.raises(ParameterError, match="must"):
            parse_seconds("--job-seconds", bad)


def test_a_worker_signs_only_the_requested_claim_with_a_bound_below_the_target():
    from service.signer import matches_request
    req = {"steps": 4, "epochs": 2, "target": "0.3", "sigma": "2", "subject": None}
    good = {"predicate": {"claim": {"steps": 4, "epochs": 2, "target": "0.3", "sigma": "2"}, "bound": "0.29"}}
    assert matches_request(req, good) is None
    assert matches_request({**req, "sigma": None}, good) is None  # the service searched sigma itself
    for path, value, word in ((("claim", "steps"), 5, "steps"), (("claim", "sigma"), "1.9", "sigma"),
                              (("claim", "target"), "0.31", "target"), (("bound",), "0.31", "exceeds")):
        bad = json.loads(json.dumps(good))
        node = bad["predicate"]
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        assert word in matches_request(req, bad)
    assert matches_request(req, {"predicate": None}) == "no predicate"


def test_the_verifier_is_given_the_service_budget_when_it_takes_one(monkeypatch):
    import verifier
    from service import tasks
    from service.tasks import verify_certificate
    real, seen = verifier.verify_bytes, []

    def budgeted(data, keys, subject_digest=None, *, max_memory=None, max_seconds=None):
        seen.append((max_memory, max_seconds))
        return real(data, keys, subject_digest)
    payload = {"data": base64.b64encode(b"{}").decode(), "keys": [], "subject": None,
               "max_memory": 400 << 20, "max_seconds": 8.0}
    monkeypatch.setattr(tasks, "verify_bytes", budgeted)
    assert verify_certificate(payload, None)["result"] == "REJECT" and seen == [(400 << 20, 8.0)]
    monkeypatch.setattr(tasks, "verify_bytes", lambda data, keys, subject_digest=None: real(data, keys))
    assert verify_certificate(payload, None)["result"] == "REJECT"  # a verifier without a budget still works


def test_second_server_on_the_same_database_is_refused(tmp_path, svc):
    out = subprocess.run([*SIGMACERT, "serve", "--port", "1", "--db", svc.db, "--key", svc.key],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "another sigmacert server" in out.stderr and "Traceback" not in out.stderr
