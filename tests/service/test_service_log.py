"""The service's certificate log (docs/release.md "The log"): N certificates issued (M = 1, a closed form:
fast), every inclusion proof verifies offline against the signed head, a consistency proof across a restart
verifies, and a certificate replaced in the archive breaks the consistency proof from the head published
before. benchmarks/bench_log.py runs the same with timings."""
from __future__ import annotations

import base64
import json
import os
import sqlite3

import pytest
from service_fixtures import issuer_pem, serving, wait_done

from verifier import Reject, load_public_key
from verifier.transparency import open_head, verify_consistency_bundle, verify_log_proof

N = int(os.environ.get("SIGMACERT_LOG_TEST_N", "12"))   # benchmarks/bench_log.py: 50


def request(i: int) -> dict:
    return {"steps": 1, "epochs": 1, "target": "0.5", "sigma": f"{2 + i / 100:.2f}", "scheme": "random-allocation"}


def issue(srv, reqs) -> list[str]:
    ids = []
    for body in reqs:
        r = srv.http.post("/v1/certificates", json=body, headers=srv.auth)
        assert r.status_code in (200, 202), r.text
        ids.append(r.json()["id"])
    for jid in ids:
        assert wait_done(srv, jid, timeout=600)["status"] == "done"
    return ids


@pytest.fixture(scope="module")
def svc():
    with serving("sigmacert-log-", "--workers", "2", "--team-quota", "100") as srv:
        yield srv


def test_log(svc, tmp_path):
    srv = svc
    key = load_public_key(open(issuer_pem(srv, tmp_path / "issuer.pem"), "rb").read())
    assert srv.http.get("/v1/log/head").status_code == 404            # nothing issued yet
    ids = issue(srv, [request(i) for i in range(N)])
    head = srv.http.get("/v1/log/head").json()
    h, _ = open_head(head, [key])
    assert h["size"] == N
    for jid in ids:                        # every inclusion proof, offline, against the one signed head
        proof = srv.http.get(f"/v1/log/proof/{jid}").json()
        cert = srv.http.get(f"/v1/certificates/{jid}/envelope").content
        got = verify_log_proof(proof, [key], cert)
        assert got["size"] == N and proof["head"] == head
        assert base64.b64decode(proof["certificate"]) == cert
    assert {verify_log_proof(srv.http.get(f"/v1/log/proof/{j}").json(), [key])["index"] for j in ids} == set(range(N))
    bundle = srv.http.get(f"/v1/certificates/{ids[3]}/envelope", params={"log_proof": "true"}).json()
    assert verify_log_proof(bundle, [key])["index"] == bundle["index"]
    assert srv.http.get("/v1/log/proof/nope").status_code == 404
    assert srv.http.get("/v1/log/consistency", params={"from": N + 5}).status_code == 422
    assert srv.http.get("/v1/log/consistency", params={"from": "x"}).status_code == 422

    # a restart: the tree is recomputed from the archive and extends the head published before
    srv.stop()
    srv.start()
    more = issue(srv, [request(N + i) for i in range(2)])
    c = srv.http.get("/v1/log/consistency", params={"from": N}).json()
    assert verify_consistency_bundle(c["old_head"], c["new_head"], c["proof"], [key]) == {"from": N, "to": N + 2}
    assert c["old_head"] == head
    assert {verify_log_proof(srv.http.get(f"/v1/log/proof/{j}").json(), [key])["index"] for j in more} == {N, N + 1}

    # a certificate of the archive replaced by another valid one: the next head does not extend the old one
    srv.stop()
    db = sqlite3.connect(srv.db)
    other = db.execute("SELECT envelope FROM jobs WHERE id=?", (ids[0],)).fetchone()[0]
    db.execute("UPDATE jobs SET envelope=? WHERE id=?", (other, ids[min(5, N - 1)]))
    db.commit()
    db.close()
    srv.start()
    issue(srv, [request(N + 2)])
    c = srv.http.get("/v1/log/consistency", params={"from": N}).json()
    assert c["old_head"] == head and open_head(c["new_head"], [key])[0]["size"] == N + 3
    with pytest.raises(Reject, match="does not extend the signed tree"):
        verify_consistency_bundle(head, c["new_head"], c["proof"], [key])
    json.dumps(c)   # the bundle is plain JSON (sigmacert log verify and third parties read it)
