"""The signer (service.signer): the one process that reads the issuer key replays every predicate with the
independent verifier before it signs, local results as well as a cluster's; a worker never reads the key.

An honest predicate (M=2, E=4, lambda=0.2 at sigma 4, two-sided, computed here in about a second) is signed
and verifies; the same predicate with its bound lowered, a claim other than the requested one, a key file
replaced under the server, and a replay over its budget are each refused with the reason, nothing signed.
A worker run in this process with `load_private` made to fail still gets its job signed: the key is read
only by the signer child.
"""
from __future__ import annotations

import copy
import json
import os
import signal

import pytest
from service_fixtures import make_key

from certifier.certificate.envelope import key_id
from certifier.certificate.keys import load_public
from service.sandbox import Budget
from service.signer import sign_job
from service.tasks import certify_job

REQ = {"steps": 2, "epochs": 4, "target": "0.2", "sigma": "4", "scheme": "random-allocation"}
BUDGET = Budget(memory=2 << 30, seconds=120.0)


@pytest.fixture(scope="module")
def honest():
    res = certify_job(dict(REQ), lambda *a: None)
    assert res["success"], res
    return res


@pytest.fixture(scope="module")
def issuer(tmp_path_factory):
    d = tmp_path_factory.mktemp("issuer")
    path = make_key(str(d / "keys"))
    return path, key_id(load_public(str(d / "keys" / "public.pem"))), str(d / "keys" / "public.pem")


def verify(envelope: str, public: str):
    from verifier import load_public_key, verify_bytes
    with open(public, "rb") as f:
        return verify_bytes(envelope.encode(), [load_public_key(f.read())])


def test_an_honest_local_predicate_is_replayed_then_signed(honest, issuer):
    key, kid, public = issuer
    stages = []
    out = sign_job(key, kid, REQ, honest["predicate"], BUDGET, on_progress=lambda **p: stages.append(p["stage"]))
    assert out.failure is None and "envelope" in out.result, (out.reason, out.result)
    assert out.result["keyid"] == kid and out.result["replay_seconds"] > 0
    assert stages[:1] == ["replaying"]                    # the replay ran before the signature
    r = verify(out.result["envelope"], public)
    assert r.accepted and r.keyid == kid, r.as_dict()
    payload = json.loads(__import__("base64").b64decode(json.loads(out.result["envelope"])["payload"]))
    assert payload["predicate"] == honest["predicate"]    # exactly what was replayed


def test_a_forged_local_predicate_is_refused_by_the_replay(honest, issuer):
    key, kid, _ = issuer
    forged = copy.deepcopy(honest["predicate"])
    if isinstance(forged.get("upper"), dict):
        forged["upper"]["bound"] = "0.0000000001"
    forged["bound"] = "0.0000000001"
    out = sign_job(key, kid, REQ, forged, BUDGET)
    assert out.failure is None and "envelope" not in out.result
    assert out.result["refused"].startswith("not signed: the independent replay rejected the predicate"), out.result


def test_a_claim_other_than_the_request_is_refused_before_any_replay(honest, issuer):
    key, kid, _ = issuer
    stages = []
    out = sign_job(key, kid, {**REQ, "sigma": "5"}, honest["predicate"], BUDGET,
                   on_progress=lambda **p: stages.append(p["stage"]))
    assert "envelope" not in out.result and "claim.sigma" in out.result["refused"]
    assert "replaying" not in stages


def test_a_key_replaced_under_the_server_signs_nothing(honest, issuer, tmp_path):
    _, kid, _ = issuer
    other = make_key(str(tmp_path / "other"))
    out = sign_job(other, kid, REQ, honest["predicate"], BUDGET)
    assert "envelope" not in out.result and "no longer the key this server publishes" in out.result["refused"]


def test_a_replay_over_its_budget_signs_nothing(honest, issuer):
    key, kid, _ = issuer
    out = sign_job(key, kid, REQ, honest["predicate"], Budget(memory=2 << 30, seconds=0.001))
    assert "envelope" not in out.result
    assert out.result["refused"].startswith("not signed: the independent replay"), out.result


def test_the_worker_never_reads_the_key_and_its_local_job_is_replayed(issuer, tmp_path, monkeypatch):
    import certifier.certificate.keys as keys
    from service.store import Store
    from service.worker import Worker

    def refuse(*a, **k):
        raise AssertionError("the worker process read the private key")
    monkeypatch.setattr(keys, "load_private", refuse)
    key, kid, public = issuer
    db = str(tmp_path / "jobs.db")
    store = Store(db)
    job, created = store.submit(dict(REQ), "alice")
    assert created
    before = signal.getsignal(signal.SIGTERM)
    try:
        w = Worker(db, key, "test-owner", os.getppid(), BUDGET, kid)
        w.run(store.claim("test-owner", 60.0))
    finally:
        signal.signal(signal.SIGTERM, before)
    done = store.get(job["id"])
    assert done["status"] == "done", done["reason"]
    assert done["keyid"] == kid and verify(done["envelope"], public).accepted


def test_a_job_is_signed_once_its_envelope_spooled_before_it_is_returned(honest, issuer, tmp_path):
    from service import spool
    key, kid, public = issuer
    d = str(tmp_path / "jobs.db.signed")
    first = sign_job(key, kid, REQ, honest["predicate"], BUDGET, job="c0123", spool_dir=d,
                     record={"bound": honest["bound"], "sigma": honest["sigma"]})
    assert "envelope" in first.result, first.result
    entry = spool.get(d, "c0123", REQ)
    assert entry["envelope"] == first.result["envelope"] and entry["bound"] == honest["bound"]
    assert oct(os.stat(d).st_mode & 0o777) == "0o700"
    # the same job again (its worker died before the database heard of it): the spooled envelope, no new signature
    stages = []
    again = sign_job(key, kid, REQ, honest["predicate"], BUDGET, job="c0123", spool_dir=d,
                     on_progress=lambda **p: stages.append(p["stage"]))
    assert again.result == {"envelope": first.result["envelope"], "keyid": kid, "spooled": True}
    assert "replaying" not in stages
    # another request under that id is not given the entry; a malformed id is refused, nothing handed out
    other = sign_job(key, kid, {**REQ, "target": "0.3"}, honest["predicate"], BUDGET, job="c0123", spool_dir=d)
    assert "envelope" not in other.result and "target" in other.result["refused"]
    seen = []
    bad = sign_job(key, kid, REQ, honest["predicate"], BUDGET, job="../x", spool_dir=d,
                   on_progress=lambda **p: seen.append(p["stage"]))
    assert "envelope" not in bad.result and "could not be spooled" in bad.result["refused"], bad.result
    assert "replaying" not in seen                       # refused before the replay: nothing was signed


def test_a_worker_records_a_spooled_envelope_instead_of_signing_again(honest, issuer, tmp_path, monkeypatch):
    from service import spool
    from service.store import Store
    from service.worker import Worker, WorkerPool
    key, kid, public = issuer
    db = str(tmp_path / "jobs.db")
    store = Store(db)
    job, _ = store.submit(dict(REQ), "alice")
    claimed = store.claim("first-owner", 60.0)
    # the first run: signed and spooled, then the server was killed before the worker recorded it
    first = sign_job(key, kid, json.loads(claimed["request"]), honest["predicate"], BUDGET, job=job["id"],
                     spool_dir=spool.spool_of(db), record={"bound": honest["bound"], "sigma": honest["sigma"]})
    assert "envelope" in first.result
    assert store.requeue() == 1                          # what the restarted server does

    def no_compute(*a, **k):
        raise AssertionError("the job was computed again")
    monkeypatch.setattr(Worker, "compute", no_compute)
    before = signal.getsignal(signal.SIGTERM)
    try:
        Worker(db, key, "second-owner", os.getppid(), BUDGET, kid).run(store.claim("second-owner", 60.0))
    finally:
        signal.signal(signal.SIGTERM, before)
    done = store.get(job["id"])
    assert done["status"] == "done" and done["envelope"] == first.result["envelope"], done["reason"]
    assert done["bound"] == honest["bound"] and verify(done["envelope"], public).accepted
    assert spool.jobs(spool.spool_of(db)) == []          # dropped once recorded
    # a pool starting over drops the entries of jobs that are over, keeps a queued job's
    queued, _ = store.submit({**REQ, "target": "0.3"}, "alice")
    for jid in (job["id"], queued["id"], "cdeadbeef"):
        spool.put(spool.spool_of(db), jid, {"envelope": "{}", "keyid": kid})
    assert WorkerPool(store, db, key, 0, kid, BUDGET).prune_spool() == 2
    assert spool.jobs(spool.spool_of(db)) == [queued["id"]]
