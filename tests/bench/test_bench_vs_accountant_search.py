"""bench_vs_accountant's (eps, delta) machinery without the accountant: a budgeted child is killed
and gone at its CPU budget, and the accountant's search (here against a model accountant whose
upper bound is eps * root / sigma) brackets the root from the exact sigma, stops at its tolerance,
its run count or its per-cell CPU budget, and never runs below the exact sigma."""
from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bva():
    spec = importlib.util.spec_from_file_location("bva_search", ROOT / "benchmarks" / "bench_vs_accountant.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _spin(path, queue):
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    while True:
        pass


def _crash(queue):
    os._exit(3)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads CPU time from /proc")
def test_a_child_past_its_budget_is_killed(bva, tmp_path):
    pidfile = tmp_path / "pid"
    t0 = time.monotonic()
    msg, cpu, status = bva._budgeted(_spin, (str(pidfile),), 1.0)
    assert msg is None and status == "budget" and 1.0 <= cpu < 5.0 and time.monotonic() - t0 < 60
    assert not _alive(int(pidfile.read_text()))
    msg, cpu, status = bva._budgeted(_crash, (), 30.0)
    assert msg is None and status == "died" and cpu < 30.0


def _model(root, eps, seconds, calls):
    """A model accountant: upper eps bound eps * root / sigma, so it certifies exactly sigma >= root."""
    def fs_certifies(steps, epochs, sigma, e, delta, budget):
        calls.append((sigma, budget))
        if budget < seconds:
            return {"certified": False, "upper": None, "lower": None, "seconds": budget, "status": "timeout",
                    "disc": None}
        up = eps * root / sigma
        return {"certified": up <= eps, "upper": up, "lower": None, "seconds": seconds,
                "status": "decided" if up <= eps else "done", "disc": 0.05}
    return fs_certifies


@pytest.mark.parametrize("gap", [0.0003, 0.004, 0.015, 0.2])
def test_the_search_brackets_the_accountants_root(bva, monkeypatch, gap):
    exact, tol, calls = 1.25, 1e-3, []
    root = exact * (1 + gap)
    monkeypatch.setattr(bva, "fs_certifies", _model(root, 4.0, 10.0, calls))
    lo, hi, runs, stop = bva.fs_search(100, 10, 4.0, 1e-5, exact, tol, 100.0, 12)
    assert stop == "bracket" and lo < root <= hi and hi / lo - 1 <= tol
    assert all(s > exact for s, _ in calls) and len(runs) == len(calls) <= 8
    assert hi == min(r["sigma"] for r in runs if r["certified"])
    assert lo == max([exact] + [r["sigma"] for r in runs if not r["certified"]])


def test_the_search_stops_at_its_cell_budget_and_run_count(bva, monkeypatch):
    calls = []
    monkeypatch.setattr(bva, "fs_certifies", _model(1.3, 1.0, 10.0, calls))
    lo, hi, runs, stop = bva.fs_search(250, 20, 1.0, 1e-5, 1.25, 1e-6, 100.0, 50, search_budget=25.0)
    assert stop == "budget" and [b for _, b in calls] == [25.0, 15.0, 5.0]  # each run gets what the cell has left
    assert runs[-1]["status"] == "timeout" and not runs[-1]["certified"]
    calls.clear()
    lo, hi, runs, stop = bva.fs_search(250, 20, 1.0, 1e-5, 1.25, 1e-6, 100.0, 3)
    assert stop == "max-runs" and len(runs) == 3 and lo < 1.3 <= hi
    calls.clear()  # nothing certified within the budget: hi None, lo the largest sigma tried
    lo, hi, runs, stop = bva.fs_search(250, 20, 1.0, 1e-5, 1.25, 1e-3, 5.0, 10, search_budget=12.0)
    assert hi is None and stop == "budget" and lo == max(s for s, _ in calls) > 1.25
