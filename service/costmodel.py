"""The calibrated cost of a certification job: CPU seconds and peak resident memory of `certify` (both sides)
and of the signer's replay (docs/reliability.md).

    p = predict(steps, epochs, target, sigma, scheme)      # Prediction(certify_seconds, certify_memory, ...)

The feature is the plan `certify` runs first: the exact sigma (when the request names none), the numerics'
margins target - TV(sigma) and TV(sigma - res) - target, and the seconds the certifier's planner
(certifier.methods.auto.planned_upper) predicts for a grid that may lose 0.6 of each margin, as certify's first try
does. Its planner's seconds are off by a factor that depends on the method and the cell (the calibration run,
the rows, the retries it does not plan), so the prediction is a log-linear model of the planned seconds, log E,
log M, lambda and the method (v1 / v2), fitted on a recorded grid of cells (benchmarks/data/corner_grid.json:
certify and the verifier's replay, CPU seconds and peak RSS, measured on the 2-core reference machine), its
coefficients in service/cost_calibration.json (written by `benchmarks/bench_cost_model.py --fit`). A machine
faster or slower than the reference is stated as SIGMACERT_MACHINE_SPEED (2: twice as fast; seconds only).

What the prediction covers: tv targets of random allocation, as fitted; other kinds, fixed bins and runs in
stages use the same fit on their planner's seconds (service.admission's plans), uncalibrated. M = 1 is the
Gaussian shift's closed form: the recorded cells' figures.
"""
from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import asdict, dataclass

CALIBRATION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cost_calibration.json")
SAFETY = 0.6          # the share of the margin certify's first try may lose (certifier.certify.SAFETY[0])
MB = 1e6


@dataclass(frozen=True)
class Prediction:
    certify_seconds: float     # CPU seconds, both sides and the rows
    certify_memory: float      # peak resident bytes of the job process
    replay_seconds: float      # the signer's replay (the independent verifier)
    replay_memory: float
    planned_seconds: float     # the feature: the planner's seconds for both sides at the margins

    @property
    def seconds(self) -> float:
        return self.certify_seconds + self.replay_seconds

    @property
    def memory(self) -> float:  # certify and the replay run one after the other, each in its own process
        return max(self.certify_memory, self.replay_memory)

    def as_dict(self) -> dict:
        return {**{k: round(v, 3) for k, v in asdict(self).items()}, "seconds": round(self.seconds, 3),
                "memory": round(self.memory)}


@functools.lru_cache(maxsize=1)
def calibration() -> dict:
    with open(CALIBRATION) as f:
        return json.load(f)


def speed() -> float:
    try:
        return max(float(os.environ.get("SIGMACERT_MACHINE_SPEED", "1")), 1e-3)
    except ValueError:
        return 1.0


def features(planned: float, steps: int, epochs: int, target: float, v2: bool) -> list[float]:
    """The model's regressors (the order of the coefficients in cost_calibration.json)."""
    m = 1.0 if v2 else 0.0
    return [1.0, math.log(planned + 0.5), math.log(epochs), math.log(steps), m, m * math.log(epochs),
            m * math.log(steps), target, m * target]


def from_plan(planned: float, steps: int, epochs: int, target: float, v2: bool) -> Prediction:
    """The calibrated prediction from the planner's seconds for both sides (the fitted model)."""
    cal = calibration()
    if steps == 1:
        g = cal["gaussian_shift"]
        return Prediction(g["certify_cpu"], g["certify_mb"] * MB, g["verify_cpu"], g["verify_mb"] * MB, 0.0)
    x = features(planned, steps, epochs, target, v2)
    at = lambda name: math.exp(sum(a * b for a, b in zip(cal["coefficients"][name], x)))  # noqa: E731
    return Prediction(at("certify_cpu") / speed(), at("certify_mb") * MB, at("verify_cpu") / speed(),
                      at("verify_mb") * MB, planned)


@functools.lru_cache(maxsize=4096)
def predict(steps: int, epochs: int, target: str, sigma: str | None, scheme: str) -> Prediction:
    """The calibrated prediction of a tv job."""
    planned, v2, m, e, lam = plan(steps, epochs, target, sigma, scheme)
    return from_plan(planned, m, e, lam, v2)


def plan(steps: int, epochs: int, target: str, sigma: str | None, scheme: str) -> tuple:
    """(planned seconds of both sides, upper plan is method v2, M and E of the pair, lambda): the plan certify
    runs first, at the exact sigma when none is given and at the numerics' margins."""
    from certifier.door import Claim, resolution_str, round_up
    from certifier.methods.auto import planned_upper
    from certifier.methods.v1.plan import budget
    from certifier.params import parse_decimal
    from certifier.targets import kind
    tv = kind("tv")
    lam = parse_decimal("target", target)
    probe = Claim(scheme, steps, epochs, parse_decimal("sigma", sigma or "1"), lam)
    s = parse_decimal("sigma", sigma) if sigma is not None else round_up(tv.exact_sigma(probe, lam))
    m, e = probe.pair()
    if m == 1:
        return 0.0, False, 1, e, float(lam)
    planned, v2 = 0.0, False
    low = s - parse_decimal("sigma", resolution_str(s))
    for side, at in (("upper", s), ("lower", low)):
        claim = Claim(scheme, steps, epochs, at, lam)
        value, err = tv.numerics(claim, at)
        margin = None if value is None else (float(lam) - value if side == "upper" else value - float(lam)) - (
            err or 0)
        p = planned_upper(claim, at, budget(margin, SAFETY))
        planned += p.predicted_seconds
        v2 = v2 or (side == "upper" and type(p.method).__name__ == "UpperV2")
    return planned, v2, m, e, float(lam)
