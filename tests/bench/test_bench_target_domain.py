"""benchmarks/bench_target_domain.py --small: every sampled cell of the scan grids and corners answers (one epoch of
ten steps at delta 1e-12 among them, refused before the few-steps lattice, and twenty epochs of 10^6 steps at eps 2,
refused before the big step in any of many epochs)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_small_scan_answers_every_cell(tmp_path):
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, "benchmarks/bench_target_domain.py", "--small", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "| dp | 4 | 4 | 0 |" in r.stdout
    rows = json.loads(out.read_text())
    assert set(rows) == {"dp", "tpr", "corners", "random", "smalldelta", "fewsteps",
                         "manyepochs"}   # the opt-in grids sampled too
    for grid in rows.values():
        for row in grid:
            assert row["sigma"] is not None, row
            assert float(row["sigma"]) > 0
    # the M = 1 corner is the Gaussian mechanism: mu = sqrt(E)/sigma meets delta(0.01) = 1e-12 on the grid
    m1 = next(r for r in rows["corners"] if r["cell"].get("steps") == "1" and "epsilon" in r["cell"])
    from certifier.numerics.targets import gaussian_delta
    s = float(m1["sigma"])
    assert gaussian_delta(0.01, 1.0 / s) <= 1e-12 < gaussian_delta(0.01, 1.0 / (s - 1e-3))
