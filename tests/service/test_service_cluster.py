"""`sigmacert serve --scheduler`: certification jobs computed on a Dask cluster, signed by the service.

The test starts its own `dask scheduler` and one `dask worker` (one thread) on loopback, then a
real `sigmacert serve` pointed at it. A long job shows its live stage from the Dask worker and is
cancelled (its remote child is killed: the single worker thread is free again at once); a small job
(M=2, E=4, lambda=0.2, two-sided, about 2 s) is archived and its certificate verifies.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from service_fixtures import SIGMACERT, issuer_pem, serving, verify_cli, wait_done, wait_for

from certifier.errors import ParameterError
from service.cluster import parse_scheduler

DASK = os.path.join(os.path.dirname(sys.executable), "dask")
LOOPBACK = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
LONG = {"steps": 1000, "epochs": 100, "target": "0.5"}   # about a minute of computing
SMALL = {"steps": 2, "epochs": 4, "target": "0.2"}


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    sfile, log = root / "scheduler.json", open(root / "dask.log", "wb")
    procs = [subprocess.Popen([DASK, "scheduler", "--port", "0", "--scheduler-file", str(sfile), *LOOPBACK],
                              stdout=log, stderr=log)]
    try:
        address = wait_for(lambda: sfile.exists() and json.loads(sfile.read_text() or "{}").get("address"), 60, 0.2)
        assert address.startswith("tcp://127.0.0.1:")
        procs.append(subprocess.Popen([DASK, "worker", "--scheduler-file", str(sfile), "--nthreads", "1",
                                       "--no-nanny", "--name", "w0", "--local-directory", str(root), *LOOPBACK],
                                      stdout=log, stderr=log))
        from distributed import Client
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(1, timeout=120)
            yield address, client
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


def test_jobs_compute_on_the_cluster_and_the_service_signs(scheduler, tmp_path):
    address, client = scheduler
    with serving("sigmacert-cluster-", "--scheduler", address, "--insecure-scheduler") as srv:
        # a long job: its live stage comes from the Dask worker; cancelling it kills the remote child
        jid = srv.http.post("/v1/certificates", json=LONG, headers=srv.auth).json()["id"]
        job = wait_for(lambda: (j := srv.http.get(f"/v1/certificates/{jid}").json())["status"] == "running"
                       and j.get("stage") not in (None, "starting") and j, 90, 0.25)
        assert 0 <= job["percent"] <= 100 and job["elapsed"] >= 0
        assert srv.http.delete(f"/v1/certificates/{jid}", headers=srv.auth).json()["status"] == "cancelled"

        # a small job on the same single worker thread: it runs only once the long one is killed
        t0 = time.monotonic()
        small = srv.http.post("/v1/certificates", json=SMALL, headers=srv.auth).json()["id"]
        job = wait_done(srv, small, 90)
        assert job["status"] == "done", (job.get("reason"), srv.log())
        assert time.monotonic() - t0 < 60
        cert = tmp_path / "cert.json"
        cert.write_bytes(srv.http.get(f"/v1/certificates/{small}/envelope").content)
        out = verify_cli(cert, issuer_pem(srv, tmp_path / "issuer.pem"))
        assert out.returncode == 0 and out.stdout.startswith("ACCEPT"), out.stdout + out.stderr

    # both computations were Dask tasks, and their progress reached the scheduler as events
    prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert "sigmacert-job" in prefixes
    topics = [t for t in client.get_events() if t.startswith("sigmacert-job-")]
    assert len(topics) == 2 and all(client.get_events(t) for t in topics)


@pytest.mark.parametrize("address", ["127.0.0.1:8786", "http://127.0.0.1:8786", "tcp://host", "tcp://a b:1",
                                     "tcp://127.0.0.1:8786/x", ""])
def test_bad_scheduler_addresses_are_refused(address):
    with pytest.raises(ParameterError, match="scheduler must be a Dask address"):
        parse_scheduler(address)
    assert parse_scheduler(" tcp://127.0.0.1:8786 ") == "tcp://127.0.0.1:8786"


def test_serve_with_a_bad_scheduler_is_one_line_exit_2_before_anything_is_created(tmp_path):
    out = subprocess.run([*SIGMACERT, "serve", "--db", str(tmp_path / "db"), "--scheduler", "http://127.0.0.1:1"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.startswith("sigmacert: error: scheduler must be a Dask address")
    assert len(out.stderr.strip().splitlines()) == 1 and not os.listdir(tmp_path)  # no key, no database
