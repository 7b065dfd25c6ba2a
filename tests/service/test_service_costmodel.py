"""The calibrated cost model (service/costmodel.py) and admission on it (service/admission.py).

The coefficients come from the recorded corner grid (benchmarks/data/corner_grid.json, refitted by
benchmarks/bench_cost_model.py --fit); here: the fit reproduces recorded cells from their plans (within the
goals' bands at small cells of both methods), the issue's worst former over-prediction is gone, the replay
is priced beside certify, admission refuses on predicted memory, and a stated machine speed scales seconds.
"""
from __future__ import annotations

import json
import os

import pytest

from certifier.errors import ParameterError
from service import costmodel
from service.admission import admit, predicted_seconds, prediction

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TV = {"scheme": "random-allocation"}


def recorded(M, E, lam):
    with open(os.path.join(ROOT, "benchmarks", "data", "corner_grid.json")) as f:
        return next(c for c in json.load(f)["cells"] if (c["M"], c["E"], c["target"]) == (M, E, lam))


def test_the_calibration_has_every_target_and_the_features_it_was_fitted_on():
    cal = costmodel.calibration()
    n = len(costmodel.features(1.0, 2, 2, 0.1, True))
    assert set(cal["coefficients"]) == {"certify_cpu", "certify_mb", "verify_cpu", "verify_mb"}
    assert all(len(v) == n for v in cal["coefficients"].values()) and cal["cells"] >= 60


@pytest.mark.parametrize("cell", [(2, 100, "0.1"), (3, 100, "0.001")])
def test_recorded_cells_are_predicted_within_the_goals(cell):
    c = recorded(*cell)
    p = costmodel.predict(*cell, c["sigma"], "random-allocation")
    assert 0.5 <= p.certify_seconds / c["certify_cpu"] <= 2, (p, c)
    assert 0.5 <= p.replay_seconds / c["verify_cpu"] <= 2, (p, c)
    assert 1 / 1.5 <= p.certify_memory / (c["certify_mb"] * 1e6) <= 1.5, (p, c)
    assert p.planned_seconds > 0 and p.seconds == p.certify_seconds + p.replay_seconds


def test_a_cell_outside_the_band_stays_within_the_documented_worst_ratio():
    """(100, 1, 0.1) is one of the cells the fit under-predicts (docs/reliability.md: certify time ratios
    0.17-2.5 over the grid): predicted about 2.2 s against 4.8 s recorded on an idle machine (the plan it prices
    is load-dependent: 2.9 s under a loaded test run). It must not fall below 0.4 nor leave the band above."""
    c = recorded(100, 1, "0.1")
    p = costmodel.predict(100, 1, "0.1", c["sigma"], "random-allocation")
    assert 0.4 <= p.certify_seconds / c["certify_cpu"] <= 2, (p, c)


def test_the_former_worst_over_prediction_is_gone():
    """(3, 5000, 0.3): certify ran 33 s; the former model (closed-form sigma, fixed budget, doubled) said
    2908 s and the service refused it under its 900 s default."""
    req = {"steps": 3, "epochs": 5000, "target": "0.3", **TV}
    assert predicted_seconds(3, 5000, "0.3", None, "random-allocation") > 900
    secs = admit(req, 900.0)
    assert 10 < secs < 120
    assert prediction(req).replay_seconds > 0


def test_admission_refuses_on_predicted_memory_with_the_prediction():
    req = {"steps": 100, "epochs": 10, "target": "0.1", **TV}
    p = prediction(req)
    assert admit(req, 900.0, max_memory=2 * p.memory) == pytest.approx(p.seconds)
    assert admit(req, 900.0, max_memory=p.memory / 1.9) == pytest.approx(p.seconds)  # within the model's 2x
    with pytest.raises(ParameterError, match=r"predicted to need \d+ MiB at its peak .* 2 times this service's "
                                             r"per-job memory limit of 80 MiB"):
        admit(req, 900.0, max_memory=80 * 2**20)


def test_a_stated_machine_speed_scales_the_seconds_not_the_memory(monkeypatch):
    base = costmodel.from_plan(10.0, 100, 10, 0.1, False)
    monkeypatch.setenv("SIGMACERT_MACHINE_SPEED", "2")
    fast = costmodel.from_plan(10.0, 100, 10, 0.1, False)
    assert fast.certify_seconds == pytest.approx(base.certify_seconds / 2)
    assert fast.replay_seconds == pytest.approx(base.replay_seconds / 2) and fast.memory == base.memory


def test_kinds_and_stages_keep_their_planners_seconds():
    dp = {"steps": 100, "epochs": 10, "target": "0.00001", "kind": {"name": "dp", "epsilon": "1"}, **TV}
    p = prediction(dp)
    assert p.certify_seconds == pytest.approx(predicted_seconds(100, 10, "0.00001", None, "random-allocation",
                                                                ("dp", ("epsilon", "1"))))
    assert p.replay_seconds > 0 and p.memory > 0
