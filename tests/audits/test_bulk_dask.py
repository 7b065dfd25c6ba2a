"""sigmacert audit --claims --scheduler: the rows run on a Dask scheduler (a local cluster of worker processes on
loopback); the driver signs; the index and certificates are those of an in-process run."""
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_claims_on_a_dask_scheduler(tmp_path):
    from distributed import LocalCluster
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-m", "sigmacert", "keygen", "-o", str(tmp_path / "k")], env=env, check=True,
                   capture_output=True)
    csv = tmp_path / "c.csv"
    csv.write_text("steps,epochs,sigma,epsilon,delta,source\n100,10,1.426215,0.95,1e-5,a\n100,10,1.426215,0.93,1e-5,b\n")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      silence_logs=logging.CRITICAL) as cluster:
        r = subprocess.run([sys.executable, "-m", "sigmacert", "audit", "--claims", str(csv), "--out-dir",
                            str(tmp_path / "o"), "--scheduler", cluster.scheduler_address, "--key",
                            str(tmp_path / "k" / "private.pem"), "--json", "--quiet"], env=env, capture_output=True,
                           text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [e["verdict"] for e in rows] == ["HOLDS", "FALSE"]
    from verifier.core import verify_bytes
    from verifier.format.envelope import load_public_key
    pub = load_public_key((tmp_path / "k" / "public.pem").read_bytes())
    assert all(verify_bytes((tmp_path / "o" / e["certificate"]).read_bytes().strip(), [pub]).accepted for e in rows)
