"""The service takes runs in stages like `sigmacert certify --stages` ("4x2,8x1" or a list of {steps, epochs},
one sigma shared): jobs certified in format v5 and verified, the archive listing and filter, the report,
GET /v1/sigma with stages for every kind; every bad stage list a 422 with a one-line reason.
A real `sigmacert serve` on loopback.
"""
from __future__ import annotations

import base64
import json

import pytest
from service_fixtures import issuer_pem, serving, verify_cli, wait_done, wait_for

import sigmacert
from certifier.numerics.stages import closed_form_sigma_product, exact_tv_product
from certifier.params import ParameterError
from service.admission import predicted_seconds, predicted_seconds_product
from service.routes.certificates import stages_filter
from service.store import Store
from service.validate import Limits

RUN = {"stages": "4x2,8x1", "target": "0.3"}
AS_LIST = {"stages": [{"steps": 4, "epochs": 2}, {"steps": 8, "epochs": 1}], "target": "0.3"}
V5 = "https://sigmacert.dev/certificate/v5"


@pytest.fixture(scope="module")
def svc():
    with serving("sigmacert-stages-") as srv:
        yield srv


def post(srv, body):
    return srv.http.post("/v1/certificates", json=body, headers=srv.auth)


BAD = [
    ({"stages": "4x0", "target": "0.3"}, "stage"),
    ({"stages": "4x1,", "target": "0.3"}, "stages must look like"),
    ({"stages": "x1", "target": "0.3"}, "must look like 100x5"),
    ({"stages": "", "target": "0.3"}, "stages must look like"),
    ({"stages": "4x1@1.2,8x1@1.3", "target": "0.3"}, "share one sigma"),
    ({"stages": "4x2", "steps": 4, "target": "0.3"}, "stages replaces steps"),
    ({"stages": "4x2", "epochs": 2, "target": "0.3"}, "stages replaces steps"),
    ({"stages": "4x2", "scheme": "fixed-bins", "target": "0.3"}, "random allocation"),
    ({"stages": "20000x1", "target": "0.3"}, "at most 10000 on this service"),
    ({"stages": "4x600,4x600", "target": "0.3"}, "add up to 1200"),
    ({"stages": ",".join(["4x1"] * 65), "target": "0.3"}, "at most 64 stages"),
    ({"stages": "4x1," * 700, "target": "0.3"}, "too long"),
    ({"stages": "4\u00d72", "target": "0.3"}, "ASCII"),
    ({"stages": [], "target": "0.3"}, "at least one stage"),
    ({"stages": [{"steps": 4}], "target": "0.3"}, "stages"),
    ({"stages": [{"steps": 4, "epochs": 2, "sigma": "1.2"}], "target": "0.3"}, "stages"),
    ({"stages": [{"steps": "four", "epochs": 2}], "target": "0.3"}, "steps M"),
    ({"stages": [{"steps": 0, "epochs": 2}], "target": "0.3"}, "steps M"),
    ({"stages": 42, "target": "0.3"}, "stages: must be a stage list"),
    ({"stages": "4x2"}, "exactly one target"),
    ({"target": "0.3"}, "give steps (with epochs) or stages"),
]


@pytest.mark.parametrize("body,words", BAD)
def test_bad_stage_requests_get_422_with_one_line(svc, body, words):
    r = post(svc, body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and words in detail, detail


@pytest.mark.parametrize("q,words", [({"stages": "4x0", "target": "0.3"}, "stage"),
                                     ({"stages": "4x1@1.2", "target": "0.3"}, "share one sigma"),
                                     ({"stages": "4x2", "steps": "4", "target": "0.3"}, "stages replaces"),
                                     ({"stages": "4x2", "epsilon": "1"}, "epsilon needs delta"),
                                     ({"stages": "9x9999", "target": "0.3"}, "add up to")])
def test_bad_stage_lists_on_the_sigma_route_get_422(svc, q, words):
    r = svc.http.get("/v1/sigma", params=q)
    assert r.status_code == 422 and words in r.json()["detail"] and "\n" not in r.json()["detail"], r.text


def test_a_staged_dp_job_is_certified_in_v5_with_its_kind_and_verifies(svc, tmp_path):
    r = post(svc, {"stages": "4x1,8x1", "epsilon": "0.5", "delta": "0.1"})
    assert r.status_code == 202, r.text
    job = wait_done(svc, r.json()["id"])
    assert job["status"] == "done", job.get("reason")
    stmt = json.loads(base64.b64decode(job["envelope"]["payload"]))
    claim = stmt["predicate"]["claim"]
    assert stmt["predicateType"] == V5 and claim["kind"] == {"name": "dp", "epsilon": "0.5"}
    assert claim["stages"] == [{"steps": 4, "epochs": 1}, {"steps": 8, "epochs": 1}] and claim["target"] == "0.1"
    assert float(stmt["predicate"]["upper"]["bound"]) <= 0.1 < float(stmt["predicate"]["lower"]["bound_lower"])
    cert = tmp_path / "dp.json"
    cert.write_text(json.dumps(job["envelope"]))
    out = verify_cli(cert, issuer_pem(svc, tmp_path / "k.pem"))
    assert out.returncode == 0 and "ACCEPT" in out.stdout, out.stdout + out.stderr


def test_a_staged_job_is_certified_in_v5_verified_listed_and_reported(svc, tmp_path):
    a = post(svc, RUN)
    assert a.status_code == 202, a.text
    jid = a.json()["id"]
    assert post(svc, AS_LIST).json()["id"] == jid                 # the same run spelled as a list: the same job
    assert post(svc, {**RUN, "stages": "8x1,4x2"}).json()["id"] != jid   # another order: another claim
    job = wait_done(svc, jid)
    assert job["status"] == "done", job.get("reason")
    assert job["stages"] == AS_LIST["stages"] and job["steps"] is None and job["epochs"] == 3
    stmt = json.loads(base64.b64decode(job["envelope"]["payload"]))
    claim = stmt["predicate"]["claim"]
    assert stmt["predicateType"] == V5 and claim["stages"] == AS_LIST["stages"] and "steps" not in claim
    assert "lower" in stmt["predicate"]                               # two-sided, as every job
    sigma, low = claim["sigma"], stmt["predicate"]["lower"]["sigma_low"]
    assert exact_tv_product([(4, 2, sigma), (8, 1, sigma)]).tv <= 0.3 < exact_tv_product([(4, 2, low), (8, 1, low)]).tv
    cert = tmp_path / "c.json"
    cert.write_text(json.dumps(job["envelope"]))
    assert verify_cli(cert, issuer_pem(svc, tmp_path / "k.pem")).returncode == 0
    # the archive: listed with its stages, found by its list and by "any", not by "none" nor by steps
    ids = lambda **q: [i["id"] for i in svc.http.get("/v1/certificates", params=q).json()["items"]]  # noqa: E731
    listed = svc.http.get("/v1/certificates", params={"stages": "4x2,8x1"}).json()["items"]
    assert [i["id"] for i in listed] == [jid] and listed[0]["stages"] == AS_LIST["stages"]
    assert jid in ids(stages="any") and jid not in ids(stages="none") and jid not in ids(steps="4")
    assert jid in ids(epochs="3") and jid in ids(kind="tv")
    r = svc.http.get("/v1/certificates", params={"stages": "4x0"})
    assert r.status_code == 422 and "\n" not in r.json()["detail"]
    # the report of the archived v5 certificate: the very page `sigmacert report` writes, with its stages
    rep = wait_for(lambda: (lambda r: r if r.status_code != 202 else None)(
        svc.http.get(f"/v1/certificates/{jid}/report", timeout=180)), 240)      # 202 while it is being drawn
    assert rep.status_code == 200 and "ACCEPT" in rep.text and '<table id="stages">' in rep.text, rep.text[:300]
    svg = svc.http.get(f"/v1/certificates/{jid}/plots/tv.svg", timeout=180)
    assert svg.status_code == 200 and svg.text.startswith("<svg")


def test_sigma_with_stages_is_the_exact_shared_sigma_of_the_api(svc):
    """GET /v1/sigma?stages=...: the exact shared sigma `sigmacert sigma --stages` gives, the closed form of the
    product's chi-square beside it (a proven bound: above); dp and tpr kinds too (their own cache entries)."""
    run = [(4, 2), (8, 1)]
    r = svc.http.get("/v1/sigma", params={"stages": "4x2,8x1", "target": "0.3"}, timeout=120)
    assert r.status_code == 200, r.text
    o = r.json()
    assert o["exact"] == str(sigmacert.exact_sigma(stages=run, target="0.3")) and o["exact_status"] == "done"
    assert o["stages"] == AS_LIST["stages"] and o["epochs"] == 3 and "steps" not in o
    assert float(o["closed_form"]) >= closed_form_sigma_product([sigmacert.Stage(4, 2), sigmacert.Stage(8, 1)], 0.3)
    assert float(o["closed_form"]) > float(o["exact"])
    block = svc.http.get("/v1/sigma", params={"steps": 4, "epochs": 2, "target": "0.3"}, timeout=120).json()
    assert block["exact"] != o["exact"]                                 # not the cache entry of a block
    for q, want in (({"epsilon": "1", "delta": "0.01"}, sigmacert.exact_sigma(stages=run, epsilon=1, delta="0.01")),
                    ({"fpr": "0.01", "tpr": "0.05"}, sigmacert.exact_sigma(stages=run, fpr="0.01", tpr="0.05"))):
        r = svc.http.get("/v1/sigma", params={"stages": "4x2,8x1", **q}, timeout=120)
        assert r.status_code == 200, r.text
        o = r.json()
        assert o["exact"] == str(want) and "closed_form" not in o and o["kind"]["name"] in ("dp", "tpr")


def test_admission_prices_stages_by_the_certifiers_plan():
    """Stages of one M cost what the block costs (one method-v2 plan, format v5); a second distinct M adds its
    plan; the M = 1 runs are closed forms (0 s)."""
    block = predicted_seconds_product(((100, 10),), "0.1", None)
    assert block > 0 and predicted_seconds(100, 10, "0.1", None, "random-allocation") > 0
    assert predicted_seconds_product(((100, 5), (100, 5)), "0.1", None) == pytest.approx(block, rel=1e-9)
    assert predicted_seconds_product(((100, 5), (400, 5)), "0.1", None) > block
    assert predicted_seconds_product(((1, 5), (1, 3)), "0.1", None) == 0.0
    assert Limits().max_steps == 10_000


def test_an_expensive_staged_job_is_refused_with_its_prediction():
    """10000x50,5000x50 is predicted at about 90 s with its replay by the calibrated model (the former one, the
    planner's own seconds, said 1500 s): a service whose per-job limit is 20 s refuses it with the prediction."""
    with serving("sigmacert-stages-limit-", "--max-predicted-seconds", "20") as srv:
        r = post(srv, {"stages": "10000x50,5000x50", "target": "0.1"})
        assert r.status_code == 422 and "predicted to take" in r.json()["detail"], r.text


def test_the_worker_signs_only_the_requested_stage_list():
    """matches_request: a v5 claim is signed for a staged request only with the same stages in the same order at
    one sigma (a stage's own sigma equal to the claim's is the same run)."""
    from service.signer import matches_request
    req = {"stages": AS_LIST["stages"], "steps": None, "epochs": 3, "scheme": "random-allocation", "target": "0.3",
           "sigma": None}
    claim = {"stages": [dict(s) for s in AS_LIST["stages"]], "sigma": "1.156185", "target": "0.3",
             "scheme": "random-allocation", "kind": {"name": "tv"}}
    pred = lambda c: {"predicate": {"claim": c, "bound": "0.29"}}  # noqa: E731
    assert matches_request(req, pred(claim)) is None
    same = {**claim, "stages": [{**s, "sigma": "1.156185"} for s in claim["stages"]]}
    assert matches_request(req, pred(same)) is None
    for bad in ({**claim, "stages": claim["stages"][::-1]}, {**claim, "stages": claim["stages"][:1]},
                {**claim, "stages": [{**claim["stages"][0], "sigma": "1.2"}, claim["stages"][1]]},
                {**claim, "stages": None}, {**claim, "steps": 4}, {**claim, "target": "0.4"}):
        assert matches_request(req, pred(bad)) is not None, bad
    assert "exceeds" in matches_request(req, {"predicate": {"claim": claim, "bound": "0.31"}})


def test_the_listing_filter_is_read_once_into_its_sql(tmp_path):
    """stages= is read once into a StagesFilter (absent, "any", "none", a stage list) whose SQL the store appends;
    a bad stage list is refused with the validator's one-line text."""
    store = Store(str(tmp_path / "db"))
    staged = {**AS_LIST, "steps": None, "epochs": 3, "scheme": "random-allocation", "sigma": None}
    block = {"steps": 4, "epochs": 3, "scheme": "random-allocation", "target": "0.3", "sigma": None}
    jid = {name: store.submit(req, "alice")[0]["id"] for name, req in (("staged", staged), ("block", block))}
    found = lambda text: {r["id"] for r in store.listing(stages=stages_filter(text, Limits()))[0]}  # noqa: E731
    assert found(None) == set(jid.values()) and found("any") == {jid["staged"]} and found("none") == {jid["block"]}
    assert found("4x2,8x1") == {jid["staged"]} and found("8x1,4x2") == found("4x2") == set()
    assert store.listing(epochs=3, stages=stages_filter("4x2,8x1", Limits()))[1] == 1
    for junk, text in (("ANY", "stage 'ANY' must look like 100x5 or 100x5@1.2"),
                       ("4x0", "stage epochs E must be an integer in [1, 1000000], got 0"),
                       ("4x1@1.2", "the stages share one sigma here: write them without @sigma (100x5,400x5)"),
                       ("20000x1", "stage 1: steps M must be at most 10000 on this service, got 20000")):
        with pytest.raises(ParameterError) as err:
            stages_filter(junk, Limits())
        assert str(err.value) == text
