"""Method v2 on a run in stages: the search of its upper side (certifier.bounds.stages_v2: step (iv) multiplies
the stages' log-grid polynomials) and lower side (certifier.bounds.stages_lower: step (d) multiplies the stages'
bucket pmfs) for certify's generic loop, both on ONE method-v2 grid planned here from the stages' numerics: a plan
of certifier.methods.v2.plan per distinct line (M_s, sigma_s) for the run's total epochs, merged into the finest
grid covering every plan (smallest h and eta, widest octaves, log range and k_top). Retries shrink the budget as
for one block (certifier.methods.search.prove). The kind (tv, dp, tpr) is its registry entry in certifier.targets
(its numerics read Claim.stages), its margins and loss factor. The rows come from the upper side's b_k (Lemma
C.5 functionals); a row that cannot be certified is left out with its reason.
"""
from __future__ import annotations

import math
import time

from flint import fmpq

from certifier.bounds.fixedpoint import round_down_sig
from certifier.bounds.privacy import privacy_rows_partial
from certifier.bounds.stages_lower import lower_bound_v2_product
from certifier.bounds.stages_v2 import rounding_bound_v2_product
from certifier.bounds.upper_v2 import METHOD_NAME, METHOD_VERSION, UpperV2
from certifier.claim import t2_runs
from certifier.errors import CannotCertifyError
from certifier.methods.search import (
    LOWER_SAFETY,
    MAX_PREDICTED_SECONDS,
    SAFETY,
    Ctx,
    Side,
    prove,
    refuse_if_slow,
    relearn,
)
from certifier.methods.v1.plan import Plan, budget
from certifier.methods.v2.plan import (
    EPS_CEILING,
    choose_v2,
    coarse,
    eps_gaussian,
    eps_tail,
    finer_steps,
    k_scale_from,
    plan_v2,
    scales_from,
)
from certifier.methods.v2.search import KIND_UPPER_K_SCALE, V2_CEILING, V2_LOWER_LOSS_RATIO, row_v2
from certifier.params import decimal_str, parse_decimal

LABEL = f"{METHOD_NAME} v{METHOD_VERSION} (stages)"
# The upper side's k_scale for a kind planned with its own weights is KIND_UPPER_K_SCALE: measured (actual loss) /
# (the weighted model's) 1.8-3.0 on the upper side at stages 4x1,8x1 and 100x5,400x5 (eps 1, delta 1e-5); the lower
# side's V2_LOWER_LOSS_RATIO already matches (0.94-1.11). docs/targets.md §8.


def merge(methods: list[UpperV2], steps: list[int]) -> UpperV2:
    """The finest method-v2 grid covering every one of `methods` (one per distinct M in `steps`): one
    mantissa, the smallest h and eta, every plan's step-(i) resolution and cap, top octave, log range."""
    n = max(m.mantissa_bits for m in methods)
    eta = min(m.eta for m in methods)
    h = min(m.h for m in methods)
    shift = lambda m: int(math.floor(math.log2(float(m.h / h)) + 1e-12))   # octave of m's octave 0 in ours
    K = len(methods[0].y_mantissa_bits)
    while any(h * (1 << (K + n)) < m.cap for m in methods):                 # every cap on our grid
        K += 1
    bits = []
    for k in range(K):
        here = [m.y_mantissa_bits[min(max(k - shift(m), 0), len(m.y_mantissa_bits) - 1)] for m in methods]
        bits.append(min(n, max(here)))
    top_val = max(m.h * (1 << (m.mantissa_bits + m.top_octave + 1)) for m in methods)
    T = K
    while h * (1 << (n + T + 1)) < top_val and T < 200:
        T += 1
    k_plus = max(max(m.k_plus for m in methods),
                 math.ceil(math.log(2.0 ** (T + 1) * float(h) * 2**n / min(steps)) / float(eta)) + 1)
    out = UpperV2(h=h, mantissa_bits=n, y_mantissa_bits=tuple(bits), top_octave=T, eta=eta,
                  k_minus=min(m.k_minus for m in methods), k_plus=k_plus, k_top=max(m.k_top for m in methods),
                  prec=max(m.prec for m in methods), fixed_point_bits=max(m.fixed_point_bits for m in methods),
                  trim=min(m.trim for m in methods), trim_shift=max(m.trim_shift for m in methods))
    out.validate()
    return out


def plan_product(stages, t2: fmpq | None, loss_budget: float, tv: float, k_scale: float = 1.0, prec: int = 100,
                need_eps: float = 0.0, weights=None, y_scale: float = 1.0, lower: bool = False) -> Plan:
    """One grid for every stage: the cheapest plan per distinct line (M_s, t_s^2; a stage (M, E) is at t2, a
    stage (M, E, t_s^2) at its own) for the total epochs, on a common mantissa and eta, merged. Predicted
    loss: the largest of the plans'; seconds: their sum. weights: a target kind's loss model
    (methods.v1.plan.KindWeights of the run's pair; loss_budget in the kind's units), given to every plan; y_scale
    step (i)'s own calibrated factor, lower the lower method's deletions (methods.v2.plan.plan_v2). The detail's
    `loss` is the worst plan's, which methods.v2.plan.coarse reads for a calibration."""
    E = sum(s[1] for s in stages)
    lines = sorted({(s[0], s[2] if len(s) == 3 else t2) for s in stages})
    kw = dict(prec=prec, k_scale=k_scale, y_scale=y_scale, lower=lower)
    if weights is not None:
        kw["weights"] = weights
    need = {(M, q): max(need_eps, _rows_eps(M, E, q, tv)) for M, q in lines}
    first = [choose_v2(M, E, q, loss_budget, tv, need_eps=need[M, q], **kw) for M, q in lines]
    n = max(p.method.mantissa_bits for p in first)
    eta = decimal_str(min(p.method.eta for p in first))
    plans = [plan_v2(M, E, q, loss_budget, tv, n=n, eta=eta, need_eps=need[M, q], **kw) for M, q in lines]
    method = merge([p.method for p in plans], sorted({M for M, _ in lines}))
    worst = max(plans, key=lambda p: p.predicted_loss)
    return Plan(method, worst.predicted_loss, sum(p.predicted_seconds for p in plans), loss_budget,
                {"seconds": {k: sum(p.detail["seconds"][k] for p in plans) for k in plans[0].detail["seconds"]},
                 "plans": len(plans), "loss": worst.detail["loss"], "k_scale": k_scale, "y_scale": y_scale})


def _rows_eps(M: int, E: int, t2: fmpq, tv: float | None) -> float:
    """The eps range of the rows, as method v2's search guesses it (methods.v2.search.v2_first; heavy tails
    included); a plan with no eps range (need_eps = 0) may also cut the lattice's top below the epoch sum (measured:
    (400, 1) at sigma 1.5 loses 0.46), so every stage plan gets one."""
    return 0.0 if tv is None else min(max(2 * eps_gaussian(tv) + 5, eps_tail(M, E, float(t2)) + 3), EPS_CEILING)


def _with_method(res, method):
    """An upper result with the grid it ran on (a kind reads its b_k through it)."""
    if res.method is None:
        res.method = method
    return res


def _calibrate(first: Plan, run, measured_loss, out, label: str) -> list:
    """[k_scale, y_scale] from two runs on `first`'s grid 8x coarser, as planned and with finer steps (i)
    (methods.v2.plan.coarse, finer_steps, scales_from; as methods.v2.search.calibrate for one block): a kind's
    weighted model misses most at the tails, where the kink weighs the rounding of large steps (at stages
    50x4,200x2, eps 2, delta 1e-6 the upper tries lost 20-30x the prediction at k_scale 3)."""
    cal = coarse(first, 0, 0, None, None, drop=3)
    t0 = time.perf_counter()
    got = measured_loss(run(cal.method))
    d = first.detail
    if got is None:
        return [d["k_scale"], d["y_scale"]]
    finer = measured_loss(run(finer_steps(cal.method)))
    k, y = scales_from(cal, got, finer) if finer is not None else (k_scale_from(cal, got), 1.0)
    out_row = {"try": 0, "calibration": label, "mantissa_bits": cal.method.mantissa_bits,
               "eta": decimal_str(cal.method.eta), "k_scale": round(k, 3), "y_scale": round(y, 3),
               "measured_loss": got, "measured_loss_finer_steps": finer, "seconds": round(time.perf_counter() - t0, 3)}
    (out.tries if label == "upper" else out.lower_tries).append(out_row)
    return [k, y]


def _kind_loss(bound: str | None, value: float | None, lower: bool = False) -> float | None:
    """What a try lost against the kind's numerical value: bound - value above, value - bound below (the kind's
    units, as its weighted planner counts them); None without either."""
    if bound is None or value is None:
        return None
    b = float(bound if isinstance(bound, fmpq) else parse_decimal("bound", bound))
    return value - b if lower else b - value


def _kind_plan(target_kind, claim, sigma, margin, value):
    """(margin, tv, weights) for the planner: a kind with its own loss model (TargetKind.plan_weights,
    methods.v1.plan.KindWeights from the numerics' line of the stages' pair) spends its own margin, planned at the
    pair's TV; otherwise the margin in TV units (/ loss_factor), the kind's value and no weights."""
    wts = None
    if target_kind.plan_weights is not None and margin is not None and value is not None:
        wts = target_kind.plan_weights(claim, sigma)
    if wts is None or wts.tv is None or not 0 < wts.tv < 1:
        return (None if margin is None else margin / target_kind.loss_factor), value, None
    return margin, wts.tv, wts


def need_eps(target_kind) -> float:
    """The eps range the grid must resolve: none beyond the rows' for tv; for a kind whose hockey-stick loss
    is loss_factor = e^eps (tpr: about beta/alpha, the slope of its bound) times TV's, ln(loss_factor) + 3."""
    return 0.0 if target_kind.upper_record is None else math.log(target_kind.loss_factor) + 3.0


def _lower_row(target_kind, plan, L, s_str: str, value: float | None, wts, at: list) -> dict:
    """A lower try's record: the kind's certified lower value (dp: max of the two hockey-sticks at eps, tpr:
    1 - T(alpha); tv: the TV) beside the TV of the processed pair; for a kind planned on its own loss model the
    loss this try measured, which the next try plans with (at[0], the k_scale, scaled up, never down)."""
    row = {"sigma_low": s_str, **row_v2(plan, "tv_lower", L.tv_lower), "tv_exact": value}
    if target_kind.tv_functional:
        return row
    v = target_kind.lower_value(L)
    row[f"{target_kind.name}_lower"] = None if v is None else round_down_sig(v, 12)
    row["value_exact"] = row.pop("tv_exact")
    if wts is not None:
        row["measured_loss"] = _kind_loss(v, value, lower=True)
        at[0] = relearn(at[0], plan, row["measured_loss"])
    return row


def prove_upper(ctx: Ctx):
    """The upper side at ctx.sigma by stages_v2 on one planned grid: (result, method) or None."""
    out, claim, sigma, target_kind, limit = ctx.out, ctx.claim, ctx.sigma, ctx.kind, ctx.limit
    runs, value, target = t2_runs(claim, sigma), out.tv, claim.target
    need = need_eps(target_kind)
    margin = target_kind.upper_margin(target, value, out.tv_error)
    if limit < MAX_PREDICTED_SECONDS and margin is not None and margin <= 0:
        raise CannotCertifyError(f"the margin target - value - error at sigma {decimal_str(sigma)} is "
                                 f"{margin:.3g}: no grid can decide it")
    margin, tv, wts = _kind_plan(target_kind, claim, sigma, margin, value)
    at = [1.0 if wts is None else KIND_UPPER_K_SCALE, 1.0]
    if wts is not None and margin is not None and margin > 0:
        first = plan_product(runs, None, budget(margin, SAFETY[0], V2_CEILING), tv, prec=ctx.prec or 100,
                            need_eps=need, weights=wts, k_scale=at[0])
        refuse_if_slow(first, margin, limit, target_kind.functional)
        at[:] = _calibrate(first, lambda m: _with_method(rounding_bound_v2_product(runs, m), m),
                           lambda r: _kind_loss(target_kind.upper_bound(r), value), out, "upper")

    def row(plan, r):
        out.bound = r.bound
        kb = {} if target_kind.upper_bound is None else {f"{target_kind.name}_bound": target_kind.upper_bound(r)}
        if wts is not None:                  # a kind: the next try plans with the loss this one measured
            kb["measured_loss"] = _kind_loss(kb.get(f"{target_kind.name}_bound"), value)
            at[0] = relearn(at[0], plan, kb["measured_loss"])
        return {**row_v2(plan, "bound", r.bound), **kb}          # bound: the grid's TV
    side = Side("upper", margin, SAFETY, V2_CEILING,
                lambda b: plan_product(runs, None, b, tv, prec=ctx.prec or 100, need_eps=need, weights=wts,
                                      k_scale=at[0], y_scale=at[1]),
                lambda m, prog: rounding_bound_v2_product(runs, m),
                lambda r: target_kind.upper_proves(r, target), row, limit)
    return prove(side, ctx.max_tries, out.tries, ctx.say)


def privacy_rows(ctx: Ctx, res, meth):
    """The (eps, delta) and TPR rows from the b_k (Lemma C.5 functionals); None if none can be certified."""
    out = ctx.out
    t1 = time.perf_counter()
    priv, tpr, missing = privacy_rows_partial(res.b, meth.eta, meth.fixed_point_bits, meth.prec)
    out.privacy_seconds = round(time.perf_counter() - t1, 3)
    if not priv and not tpr:
        return None
    out.privacy, out.tpr, out.rows_missing = priv, tpr, (missing or None)
    return priv, tpr


def prove_lower(ctx: Ctx, low_claim, s_low, value_low, err, meth: UpperV2):
    """sigma_low certified to miss the target by stages_lower on one planned grid (the kind's lower value from
    the processed pmfs, certifier.bounds.lower_kinds, for dp / tpr): (LowerResult, method) or None."""
    out, target_kind, target = ctx.out, ctx.kind, low_claim.target
    s_str, need = decimal_str(s_low), need_eps(target_kind)
    runs = t2_runs(low_claim, s_low)
    margin, tv_low, wts = _kind_plan(target_kind, low_claim, s_low, target_kind.lower_margin(target, value_low, err),
                                     value_low)
    at = [V2_LOWER_LOSS_RATIO, 1.0]
    lower_run = lambda m: lower_bound_v2_product(runs, m, replay_trims=not target_kind.tv_functional)  # noqa: E731
    if wts is not None and margin is not None and margin > 0:
        try:
            first = plan_product(runs, None, budget(margin, LOWER_SAFETY[0], V2_CEILING), tv_low,
                                k_scale=at[0], prec=meth.prec, need_eps=need, weights=wts, lower=True)
            at[:] = _calibrate(first, lower_run,
                               lambda L: _kind_loss(target_kind.lower_value(L), value_low, lower=True), out, "lower")
        except CannotCertifyError as e:
            out.lower_tries.append({"sigma_low": s_str, "skipped": str(e)})
            return None
    side = Side("lower", margin, LOWER_SAFETY, V2_CEILING,
                lambda b: plan_product(runs, None, b, tv_low, k_scale=at[0], prec=meth.prec, need_eps=need,
                                      weights=wts, y_scale=at[1], lower=True),
                lambda m, prog: lower_run(m),
                lambda L: target_kind.lower_proves(L, target),
                lambda plan, L: _lower_row(target_kind, plan, L, s_str, value_low, wts, at))
    try:
        return prove(side, ctx.lower_tries(LOWER_SAFETY), out.lower_tries, ctx.say)
    except CannotCertifyError as e:
        out.lower_tries.append({"sigma_low": s_str, "skipped": str(e)})
        return None
