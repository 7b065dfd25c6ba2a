"""The try loop every method shares: a Side (the upper bound at sigma or the lower bound at sigma_low: its
planner, run, proof and record), `prove` (grids of decreasing predicted loss until the bound decides the target),
the certify call's context (Ctx), the margins a planner may spend and the rows (eps, delta) and TPR from the upper
side's b_k. Floats here only choose grids; the certified numbers come from certifier.bounds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from flint import fmpq

from certifier.bounds.fixedpoint import round_down_sig
from certifier.bounds.privacy import privacy_rows_partial
from certifier.bounds.result import UpperResult
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.errors import CannotCertifyError, NumericsUnreliableError, ParameterError
from certifier.methods.v1.plan import budget
from certifier.outcome import Record
from certifier.params import parse_decimal
from certifier.resolution import sigma_resolution

SAFETY = (0.6, 0.3, 0.12)          # share of the margin the grid may lose, per try
MAX_PREDICTED_SECONDS = 3600.0     # refuse automatic grids predicted to run longer than this
LOWER_SAFETY = (0.8, 0.45, 0.2)    # share of TV(sigma_low) - target the lower side may lose, per try
WIDE_SECONDS = 60.0                 # a side whose grid is predicted slower than this may take its wide ceiling


def progress_say(progress, t_start):
    report = progress or (lambda stage, pct, el: None)
    return lambda stage, frac: report(stage, 100.0 * frac, time.perf_counter() - t_start)


@dataclass
class Ctx:
    """What one certify call knows: the claim, its target kind, numerics, options, the record."""
    claim: Claim
    sigma: fmpq
    kind: object                           # the target (certifier.targets.TargetKind)
    tv: float | None
    tv_err: float | None
    grid: dict
    prec: int | None
    max_tries: int
    out: Record
    say: object
    limit: float = MAX_PREDICTED_SECONDS   # refuse grids predicted to take longer
    pair_tv: object = None                 # (claim, sigma) -> (TV, error): the pair's numerical TV (tv's numerics)
    lower_grids: int = 0                   # the lower side's tries: 0 every grid of LOWER_SAFETY, else at most this

    def lower_tries(self, safety) -> int:
        """How many of the lower side's grids (`safety`: its LOWER_SAFETY) this call tries."""
        return len(safety) if not self.lower_grids else min(self.lower_grids, len(safety))


@dataclass
class Side:
    """One side to prove: the upper bound at sigma (TV <= target) or the lower bound at sigma_low (TV > target).

    plan(budget) chooses a grid predicted to lose at most `budget`; run(method, progress) computes the
    rigorous bound; proves(result) says whether it decides the target; row(plan, result) is the try's record.
    """
    label: str
    margin: float | None
    safeties: tuple
    ceiling: float
    plan: object
    run: object
    proves: object
    row: object
    limit: float = MAX_PREDICTED_SECONDS
    wide_ceiling: float | None = None   # a larger ceiling where the grid at `ceiling` is predicted slow


def plan_within(side: Side, k: int):
    """(plan, budget) of try k: at the side's ceiling, or at its wide ceiling where that grid is predicted
    faster and the one at the ceiling slower than WIDE_SECONDS (a larger margin, e.g. after a sigma step,
    bought a coarser grid: at (10^6, 10^4, 0.1) 1.2e-7 instead of 6e-8, predicted 272 s instead of 408 s)."""
    safety = side.safeties[min(k, len(side.safeties) - 1)]
    b = budget(side.margin, safety, side.ceiling)
    plan = side.plan(b)
    if side.wide_ceiling is None or plan.predicted_seconds <= WIDE_SECONDS:
        return plan, b
    wide = budget(side.margin, safety, side.wide_ceiling)
    if wide <= b:
        return plan, b
    try:
        other = side.plan(wide)
    except CannotCertifyError:
        return plan, b
    return (other, wide) if other.predicted_seconds < plan.predicted_seconds else (plan, b)


class TooSlowError(CannotCertifyError):
    """The grid the margin needs is predicted slower than the limit (`seconds`: the prediction)."""

    def __init__(self, message: str, seconds: float):
        super().__init__(message)
        self.seconds = seconds


def refuse_if_slow(plan, margin: float, limit: float = MAX_PREDICTED_SECONDS, functional: str = "value") -> None:
    """Fail fast, before any long computation, when the grid the margin needs is predicted to be too slow
    (functional: what the margin is the target's distance to, e.g. the kind's TargetKind.functional)."""
    if plan.predicted_seconds > limit:
        raise TooSlowError(f"the margin target - {functional} = {margin:.3g} needs a grid predicted to take "
                                 f"{plan.predicted_seconds:.0f} s (more than {limit:.0f} s); a slightly "
                                 "larger sigma gives a larger margin", plan.predicted_seconds)


def prove(side: Side, max_tries: int, tries: list, say, single: bool = False):
    """Try grids of decreasing predicted loss until the bound decides the target; (result, method) or None."""
    for k in range(1 if single else max_tries):
        say(f"{side.label} grid (try {k + 1})", 0.0)
        try:
            plan, b = plan_within(side, k)
            if not single:
                refuse_if_slow(plan, side.margin or 0.0, side.limit)
        except CannotCertifyError as err:
            if k == 0 and side.label == "upper":
                raise
            tries.append({"try": k + 1, "skipped": str(err)})
            return None
        t0 = time.perf_counter()
        try:
            res = side.run(plan.method, lambda stage, frac, k=k: say(f"{stage} ({side.label} try {k + 1})", frac))
        except NumericsUnreliableError as err:
            tries.append({"try": k + 1, "skipped": f"bound failed: {err}"})
            continue
        except ParameterError as err:            # an automatic grid beyond the method's limits: the next try
            if single:
                raise
            tries.append({"try": k + 1, "skipped": f"grid refused by the method: {err}"})
            continue
        if isinstance(res, UpperResult) and res.method is None:
            res.method = plan.method             # the grid the bound ran on (the kinds read b_k through it)
        ok = bool(side.proves(res))
        tries.append({"try": k + 1, **side.row(plan, res), "budget": b, "predicted_loss": plan.predicted_loss,
                      "seconds": round(time.perf_counter() - t0, 3), "certified": ok})
        if ok:   # a two-scale upper grid records the splits it chose (res.method)
            return res, res.method if isinstance(res, UpperResult) else plan.method
        if side.margin is not None and side.margin <= 0:
            return None                          # the numerics say no grid can decide it: do not grind
    return None


def relearn(k_scale: float, plan, measured: float | None) -> float:
    """k_scale for the next try after a try on `plan` lost `measured` (a kind's v2 model can miss a part of
    the loss that the calibration's coarse grid does not show): scaled up by actual / predicted (at most 20x),
    never down."""
    if measured is None or not plan.predicted_loss > 0 or measured <= plan.predicted_loss:
        return k_scale
    return k_scale * min(20.0, measured / plan.predicted_loss)


def tv_lower_str(exact: fmpq, target: fmpq) -> str:
    """The recorded tv_lower: `exact` (> target) rounded down to 10 significant digits, or to as many
    more as it takes to stay above the target (two-sided.md §1: tv_lower > target)."""
    for digits in range(10, 60):
        s = round_down_sig(exact, digits)
        if parse_decimal("tv_lower", s) > target:
            return s
    raise NumericsUnreliableError(f"the lower bound {exact} is not above the target {target} at 60 digits")


def sigma_lows(sigma: fmpq):
    """sigma - res, then sigma - 2 res (res = res(sigma), docs/two-sided.md §1), while positive."""
    res = sigma_resolution(sigma)
    for k in (1, 2):
        if sigma - res * k <= 0:
            return
        yield sigma - res * k


def upper_margin(ctx: Ctx) -> float | None:
    """What the upper side's grid may lose, in the planners' TV units (the kind's margin / its loss factor)."""
    m = ctx.kind.upper_margin(ctx.claim.target, ctx.tv, ctx.tv_err)
    return None if m is None else m / ctx.kind.loss_factor


def lower_margin(ctx: Ctx, low_claim: Claim, value, err) -> float | None:
    """What the lower side's grid may lose, in the planners' TV units (the kind's margin / its loss factor)."""
    m = ctx.kind.lower_margin(low_claim.target, value, err)
    return None if m is None else m / ctx.kind.loss_factor


def kind_plan(ctx: Ctx, claim: Claim, sigma: fmpq, value, err, upper: bool):
    """(margin, weights) for the v1 planners: a kind with its own loss model (TargetKind.plan_weights,
    methods.v1.plan.KindWeights) spends its own margin; otherwise the margin in TV units and no weights."""
    wts = None
    if ctx.kind.plan_weights is not None and not ctx.grid and value is not None:
        wts = ctx.kind.plan_weights(claim, sigma)
    if wts is None:
        return (upper_margin(ctx) if upper else lower_margin(ctx, claim, value, err)), None
    m = ctx.kind.upper_margin(claim.target, value, err) if upper else ctx.kind.lower_margin(claim.target, value, err)
    return m, wts


def kind_lower_row(target_kind, L) -> dict:
    """A lower try's certified value of the kind's functional (dp: the hockey-sticks at eps, tpr: 1 - T(alpha)),
    recorded beside the TV of the processed pair; {} for tv."""
    if target_kind.tv_functional:
        return {}
    v = target_kind.lower_value(L)
    return {f"{target_kind.name}_lower": None if v is None else round_down_sig(v, 12)}


def pair_sigma(claim: Claim, sigma: fmpq) -> fmpq:
    """The pair's noise multiplier for the planners (floats only): sigma, or about sigma/sqrt(E) in fixed bins."""
    if claim.scheme == RANDOM_ALLOCATION:
        return sigma
    return parse_decimal("sigma", repr(claim.sigma_of_pair(float(sigma))))


def privacy_rows(ctx: Ctx, res, meth):
    """The certified (eps, delta) and TPR rows from the upper bound's masses b; a row that cannot be
    certified is left out with its reason (out.rows_missing), the others are kept."""
    out, say = ctx.out, ctx.say
    t1 = time.perf_counter()
    say("privacy rows", 0.0)
    priv, tpr, missing = privacy_rows_partial(res.b, meth.eta, meth.fixed_point_bits, meth.prec)
    for what, why in missing.items():
        for key, reason in why.items():
            out.lower_tries.append({"try": 0, "skipped": f"{what} row {key}: {reason}"})
    out.rows_missing = missing or None
    say("privacy rows", 1.0)
    out.privacy_seconds = round(time.perf_counter() - t1, 3)
    out.privacy, out.tpr = priv, tpr
    return priv, tpr
