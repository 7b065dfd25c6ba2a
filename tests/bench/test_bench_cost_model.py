"""benchmarks/bench_cost_model.py --small: three small cells certified and verified live, their measured CPU
seconds and peak memory beside the calibrated prediction (service/costmodel.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_cost_model_small(tmp_path):
    out = tmp_path / "cost.json"
    r = subprocess.run([sys.executable, "benchmarks/bench_cost_model.py", "--small", "--json", str(out)], cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads(out.read_text())
    cells = {c["cell"]: c for c in data["cells"]}
    assert set(cells) == {"tv:2,1,0.3", "tv:3,2,0.5", "tv:1,1,0.1"}
    for c in cells.values():
        assert c["verify_result"] == "ACCEPT" and c["certify_cpu"] > 0, c
        assert c["certify_mb"] > 50 and c["verify_mb"] > 20, c
        assert c["predicted"]["certify_cpu"] > 0 and c["predicted"]["verify_mb"] > 20, c
    assert cells["tv:2,1,0.3"]["plan"]["family"] == "tv" and cells["tv:2,1,0.3"]["plan"]["up"] > 0
    assert cells["tv:1,1,0.1"]["plan"]["family"] == "gs"
    s = data["summary"]["tv certify_cpu"]
    assert s["cells"] == 2 and 0 < s["min"] <= s["max"] < 10, s   # measured live: a sanity band, not the goal
    assert "| cell | σ |" in r.stdout and "tv certify_cpu:" in r.stdout
