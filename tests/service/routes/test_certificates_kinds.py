"""The service takes the dp and tpr target kinds like `sigmacert certify` (epsilon/delta, fpr/tpr; exactly one
kind), hands them to the certifier, and shows the kind in job views and the archive listing (filter `kind`).
A real `sigmacert serve` on loopback.
The two-sided dp job is certified, signed in format v4 and verified.
"""
from __future__ import annotations

import base64
import json

import pytest
from service_fixtures import issuer_pem, serving, verify_cli, wait_done

from service.admission import kind_key, predicted_seconds

DP = {"steps": 10, "epochs": 2, "epsilon": "0.5", "delta": "0.0001"}
TPR = {"steps": 10, "epochs": 2, "fpr": "0.001", "tpr": "0.002"}


@pytest.fixture(scope="module")
def svc():
    with serving("sigmacert-kinds-") as srv:
        yield srv


def post(srv, body):
    return srv.http.post("/v1/certificates", json=body, headers=srv.auth)


@pytest.mark.parametrize("body,words", [
    ({"steps": 10, "epochs": 2}, "exactly one target"),
    ({"steps": 10, "epochs": 2, "epsilon": "1"}, "epsilon needs delta"),
    ({"steps": 10, "epochs": 2, "tpr": "0.2"}, "tpr needs fpr"),
    ({**DP, "target": "0.1"}, "exactly one target"),
    ({**TPR, "target": "0.1"}, "exactly one target"),
    ({**DP, "fpr": "0.001", "tpr": "0.002"}, "exactly one target"),
    ({"steps": 10, "epochs": 2, "epsilon": "1", "tpr": "0.2"}, "exactly one target"),
    ({**DP, "delta": "0"}, "delta = 0 lies below the stated domain, delta in [1e-12, 0.1]"),
    ({**DP, "delta": "1"}, "delta = 1 lies above the stated domain, delta in [1e-12, 0.1]"),
    ({**DP, "epsilon": "-1"}, "epsilon = -1 lies below the stated domain, epsilon in [0.01, 20]"),
    ({**DP, "epsilon": "101"}, "epsilon = 101 lies above the stated domain, epsilon in [0.01, 20]"),
    ({**DP, "epsilon": "nan"}, "epsilon"),
    ({**DP, "epsilon": "1e99999"}, "epsilon"),
    ({**DP, "delta": "0.0000000000001"}, "delta"),              # beyond the service's 12 decimal places
    ({**DP, "delta": [1]}, "delta"),
    ({**DP, "epsilon": {"x": 1}}, "epsilon"),
    ({**DP, "epsilon": "1" * 50}, "too long"),
    ({**TPR, "tpr": "0.001"}, "tpr must exceed fpr"),
    ({**TPR, "fpr": "0.5", "tpr": "0.2"}, "tpr must exceed fpr"),
    ({**TPR, "fpr": "0"}, "fpr = 0 lies below the stated domain, fpr in [1e-8, 0.5]"),
    ({**DP, "kind": "dp"}, "unknown field"),
])
def test_bad_kind_requests_get_422_with_one_line(svc, body, words):
    r = post(svc, body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and words in detail, detail


def test_a_dp_job_carries_its_kind_and_the_archive_lists_it(svc):
    r = post(svc, DP)
    assert r.status_code == 202, r.text
    jid = r.json()["id"]
    assert post(svc, {**DP, "epsilon": 0.5}).json()["id"] == jid          # the same request: the same job
    job = wait_done(svc, jid)
    assert job["kind"] == {"name": "dp", "epsilon": "0.5"} and job["target"] == "0.0001"
    assert job["request"]["kind"] == {"name": "dp", "epsilon": "0.5"}
    assert job["status"] == "done", job.get("reason")      # the certifier got kind dp: two-sided, v4
    listed = svc.http.get("/v1/certificates", params={"kind": "dp"}).json()
    assert [i["id"] for i in listed["items"]] == [jid] and listed["items"][0]["kind"]["name"] == "dp"
    assert jid not in [i["id"] for i in svc.http.get("/v1/certificates", params={"kind": "tv"}).json()["items"]]
    r = svc.http.get("/v1/certificates", params={"kind": "renyi"})
    assert r.status_code == 422 and "kind must be one of tv, dp, tpr" in r.json()["detail"]


def test_a_tpr_job_is_a_different_job_and_a_tv_request_names_no_kind(svc):
    a = post(svc, TPR)
    assert a.status_code == 202, a.text
    b = post(svc, {**TPR, "tpr": "0.003"})
    assert a.json()["id"] != b.json()["id"]
    job = svc.http.get(f"/v1/certificates/{a.json()['id']}").json()
    assert job["kind"] == {"name": "tpr", "fpr": "0.001"} and job["target"] == "0.002"
    tv = post(svc, {"steps": 2, "epochs": 4, "target": "0.2"})
    assert tv.status_code in (200, 202), tv.text
    view = svc.http.get(f"/v1/certificates/{tv.json()['id']}").json()
    assert "kind" not in view["request"] and view["kind"] == {"name": "tv"}   # its idempotency key is unchanged


def test_admission_predicts_a_kind_at_its_own_exact_sigma():
    """The cost of a dp job is priced at the dp exact sigma with the kind's smaller budget (divided by e^eps):
    more than a TV job at the same sigma."""
    req = {"steps": 100, "epochs": 10, "target": "0.00001", "sigma": None, "scheme": "random-allocation",
           "kind": {"name": "dp", "epsilon": "1"}}
    assert kind_key(req) == ("dp", ("epsilon", "1")) and kind_key({"target": "0.1"}) == ()
    dp = predicted_seconds(100, 10, "0.00001", None, "random-allocation", kind_key(req))
    at_sigma = predicted_seconds(100, 10, "0.00001", "1.36919", "random-allocation", kind_key(req))
    assert dp == at_sigma > 0                                   # the dp exact sigma at (100, 10, 1, 1e-5)
    assert dp > predicted_seconds(100, 10, "0.00001", "1.36919", "random-allocation")


def test_a_dp_job_is_certified_in_v4_and_verifies(svc, tmp_path):
    jid = post(svc, DP).json()["id"]
    job = wait_done(svc, jid)
    assert job["status"] == "done", job.get("reason")
    stmt = json.loads(base64.b64decode(job["envelope"]["payload"]))
    assert stmt["predicateType"] == "https://sigmacert.dev/certificate/v4"
    assert stmt["predicate"]["claim"]["kind"] == {"name": "dp", "epsilon": "0.5"}
    cert = tmp_path / "c.json"
    cert.write_text(json.dumps(job["envelope"]))
    assert verify_cli(cert, issuer_pem(svc, tmp_path / "k.pem")).returncode == 0


def test_sigma_of_a_kind_is_the_exact_sigma_of_the_cli(svc):
    """GET /v1/sigma with a dp or tpr target: the exact sigma `sigmacert sigma` prints (res(sigma) grid),
    no TV closed form; the same one-kind rules (422)."""
    import sigmacert
    for q, want in (({"epsilon": "1", "delta": "0.00001"}, sigmacert.exact_sigma(100, 10, epsilon=1, delta="1e-5")),
                    ({"fpr": "0.001", "tpr": "0.002"}, sigmacert.exact_sigma(100, 10, fpr="0.001", tpr="0.002"))):
        r = svc.http.get("/v1/sigma", params={"steps": 100, "epochs": 10, **q}, timeout=120)
        assert r.status_code == 200, r.text
        o = r.json()
        assert o["exact"] == str(want) and o["exact_status"] == "done" and "closed_form" not in o
        assert o["kind"]["name"] == ("dp" if "epsilon" in q else "tpr")
        again = svc.http.get("/v1/sigma", params={"steps": 100, "epochs": 10, **q}).json()
        assert again["exact"] == o["exact"]
    tv = svc.http.get("/v1/sigma", params={"steps": 100, "epochs": 10, "target": "0.00001"}, timeout=120).json()
    assert tv.get("exact") != str(sigmacert.exact_sigma(100, 10, epsilon=1, delta="1e-5"))  # its own cache entry
    for q, words in (({"epsilon": "1"}, "epsilon needs delta"), ({"target": "0.1", "fpr": "0.1", "tpr": "0.2"},
                                                                  "exactly one target"), ({}, "exactly one target")):
        r = svc.http.get("/v1/sigma", params={"steps": 100, "epochs": 10, **q})
        assert r.status_code == 422 and words in r.json()["detail"], r.text
