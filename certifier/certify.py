"""`sigmacert certify`, the generic loop: the exact sigma, sigma stepping, the upper side by the methods'
searches, the rows, the lower side at sigma - k res(sigma), and the predicate.

The certified statements are only what the rigorous bounds prove (certifier.bounds); the numerics only choose
grids and are recorded under `numerics`. Each method's search (its planner, tries and record) is its home in
certifier.methods (v1, v2, gaussian_shift); auto's order among them is certifier.methods.auto (SEARCHES); the
functional and its numerics are the target kind (certifier.targets).
"""
from __future__ import annotations

import time
from dataclasses import replace

from flint import fmpq

from certifier.bounds.privacy import rounded_law
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.domain import check_cell
from certifier.errors import CannotCertifyError, ParameterError
from certifier.methods.auto import faster_first, lower_order, step_instead
from certifier.methods.base import Method
from certifier.methods.search import MAX_PREDICTED_SECONDS, Ctx, progress_say, sigma_lows, tv_lower_str, upper_margin
from certifier.outcome import Outcome, Record
from certifier.params import decimal_str, parse_decimal
from certifier.resolution import round_up, sigma_resolution
from certifier.run import Run
from certifier.shape import run_of, shape_of
from certifier.targets import TargetKind, kind

STEP_SECONDS = 300.0               # automatic sigma: a thinner margin than this buys goes to the next sigma step
MAX_WALK = 24                      # automatic sigma: upper tries below it while walking down (`lower_side`)
STEP_UP_TRIES = 6                  # ... and above it, at 1, 2, 4, ..., 32 steps, where it is not proven (`stepping`)


def certify(steps: int, epochs: int, target: fmpq, sigma: fmpq | None = None, *, scheme: str = RANDOM_ALLOCATION,
            iterations: int | None = None, **options) -> Outcome:
    """certify_run for a block: M = steps steps per epoch for E = epochs epochs under `scheme` (fixed bins: of
    `iterations` rounds); options as certify_run's. M or E outside the domain is a domain refusal."""
    try:
        run = Run.block(steps, epochs, scheme, iterations)
    except ParameterError:
        check_cell(steps, epochs, fmpq(1, 2))     # the domain's own refusal where it has one
        raise
    return certify_run(run, target, sigma, **options)


def certify_run(run: Run, target: fmpq, sigma: fmpq | None = None, *, h=None, eta=None, cap=None,
                prec: int | None = None, progress=None, max_tries: int = 3, two_sided: bool = False,
                method: str = "auto", kind_name: str = "tv", kind_params: dict | None = None) -> Outcome:
    """Find the exact sigma if absent, choose the method and grid, compute the bound; refine and retry if short.

    A block (one stage) or a run in stages (certifier.run.Run; a sigma per stage when its stages carry one: sigma
    None, one-sided). progress(stage, percent, elapsed_seconds) is called throughout; every try is recorded in
    Outcome.tries. After the upper side succeeds, the certified (eps, delta) and TPR rows are added
    whenever they can be certified (a row that cannot is left out with its reason), and with two_sided
    the lower side at sigma - res(sigma) (then 2 res) when the numerics say it can succeed, and an automatic sigma
    whose lower side does not close walks down while its upper side proves a lower sigma (`lower_side`). Outside
    the stated domain (certifier.domain) it refuses at once; an automatic sigma whose upper side is not proven
    within STEP_SECONDS moves up 1, 2, 4, ... resolution steps (`stepping`, certifier.resolution).
    method: "auto" or an alias of the searches ("v1", "v2"; a run in stages: method v2 on one planned grid,
    certifier.methods.v2.stages, automatic grids only).
    kind_name "dp" (kind_params {"epsilon": "1"}, target = delta) or "tpr" ({"fpr": "0.001"}, target = the
    TPR bound): the upper side proves the kind's functional from the same b_k, the lower side from the
    lower method's final pmfs by data processing (certifier.targets, certifier.bounds.lower_kinds); the
    predicate is format v4 (claim.kind, upper.bound, lower.bound_lower), v5 for a run in stages.
    """
    t_start = time.perf_counter()
    say = progress_say(progress, t_start)
    target_kind = kind(kind_name) if kind_params is None else kind(kind_name, kind_params, target)
    if two_sided and not target_kind.lower_side:
        raise CannotCertifyError(f"target kind {target_kind.name}: the lower side is not implemented (only the "
                                 "upper side can be certified)")
    named = target_kind.named
    grid = {k: v for k, v in (("h", h), ("eta", eta), ("cap", cap)) if v is not None}
    shape = shape_of(run)
    sigma, spare, forced = shape.setup(run, target_kind, target, sigma, named, two_sided, method, grid, say)

    def attempt(sigma, limit, evidence=None, tries=None):
        ctx = _context(run, sigma, target, target_kind, named, grid, prec, tries or max_tries, say, limit)
        if evidence is not None and ctx.tv is not None and ctx.tv > float(target):    # lower_side's step down
            said = f"{ctx.tv:.12g} +- {ctx.tv_err or 0.0:.1g}"
            if ctx.tv - float(target) > 3.0 * (ctx.tv_err or 0.0):
                raise CannotCertifyError(f"the numerics put it above the target ({said})")
            ctx.tv, ctx.tv_err = evidence, 0.0        # the grids are planned on a certified value (a budget only)
            ctx.out.tries.append({"try": 0, "planned_on": f"a certified value {evidence:.12g} (the numerics' {said})"})
        search, found = _upper(ctx, forced, shape.searches)
        return ctx.out, (ctx, search), found
    out, (ctx, search), found, failed = stepping(sigma, spare, attempt, say)
    if found is None:
        say("done", 1.0)
        return out.outcome()
    low = None
    if two_sided and target_kind.certificate:         # an automatic sigma may walk down (lower_side)
        out, (ctx, search), found, low = lower_side(out, (ctx, search), found, bool(spare), failed, attempt, say)
    claim = ctx.claim
    label = search.label or search.method.label
    out.success, out.method = True, label
    res, meth = found
    if search.rounded_law and res.b is not None and getattr(meth, "eta", None) is not None:
        out.law = rounded_law(res.b, meth.eta, meth.fixed_point_bits)
    if not target_kind.certificate:                   # no certificate format for this kind: the bound only
        out.bound = target_kind.upper_bound(res)
        out.method = f"{label} ({target_kind.functional})"
        say("done", 1.0)
        return out.outcome()
    rows = search.rows(ctx, res, meth) if two_sided or search.rows_one_sided else None
    kind_upper = None if target_kind.upper_record is None else target_kind.upper_record(res)   # format v4's `upper`
    if kind_upper:                                    # the kind's value and functional, as without a format
        out.bound, out.method = kind_upper["bound"], f"{label} ({target_kind.functional})"
    out.predicate = shape.build(claim, search.method.to_json(meth, claim), res, low, rows, out.tv, out.tv_error,
                                missing=out.rows_missing, kind_upper=kind_upper)
    if low is not None:
        out.two_sided, out.sigma_low, out.tv_lower = True, low["sigma_low"], low["tv_lower"]
        out.bound_lower = low.get("bound_lower")
    say("done", 1.0)
    return out.outcome()


def lower_side(out, state, found, walk: bool, failed, attempt, say):
    """The lower side (`_lower`: sigma - res, then sigma - 2 res). With `walk` (an automatic sigma), where the first
    lower grid does not show sigma - res to miss, the upper side is tried below: the numerics' exact sigma can lie
    steps above the least (at delta ~ 1e-12 their estimate spans tens of grid steps, the certified bounds do not).
    Each sigma it proves becomes sigma, the jump doubling while they hold (k res, k = 1, 2, 4, ...) and halving where
    one does not, until one step below is not proven; there the lower side's grids are tried as without a walk. At
    most MAX_WALK upper tries, never down to `failed` (the highest sigma not proven, from `stepping`). Returns
    (record, (ctx, search), found, lower record or None) of the last sigma proven; every sigma taken is its own upper
    certificate, kept in the tries."""
    ctx, search = state
    k, tries = 1, 0                          # the jump (in steps), upper tries spent
    while True:
        res = sigma_resolution(ctx.sigma)
        below = ctx.sigma - res
        known = {}
        if walk and k == 1 and below > 0 and search.screen_lower:
            known[below] = v, e = ctx.kind.numerics(replace(ctx.claim, sigma=below, kind=()), below)
            walk = v is None or v - float(ctx.claim.target) <= 3.0 * (e or 0.0)   # not a decided miss
        if not walk or tries >= MAX_WALK or below <= 0 or below == failed:
            return out, (ctx, search), found, _lower(ctx, search, found[1], known=known)
        if k == 1:
            first = _lower(replace(ctx, lower_grids=1), search, found[1], (below,), known)   # its first grid alone
            if first is not None:
                return out, (ctx, search), found, first
        to = ctx.sigma - k * res
        if failed is not None and to <= failed:                        # bisect between failed and sigma
            k = max(1, _steps(ctx.sigma - failed, res) // 2)
            to = ctx.sigma - k * res
        moved = _step_down(out, ctx, found, to, attempt, say) if to > 0 else None
        tries += 1
        if moved is not None:
            out, (ctx, search), found = moved
            k = 2 * k if failed is None else max(1, _steps(ctx.sigma - failed, sigma_resolution(ctx.sigma)) // 2)
        else:
            failed = to if failed is None else max(failed, to)
            k = max(1, _steps(ctx.sigma - failed, res) // 2)


def _steps(gap: fmpq, res: fmpq) -> int:
    """Whole resolution steps in a gap (at least 1)."""
    return max(1, int((gap / res).floor()))


def _step_down(out, ctx: Ctx, found, below, attempt, say):
    """The upper side at `below` < sigma, one grid, planned where the numerics put it above the target within their
    estimate on a certified value: the lower side's there if it tried, else the upper bound at sigma (a budget only:
    the proof decides). (record, state, found) with the records joined, or None (recorded in the lower tries)."""
    seen = _lower_seen(out, ctx.kind, decimal_str(below))
    upper = ctx.kind.upper_bound(found[0]) if ctx.kind.upper_bound else None
    evidence = seen if seen is not None else (float(parse_decimal("bound", upper)) if upper else None)
    say(f"walk down: upper side at {decimal_str(below)}", 0.0)
    try:
        out2, state2, found2 = attempt(below, STEP_SECONDS, evidence, tries=1)
    except CannotCertifyError as err:
        out.lower_tries.append({"sigma": decimal_str(below), "walk_down": f"not proven: {err}"})
        return None
    if found2 is None:                                # its tries stay in the record (the lower side plans on them)
        out.tries += [{"sigma": decimal_str(below), "walk_down": False, **t} for t in out2.tries]
        out.lower_tries.append({"sigma": decimal_str(below), "walk_down": "not proven: its first grid did not close"})
        return None
    out2.tries = out.tries + [{"sigma": decimal_str(below), "walk_down": True, **t} for t in out2.tries]
    out2.lower_tries = out.lower_tries + out2.lower_tries
    out2.sigma_steps = out.sigma_steps - _steps(ctx.sigma - below, sigma_resolution(ctx.sigma))
    return out2, (replace(state2[0], max_tries=ctx.max_tries), state2[1]), found2    # the upper side's own tries


def upper_at(claim: Claim, target_kind: TargetKind, *, limit: float = MAX_PREDICTED_SECONDS, progress=None):
    """The upper side alone at claim.sigma (an audit of a block, or of stages at one shared sigma), no sigma step,
    no rows: (Outcome, search, (UpperResult, method) or None); CannotCertifyError where no grid is planned within
    `limit` seconds."""
    ctx = _audit_context(claim, target_kind, limit, progress)
    search, found = _upper(ctx, None, shape_of(run_of(claim)).searches)
    if found is not None:
        ctx.out.success, ctx.out.method = True, search.label or search.method.label
    return ctx.out.outcome(), search, found


def lower_at(claim: Claim, target_kind: TargetKind, search: Method, meth, *, progress=None):
    """The lower side alone at claim.sigma itself (an audit: this sigma misses the target), by the lower methods
    of `search` after its upper method `meth` (upper_at's): (Outcome, the `lower` record or None); the
    LowerResult is Outcome.lower_result."""
    ctx = _audit_context(claim, target_kind, MAX_PREDICTED_SECONDS, progress)
    low = _lower(ctx, search, meth, (claim.sigma,))
    return ctx.out.outcome(), low


def _audit_context(claim: Claim, target_kind: TargetKind, limit: float, progress) -> Ctx:
    """An audit's context at the claim's own sigma (a block, or stages at one shared sigma; automatic grids, three
    tries)."""
    run = run_of(claim)
    named = target_kind.named
    return _context(run, claim.sigma, claim.target, target_kind, named, {}, None, 3,
                    progress_say(progress, time.perf_counter()), limit)


def stepping(sigma: fmpq, spare: int, attempt, say):
    """attempt(sigma, limit) -> (Outcome, state, found or None) at sigma, and while spare (an automatic sigma), where
    the upper side is not proven (a refusal or nothing found) at sigma + 1, 2, 4, ... resolution steps of the first
    sigma, at most STEP_UP_TRIES more (the numerics' exact sigma can lie steps below the least at delta ~ 1e-12; a
    margin too thin for any grid within STEP_SECONDS moves it up one); the earlier tries are kept in the last
    Outcome. Returns (Outcome, state, found, the highest sigma not proven or None)."""
    earlier: list = []
    first, k, left, failed = sigma, 1, (STEP_UP_TRIES if spare else 0), None
    while True:
        try:
            out, state, found = attempt(sigma, STEP_SECONDS if left else MAX_PREDICTED_SECONDS)
        except CannotCertifyError as err:
            if not left:
                raise
            earlier.append({"try": len(earlier) + 1, "sigma": decimal_str(sigma), "skipped": str(err)})
        else:
            if found is not None or not left:
                out.tries = earlier + out.tries
                out.sigma_steps = 0 if sigma == first else _steps(sigma - first, sigma_resolution(first))
                return out, state, found, failed
            earlier += [{"sigma": decimal_str(sigma), **t} for t in out.tries]
        failed, left = sigma, left - 1
        sigma, k = round_up(first + k * sigma_resolution(first)), 2 * k
        say(f"next sigma step {decimal_str(sigma)}", 0.0)


def _context(run: Run, sigma, target, target_kind, named, grid, prec, max_tries, say, limit) -> Ctx:
    """The claim at sigma (a run in stages with a sigma per stage: None), its numerics and a fresh record."""
    claim, steps, shown = shape_of(run).claim(run, sigma, target, named)
    say("exact tv", 0.0)
    tv, tv_err = target_kind.numerics(claim, sigma)
    say("exact tv", 1.0)
    out = Record(False, steps, claim.epochs, None if sigma is None else decimal_str(sigma), decimal_str(target),
                 None, tv=tv, tv_error=tv_err, scheme=run.scheme, kind=target_kind.name, stages=shown)
    return Ctx(claim, sigma, target_kind, tv, tv_err, grid, prec, max_tries, out, say, limit, kind("tv").numerics)


def _upper(ctx: Ctx, forced, searches):
    """The upper side at ctx.sigma: (search, (result, params) or None) by the first of `searches` that finds a
    grid (or the forced one)."""
    candidates = [forced] if forced else [s for s in searches if s.fits(ctx.claim, ctx.sigma, bool(ctx.grid))]
    if ctx.kind.upper_methods is not None:            # e.g. v1 only: v2's calibration measures the TV loss
        candidates = [s for s in candidates if s.method.label in ctx.kind.upper_methods]
        if not candidates:
            raise CannotCertifyError(f"target kind {ctx.kind.name} is certified by "
                                     f"{', '.join(ctx.kind.upper_methods)} only, which does not "
                                     f"apply at M={ctx.claim.steps}, E={ctx.claim.epochs}, sigma "
                                     f"{decimal_str(ctx.sigma)}")
    margin = upper_margin(ctx)
    if ctx.limit < MAX_PREDICTED_SECONDS and candidates[0].grid_search and margin is not None and margin <= 0:
        raise CannotCertifyError(f"the margin target - TV - error at sigma {decimal_str(ctx.sigma)} is "
                                 f"{margin:.3g}: no grid can decide it")
    strict = forced is not None or bool(ctx.grid)
    if not strict:
        candidates = faster_first(ctx, candidates)
    for k, search in enumerate(candidates):
        try:
            return search, search.prove(ctx)
        except CannotCertifyError as err:
            if strict or k == len(candidates) - 1 or step_instead(ctx, err, candidates[k + 1]):
                raise
            v = search.method.version                 # auto: this grid model found nothing; the next covers more
            ctx.out.tries.append({"try": 0, "method": v, "skipped": f"method v{v}: {err}"})
    raise AssertionError("the last search either returns or raises")


def _upper_seen(out, target_kind, s_str: str) -> float | None:
    """The least bound of the kind's functional an upper try at sigma `s_str` reached without proving the target
    (`stepping`'s or the walk's records), or None."""
    key = f"{target_kind.name}_bound" if target_kind.upper_bound else "bound"
    seen = [float(parse_decimal("bound", t[key])) for t in out.tries if t.get("sigma") == s_str and t.get(key)]
    return min(seen) if seen else None


def _lower_seen(out, target_kind, s_str: str) -> float | None:
    """The greatest lower bound of the kind's functional a lower try at sigma_low `s_str` reached without proving the
    miss, or None."""
    key = "tv_lower" if target_kind.tv_functional else f"{target_kind.name}_lower"
    seen = [float(t[key]) for t in out.lower_tries if t.get("sigma_low") == s_str and t.get(key)]
    return max(seen) if seen else None


def _planned_below(above, numerics: float, target: float) -> float | None:
    """A value to plan sigma_low's grid on where the numerics say "meets" within their estimate and no upper try was
    made there: the lower bound a failed try reached one step up, above = (sigma, bound, numerics there), plus the
    numerics' change over that step (the value falls as sigma grows; a bias the numerics share at both cancels). None
    where that does not exceed the target (or nothing was tried above). A plan only: the proof decides."""
    if above is None or None in above:
        return None
    planned = above[1] + max(numerics - above[2], 0.0)
    return planned if planned > target else None


def _lower(ctx: Ctx, search, meth, sigmas=None, known=None) -> dict | None:
    """The lower side: sigma_low = sigma - k res(sigma) (k = 1, 2), or each of `sigmas`, certified to miss the
    target, or None. known: sigma_low -> its numerics, where already computed."""
    claim, out = ctx.claim, ctx.out
    t0 = time.perf_counter()
    above = None              # (the least sigma_low tried, its best lower bound, its numerics), for the next one
    for s_low in (sigmas or sigma_lows(ctx.sigma)):
        low_claim = replace(claim, sigma=s_low, kind=())
        screened = search.screen_lower and (known or {}).get(s_low)
        tv_low, err = screened or (ctx.kind.numerics(low_claim, s_low) if search.screen_lower else (None, None))
        raw_low, s_str = tv_low, decimal_str(s_low)
        hint = _upper_seen(out, ctx.kind, s_str)
        undecided = tv_low is not None and tv_low <= float(claim.target) and \
            tv_low + 3.0 * (err or 0.0) >= float(claim.target)
        planned = _planned_below(above, tv_low, float(claim.target)) if undecided and hint is None else None
        if planned is not None:
            out.lower_tries.append({"sigma_low": s_str, "planned_on": f"the lower bound {above[1]:.12g} at "
                                    f"{above[0]} plus the numerics' step {tv_low - above[2]:.3g}"})
            tv_low, err = planned, 0.0
        elif undecided and hint is not None and hint > float(claim.target):
            # the numerics say "meets" within their estimate, the upper side found no proof here: plan on its bound
            out.lower_tries.append({"sigma_low": s_str, "planned_on": f"the upper side's bound {hint:.12g} here "
                                    f"(the numerics' {tv_low:.12g} +- {err or 0.0:.1g})"})
            tv_low, err = hint, 0.0
        if tv_low is not None and tv_low <= float(claim.target):      # thin margins: TargetKind.lower_margin
            what = "TV" if ctx.kind.tv_functional and search.screen_names_tv else "value"
            out.lower_tries.append({"sigma_low": s_str, "skipped": f"numerical {what} {tv_low:.12g} does not exceed "
                                    "the target"})
            continue
        for lower_method, prove in lower_order(ctx, search, low_claim, s_low, tv_low, err, meth):
            found = prove(ctx, low_claim, s_low, tv_low, err, meth)
            if found is None:
                above = (s_str, _lower_seen(out, ctx.kind, s_str), raw_low)
                continue
            out.lower_seconds = round(time.perf_counter() - t0, 3)
            L, lm = found
            out.lower_result = L
            low = {"sigma_low": s_str, "method": lower_method.to_json(lm, claim), "enclosures": L.enclosures}
            if ctx.kind.tv_functional:
                return {**low, "tv_lower": tv_lower_str(L.exact, claim.target)}
            return {**low, "tv_lower": L.tv_lower,      # TV at sigma_low >= it; the kind's value below
                    "bound_lower": tv_lower_str(ctx.kind.lower_value(L), claim.target)}
    out.lower_seconds = round(time.perf_counter() - t0, 3)
    return None
