"""benchmarks/bench_audit.py --small runs and its figures hold (one Table 1 cell, three claims)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_audit_small():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "benchmarks/bench_audit.py", "--small"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith(" 100  10")]
    assert len(rows) == 3 and [x for row in rows for x in row if x in ("HOLDS", "FALSE")] == ["HOLDS", "FALSE",
                                                                                                 "HOLDS"]
    for flag in ("largest audit", "every interval within the width", "all verified"):
        assert any(ln.startswith(flag) and ln.endswith("True") for ln in r.stdout.splitlines()), r.stdout
