"""The detail view of an archived certificate over real HTTP: its audit report and plots are the
bytes `sigmacert report` writes for the same certificate and issuer key, and the signed envelope
downloads as a file. A real `sigmacert serve` on loopback; the job (M=2, E=4, lambda=0.2) certifies
two-sided in about 2 s, its report takes about 5 s.
"""
from __future__ import annotations

import json
import re
import subprocess

import pytest
from service_fixtures import SIGMACERT, issuer_pem, serving, verify_cli, wait_done

from sigmacert.report.page import inline_svg

CELL = {"steps": 2, "epochs": 4, "target": "0.2"}


@pytest.fixture(scope="module")
def done():
    with serving("sigmacert-report-") as srv:
        r = srv.http.post("/v1/certificates", json=CELL, headers=srv.auth)
        assert r.status_code == 202, r.text
        job = wait_done(srv, r.json()["id"])
        assert job["status"] == "done", job.get("reason")
        yield srv, job


def test_the_envelope_downloads_as_a_signed_json_file(done, tmp_path):
    srv, job = done
    r = srv.http.get(f"/v1/certificates/{job['id']}/envelope")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.headers["content-disposition"] == f'attachment; filename="{job["id"]}.json"'
    assert json.loads(r.content) == job["envelope"]
    cert = tmp_path / "cert.json"
    cert.write_bytes(r.content)
    out = verify_cli(cert, issuer_pem(srv, tmp_path / "issuer.pem"))
    assert out.returncode == 0 and out.stdout.startswith("ACCEPT"), out.stdout + out.stderr


def test_the_report_is_the_one_sigmacert_report_writes(done, tmp_path):
    srv, job = done
    r = srv.http.get(f"/v1/certificates/{job['id']}/report", timeout=120)
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8", r.text[:300]
    assert r.headers["x-sigmacert-verdict"] == "ACCEPT"
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'self'" in csp
    cert, out = tmp_path / "cert.json", tmp_path / "report.html"
    cert.write_bytes(srv.http.get(f"/v1/certificates/{job['id']}/envelope").content)
    cli = subprocess.run([*SIGMACERT, "report", str(cert), "--key", issuer_pem(srv, tmp_path / "k.pem"),
                          "-o", str(out), "--quiet"], capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    assert r.content == out.read_bytes()  # deterministic: same certificate and key, same bytes
    assert f"{job['sigma']}" in r.text and r.text.count("<svg") == 3
    again = srv.http.get(f"/v1/certificates/{job['id']}/report")  # from the archive's cache now
    assert again.status_code == 200 and again.content == r.content


def test_each_plot_is_served_as_svg_and_is_the_one_in_the_report(done):
    srv, job = done
    page = srv.http.get(f"/v1/certificates/{job['id']}/report", timeout=120).text
    for name in ("tv", "tradeoff", "epsilon"):
        r = srv.http.get(f"/v1/certificates/{job['id']}/plots/{name}.svg")
        assert r.status_code == 200 and r.headers["content-type"] == "image/svg+xml", (name, r.text[:200])
        assert r.text.startswith("<svg") and r.text.rstrip().endswith("</svg>") and len(r.text) > 5000, name
        assert inline_svg(r.text) in page, name  # the report shows this very document
    for path, code, word in ((f"/v1/certificates/{job['id']}/plots/heatmap.svg", 404, "tv, tradeoff, epsilon"),
                             ("/v1/certificates/cnosuchjob/report", 404, "no certificate job"),
                             ("/v1/certificates/cnosuchjob/plots/tv.svg", 404, "no certificate job"),
                             ("/v1/certificates/" + "c" * 300 + "/report", 404, "no certificate job")):
        r = srv.http.get(path)
        assert r.status_code == code and word in r.json()["detail"], (path, r.text)


def test_no_report_before_the_certificate_is_done(done):
    srv, _ = done
    r = srv.http.post("/v1/certificates", json={**CELL, "target": "0.3", "sigma": "9"}, headers=srv.auth)
    jid = r.json()["id"]
    srv.http.delete(f"/v1/certificates/{jid}", headers=srv.auth)  # cancelled at once (or still queued)
    r = srv.http.get(f"/v1/certificates/{jid}/report")
    assert r.status_code == 409 and re.search(r"is (cancelled|queued|running), not done", r.json()["detail"])


class _Lane:
    """A lane whose computations finish when the test says so."""

    def __init__(self):
        self.started = []

    def sandboxed(self, task, payload, budget, entry):
        import concurrent.futures as cf
        self.started.append((task, entry, payload))
        fut = cf.Future()
        fut.set_running_or_notify_cancel()
        return fut


def test_reports_are_computed_once_pending_meanwhile_and_failures_remembered(tmp_path):
    import asyncio

    from service.reports import Reports, report_key
    from service.sandbox import Budget, Outcome
    from service.store import Store
    lane, store = _Lane(), Store(str(tmp_path / "db"))
    reports = Reports(store, lane, Budget(1 << 30, 10), wait=0.05, entry="some.module")
    env, keys = b'{"payload": "x"}\n', ["PEM-A", "PEM-B"]

    async def twice():
        return await asyncio.gather(reports.get(env, keys), reports.get(env, keys))
    assert asyncio.run(twice()) == [{"status": "pending"}] * 2
    assert len(lane.started) == 1 and lane.started[0][:2] == ("report", "some.module")  # one computation
    fut = reports.inflight[report_key(env, keys)]
    fut.set_result(Outcome(result={"verdict": "ACCEPT", "html": "<p>", "svgs": {}}))
    assert asyncio.run(reports.get(env, keys)) == {"status": "done", "verdict": "ACCEPT", "html": "<p>", "svgs": {}}
    assert report_key(env, keys) == report_key(env, keys[::-1]) != report_key(env, keys[:1])  # the key set counts

    other = b'{"payload": "y"}\n'
    assert asyncio.run(reports.get(other, keys)) == {"status": "pending"}
    reports.inflight[report_key(other, keys)].set_result(Outcome(failure="seconds", reason="over 10 s"))
    assert asyncio.run(reports.get(other, keys)) == {"status": "failed", "reason": "over 10 s"}
    assert len(lane.started) == 2  # remembered, not started again
