"""The calibrated cost of a certification job: CPU seconds and peak resident memory of `certify` (both sides)
and of the signer's replay (docs/reliability.md, "Calibrated cost models").

    p = predict_request(req)                       # Prediction(certify_seconds, certify_memory, replay_...)
    p = predict(steps, epochs, target, sigma)      # a tv job in random allocation

The feature is the plan certify runs first (service.costplan.Plan: each side's planned seconds and method, M, E,
the target). The prediction of each quantity (certify and replay CPU seconds, certify and replay peak MB) is a
log-linear model in the plan's features, fitted by least squares on a recorded grid, plus the recorded cells'
own residuals interpolated by a Gaussian kernel in (log10 M, log10 E, the target's log-odds): at a recorded cell
the prediction is close to what was measured there; away from the grid it is the trend (with the nearby cells'
pull). Two families are fitted apart: "tv" (a tv claim in random allocation, on benchmarks/data/corner_grid.json
and the tv cells of benchmarks/data/kinds_grid.json) and "other" (dp / tpr kinds, fixed bins, stages, on
kinds_grid.json, their feature the planner's seconds at a fixed loss budget). Coefficients and residuals are in
service/cost_calibration.json (written by `benchmarks/bench_cost_model.py --fit`).

Seconds are CPU seconds (user + sys) of the reference machine (2 cores, python-flint 0.9), divided by the
machine's speed: SIGMACERT_MACHINE_SPEED when set, else a short probe (the CPU time of one fmpz_poly product,
best of five, against the reference's, clamped to [0.2, 5]). Memory is not scaled. M = 1 is the Gaussian shift's
closed form: the recorded cells' median figures.
"""
from __future__ import annotations

import functools
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass

from flint import fmpz_poly

from service.costplan import Plan, request_plan, tv_plan

CALIBRATION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cost_calibration.json")
TARGETS = ("certify_cpu", "certify_mb", "verify_cpu", "verify_mb")
MB = 1e6


@dataclass(frozen=True)
class Prediction:
    certify_seconds: float     # CPU seconds, both sides and the rows
    certify_memory: float      # peak resident bytes of the job process
    replay_seconds: float      # the signer's replay (the independent verifier)
    replay_memory: float
    planned_seconds: float     # the feature: the planners' seconds, both sides

    @property
    def seconds(self) -> float:
        return self.certify_seconds + self.replay_seconds

    @property
    def memory(self) -> float:  # certify and the replay run one after the other, each in its own process
        return max(self.certify_memory, self.replay_memory)

    def as_dict(self) -> dict:
        return {**{k: round(v, 3) for k, v in asdict(self).items()}, "seconds": round(self.seconds, 3),
                "memory": round(self.memory)}


FEATURES = {
    "1": lambda p: 1.0,
    "ln up": lambda p: math.log(p.up + 0.5),
    "ln lo": lambda p: math.log(p.lo + 0.5),
    "ln E": lambda p: math.log(p.epochs),
    "ln M": lambda p: math.log(p.steps),
    "up v2": lambda p: float(p.up_v2),
    "lo v2": lambda p: float(p.lo_v2),
    "up v2 ln E": lambda p: p.up_v2 * math.log(p.epochs),
    "up v2 ln M": lambda p: p.up_v2 * math.log(p.steps),
    "lambda": lambda p: p.lam,
    "up v2 lambda": lambda p: p.up_v2 * p.lam,
    "ln lambda": lambda p: math.log(max(p.lam, 1e-300)),
    "E = 1": lambda p: float(p.epochs == 1),
    "stages": lambda p: float(p.stages),
    "fixed bins": lambda p: float(p.fixed_bins),
    "tpr": lambda p: float(p.what == "tpr"),
}
FAMILY_FEATURES = {
    "tv": ("1", "ln up", "ln lo", "ln E", "ln M", "up v2", "lo v2", "up v2 ln E", "up v2 ln M", "lambda",
           "up v2 lambda", "ln lambda", "E = 1"),
    "other": ("1", "ln up", "ln E", "ln M"),
}
KERNEL = {"h": 0.35, "w0": 0.05}   # the residuals' kernel width (decades) and the trend's weight


@functools.lru_cache(maxsize=1)
def calibration() -> dict:
    with open(CALIBRATION) as f:
        return json.load(f)


def probe_seconds() -> float:
    """CPU seconds of the reference product (fmpz_poly 2^13 x 2^14, 80-bit coefficients), best of five."""

    rng = random.Random(0)
    a = fmpz_poly([rng.getrandbits(80) for _ in range(1 << 13)])
    b = fmpz_poly([rng.getrandbits(80) for _ in range(1 << 14)])
    best = math.inf
    for _ in range(5):
        t0 = time.process_time()
        a * b
        best = min(best, time.process_time() - t0)
    return max(best, 1e-6)


@functools.lru_cache(maxsize=1)
def _probed_speed() -> float:
    return min(max(calibration()["probe_cpu_seconds"] / probe_seconds(), 0.2), 5.0)


def speed() -> float:
    """The machine's speed against the reference: SIGMACERT_MACHINE_SPEED, else the probe's."""
    text = os.environ.get("SIGMACERT_MACHINE_SPEED")
    if text:
        try:
            return max(float(text), 1e-3)
        except ValueError:
            pass
    return _probed_speed()


def features(plan: Plan) -> list[float]:
    """The model's regressors for the plan's family (the order of the coefficients in cost_calibration.json)."""
    return [FEATURES[n](plan) for n in FAMILY_FEATURES[plan.family]]


def pull(residuals: list, coord: tuple, target: str) -> float:
    """The recorded residuals (ln actual - ln trend) near coord, kernel-weighted, shrunk towards the trend."""
    h2, num, den = 2 * KERNEL["h"] ** 2, 0.0, KERNEL["w0"]
    for r in residuals:
        if r.get(target) is None:
            continue
        d2 = sum((a - b) ** 2 for a, b in zip(coord, r["coord"]))
        if d2 < 40 * h2:
            w = math.exp(-d2 / h2)
            num, den = num + w * r[target], den + w
    return num / den


def log_trend(plan: Plan, target: str, cal: dict | None = None) -> float:
    fam = (cal or calibration())["families"][plan.family]
    return sum(a * b for a, b in zip(fam["coefficients"][target], features(plan)))


def from_plan(plan: Plan, machine_speed: float | None = None, cal: dict | None = None) -> Prediction:
    """The calibrated prediction of a plan (seconds at the machine's speed; pass 1.0 for the reference's)."""
    cal = cal or calibration()
    sp = speed() if machine_speed is None else machine_speed
    if plan.family == "gs":
        g = cal["gaussian_shift"]
        return Prediction(g["certify_cpu"] / sp, g["certify_mb"] * MB, g["verify_cpu"] / sp, g["verify_mb"] * MB, 0.0)
    fam = cal["families"][plan.family]
    at = {t: math.exp(log_trend(plan, t, cal) + pull(fam["residuals"], plan.coord, t)) for t in TARGETS}
    return Prediction(at["certify_cpu"] / sp, at["certify_mb"] * MB, at["verify_cpu"] / sp, at["verify_mb"] * MB,
                      plan.up + plan.lo)


@functools.lru_cache(maxsize=4096)
def predict(steps: int, epochs: int, target: str, sigma: str | None, scheme: str = "random-allocation") -> Prediction:
    """The calibrated prediction of a tv job (random allocation; fixed bins by the "other" family)."""
    if scheme != "random-allocation":
        return predict_request({"steps": steps, "epochs": epochs, "target": target, "sigma": sigma, "scheme": scheme})
    return from_plan(tv_plan(steps, epochs, target, sigma))


def predict_request(req: dict) -> Prediction:
    """The calibrated prediction of a service request (service.validate's shape)."""
    return from_plan(request_plan(req))
