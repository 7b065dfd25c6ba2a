"""Admission: a certification job's predicted cost, before it is queued.

The prediction that decides (`admit`, `prediction`) is the calibrated model of service.costmodel: CPU seconds
and peak memory of certify and of the signer's replay, from the plan certify runs first. The functions below,
`predicted_seconds` and `predicted_seconds_stages`, are the planner's own seconds at a fixed loss budget (the
former admission, 1-88x too high): the calibrated model's feature for dp / tpr kinds and runs in stages.

The certifier chooses its grid by predicted time. Before a job is queued the service asks the planner
certify itself runs first (certifier.certify.planned_upper: method v1, plain, with two-scale partial sums
or with a band around Y = 1, else method v2; a dp / tpr kind is priced by method v2's model) what the upper
side would cost at the request's sigma (the closed-form sigma of Corollary 3.4 when the request names
none: the exact sigma is smaller, so its grid is at least as costly) and at the small loss budget the
certifier uses without numerics (certifier.methods.v1.plan.budget). A two-sided
certificate proves a lower side of the same size: twice that. Above the service's per-job limits (seconds, or
memory) the request is refused with the prediction (422), so no worker is held by a job that cannot finish.
"""
from __future__ import annotations

import functools
import math

from certifier.claim import Claim
from certifier.errors import ParameterError, SigmacertError
from certifier.methods.auto import planned_upper
from certifier.methods.v1.plan import budget
from certifier.methods.v2.plan import choose_v2
from certifier.methods.v2.stages import plan_stages
from certifier.numerics.schemes import closed_form_sigma
from certifier.numerics.stages import Stage, closed_form_sigma_stages
from certifier.params import parse_decimal


@functools.lru_cache(maxsize=4096)
def predicted_seconds(steps: int, epochs: int, target: str, sigma: str | None, scheme: str,
                      kind: tuple = ()) -> float:
    """Predicted seconds of a two-sided certification job (both sides), by the certifier's cost model.
    kind: () for tv, or (name, parameter) of a dp / tpr target: its sigma is the kind's exact sigma (the
    certifier's numerical search, as the job runs it) and the grid's budget is divided by the kind's loss
    factor (certifier.targets: the planners' TV loss times it bounds the kind's loss)."""
    lam = parse_decimal("target", target)
    factor = 1.0
    if kind:
        from certifier.targets import kind as target_kind
        tk = target_kind(kind[0], {kind[1][0]: kind[1][1]}, lam)
        factor = tk.loss_factor
        if sigma is None:
            from certifier.params import decimal_str
            from certifier.resolution import round_up
            sigma = decimal_str(round_up(tk.exact_sigma(Claim(scheme, steps, epochs, parse_decimal("sigma", "1"),
                                                              lam), lam)))
    if sigma is None:
        s = closed_form_sigma(steps, epochs, float(lam), scheme)  # Cor. 3.4: >= the exact sigma
        sigma = f"{math.ceil(s * 1e6) / 1e6:.6f}"
    claim = Claim(scheme, steps, epochs, parse_decimal("sigma", sigma), lam)
    m, e = claim.pair()
    if m == 1:
        return 0.0  # M = 1: the Gaussian-shift closed forms, nothing to compute
    if kind:   # a kind plans with its own weights: priced by method v2's model, as before
        plan = choose_v2(m, e, claim.t2_at(claim.sigma), budget(None, 0.5) / factor, None)
    else:      # the grid certify itself plans first (method v1, a band, two-scale sums or v2)
        plan = planned_upper(claim, claim.sigma, budget(None, 0.5))
    return 2.0 * plan.predicted_seconds


@functools.lru_cache(maxsize=1024)
def predicted_seconds_stages(stages: tuple, target: str, sigma: str | None) -> float:
    """Predicted seconds of a two-sided certificate of a run in stages ((M_s, E_s), ...) at one sigma: the
    certifier's own plan (certifier.methods.v2.stages.plan_stages: a method-v2 plan per distinct M_s for the total
    epochs, seconds summed) at the closed-form sigma of the product's chi-square when none is given (>= the
    exact shared sigma, so at least as costly), both sides."""
    lam = parse_decimal("target", target)
    if sigma is None:
        s = closed_form_sigma_stages([Stage(m, e) for m, e in stages], float(lam))
        sigma = f"{math.ceil(s * 1e6) / 1e6:.6f}"
    if all(m == 1 for m, _ in stages):
        return 0.0
    q = parse_decimal("sigma", sigma)
    return 2.0 * plan_stages(stages, 1 / (q * q), budget(None, 0.5), None).predicted_seconds


def kind_key(req: dict) -> tuple:
    """The request's target kind as a hashable key: () for tv, ("dp", ("epsilon", text)) for dp."""
    k = req.get("kind")
    return () if not k else (k["name"], next((n, v) for n, v in k.items() if n != "name"))


def prediction(req: dict):
    """The job's Prediction (service.costmodel): certify and the signer's replay, seconds and memory. A tv job
    is priced from the plan certify runs first (exact sigma, the numerics' margins), calibrated. A dp / tpr kind
    and a run in stages have no recorded calibration: certify's seconds are their planner's own (above: a fixed
    loss budget, both sides; conservative), the replay and the memory come from the fit at those seconds."""
    from dataclasses import replace

    from service.costmodel import from_plan, predict
    lam = float(parse_decimal("target", req["target"]))
    if req.get("stages") is not None:
        stages = tuple((s["steps"], s["epochs"]) for s in req["stages"])
        raw = predicted_seconds_stages(stages, req["target"], req.get("sigma"))
        m, e = max(m for m, _ in stages), sum(e for _, e in stages)
    elif req.get("kind"):
        raw = predicted_seconds(req["steps"], req["epochs"], req["target"], req.get("sigma"), req["scheme"],
                                kind_key(req))
        m, e = Claim(req["scheme"], req["steps"], req["epochs"], parse_decimal("sigma", "1"),
                     parse_decimal("target", req["target"]), req.get("iterations")).pair()
    else:
        return predict(req["steps"], req["epochs"], req["target"], req.get("sigma"), req["scheme"])
    return replace(from_plan(raw, m, e, lam, True), certify_seconds=raw)


MEMORY_TOLERANCE = 2.0  # the memory fit's largest over-prediction on its grid (2.0x): refused only where it cannot fit


def admit(req: dict, max_seconds: float, max_memory: float | None = None) -> float:
    """The job's predicted seconds (certify, both sides, and the replay before it is signed); ParameterError
    (422) with the prediction when above `max_seconds`, or when its predicted peak memory is above
    MEMORY_TOLERANCE times `max_memory` (bytes: the job's memory limit; the job process enforces it anyway)."""
    try:
        p = prediction(req)
    except (SigmacertError, ValueError, ArithmeticError, OverflowError) as err:
        raise ParameterError(f"the cost of this job cannot be predicted: {str(err).splitlines()[0][:200]}") from None
    if p.seconds > max_seconds:
        raise ParameterError(f"this job is predicted to take {p.seconds:.0f} s by the calibrated cost model "
                             f"(certify {p.certify_seconds:.0f} s, both sides, and the replay before it is signed "
                             f"{p.replay_seconds:.0f} s), more than this service's per-job limit of "
                             f"{max_seconds:.0f} s; a smaller M or E, or a larger sigma or target, costs less")
    if max_memory is not None and p.memory > MEMORY_TOLERANCE * max_memory:
        raise ParameterError(f"this job is predicted to need {p.memory / 2**20:.0f} MiB at its peak by the calibrated "
                             f"cost model (certify {p.certify_memory / 2**20:.0f} MiB, the replay "
                             f"{p.replay_memory / 2**20:.0f} MiB), more than {MEMORY_TOLERANCE:g} times this "
                             f"service's per-job memory limit of {max_memory / 2**20:.0f} MiB")
    return p.seconds
