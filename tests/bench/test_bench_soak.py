"""benchmarks/bench_soak.py --small: the service under mixed jobs and faults loses, duplicates and leaves
unreplayed nothing (an 18 s stream with a worker SIGKILL, a server SIGKILL and restart, and, as root, a full
disk under the database, going on until 6 jobs were accepted; about a minute in all)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_soak_small(tmp_path):
    out = tmp_path / "soak.json"
    r = subprocess.run([sys.executable, "benchmarks/bench_soak.py", "--small", "--json", str(out)], cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    f = json.loads(out.read_text())
    assert f["jobs accepted"] >= 6 and f["done"] >= 3, f
    assert f["faults"]["worker"] >= 1 and f["faults"]["server"] >= 1, f
    assert f["faults"]["disk"] >= 1 or os.geteuid() != 0, f
    for k in ("lost", "failed without reason", "duplicate signatures", "unreplayed signatures", "not verified",
              "healthz lies", "healthz false alarms", "wrongly accepted", "other 5xx"):
        assert f[k] == 0, (k, f)
    assert f["refused as expected"] >= 1 and f["p95 ms"] > 0, f
    assert f["done"] + f["failed"] + f["cancelled"] == f["jobs accepted"], f
