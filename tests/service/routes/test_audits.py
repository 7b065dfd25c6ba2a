"""POST /v1/audits: a claim audited at its sigma by the service's queue, workers and signer (a real `sigmacert
serve` on loopback). The signed audit certificate verifies; the archive lists audits beside certificates; bad input
is 4xx with its reason."""
from __future__ import annotations

import pytest
from service_fixtures import issuer_pem, serving, verify_cli, wait_done

CLAIM = {"steps": 100, "epochs": 10, "sigma": "1.426215", "delta": "0.00001"}
# runs of 30 (40) stages of M near 10^4, each its own lattice: at the service's limits on M and the total E, and
# above its 900 s per job by the calibrated model (one plan per distinct M, summed)
LINES_30 = ",".join(f"{10000 - 7 * i}x33" for i in range(30))
LINES_40 = ",".join(f"{10000 - 7 * i}x25" for i in range(40))


@pytest.fixture(scope="module")
def svc():
    with serving("sigmacert-audits-") as srv:
        yield srv


def post(srv, body):
    return srv.http.post("/v1/audits", json=body, headers=srv.auth)


@pytest.mark.parametrize("body, words", [
    ({"steps": 100, "epochs": 10, "epsilon": "0.95", "delta": "0.00001"}, "sigma"),
    ({**CLAIM}, "epsilon"),
    ({**CLAIM, "epsilon": "0.95", "width": "0"}, "width"),
    ({**CLAIM, "epsilon": "0.95", "width": "abc"}, "width"),
    ({**CLAIM, "epsilon": "0.95", "source": "x" * 501}, "source"),
    ({**CLAIM, "epsilon": "0.95", "verdict": "HOLDS"}, "unknown field"),
    ({**CLAIM, "epsilon": "0.95", "stages": "100x5,100x5"}, "stages replaces steps"),
    ({"stages": LINES_30, "sigma": "3", "target": "0.1"}, "predicted to take"),          # ~1400 s > 900 s
    ({"stages": LINES_40, "sigma": "3", "epsilon": "1", "delta": "0.00001"}, "predicted to take"),  # ~1700 s
])
def test_bad_audit_requests(svc, body, words):
    r = post(svc, body)
    assert 400 <= r.status_code < 500, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and words in detail, detail


def test_audits_are_queued_signed_verified_and_listed(svc, tmp_path):
    jobs = {}
    for eps, verdict in (("0.95", "HOLDS"), ("0.93", "FALSE")):
        r = post(svc, {**CLAIM, "epsilon": eps, "source": f"model card {eps}"})
        assert r.status_code in (200, 202), r.text
        jobs[verdict] = r.json()["id"]
    pem = issuer_pem(svc, tmp_path / "issuer.pem")
    for verdict, jid in jobs.items():
        assert wait_done(svc, jid)["status"] == "done"
        a = svc.http.get(f"/v1/audits/{jid}").json()
        assert a["type"] == "audit" and a["verdict"] == verdict and a["quantity"] == "epsilon"
        lo, hi = map(float, a["interval"])
        assert lo < 0.942732 < hi and (hi - lo) / hi <= 1e-3
        cert = tmp_path / f"{jid}.json"
        cert.write_bytes(svc.http.get(f"/v1/audits/{jid}/envelope").content)
        out = verify_cli(cert, pem)
        assert out.returncode == 0 and f"audit {verdict}" in out.stdout, out.stdout + out.stderr
    listed = svc.http.get("/v1/audits").json()
    assert {i["id"] for i in listed["items"]} == set(jobs.values()) and listed["total"] == 2
    archive = {i["id"] for i in svc.http.get("/v1/certificates").json()["items"]}
    assert set(jobs.values()) <= archive
    assert svc.http.get("/v1/audits/nope").status_code == 404
    again = post(svc, {**CLAIM, "epsilon": "0.95", "source": "model card 0.95"})
    assert again.status_code == 200 and again.json()["id"] == jobs["HOLDS"]      # the archived answer


def test_an_audit_of_a_run_in_stages(svc, tmp_path):
    """A claim about a run in stages at one sigma: queued, both sides at that sigma, signed with its stages, and the
    independent verifier replays it (format v6 with the v5 claim); stages beside steps are refused."""
    body = {"stages": "50x4,200x2", "sigma": "1.330068", "epsilon": "0.99", "delta": "0.00001", "source": "staged"}
    r = post(svc, body)
    assert r.status_code in (200, 202), r.text
    jid = r.json()["id"]
    assert wait_done(svc, jid)["status"] == "done"
    a = svc.http.get(f"/v1/audits/{jid}").json()
    assert a["verdict"] == "FALSE" and a["quantity"] == "epsilon"
    lo, hi = map(float, a["interval"])
    assert lo < 0.99999 < hi and (hi - lo) / hi <= 1e-3       # the numerical eps(1e-5) of the stages at 1.330068
    cert = tmp_path / f"{jid}.json"
    cert.write_bytes(svc.http.get(f"/v1/audits/{jid}/envelope").content)
    out = verify_cli(cert, issuer_pem(svc, tmp_path / "issuer.pem"))
    assert out.returncode == 0 and "audit FALSE" in out.stdout and "stages 50x4,200x2" in out.stdout, out.stdout
    bad = post(svc, {**body, "steps": 50})
    assert bad.status_code == 422 and "stages" in bad.json()["detail"], bad.text
