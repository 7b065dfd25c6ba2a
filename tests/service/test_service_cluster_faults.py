"""`sigmacert serve --scheduler`: a job fails fast on a remote error and survives a bounded number of lost workers.

The test starts its own `dask scheduler` on loopback and, per case, one `dask worker` (with its nanny, which
restarts a killed worker process) whose preload tests/service/dask_faults.py injects a fault:
* the task raises a TimeoutError (as a TLS timeout would): the job fails at once with that reason, long
  before its wall-clock limit (600 s here; the relay once took such an error for its own poll timeout and
  waited for the limit);
* the worker dies as the task starts, every time: the job fails with "died" after at most
  service.cluster.MAX_LOST reruns, not at the limit;
* the worker dies once: Dask runs the task again on the restarted worker, and the job is signed.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from service_fixtures import serving, wait_done, wait_for

from service.cluster import MAX_LOST

DASK = os.path.join(os.path.dirname(sys.executable), "dask")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LOOPBACK = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
SMALL = {"steps": 2, "epochs": 4, "target": "0.2", "sigma": "4"}  # two-sided, about 2 s


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask-faults")
    sfile, log = root / "scheduler.json", open(root / "dask.log", "wb")
    env = {**os.environ, "PYTHONPATH": ROOT}
    procs = [subprocess.Popen([DASK, "scheduler", "--port", "0", "--scheduler-file", str(sfile), *LOOPBACK],
                              stdout=log, stderr=log, env=env)]

    def worker(fault: str):
        p = subprocess.Popen([DASK, "worker", "--scheduler-file", str(sfile), "--nthreads", "1", "--name", fault,
                              "--local-directory", str(root), "--preload", os.path.join(HERE, "dask_faults.py"),
                              *LOOPBACK], stdout=log, stderr=log, env={**env, "SIGMACERT_DASK_FAULT": fault})
        procs.append(p)
        return p
    try:
        address = wait_for(lambda: sfile.exists() and json.loads(sfile.read_text() or "{}").get("address"), 60, 0.2)
        yield address, worker, root
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


def run_one(address, worker, fault, body=SMALL, timeout=240):
    w = worker(fault)
    try:
        with serving("sigmacert-faults-", "--scheduler", address, "--insecure-scheduler", "--job-seconds", "600") \
                as srv:
            t0 = time.monotonic()
            jid = srv.http.post("/v1/certificates", json=body, headers=srv.auth).json()["id"]
            job = wait_done(srv, jid, timeout)
            return job, time.monotonic() - t0, srv.log()
    finally:
        w.terminate()
        w.wait(30)


def test_a_remote_task_error_ends_the_job_at_once_with_its_reason(cluster):
    address, worker, _ = cluster
    job, secs, log = run_one(address, worker, "raise")
    assert job["status"] == "failed", job
    assert "TimeoutError" in job["reason"] and "TLS handshake" in job["reason"], job["reason"]
    assert secs < 120, secs  # not the 600 s limit (nor its 60 s grace)


def test_a_worker_lost_every_time_fails_the_job_after_bounded_reruns(cluster):
    address, worker, _ = cluster
    job, secs, log = run_one(address, worker, "die", body={**SMALL, "sigma": "4.5"})
    assert job["status"] == "failed", job
    assert "died" in job["reason"], job["reason"]
    assert secs < 180, secs
    if "times" in job["reason"]:  # our bound (else Dask's own, KilledWorker, came first)
        assert f"died {MAX_LOST + 1} times" in job["reason"], job["reason"]


def test_a_worker_lost_once_is_rerun_and_the_job_is_signed(cluster):
    address, worker, root = cluster
    job, secs, log = run_one(address, worker, f"die-once:{root / 'died'}", body={**SMALL, "sigma": "5"})
    assert (root / "died").exists()
    assert job["status"] == "done", (job.get("reason"), log)
    assert job["envelope"] and job["keyid"]
