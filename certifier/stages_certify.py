"""`certify` for a run in stages: method v2 on both sides, the format-v5 predicate, every target kind.

One shared sigma (two-sided by default on the faces) or a sigma per stage (one-sided: the upper side
proves the target at those sigmas; no single sigma steps down). The kind (tv, dp, tpr) is its registry
entry in certifier.targets, as for one block: its numerics and exact sigma (which read Claim.stages), its
margins and loss factor, and what the upper result (the b_k) and the lower result (the processed pmfs)
must show. The upper side is certifier.bounds.stages_v2 (step (iv) multiplies the stages' log-grid polynomials),
the lower side certifier.bounds.stages_lower (step (d) multiplies the stages' bucket pmfs); both run
on ONE method-v2 grid, planned here from the stages' numerics: a plan of certifier.methods.v2.plan per
distinct line (M_s, sigma_s) for the run's total epochs, merged into the finest grid covering every plan (smallest h and
eta, widest octaves, log range and k_top). Retries shrink the budget as for one block
(certifier.certify.prove). The kind's numerics and exact shared sigma are certifier.numerics.stages' and
stages_profile's (numerics only: they choose grids and sigma). The rows come from the upper side's
b_k (Lemma C.5 functionals); a row that cannot be certified is left out with its reason.
"""
from __future__ import annotations

import math
import time

from flint import fmpq

from certifier.bounds.fixedpoint import round_down_sig
from certifier.bounds.lower_v2 import method_json as lower_json
from certifier.bounds.stages_lower import lower_bound_v2_stages
from certifier.bounds.stages_v2 import rounding_bound_v2_stages
from certifier.bounds.upper_v2 import METHOD_NAME, METHOD_VERSION, UpperV2
from certifier.certificate.stages import build_stages, stages_claim, t2_runs
from certifier.certify import stepping
from certifier.errors import CannotCertifyError, ParameterError
from certifier.methods.search import (
    LOWER_SAFETY,
    MAX_PREDICTED_SECONDS,
    SAFETY,
    Side,
    progress_say,
    prove,
    refuse_if_slow,
    relearn,
    sigma_lows,
    tv_lower_str,
)
from certifier.methods.v1.plan import Plan, budget
from certifier.methods.v2.plan import choose_v2, plan_v2
from certifier.methods.v2.search import KIND_UPPER_K_SCALE, V2_CEILING, V2_LOWER_LOSS_RATIO, row_v2
from certifier.outcome import Outcome
from certifier.params import decimal_str, parse_decimal, parse_sigma
from certifier.resolution import round_up
from certifier.targets import kind

LABEL = f"{METHOD_NAME} v{METHOD_VERSION} (stages)"
# The upper side's k_scale for a kind planned with its own weights: measured (actual loss) / (the weighted
# model's) 1.8-3.0 on the upper side at stages 4x1,8x1 and 100x5,400x5 (eps 1, delta 1e-5); the lower
# side's V2_LOWER_LOSS_RATIO already matches (0.94-1.11). docs/targets.md §8.
# (certifier.methods.v2.search.KIND_UPPER_K_SCALE)


def _stages(spec) -> tuple[tuple, ...]:
    """((M_s, E_s), ...) or, with a sigma per stage, ((M_s, E_s, sigma_s exact), ...)."""
    from certifier.numerics.stages import parse_stages
    return tuple((s.steps, s.epochs) if s.sigma is None else (s.steps, s.epochs, parse_sigma(s.sigma))
                 for s in parse_stages(spec))


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


def plan_stages(stages, t2: fmpq | None, loss_budget: float, tv: float, k_scale: float = 1.0, prec: int = 100,
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
    """The eps range of the rows, as certifier.certify's v2 search guesses it (heavy tails included); a
    plan with no eps range (need_eps = 0) may also cut the lattice's top below the epoch sum (measured:
    (400, 1) at sigma 1.5 loses 0.46), so every stage plan gets one."""
    from certifier.methods.v2.plan import EPS_CEILING, eps_gaussian, eps_tail
    return 0.0 if tv is None else min(max(2 * eps_gaussian(tv) + 5, eps_tail(M, E, float(t2)) + 3), EPS_CEILING)


def certify_stages(stages, target: fmpq, sigma: fmpq | None = None, *, two_sided: bool = False,
                   kind_name: str = "tv", kind_params: dict | None = None, max_tries: int = 3, progress=None,
                   prec: int | None = None) -> Outcome:
    """Certify the target kind's functional of prod_s (P_{M_s}^{E_s}, Q_{M_s}^{E_s}) <= target: tv (TV), dp
    (kind_params {"epsilon": text}, target = delta) or tpr ({"fpr": text}, target = the TPR bound), as
    certifier.certify.certify does for one block (the kind's registry entry, certifier.targets).

    stages: ((M_s, E_s), ...) at one sigma (the exact shared sigma of the kind when absent; two_sided adds
    the lower side at sigma - k res(sigma) by stages_lower), or ((M_s, E_s, sigma_s), ...) with a sigma per
    stage (sigma absent; one-sided only: there is no single sigma to step down). Upper side by stages_v2;
    the predicate is format v5 (certifier.certificate.stages)."""
    stages = _stages(stages)
    own = len(stages[0]) == 3
    target_kind = kind(kind_name) if kind_params is None else kind(kind_name, kind_params, target)
    if not isinstance(target, fmpq) or not 0 < target < 1:
        raise ParameterError(f"the {target_kind.name} target must be an exact rational strictly between 0 and 1, "
                             f"got {target!r}")
    if own and sigma is not None:
        raise ParameterError("the stages carry their sigma already: give no shared sigma")
    if own and two_sided:
        raise ParameterError("a sigma per stage is certified one-sided only (no single sigma to step down for the "
                             "lower side)")
    t_start = time.perf_counter()
    say = progress_say(progress, t_start)
    named = () if target_kind.name == "tv" else (("name", target_kind.name), *target_kind.params)
    given = sigma is not None
    if sigma is None and not own:
        say("exact sigma", 0.0)
        sigma = round_up(target_kind.exact_sigma(stages_claim(stages, fmpq(1), target, named), target))
    if not own and (not isinstance(sigma, fmpq) or sigma <= 0):
        raise ParameterError("sigma must be a positive exact rational")

    def attempt(sigma, limit):
        claim, out = _at(stages, sigma, target, target_kind, named, say)
        return out, claim, _upper(out, claim, sigma, target_kind, prec, max_tries, say, limit)
    out, claim, found = stepping(sigma, 0 if given or own else 1, attempt, say)   # automatic: one step up
    if found is None:
        say("done", 1.0)
        return out
    res, meth = found
    out.success, out.method = True, LABEL
    kind_upper = None if target_kind.upper_record is None else target_kind.upper_record(res)
    if kind_upper:                                    # the kind's certified value (the TV bound stays in `bound`)
        out.bound, out.method = kind_upper["bound"], f"{LABEL} ({target_kind.functional})"
    rows = _rows(out, res, meth)
    low = _lower(out, claim, target_kind, meth, _need_eps(target_kind), say) if two_sided else None
    out.predicate = build_stages(claim, meth.to_json(), res, low, rows, out.tv, out.tv_error, missing=out.rows_missing,
                                 kind_upper=kind_upper)
    if low is not None:
        out.two_sided, out.sigma_low, out.tv_lower = True, low["sigma_low"], low["tv_lower"]
        out.bound_lower = low.get("bound_lower")
    say("done", 1.0)
    return out


def _at(stages, sigma, target, target_kind, named, say):
    """The claim at sigma (None: a sigma per stage) and a fresh record with the kind's numerics there."""
    own = len(stages[0]) == 3
    claim = stages_claim(stages, sigma, target, named)
    say("exact tv", 0.0)
    value, err = target_kind.numerics(claim, sigma)
    out = Outcome(False, None, claim.epochs, None if own else decimal_str(sigma), decimal_str(target), None,
                     tv=value, tv_error=err, kind=target_kind.name)
    out.stages = [[s[0], s[1], *([decimal_str(s[2])] if own else [])] for s in stages]
    return claim, out


def _upper(out, claim, sigma, target_kind, prec, max_tries, say, limit):
    """The upper side at sigma by stages_v2 on one planned grid: (result, method) or None."""
    runs, value, target = t2_runs(claim, sigma), out.tv, claim.target
    need = _need_eps(target_kind)
    margin = target_kind.upper_margin(target, value, out.tv_error)
    if limit < MAX_PREDICTED_SECONDS and margin is not None and margin <= 0:
        raise CannotCertifyError(f"the margin target - value - error at sigma {decimal_str(sigma)} is "
                                 f"{margin:.3g}: no grid can decide it")
    margin, tv, wts = _kind_plan(target_kind, claim, sigma, margin, value)
    at = [1.0 if wts is None else KIND_UPPER_K_SCALE, 1.0]
    if wts is not None and margin is not None and margin > 0:
        first = plan_stages(runs, None, budget(margin, SAFETY[0], V2_CEILING), tv, prec=prec or 100,
                            need_eps=need, weights=wts, k_scale=at[0])
        refuse_if_slow(first, margin, limit)
        at[:] = _calibrate(first, lambda m: _with_method(rounding_bound_v2_stages(runs, m), m),
                           lambda r: _kind_loss(target_kind.upper_bound(r), value), out, "upper")

    def row(plan, r):
        out.bound = r.bound
        kb = {} if target_kind.upper_bound is None else {f"{target_kind.name}_bound": target_kind.upper_bound(r)}
        if wts is not None:                  # a kind: the next try plans with the loss this one measured
            kb["measured_loss"] = _kind_loss(kb.get(f"{target_kind.name}_bound"), value)
            at[0] = relearn(at[0], plan, kb["measured_loss"])
        return {**row_v2(plan, "bound", r.bound), **kb}          # bound: the grid's TV
    side = Side("upper", margin, SAFETY, V2_CEILING,
                   lambda b: plan_stages(runs, None, b, tv, prec=prec or 100, need_eps=need, weights=wts,
                                         k_scale=at[0], y_scale=at[1]),
                   lambda m, prog: rounding_bound_v2_stages(runs, m),
                   lambda r: target_kind.upper_proves(r, target), row, limit)
    return prove(side, max_tries, out.tries, say)


def _with_method(res, method):
    """An upper result with the grid it ran on (a kind reads its b_k through it)."""
    if res.method is None:
        res.method = method
    return res


def _calibrate(first: Plan, run, measured_loss, out, label: str) -> list:
    """[k_scale, y_scale] from two runs on `first`'s grid 8x coarser, as planned and with finer steps (i)
    (methods.v2.plan.coarse, finer_steps, scales_from; as certifier.certify._calibrate for one block): a kind's
    weighted model misses most at the tails, where the kink weighs the rounding of large steps (at stages
    50x4,200x2, eps 2, delta 1e-6 the upper tries lost 20-30x the prediction at k_scale 3)."""
    from certifier.methods.v2.plan import coarse, finer_steps, k_scale_from, scales_from
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


def _need_eps(target_kind) -> float:
    """The eps range the grid must resolve: none beyond the rows' for tv; for a kind whose hockey-stick loss
    is loss_factor = e^eps (tpr: about beta/alpha, the slope of its bound) times TV's, ln(loss_factor) + 3."""
    return 0.0 if target_kind.upper_record is None else math.log(target_kind.loss_factor) + 3.0


def _rows(out, res, meth):
    """The (eps, delta) and TPR rows from the b_k (Lemma C.5 functionals); None if none can be certified."""
    from certifier.bounds.privacy import privacy_rows_partial
    t1 = time.perf_counter()
    priv, tpr, missing = privacy_rows_partial(res.b, meth.eta, meth.fixed_point_bits, meth.prec)
    out.privacy_seconds = round(time.perf_counter() - t1, 3)
    if not priv and not tpr:
        return None
    out.privacy, out.tpr, out.rows_missing = priv, tpr, (missing or None)
    return priv, tpr


def _lower(out, claim, target_kind, meth: UpperV2, need: float, say, sigmas=None) -> dict | None:
    """sigma_low = sigma - k res(sigma), k = 1, 2 (or each of `sigmas`), certified to miss the target (the kind's
    lower value from the processed pmfs, certifier.bounds.lower_kinds, for dp / tpr), or None; the LowerResult
    found is out.lower_result."""
    target = claim.target
    t0 = time.perf_counter()
    for s_low in sigma_lows(claim.sigma) if sigmas is None else sigmas:
        s_str = decimal_str(s_low)
        value_low, err = target_kind.numerics(claim, s_low)
        if value_low is not None and value_low <= float(target):     # thin margins: TargetKind.lower_margin
            out.lower_tries.append({"sigma_low": s_str, "skipped": f"numerical value {value_low:.12g} does not "
                                    "exceed the target"})
            continue
        runs = t2_runs(claim, s_low)
        margin, tv_low, wts = _kind_plan(target_kind, claim, s_low, target_kind.lower_margin(target, value_low, err),
                                         value_low)
        at = [V2_LOWER_LOSS_RATIO, 1.0]
        lower_run = lambda m, runs=runs: lower_bound_v2_stages(runs, m, replay_trims=target_kind.name != "tv")  # noqa: E731
        if wts is not None and margin is not None and margin > 0:
            try:
                first = plan_stages(runs, None, budget(margin, LOWER_SAFETY[0], V2_CEILING), tv_low,
                                    k_scale=at[0], prec=meth.prec, need_eps=need, weights=wts, lower=True)
                at[:] = _calibrate(first, lower_run,
                                   lambda L, v=value_low: _kind_loss(target_kind.lower_value(L), v, lower=True),
                                   out, "lower")
            except CannotCertifyError as e:
                out.lower_tries.append({"sigma_low": s_str, "skipped": str(e)})
                continue
        side = Side("lower", margin, LOWER_SAFETY, V2_CEILING,
                       lambda b, runs=runs, v=tv_low, w=wts, at=at: plan_stages(runs, None, b, v, k_scale=at[0],
                                                                               prec=meth.prec, need_eps=need,
                                                                               weights=w, y_scale=at[1],
                                                                               lower=True),
                       lambda m, prog, lower_run=lower_run: lower_run(m),
                       lambda L: target_kind.lower_proves(L, target),
                       lambda plan, L, s_str=s_str, v=value_low, w=wts, at=at: _lower_row(target_kind, plan, L, s_str,
                                                                                          v, w, at))
        try:
            found = prove(side, len(LOWER_SAFETY), out.lower_tries, say)
        except CannotCertifyError as e:
            out.lower_tries.append({"sigma_low": s_str, "skipped": str(e)})
            found = None
        if found is not None:
            out.lower_seconds = round(time.perf_counter() - t0, 3)
            L, lm = found
            out.lower_result = L
            low = {"sigma_low": s_str, "method": lower_json(lm), "enclosures": L.enclosures}
            if target_kind.name == "tv":
                return {**low, "tv_lower": tv_lower_str(L.exact, target)}
            return {**low, "tv_lower": L.tv_lower,           # TV at sigma_low >= it; the kind's value below
                    "bound_lower": tv_lower_str(target_kind.lower_value(L), target)}
    out.lower_seconds = round(time.perf_counter() - t0, 3)
    return None


def _lower_row(target_kind, plan, L, s_str: str, value: float | None, wts, at: list) -> dict:
    """A lower try's record: the kind's certified lower value (dp: max of the two hockey-sticks at eps, tpr:
    1 - T(alpha); tv: the TV) beside the TV of the processed pair; for a kind planned on its own loss model the
    loss this try measured, which the next try plans with (at[0], the k_scale, scaled up, never down)."""
    row = {"sigma_low": s_str, **row_v2(plan, "tv_lower", L.tv_lower), "tv_exact": value}
    if target_kind.name == "tv":
        return row
    v = target_kind.lower_value(L)
    row[f"{target_kind.name}_lower"] = None if v is None else round_down_sig(v, 12)
    row["value_exact"] = row.pop("tv_exact")
    if wts is not None:
        row["measured_loss"] = _kind_loss(v, value, lower=True)
        at[0] = relearn(at[0], plan, row["measured_loss"])
    return row


def refuse_with_stages(steps, epochs, scheme, method, kind_name, iterations, grid) -> None:
    """For a face that accepts stages beside certify's options: a run in stages has no steps/epochs of its
    own, random allocation, method v2 and automatic grids (any target kind); anything else is a one-line
    refusal."""
    from certifier.claim import RANDOM_ALLOCATION
    if steps is not None or epochs is not None:
        raise ParameterError("give either stages or steps and epochs, not both")
    if scheme != RANDOM_ALLOCATION or iterations is not None:
        raise ParameterError("a run in stages is certified for random allocation only (not fixed bins)")
    if method not in ("auto", "v2"):
        raise ParameterError(f"a run in stages is certified with method v2 only, not {method!r}")
    if any(g is not None for g in grid):
        raise ParameterError("a run in stages takes no user grid (h, eta, cap): its grid is planned per stage")


def upper_at_stages(claim, target_kind, *, limit: float = MAX_PREDICTED_SECONDS, progress=None):
    """The upper side alone at claim.sigma, one shared sigma (an audit of a run in stages): (Outcome,
    (UpperResult, UpperV2) or None); CannotCertifyError where no grid is planned within `limit` seconds."""
    say = progress_say(progress, time.perf_counter())
    _, out = _at(claim.stages, claim.sigma, claim.target, target_kind, claim.kind, say)
    found = _upper(out, claim, claim.sigma, target_kind, None, 3, say, limit)
    if found is not None:
        out.success, out.method = True, LABEL
    return out, found


def lower_at_stages(claim, target_kind, meth: UpperV2, *, progress=None):
    """The lower side alone at claim.sigma itself (an audit: this sigma misses the target) on upper_at_stages'
    grid: (Outcome, the `lower` record or None); the LowerResult is Outcome.lower_result."""
    say = progress_say(progress, time.perf_counter())
    _, out = _at(claim.stages, claim.sigma, claim.target, target_kind, claim.kind, say)
    return out, _lower(out, claim, target_kind, meth, _need_eps(target_kind), say, (claim.sigma,))
