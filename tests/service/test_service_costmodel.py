"""The calibrated cost model (service/costmodel.py on service/costplan.py's plans) and admission on it
(service/admission.py), checked against the recorded grids (benchmarks/data/corner_grid.json, kinds_grid.json),
not against live timings: every recorded cell is predicted within the goals' bands from the plan stored with
the calibration; the planners still give those plans; admission refuses on predicted seconds and on predicted
memory, for tv, kinds and stages; a stated or probed machine speed scales seconds, never memory.
"""
from __future__ import annotations

import json
import os

import pytest

from certifier.errors import ParameterError
from service import costmodel
from service.admission import MEMORY_TOLERANCE, admit, predicted_seconds, prediction
from service.costplan import Plan, request_plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "benchmarks", "data")
TV = {"scheme": "random-allocation"}
FIGURES = ("certify_cpu", "verify_cpu", "certify_mb", "verify_mb")


@pytest.fixture(autouse=True)
def reference_speed(monkeypatch):
    monkeypatch.setenv("SIGMACERT_MACHINE_SPEED", "1")


def recorded_rows() -> list[dict]:
    """Every recorded cell: {'cell', 'sigma', figures} (as benchmarks/bench_cost_model.py reads them)."""
    with open(os.path.join(DATA, "corner_grid.json")) as f:
        rows = [{"cell": f"tv:{c['M']},{c['E']},{c['target']}", "sigma": c["sigma"], **{k: c.get(k) for k in FIGURES}}
                for c in json.load(f)["cells"]]
    with open(os.path.join(DATA, "kinds_grid.json")) as f:
        rows += [c for c in json.load(f)["cells"] if c.get("certify_exit") == 0 and c.get("verify_exit") == 0]
    return rows


def stored_plans() -> dict:
    cal = costmodel.calibration()
    return {(r["cell"], r["sigma"]): Plan(**r["plan"]) for fam in cal["families"].values() for r in fam["residuals"]}


def predicted(p) -> dict:
    return {"certify_cpu": p.certify_seconds, "verify_cpu": p.replay_seconds, "certify_mb": p.certify_memory / 1e6,
            "verify_mb": p.replay_memory / 1e6}


def test_the_calibration_has_every_family_target_and_feature():
    cal = costmodel.calibration()
    for family, names in costmodel.FAMILY_FEATURES.items():
        fam = cal["families"][family]
        assert fam["features"] == list(names)
        assert set(fam["coefficients"]) == set(costmodel.TARGETS)
        assert all(len(v) == len(names) for v in fam["coefficients"].values())
        assert len(fam["residuals"]) == fam["cells"]
    assert cal["families"]["tv"]["cells"] >= 80 and cal["families"]["other"]["cells"] >= 14
    assert cal["probe_cpu_seconds"] > 0 and set(cal["gaussian_shift"]) == set(costmodel.TARGETS)


def test_every_recorded_cell_is_predicted_within_the_goals():
    """Time within [0.5, 2] (never under-predicted by more than 2x), memory within [1/1.5, 1.5], certify and the
    replay, at every recorded cell (M = 1 by the Gaussian shift's figures)."""
    plans, gs = stored_plans(), Plan("gs", 0.0, 0.0, False, False, 1, 1, 0.5)
    rows = recorded_rows()
    assert len(rows) >= 100
    misses = []
    for r in rows:
        plan = gs if r["cell"].startswith("tv:1,") else plans[(r["cell"], r["sigma"])]
        p = predicted(costmodel.from_plan(plan, 1.0))
        for k in FIGURES:
            if r.get(k):
                lo, hi = (1 / 1.5, 1.5) if k.endswith("mb") else (0.5, 2.0)
                if not lo <= p[k] / r[k] <= hi:
                    misses.append((r["cell"], k, round(p[k] / r[k], 2)))
    assert not misses, misses


def test_a_cell_left_out_is_predicted_by_the_trend_and_its_neighbours():
    """The residuals' pull: without it a recorded cell falls back to the trend (the fit's spread), with it the
    cell is close to its record; a cell far from every recorded one gets the trend alone."""
    cal = costmodel.calibration()
    fam = cal["families"]["tv"]
    r = max(fam["residuals"], key=lambda r: abs(r["certify_cpu"]))     # the trend's worst cell
    plan = Plan(**r["plan"])
    bare = {**cal, "families": {**cal["families"], "tv": {**fam, "residuals": []}}}
    with_pull, trend = costmodel.from_plan(plan, 1.0), costmodel.from_plan(plan, 1.0, bare)
    import math
    assert abs(math.log(with_pull.certify_seconds / trend.certify_seconds)) > 0.5 * abs(r["certify_cpu"])
    far = Plan("tv", 10.0, 10.0, False, False, 50, 3, 1e-9)
    assert costmodel.pull(fam["residuals"], far.coord, "certify_cpu") == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("cell", ["tv:100,100,0.1", "tv:1000000,100,0.999", "dp:100,10,8,1e-5"])
def test_the_planners_still_give_the_stored_plans(cell):
    """The feature is recomputed from the certifier's planners at admission: the plans the model was fitted on
    must come out again (method v2's seconds on the reference idle core, whatever the load)."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from cost_cells import request
    stored = next(Plan(**r["plan"]) for fam in costmodel.calibration()["families"].values()
                  for r in fam["residuals"] if r["cell"] == cell)
    sigma = next(r["sigma"] for fam in costmodel.calibration()["families"].values() for r in fam["residuals"]
                 if r["cell"] == cell)
    now = request_plan(request(cell, sigma))
    assert (now.family, now.up_v2, now.lo_v2, now.steps, now.epochs) == (stored.family, stored.up_v2, stored.lo_v2,
                                                                         stored.steps, stored.epochs)
    assert now.up == pytest.approx(stored.up, rel=0.05) and now.lo == pytest.approx(stored.lo, rel=0.05, abs=1e-6)


def test_the_former_worst_over_prediction_is_gone():
    """(3, 5000, 0.3): certify ran 33 s; the former model (closed-form sigma, fixed budget, doubled) said
    2908 s and the service refused it under its 900 s default."""
    req = {"steps": 3, "epochs": 5000, "target": "0.3", **TV}
    assert predicted_seconds(3, 5000, "0.3", None, "random-allocation") > 900
    secs = admit(req, 900.0)
    assert 10 < secs < 150
    assert prediction(req).replay_seconds > 0


@pytest.mark.parametrize("req", [
    {"steps": 100, "epochs": 10, "target": "0.1", **TV},
    {"steps": 100, "epochs": 10, "target": "0.00001", "kind": {"name": "dp", "epsilon": "8"}, **TV},
    {"stages": [{"steps": 100, "epochs": 5}, {"steps": 400, "epochs": 5}], "target": "0.1", **TV},
])
def test_admission_refuses_on_predicted_memory_and_seconds_with_the_prediction(req):
    p = prediction(req)
    assert p.memory > 40e6 and p.seconds > 0.5
    assert admit(req, 900.0, max_memory=p.memory) == pytest.approx(p.seconds)
    assert admit(req, 900.0, max_memory=1.01 * p.memory / MEMORY_TOLERANCE) == pytest.approx(p.seconds)
    limit = 0.99 * p.memory / MEMORY_TOLERANCE
    with pytest.raises(ParameterError, match=rf"predicted to need {p.memory / 2**20:.0f} MiB at its peak .* "
                                             rf"{MEMORY_TOLERANCE:g} times this service's per-job memory limit"):
        admit(req, 900.0, max_memory=limit)
    with pytest.raises(ParameterError, match=rf"predicted to take {p.seconds:.0f} s"):
        admit(req, 0.99 * p.seconds)


def test_a_stated_machine_speed_scales_the_seconds_not_the_memory(monkeypatch):
    plan = Plan("tv", 10.0, 12.0, False, False, 100, 10, 0.1)
    base = costmodel.from_plan(plan)
    monkeypatch.setenv("SIGMACERT_MACHINE_SPEED", "2")
    fast = costmodel.from_plan(plan)
    assert fast.certify_seconds == pytest.approx(base.certify_seconds / 2)
    assert fast.replay_seconds == pytest.approx(base.replay_seconds / 2) and fast.memory == base.memory


def test_without_a_stated_speed_the_probe_gives_one(monkeypatch):
    monkeypatch.delenv("SIGMACERT_MACHINE_SPEED")
    assert 0.2 <= costmodel.speed() <= 5.0 and costmodel.probe_seconds() > 0
