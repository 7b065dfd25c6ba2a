"""Method v2's search: its upper and lower sides for certify's try loop (certifier.methods.search), planned by
certifier.methods.v2.plan after a calibration run on a grid 8x coarser (k_scale, y_scale, the rows' eps range)."""
from __future__ import annotations

import math
import time
from dataclasses import replace

from certifier.bounds.result import UpperResult
from certifier.errors import CannotCertifyError
from certifier.methods.search import (
    LOWER_SAFETY,
    SAFETY,
    Ctx,
    Side,
    kind_lower_row,
    kind_plan,
    lower_margin,
    prove,
    refuse_if_slow,
    relearn,
    upper_margin,
)
from certifier.methods.v1.plan import budget
from certifier.methods.v2 import LOWER_V2, UPPER_V2
from certifier.methods.v2.plan import (
    EPS_CEILING,
    choose_v2,
    coarse,
    eps_estimate,
    eps_gaussian,
    eps_tail,
    finer_steps,
    k_scale_from,
    scales_from,
)
from certifier.params import decimal_str, parse_decimal

V2_LOWER_LOSS_RATIO = 2.5          # measured (lower-side loss) / (upper-side loss) on the same grid
V2_CEILING = 1e-6                  # method v2 may use margins up to this (v1: 1e-7)
KIND_UPPER_K_SCALE = 3.0         # a kind's v2 k_scale where no calibration can read it (stages' measure)
V2_CALIBRATION = (1.125, 1.5)      # v2's predicted time times this (upper, lower): its coarse calibration runs


def calibrate(M, E, t2, plan, tv, run, measured_loss, out, say, label,
               per_term: bool = False) -> tuple[float, float, float]:
    """A run on the grid 8x coarser: (k_scale, eps estimate, y_scale) — how far the loss model is off at this
    cell. per_term (a kind with its own weights): a second coarse run with finer steps (i) measures step
    (i)'s share apart (methods.v2.plan.scales_from); otherwise y_scale = 1."""
    cal = coarse(plan, M, E, t2, tv, drop=3)
    t0 = time.perf_counter()

    def measure(method):
        res = run(method, lambda stage, frac: say(f"calibration ({label}) {stage}", frac))
        if isinstance(res, UpperResult) and res.method is None:
            res.method = method                  # the grid it ran on (a kind reads its b_k through it)
        return res, measured_loss(res)
    res, got = measure(cal.method)
    scale, y_scale, finer = (KIND_UPPER_K_SCALE if got is None else k_scale_from(cal, got)), 1.0, None
    if per_term and got is not None:
        finer = measure(finer_steps(cal.method))[1]
        if finer is not None:
            scale, y_scale = scales_from(cal, got, finer)
    eps = eps_estimate(res.b, cal.method.eta, cal.method.fixed_point_bits) if hasattr(res, "b") else None
    out.tries.append({"try": 0, "calibration": label, "mantissa_bits": cal.method.mantissa_bits,
                      "eta": decimal_str(cal.method.eta), "k_scale": round(scale, 3), "eps_estimate": eps,
                      "seconds": round(time.perf_counter() - t0, 3),
                      **({"y_scale": round(y_scale, 3), "measured_loss": got, "measured_loss_finer_steps": finer}
                         if per_term else {})})
    return scale, eps, y_scale


def row_v2(plan, bound_key, value):
    mj = plan.method.to_json()
    return {"method": 2, **{k: mj[k] for k in ("h", "mantissa_bits", "eta", "cap", "top_octave")},
            "predicted_seconds": round(plan.predicted_seconds, 2),
            "predicted_steps": {k: round(v, 2) for k, v in plan.detail["seconds"].items()}, bound_key: value}


def upper_v2(ctx: Ctx):
    """Method v2 (certifier.bounds.upper_v2); returns (UpperResult, UpperV2) or None.

    With the numerical TV known, a calibration run on a grid 8x coarser first measures how far the
    loss model is off at this cell (k_scale) and estimates eps(1e-6) for the privacy rows' range.
    A target kind other than tv plans with its own margin and loss model (kind_v2) at the pair's TV,
    and its calibration measures the kind's loss (the kind's upper value minus its numerical value).
    """
    claim, sigma, prec, out, say = ctx.claim, ctx.sigma, ctx.prec, ctx.out, ctx.say
    M, E = claim.pair()
    t2 = claim.t2_at(sigma)
    run = lambda m, prog: UPPER_V2.run(claim, sigma, m, progress=prog)
    if ctx.kind.tv_functional:
        margin, tv, wts, need = upper_margin(ctx), ctx.tv, None, 0.0
        lost = lambda r: float(r.bound) - tv
    else:
        margin, tv, wts, need, lost = kind_v2(ctx)
    if margin is not None and margin > 0:
        first, guess = v2_first(ctx, margin, tv, wts, need)
        refuse_if_slow(first, margin, ctx.limit, ctx.kind.functional)
        scale, est, out.y_scale = calibrate(M, E, t2, first, tv, run, lost, out, say, "upper", wts is not None)
        out.k_scale, out.need_eps = scale, max(min(est, guess) + 3 if est < 100 else guess, need)

    def row(plan, r):
        out.bound = r.bound
        kb = {} if ctx.kind.upper_bound is None else {f"{ctx.kind.name}_bound": ctx.kind.upper_bound(r)}
        if not ctx.kind.tv_functional:                 # a kind: the next try plans with the loss this one measured
            kb["measured_loss"] = lost(r)
            out.k_scale = relearn(out.k_scale, plan, kb["measured_loss"])
        return {**row_v2(plan, "bound", r.bound), **kb}          # bound: the grid's TV
    side = Side("upper", margin, SAFETY, V2_CEILING,
                lambda b: choose_v2(M, E, t2, b, tv, prec=prec or 100, k_scale=out.k_scale, need_eps=out.need_eps,
                                    weights=wts, y_scale=out.y_scale),
                run, lambda r: ctx.kind.upper_proves(r, claim.target), row, ctx.limit)
    return prove(side, ctx.max_tries, out.tries, say)


def v2_first(ctx: Ctx, margin: float, tv: float, wts=None, need: float = 0.0):
    """(plan, eps range): method v2's first grid, planned before any calibration, with the rows' eps range guessed
    from the Gaussian pair and from the lognormal tail of the shifted step (heavy tails)."""
    M, E = ctx.claim.pair()
    t2 = ctx.claim.t2_at(ctx.sigma)
    guess = min(max(2 * eps_gaussian(tv) + 5, eps_tail(M, E, float(t2)) + 3, need), EPS_CEILING)
    return choose_v2(M, E, t2, budget(margin, SAFETY[0], V2_CEILING), tv, prec=ctx.prec or 100, need_eps=guess,
                     weights=wts), guess




def kind_v2(ctx: Ctx):
    """(margin, tv, weights, need_eps, measured loss) for method v2's planner on a kind other than tv: with
    its own loss model (TargetKind.plan_weights) the kind's margin, planned at the pair's TV from the same
    line; otherwise the margin in TV units (/ loss_factor) at the pair's numerical TV. need_eps: the eps
    range its functional reads (ln loss_factor + 3, as for a run in stages). The calibration's loss is the
    kind's upper value minus its numerical value, in the planner's units (a value it cannot read: the
    stages' measured k_scale, KIND_UPPER_K_SCALE)."""

    k, claim = ctx.kind, ctx.claim
    margin, wts = kind_plan(ctx, claim, ctx.sigma, ctx.tv, ctx.tv_err, upper=True)
    per = 1.0
    if wts is not None and wts.tv is not None and 0 < wts.tv < 1:
        tv = wts.tv
    else:
        wts, per, margin = None, k.loss_factor, upper_margin(ctx)
        tv = ctx.pair_tv(claim, ctx.sigma)[0]
        tv = ctx.tv if tv is None else tv
    value = ctx.tv

    def lost(r):
        v = k.upper_bound(r)
        if v is None or value is None:            # no value to measure: the factor measured in stages
            return None
        return (float(parse_decimal("bound", v)) - value) / per
    return margin, tv, wts, math.log(k.loss_factor) + 3.0, lost


def lower_v2(ctx: Ctx, low_claim, s_low, tv_low, err, meth):
    M, E = low_claim.pair()
    out, say = ctx.out, ctx.say
    t2 = low_claim.t2_at(s_low)
    kind_claim = replace(low_claim, kind=ctx.claim.kind)   # a kind's lower map trims by the replay's rule
    run = lambda m, prog: LOWER_V2.run(kind_claim, s_low, m, progress=prog)
    margin, wts = kind_plan(ctx, low_claim, s_low, tv_low, err, upper=False)
    value_low = tv_low
    if wts is not None and wts.tv is not None and 0 < wts.tv < 1:
        tv_low, per = wts.tv, 1.0            # the kind's own loss model, planned at the pair's TV
    else:
        margin, wts, per = lower_margin(ctx, low_claim, tv_low, err), None, ctx.kind.loss_factor
    scale = out.k_scale * V2_LOWER_LOSS_RATIO
    # the eps range matters to a kind's lower value only: TV's lower side reads no rows (they come from the
    # upper side), and the range would cost it fixed-point bits, k_top and a finer octave 0
    need = out.need_eps if not ctx.kind.tv_functional else 0.0
    lost = lambda L: None if value_low is None else (value_low - float(ctx.kind.lower_value(L) or 0)) / per
    if margin is not None and margin > 0:
        try:
            first = choose_v2(M, E, t2, budget(margin, LOWER_SAFETY[0], V2_CEILING), tv_low, prec=meth.prec,
                              k_scale=scale, need_eps=need, weights=wts,
                              y_scale=out.y_scale if wts is not None else 1.0, lower=True)
        except CannotCertifyError as err:
            out.lower_tries.append({"sigma_low": decimal_str(s_low), "try": 1, "method": 2, "skipped": str(err)})
            return None
        # step (a)'s share apart (a second coarse run with finer steps): the floor of the step grid weighs more
        # than the upper side's two-point rounding at heavy tails
        scale, _, y_low = calibrate(M, E, t2, first, tv_low, run, lost, out, say, "lower", True)
    else:
        y_low = 1.0
    at = [scale]

    def row(plan, L):
        # the next try plans with the loss this one measured: the coarse calibration misses part of the lower
        # map's loss at heavy tails (its step (a) floors every small step; at (10^7, 10^3, 0.999) the tries lost
        # 3-5x their prediction, y_scale from the calibration included)
        kb = {"measured_loss": lost(L), **kind_lower_row(ctx.kind, L)}
        at[0] = relearn(at[0], plan, kb["measured_loss"])
        return {"sigma_low": decimal_str(s_low), **row_v2(plan, "tv_lower", L.tv_lower), "tv_exact": value_low, **kb}
    side = Side("lower", margin, LOWER_SAFETY, V2_CEILING,
                lambda b: choose_v2(M, E, t2, b, tv_low, prec=meth.prec, k_scale=at[0], need_eps=need,
                                    weights=wts, y_scale=y_low, lower=True),
                run, lambda L: ctx.kind.lower_proves(L, low_claim.target), row)
    return prove(side, ctx.lower_tries(LOWER_SAFETY), out.lower_tries, say)
