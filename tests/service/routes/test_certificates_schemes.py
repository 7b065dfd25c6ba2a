"""The service takes the sampling scheme like the CLI (`--scheme`, `--iterations`), and certifies
two-sided as `sigmacert certify` does by default. A real `sigmacert serve` on loopback.

TWO (M=2, E=4, lambda=0.2) certifies two-sided with method v1 in about 2 s; FIXED (fixed bins, M=4
bins, T=7 iterations, so E=2) in about 4 s.
"""
from __future__ import annotations

import base64
import json
import math

import pytest
from service_fixtures import issuer_pem, serving, verify_cli, wait_done

TWO = {"steps": 2, "epochs": 4, "target": "0.2"}
FIXED = {"steps": 4, "iterations": 7, "target": "0.3", "scheme": "fixed-bins"}


@pytest.fixture(scope="module")
def svc():
    with serving("sigmacert-schemes-") as srv:
        yield srv


def post(srv, body):
    return srv.http.post("/v1/certificates", json=body, headers=srv.auth)


def predicate(job: dict) -> dict:
    return json.loads(base64.b64decode(job["envelope"]["payload"]))["predicate"]


def sigma(srv, **q) -> dict:
    r = srv.http.get("/v1/sigma", params=q, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("body,word", [
    ({**TWO, "scheme": "poisson"}, "scheme"),
    ({**TWO, "scheme": 3}, "scheme"),
    ({**TWO, "scheme": "x" * 100}, "scheme"),
    ({**TWO, "iterations": 8}, "iterations"),                       # iterations are fixed-bins only
    ({**FIXED, "epochs": 3}, "disagree"),                           # ceil(7/4) = 2, not 3
    ({**FIXED, "iterations": 0}, "iterations"),
    ({**FIXED, "iterations": "7.5"}, "iterations"),
    ({**FIXED, "iterations": 10**12}, "iterations"),
    ({"steps": 4, "target": "0.3"}, "epochs"),                      # neither epochs nor iterations
    ({**FIXED, "iterations": 5000, "steps": 1}, "epochs"),           # E = 5000 rounds: over the bound (1000)
])
def test_bad_scheme_shapes_get_422_with_a_reason(svc, body, word):
    r = post(svc, body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and word in detail.lower() and "\n" not in detail
    q = {k: v for k, v in body.items() if not isinstance(v, (dict, list))}
    r = svc.http.get("/v1/sigma", params=q)
    assert r.status_code == 422 and word in r.json()["detail"].lower(), r.text


def test_fixed_bins_sigma_is_sqrt_e_times_the_one_epoch_sigma(svc):
    """Section 2's reduction, through the API: TV_fixed(M, E, sigma) = TV(M, 1, sigma/sqrt(E))."""
    fixed = sigma(svc, steps=4, iterations=7, target="0.3", scheme="fixed-bins")
    one = sigma(svc, steps=4, epochs=1, target="0.3")
    assert fixed["scheme"] == "fixed-bins" and fixed["epochs"] == 2 and fixed["iterations"] == 7
    assert one["scheme"] == "random-allocation" and "iterations" not in one
    # both on the 1e-6 grid, rounded up: sqrt(2) x one-epoch sigma within the two roundings
    assert abs(float(fixed["exact"]) - math.sqrt(2) * float(one["exact"])) <= 2e-6 * (1 + math.sqrt(2))
    assert abs(float(fixed["closed_form"]) - math.sqrt(2) * float(one["closed_form"])) <= 1e-6 * (1 + math.sqrt(2))
    ra = sigma(svc, steps=4, epochs=2, target="0.3")  # the same (M, E) under random allocation differs
    assert abs(float(ra["exact"]) - float(fixed["exact"])) > 1e-3


def test_a_fixed_bins_certificate_names_its_scheme_and_iterations_and_verifies(svc, tmp_path):
    r = post(svc, FIXED)
    assert r.status_code == 202, r.text
    job = wait_done(svc, r.json()["id"])
    assert job["status"] == "done", job.get("reason")
    assert (job["scheme"], job["epochs"], job["iterations"]) == ("fixed-bins", 2, 7)
    claim = predicate(job)["claim"]
    assert (claim["scheme"], claim["iterations"], claim["epochs"], claim["steps"]) == ("fixed-bins", 7, 2, 4)
    assert float(predicate(job)["bound"]) <= 0.3
    cert = tmp_path / "cert.json"
    cert.write_bytes(svc.http.get(f"/v1/certificates/{job['id']}/envelope").content)
    out = verify_cli(cert, issuer_pem(svc, tmp_path / "issuer.pem"))  # the verifier derives sigma/sqrt(E) itself
    assert out.returncode == 0 and out.stdout.startswith("ACCEPT") and "fixed bins (7 iterations)" in out.stdout, \
        out.stdout + out.stderr
    listing = svc.http.get("/v1/certificates", params={"steps": 4, "epochs": 2}).json()["items"]
    assert [j["scheme"] for j in listing if j["id"] == job["id"]] == ["fixed-bins"]
    # the same run under random allocation is another request (another job)
    other = post(svc, {"steps": 4, "epochs": 2, "target": "0.3", "sigma": job["sigma"]})
    assert other.json()["id"] != job["id"]
    svc.http.delete(f"/v1/certificates/{other.json()['id']}", headers=svc.auth)


def test_jobs_are_two_sided_also_at_a_given_sigma(svc):
    """As `sigmacert certify` by default: sigma - 1e-6 is certified to miss the target, whether the
    service searched the exact sigma or the request gave it."""
    searched = wait_done(svc, post(svc, TWO).json()["id"])
    assert searched["status"] == "done", searched.get("reason")
    given = post(svc, {**TWO, "sigma": searched["sigma"]})
    assert given.json()["id"] != searched["id"]  # a different request: sigma is part of it
    given = wait_done(svc, given.json()["id"])
    assert given["status"] == "done", given.get("reason")
    for job in (searched, given):
        low = predicate(job)["lower"]
        assert low["sigma_low"] == f"{float(job['sigma']) - 1e-6:.6f}" and float(low["tv_lower"]) > 0.2
