"""benchmarks/bench_domain_faces.py --small: `sigmacert sigma` answers the sampled corners of the stated target
domain, and the cells just outside are refused by `sigma` and `certify` in the same one line naming the
nearest target that works, exit 2."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_small_corners_answer_and_outside_is_one_line(tmp_path):
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, "benchmarks/bench_domain_faces.py", "--small", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())
    assert len(rows["inside"]) == 3 and all(row["rc"] == 0 and float(row["answer"]) > 0 for row in rows["inside"])
    assert rows["inside"][0]["answer"] == "578.998"            # M = 1: the Gaussian closed form at eps 0.01
    outside = rows["outside"]
    assert len(outside) == 4 and all(row["rc"] == 2 and len(row["err"].splitlines()) == 1 for row in outside)
    for sigma, certify in zip(outside[::2], outside[1::2]):   # the same line from both commands
        assert sigma["err"] == certify["err"] and "the nearest target that works is" in sigma["err"]
    assert "outside: 4 refusals, 4 one-line" in r.stdout
