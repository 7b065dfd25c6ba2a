"""`sigmacert certify`, the generic loop: the exact sigma, sigma stepping, the upper side by the methods'
searches, the rows, the lower side at sigma - k res(sigma), and the predicate.

The certified statements are only what the rigorous bounds prove (certifier.bounds); the numerics only choose
grids and are recorded under `numerics`. Each method's search (its planner, tries and record) is its home in
certifier.methods (v1, v2, gaussian_shift); auto's order among them is certifier.methods.auto (SEARCHES); the
functional and its numerics are the target kind (certifier.targets).
"""
from __future__ import annotations

import time

from flint import fmpq

from certifier.certificate import predicate as pred_
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.domain import check_block, check_sigma
from certifier.errors import CannotCertifyError, NumericsUnreliableError, ParameterError
from certifier.methods.auto import SEARCHES, faster_first, forced_method, lower_order, step_instead
from certifier.methods.base import Method
from certifier.methods.search import MAX_PREDICTED_SECONDS, Ctx, progress_say, sigma_lows, tv_lower_str, upper_margin
from certifier.outcome import Outcome
from certifier.params import decimal_str
from certifier.resolution import round_up, step_up
from certifier.targets import TargetKind, kind, of_kind

STEP_SECONDS = 300.0               # automatic sigma: a thinner margin than this buys goes to the next sigma step


def certify(steps: int, epochs: int, target: fmpq, sigma: fmpq | None = None, *, scheme: str = RANDOM_ALLOCATION,
            iterations: int | None = None, h=None, eta=None, cap=None, prec: int | None = None, progress=None,
            max_tries: int = 3, two_sided: bool = False, method: str = "auto", kind_name: str = "tv",
            kind_params: dict | None = None) -> Outcome:
    """Find the exact sigma if absent, choose the method and grid, compute the bound; refine and retry if short.

    progress(stage, percent, elapsed_seconds) is called throughout; every try is recorded in
    Outcome.tries. After the upper side succeeds, the certified (eps, delta) and TPR rows are added
    whenever they can be certified (a row that cannot is left out with its reason), and with two_sided
    the lower side at sigma - res(sigma) (then 2 res) when the numerics say it can succeed. Outside the
    stated domain (certifier.domain) it refuses at once; an automatic sigma whose margin allows no grid
    within STEP_SECONDS moves one resolution step up (certifier.resolution).
    method: "auto" or an alias of SEARCHES ("v1", "v2").
    kind_name "dp" (kind_params {"epsilon": "1"}, target = delta) or "tpr" ({"fpr": "0.001"}, target = the
    TPR bound): the upper side proves the kind's functional from the same b_k, the lower side from the
    lower method's final pmfs by data processing (certifier.targets, certifier.bounds.lower_kinds); the
    predicate is format v4 (claim.kind, upper.bound, lower.bound_lower).
    A run in stages is certifier.stages_certify.certify_stages (its Outcome has `stages`).
    """
    t_start = time.perf_counter()
    say = progress_say(progress, t_start)
    target_kind = kind(kind_name) if kind_params is None else kind(kind_name, kind_params, target)
    if two_sided and not target_kind.lower_side:
        raise CannotCertifyError(f"target kind {target_kind.name}: the lower side is not implemented (only the "
                                 "upper side can be certified)")
    # the stated domain (certifier.domain: the run's M, E and the Target's own intervals), before any computation
    if not 0 < target < 1:
        raise ParameterError(f"the {target_kind.name} target must lie strictly between 0 and 1, got "
                             f"{decimal_str(target)}")
    check_block(steps, epochs)
    stated = of_kind(kind_name, kind_params, target)
    stated.check_domain(certify=True)
    probe = Claim(scheme, steps, epochs, sigma or fmpq(1), target, iterations)
    forced = forced_method(method, scheme)
    given = sigma is not None
    if sigma is None:
        say("exact sigma", 0.0)
        sigma = _exact_sigma(target_kind, probe, target)
        say("exact sigma", 1.0)
    check_sigma(probe.sigma_of_pair(float(sigma)), *probe.pair(), stated, given)
    grid = {k: v for k, v in (("h", h), ("eta", eta), ("cap", cap)) if v is not None}

    def attempt(sigma, limit):
        ctx = _context(scheme, steps, epochs, sigma, target, iterations, target_kind, grid, prec, max_tries, say,
                       limit)
        search, found = _upper(ctx, forced)
        return ctx.out, (ctx, search), found
    out, (ctx, search), found = stepping(sigma, 0 if given or grid else 1, attempt, say)
    claim = ctx.claim
    if found is None:
        say("done", 1.0)
        return out
    out.success, out.method = True, search.method.label
    res, meth = found
    if res.b is not None and getattr(meth, "eta", None) is not None:
        from certifier.bounds.privacy import rounded_law
        out.law = rounded_law(res.b, meth.eta, meth.fixed_point_bits)
    if not target_kind.certificate:                   # no certificate format for this kind: the bound only
        out.bound = target_kind.upper_bound(res)
        out.method = f"{search.method.label} ({target_kind.functional})"
        say("done", 1.0)
        return out
    rows = search.rows(ctx, res, meth) if two_sided or search.rows_one_sided else None
    low = _lower(ctx, search, meth) if two_sided else None
    kind_upper = None if target_kind.name == "tv" else target_kind.upper_record(res)   # format v4's `upper`
    if kind_upper:                                    # the kind's value and functional, as without a format
        out.bound, out.method = kind_upper["bound"], f"{search.method.label} ({target_kind.functional})"
    return _finish(out, claim, search.method.to_json(meth, claim), res, low, rows, say, kind_upper)


def upper_at(claim: Claim, target_kind: TargetKind, *, limit: float = MAX_PREDICTED_SECONDS, progress=None):
    """The upper side alone at claim.sigma (an audit), no sigma step, no rows: (Outcome, search, (UpperResult,
    method) or None); CannotCertifyError where no grid is planned within `limit` seconds."""
    say = progress_say(progress, time.perf_counter())
    ctx = _context(claim.scheme, claim.steps, claim.epochs, claim.sigma, claim.target, claim.iterations, target_kind,
                   {}, None, 3, say, limit)
    search, found = _upper(ctx, None)
    if found is not None:
        ctx.out.success, ctx.out.method = True, search.method.label
    return ctx.out, search, found


def lower_at(claim: Claim, target_kind: TargetKind, search: Method, meth, *, progress=None):
    """The lower side alone at claim.sigma itself (an audit: this sigma misses the target), by the lower methods
    of `search` after its upper method `meth` (upper_at's): (Outcome, the `lower` record or None); the
    LowerResult is Outcome.lower_result."""
    say = progress_say(progress, time.perf_counter())
    ctx = _context(claim.scheme, claim.steps, claim.epochs, claim.sigma, claim.target, claim.iterations, target_kind,
                   {}, None, 3, say, MAX_PREDICTED_SECONDS)
    return ctx.out, _lower(ctx, search, meth, (claim.sigma,))


def stepping(sigma: fmpq, spare: int, attempt, say):
    """attempt(sigma, limit) -> (Outcome, state, found or None) at sigma, and while spare (an automatic
    sigma: 1), at the next resolution step when the margin allows no grid within STEP_SECONDS (a refusal or
    nothing found); the earlier tries are kept in the last Outcome. Returns (Outcome, state, found)."""
    earlier: list = []
    while True:
        try:
            out, state, found = attempt(sigma, STEP_SECONDS if spare else MAX_PREDICTED_SECONDS)
        except CannotCertifyError as err:
            if not spare:
                raise
            earlier.append({"try": len(earlier) + 1, "sigma": decimal_str(sigma), "skipped": str(err)})
        else:
            if found is not None or not spare:
                out.tries, out.sigma_steps = earlier + out.tries, (1 if earlier else 0)
                return out, state, found
            earlier += [{"sigma": decimal_str(sigma), **t} for t in out.tries]
        spare, sigma = spare - 1, step_up(sigma)
        say(f"next sigma step {decimal_str(sigma)}", 0.0)


def _exact_sigma(target_kind: TargetKind, probe: Claim, target: fmpq) -> fmpq:
    """The exact sigma on the res(sigma) grid (certifier.resolution; numerical, the kind's search). A search that
    fails raises NumericsUnreliableError in one line; certifier.door explains it (below the pair's sigma 0.1:
    outside the stated domain, naming the nearest target; else a gap of the numerics) by one evaluation."""
    try:
        found = target_kind.exact_sigma(probe, target)
    except NumericsUnreliableError as err:
        raise NumericsUnreliableError(f"the exact sigma of M={probe.steps}, E={probe.epochs}, "
                                      f"{_target_text(target_kind, target)} was not found: {err}") from None
    return round_up(found)


def _bound_name(target_kind: TargetKind) -> str:
    """The name of the kind's bounded parameter: lambda (TV), delta (dp), tpr (tpr)."""
    return {"dp": "delta", "tpr": "tpr"}.get(target_kind.name, "lambda")


def _target_text(target_kind: TargetKind, target: fmpq) -> str:
    """The kind's parameters as the user gave them: lambda=0.1, or epsilon=1, delta=1e-5, or fpr=..., tpr=..."""
    fixed = [f"{k}={v}" for k, v in target_kind.params if k != _bound_name(target_kind)]
    return ", ".join(fixed + [f"{_bound_name(target_kind)}={decimal_str(target)}"])


def _context(scheme, steps, epochs, sigma, target, iterations, target_kind, grid, prec, max_tries, say, limit) -> Ctx:
    """The claim at sigma, its numerics and a fresh record."""
    named = () if target_kind.name == "tv" else (("name", target_kind.name), *target_kind.params)
    claim = Claim(scheme, steps, epochs, sigma, target, iterations, named)
    say("exact tv", 0.0)
    tv, tv_err = target_kind.numerics(claim, sigma)
    say("exact tv", 1.0)
    out = Outcome(False, steps, epochs, decimal_str(sigma), decimal_str(target), None, tv=tv, tv_error=tv_err,
                  scheme=scheme, kind=target_kind.name)
    return Ctx(claim, sigma, target_kind, tv, tv_err, grid, prec, max_tries, out, say, limit, kind("tv").numerics)


def _upper(ctx: Ctx, forced):
    """The upper side at ctx.sigma: (search, (result, params) or None) by the first search that finds a grid."""
    candidates = [forced] if forced else [s for s in SEARCHES if s.fits(ctx.claim, ctx.sigma, bool(ctx.grid))]
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


def _finish(out: Outcome, claim: Claim, method_json: dict, res, low: dict | None, rows, say,
            kind_upper: dict | None = None) -> Outcome:
    """Record the lower side and build the predicate of a successful upper bound."""
    out.predicate = pred_.build(claim, method_json, res, low, rows, out.tv, out.tv_error, missing=out.rows_missing,
                                kind_upper=kind_upper)
    if low is not None:
        out.two_sided, out.sigma_low, out.tv_lower = True, low["sigma_low"], low["tv_lower"]
        out.bound_lower = low.get("bound_lower")
    say("done", 1.0)
    return out


def _lower(ctx: Ctx, search, meth, sigmas=None) -> dict | None:
    """The lower side: sigma_low = sigma - k res(sigma) (k = 1, 2), or each of `sigmas`, certified to miss the
    target, or None."""
    claim, out = ctx.claim, ctx.out
    t0 = time.perf_counter()
    for s_low in (sigmas or sigma_lows(ctx.sigma)):
        low_claim = Claim(claim.scheme, claim.steps, claim.epochs, s_low, claim.target, claim.iterations)
        tv_low, err = ctx.kind.numerics(low_claim, s_low) if search.screen_lower else (None, None)
        s_str = decimal_str(s_low)
        if tv_low is not None and tv_low <= float(claim.target):      # thin margins: TargetKind.lower_margin
            what = "TV" if ctx.kind.name == "tv" else "value"
            out.lower_tries.append({"sigma_low": s_str, "skipped": f"numerical {what} {tv_low:.12g} does not exceed "
                                    "the target"})
            continue
        for lower_method, prove in lower_order(ctx, search, low_claim, s_low, tv_low, err, meth):
            found = prove(ctx, low_claim, s_low, tv_low, err, meth)
            if found is not None:
                out.lower_seconds = round(time.perf_counter() - t0, 3)
                L, lm = found
                out.lower_result = L
                low = {"sigma_low": s_str, "method": lower_method.to_json(lm, claim), "enclosures": L.enclosures}
                if ctx.kind.name == "tv":
                    return {**low, "tv_lower": tv_lower_str(L.exact, claim.target)}
                return {**low, "tv_lower": L.tv_lower,      # TV at sigma_low >= it; the kind's value below
                        "bound_lower": tv_lower_str(ctx.kind.lower_value(L), claim.target)}
    out.lower_seconds = round(time.perf_counter() - t0, 3)
    return None
