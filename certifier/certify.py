"""Orchestration of `sigmacert certify`: exact sigma, method and grid choice, the bounds, the predicate.

The certified statements are only what the rigorous bounds prove (certifier.bounds.upper_v1 /
upper_v2 for the upper bound, certifier.bounds.lower_v1 / lower_v2 for the lower, certifier.bounds.privacy for
the rows); the exact-TV numerics only choose grids and are recorded under `numerics`.

Method choice (the table SEARCHES, in order of preference): gaussian-shift when M = 1; upper v1
(uniform lattice, Appendix C.5 as in the paper) where its fixed truncation at 8M is harmless and the
cost model finds it cheaper; otherwise upper v2 (multiscale lattice with moves, docs/method-v2.md),
which covers heavy tails, one epoch, large lambda and the fixed-bins scheme. The methods themselves
are certifier.methods; the functional and its numerics are the target kind (certifier.targets).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from flint import fmpq

from certifier import methods as mt
from certifier.bounds.fixedpoint import round_down_sig
from certifier.bounds.grids_band import BAND_PREC, choose_band_grid, choose_lower_band_grid
from certifier.bounds.grids_v1 import budget, choose_grid, choose_lower_grid, truncation_loss
from certifier.bounds.grids_v2 import choose_v2, idle_seconds
from certifier.bounds.result import UpperResult
from certifier.bounds.two_scale_plan import with_two_scale
from certifier.certificate import predicate as pred_
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.domain import check_block, check_sigma
from certifier.errors import CannotCertifyError, NumericsUnreliableError, ParameterError
from certifier.params import decimal_str, parse_decimal
from certifier.resolution import round_up, sigma_resolution, step_up
from certifier.targets import TargetKind, kind, of_kind

SAFETY = (0.6, 0.3, 0.12)          # share of the margin the grid may lose, per try
MAX_PREDICTED_SECONDS = 3600.0     # refuse automatic grids predicted to run longer than this
STEP_SECONDS = 300.0               # automatic sigma: a thinner margin than this buys goes to the next sigma step
LOWER_SAFETY = (0.8, 0.45, 0.2)    # share of TV(sigma_low) - target the lower side may lose, per try
V2_LOWER_LOSS_RATIO = 2.5          # measured (lower-side loss) / (upper-side loss) on the same grid
V2_CEILING = 1e-6                  # method v2 may use margins up to this (v1: 1e-7)
KIND_UPPER_K_SCALE = 3.0         # a kind's v2 k_scale where no calibration can read it (stages' measure)
UPPER_V1_CEILING = 1e-7            # upper v1 spends at most this of its margin (the rows read its b_k) ...
UPPER_V1_WIDE_CEILING = 2e-7       # ... or this, where the grid at the first is predicted slower than WIDE_SECONDS
WIDE_SECONDS = 60.0
LOWER_V1_CEILING = 2e-7            # lower v1: its loss model is within 5 % at the Table 4 cells (docs/coverage.md)
V2_SWITCH_SECONDS = 60.0           # auto, a TV claim: a v1 grid predicted slower than this is compared with v2's
V2_GAIN = 0.4                      # ... and v2 goes first where predicted at most this share of it, calibration in
V2_CALIBRATION = (1.125, 1.5)      # v2's predicted time times this (upper, lower): its coarse calibration runs
BAND_SWITCH_SECONDS = 60.0         # a v1 grid predicted slower than this is compared with a banded one
BAND_GAIN = 0.5                    # ... and replaced when the band is predicted at most this share of its time


@dataclass
class Outcome:
    """The result of `certify`: success iff the rigorous bound is <= the target."""
    success: bool
    steps: int
    epochs: int
    sigma: str
    target: str
    bound: str | None
    tries: list = field(default_factory=list)
    predicate: dict | None = None
    tv: float | None = None
    tv_error: float | None = None
    two_sided: bool = False
    sigma_low: str | None = None      # certified to miss the target (two-sided only)
    tv_lower: str | None = None
    lower_tries: list = field(default_factory=list)
    lower_seconds: float | None = None
    privacy_seconds: float | None = None
    privacy: dict | None = None
    tpr: dict | None = None
    scheme: str = RANDOM_ALLOCATION
    method: str | None = None         # the upper bound's method, e.g. 'lemma-c5-rounding v2'
    k_scale: float = 1.0              # method v2: the calibrated factor of the loss model
    y_scale: float = 1.0              # method v2, a kind: step (i)'s own calibrated factor (on top of k_scale)
    need_eps: float = 0.0             # method v2: estimated eps(1e-6), the range the rows need
    kind: str = "tv"                  # the target kind (certifier.targets)
    law: object = None                # the upper bound's rounded law of Lambda (bounds.privacy.RoundedLaw)
    rows_missing: dict | None = None  # rows that could not be certified: {"privacy"|"tpr": {key: reason}}
    sigma_steps: int = 0              # automatic sigma: resolution steps taken above the exact sigma
    bound_lower: str | None = None    # a kind other than tv: its certified lower value at sigma_low
    stages: list | None = None        # a run in stages: [[M_s, E_s], ...] (steps None, epochs the total)
    lower_result: object = None       # the lower side's LowerResult (its pmfs: an audit's interval end)


def progress_say(progress, t_start):
    report = progress or (lambda stage, pct, el: None)
    return lambda stage, frac: report(stage, 100.0 * frac, time.perf_counter() - t_start)


@dataclass(frozen=True)
class Search:
    """How certify finds a grid for one upper method: when auto picks it, how it proves the target,
    how it derives the rows, and which lower methods to try after it (in order)."""
    method: mt.BoundMethod
    alias: str | None                  # the --method name that forces it
    fits: object                       # (claim, sigma, user_grid) -> bool: auto may pick it
    prove: object                      # (Ctx) -> (UpperResult, params) or None
    rows: object                       # (Ctx, result, params) -> (privacy, tpr) or None
    rows_one_sided: bool               # the rows come with a one-sided certificate too
    lowers: tuple                      # (lower method, its search) to try at each sigma_low, in order
    screen_lower: bool = True          # skip a sigma_low whose numerical value does not miss the target
    grid_search: bool = True           # its grid follows the margin (no margin: no grid can decide it)


@dataclass
class Ctx:
    """What one certify call knows: the claim, its target kind, numerics, options, the record."""
    claim: Claim
    sigma: fmpq
    kind: TargetKind
    tv: float | None
    tv_err: float | None
    grid: dict
    prec: int | None
    max_tries: int
    out: Outcome
    say: object
    limit: float = MAX_PREDICTED_SECONDS   # refuse grids predicted to take longer


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
    forced = _forced(method, scheme)
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


def lower_at(claim: Claim, target_kind: TargetKind, search: Search, meth, *, progress=None):
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
    return Ctx(claim, sigma, target_kind, tv, tv_err, grid, prec, max_tries, out, say, limit)


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
    margin = _upper_margin(ctx)
    if ctx.limit < MAX_PREDICTED_SECONDS and candidates[0].grid_search and margin is not None and margin <= 0:
        raise CannotCertifyError(f"the margin target - TV - error at sigma {decimal_str(ctx.sigma)} is "
                                 f"{margin:.3g}: no grid can decide it")
    strict = forced is not None or bool(ctx.grid)
    if not strict:
        candidates = _faster_first(ctx, candidates)
    for k, search in enumerate(candidates):
        try:
            return search, search.prove(ctx)
        except CannotCertifyError as err:
            if strict or k == len(candidates) - 1 or _step_instead(ctx, err, candidates[k + 1]):
                raise
            v = search.method.version                 # auto: this grid model found nothing; the next covers more
            ctx.out.tries.append({"try": 0, "method": v, "skipped": f"method v{v}: {err}"})
    raise AssertionError("the last search either returns or raises")


def _upper_margin(ctx: Ctx) -> float | None:
    """What the upper side's grid may lose, in the planners' TV units (the kind's margin / its loss factor)."""
    m = ctx.kind.upper_margin(ctx.claim.target, ctx.tv, ctx.tv_err)
    return None if m is None else m / ctx.kind.loss_factor


def _lower_margin(ctx: Ctx, low_claim: Claim, value, err) -> float | None:
    """What the lower side's grid may lose, in the planners' TV units (the kind's margin / its loss factor)."""
    m = ctx.kind.lower_margin(low_claim.target, value, err)
    return None if m is None else m / ctx.kind.loss_factor


def _kind_plan(ctx: Ctx, claim: Claim, sigma: fmpq, value, err, upper: bool):
    """(margin, weights) for the v1 planners: a kind with its own loss model (TargetKind.plan_weights,
    grids_v1.KindWeights) spends its own margin; otherwise the margin in TV units and no weights."""
    wts = None
    if ctx.kind.plan_weights is not None and not ctx.grid and value is not None:
        wts = ctx.kind.plan_weights(claim, sigma)
    if wts is None:
        return (_upper_margin(ctx) if upper else _lower_margin(ctx, claim, value, err)), None
    m = ctx.kind.upper_margin(claim.target, value, err) if upper else ctx.kind.lower_margin(claim.target, value, err)
    return m, wts


def _forced(method: str, scheme: str):
    """The search a --method alias forces (None for auto), checked against the scheme."""
    aliases = {s.alias: s for s in SEARCHES if s.alias}
    if method != "auto" and method not in aliases:
        raise ParameterError(f"method must be auto, {' or '.join(aliases)}")
    forced = aliases.get(method)
    if forced is not None and scheme not in forced.method.schemes:
        raise ParameterError(f"method {method} covers {' and '.join(forced.method.schemes).replace('-', ' ')} only")
    return forced


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


def tv_lower_str(exact: fmpq, target: fmpq) -> str:
    """The recorded tv_lower: `exact` (> target) rounded down to 10 significant digits, or to as many
    more as it takes to stay above the target (two-sided.md §1: tv_lower > target)."""
    for digits in range(10, 60):
        s = round_down_sig(exact, digits)
        if parse_decimal("tv_lower", s) > target:
            return s
    raise NumericsUnreliableError(f"the lower bound {exact} is not above the target {target} at 60 digits")


def _gaussian_shift(ctx: Ctx):
    """M = 1: the pair is a Gaussian shift, certified in closed form (certifier.bounds.gaussian_shift)."""
    from certifier.bounds.gaussian_shift import GaussianShift
    meth, out = GaussianShift(), ctx.out
    t0 = time.perf_counter()
    res = mt.GAUSSIAN_SHIFT_UPPER.run(ctx.claim, ctx.sigma, meth)
    res.timings["total"] = round(time.perf_counter() - t0, 3)
    out.bound = res.bound
    ok = ctx.kind.upper_proves(res, ctx.claim.target)
    out.tries.append({"try": 1, "method": mt.GAUSSIAN_SHIFT_UPPER.name, "bound": res.bound, "certified": ok,
                      "seconds": res.timings["total"]})
    return (res, meth) if ok else None


def _gaussian_shift_rows(ctx: Ctx, res, meth):
    from certifier.bounds.gaussian_shift import rows
    t1 = time.perf_counter()
    out = ctx.out
    out.privacy, out.tpr = found = rows(ctx.claim.pair()[1], ctx.claim.t2_at(ctx.sigma), meth.prec)
    out.privacy_seconds = round(time.perf_counter() - t1, 3)
    return found


def _gaussian_shift_lower(ctx: Ctx, low_claim: Claim, s_low: fmpq, tv_low, err, meth):
    L = mt.GAUSSIAN_SHIFT_LOWER.run(low_claim, s_low, meth)
    ok = ctx.kind.lower_proves(L, low_claim.target)
    ctx.out.lower_tries.append({"sigma_low": decimal_str(s_low), "try": 1, "method": mt.GAUSSIAN_SHIFT_LOWER.name,
                                "tv_lower": L.tv_lower, "certified": bool(ok)})
    return (L, meth) if ok else None


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


def _plan_within(side: Side, k: int):
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


def refuse_if_slow(plan, margin: float, limit: float = MAX_PREDICTED_SECONDS) -> None:
    """Fail fast, before any long computation, when the grid the margin needs is predicted to be too slow."""
    if plan.predicted_seconds > limit:
        raise TooSlowError(f"the margin target - TV = {margin:.3g} needs a grid predicted to take "
                                 f"{plan.predicted_seconds:.0f} s (more than {limit:.0f} s); a slightly "
                                 "larger sigma gives a larger margin", plan.predicted_seconds)


def prove(side: Side, max_tries: int, tries: list, say, single: bool = False):
    """Try grids of decreasing predicted loss until the bound decides the target; (result, method) or None."""
    for k in range(1 if single else max_tries):
        say(f"{side.label} grid (try {k + 1})", 0.0)
        try:
            plan, b = _plan_within(side, k)
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


def _v1_covers(claim: Claim) -> bool:
    """Method v1's pair: random allocation, or fixed bins for a target kind (format v4; a TV claim in fixed
    bins keeps method v2, as format v3 has it)."""
    return claim.scheme == RANDOM_ALLOCATION or bool(claim.kind)


def _pair_sigma(claim: Claim, sigma: fmpq) -> fmpq:
    """The pair's noise multiplier for the planners (floats only): sigma, or about sigma/sqrt(E) in fixed bins."""
    if claim.scheme == RANDOM_ALLOCATION:
        return sigma
    return parse_decimal("sigma", repr(claim.sigma_of_pair(float(sigma))))


def _v1_fits(claim: Claim, sigma: fmpq, user_grid: bool) -> bool:
    """Method v1 applies: its pair is covered, and a user grid or its fixed truncation at 8M costs < 1e-9."""
    if not _v1_covers(claim):
        return False
    return user_grid or truncation_loss(*claim.pair(), float(_pair_sigma(claim, sigma))) < 1e-9


def _band_allowed(ctx: Ctx, claim: Claim) -> bool:
    """Method v1 with a band (docs/method-v2.md §8, format v3): a TV claim in random allocation, automatic grids."""
    return ctx.kind.name == "tv" and claim.scheme == RANDOM_ALLOCATION and not ctx.grid


def _plain_v1(choose, two_scale: bool, M: int, E: int, s_pair, budget: float):
    """The plain v1 plan, with two-scale partial sums where they apply (method-v2.md §9); the one-scale grid
    where the two-scale planner, planning on part of the budget, finds nothing."""
    if not two_scale:
        return choose(budget)
    try:
        return with_two_scale(choose, M, E, s_pair, budget)
    except CannotCertifyError:
        return choose(budget)


def _or_band(plain, banded, band: bool):
    """The plain v1 plan, or the banded one where the plain planner finds nothing or the band is
    predicted at most BAND_GAIN of a plain grid slower than BAND_SWITCH_SECONDS."""
    try:
        plan = plain()
    except CannotCertifyError:
        if not band:
            raise
        return banded()
    if band and plan.predicted_seconds > BAND_SWITCH_SECONDS:
        try:
            other = banded()
        except CannotCertifyError:
            return plan
        if other.predicted_seconds <= BAND_GAIN * plan.predicted_seconds:
            return other
    return plan


def _upper_v1(ctx: Ctx):
    """Method v1 (certifier.bounds.upper_v1); returns (UpperResult, UpperV1) or None."""
    return prove(_v1_side(ctx), ctx.max_tries, ctx.out.tries, ctx.say, single=bool(ctx.grid))


def _v1_side(ctx: Ctx) -> Side:
    """The upper side of method v1: its planner (plain, two-scale or banded), run, proof and record."""
    claim, sigma, out = ctx.claim, ctx.sigma, ctx.out
    h, eta, cap = (ctx.grid.get(k) for k in ("h", "eta", "cap"))
    if not _v1_covers(claim):
        raise CannotCertifyError("method v1 covers random allocation only for a TV target (use method v2)")
    M, E = claim.pair()                                    # fixed bins: the one-epoch pair at sigma/sqrt(E)
    s_pair = _pair_sigma(claim, sigma)
    loss = truncation_loss(M, E, float(s_pair))
    if loss > SAFETY[0] * 1e-7:
        raise CannotCertifyError(f"cannot certify M={claim.steps}, E={claim.epochs} with method v1: its "
                                 f"truncation at 8M deletes about {loss:.2g} at sigma {decimal_str(sigma)} "
                                 "(use method v2)")

    margin, wts = _kind_plan(ctx, claim, sigma, ctx.tv, ctx.tv_err, upper=True)
    held = [wts]

    def row(plan, r):
        mj = plan.method.to_json(claim.steps)
        out.bound = r.bound
        kb = {} if ctx.kind.upper_bound is None else {f"{ctx.kind.name}_bound": ctx.kind.upper_bound(r)}
        if held[0] is not None and kb.get(f"{ctx.kind.name}_bound") is not None and ctx.tv is not None:
            # a kind: the next try plans with the loss this one measured (at (3, 2, eps 1, delta 1e-6) the kink
            # in the tail grid lost 20x the weighted model's prediction, try after try)
            kb["measured_loss"] = float(parse_decimal("bound", kb[f"{ctx.kind.name}_bound"])) - ctx.tv
            k = relearn(1.0, plan, kb["measured_loss"])
            held[0] = replace(held[0], curvature=held[0].curvature * k)
        keys = ("h", "eta", "cap", "tail_start", "tail_step", "lattice_schedule", "prec", "band_low")
        return {"method": 1, **{k: mj[k] for k in keys if k in mj}, "bound": r.bound, **kb}   # bound: the grid's TV
    choose = lambda b: choose_grid(M, E, s_pair, b, h=h, eta=eta, cap=cap, prec=ctx.prec or 100,  # noqa: E731
                                   allow_moved=True, weights=held[0])
    two_scale = not ctx.grid and wts is None and claim.scheme == RANDOM_ALLOCATION   # step (ii), method-v2.md §9
    return Side("upper", margin, SAFETY, UPPER_V1_CEILING,
                lambda b: _or_band(lambda: _plain_v1(choose, two_scale, M, E, s_pair, b),
                                   lambda: choose_band_grid(M, E, s_pair, b, prec=ctx.prec or BAND_PREC),
                                   _band_allowed(ctx, claim) and wts is None),
                lambda m, prog: mt.UPPER_V1.run(claim, sigma, m, progress=prog),
                lambda r: ctx.kind.upper_proves(r, claim.target), row, ctx.limit,
                UPPER_V1_WIDE_CEILING if wts is None else None)


def planned_upper(claim: Claim, sigma: fmpq, budget: float):
    """The upper grid the automatic search plans first at `budget`, without computing a bound: method v1
    (plain, two-scale or banded, as _upper_v1 chooses) where it fits the pair, else method v2 (as the search
    falls through to it) -- what the service's admission prices. CannotCertifyError where neither plans."""
    M, E = claim.pair()
    if _v1_fits(claim, sigma, False):
        s_pair = _pair_sigma(claim, sigma)
        choose = lambda b: choose_grid(M, E, s_pair, b, prec=100, allow_moved=True)  # noqa: E731
        band = not claim.kind and claim.scheme == RANDOM_ALLOCATION
        try:
            return _or_band(lambda: _plain_v1(choose, claim.scheme == RANDOM_ALLOCATION, M, E, s_pair, budget),
                            lambda: choose_band_grid(M, E, s_pair, budget, prec=BAND_PREC), band)
        except (CannotCertifyError, ParameterError):       # no v1 grid (or none within its limits): v2
            pass
    return choose_v2(M, E, claim.t2_at(sigma), budget, None)


def _calibrate(M, E, t2, plan, tv, run, measured_loss, out, say, label,
               per_term: bool = False) -> tuple[float, float, float]:
    """A run on the grid 8x coarser: (k_scale, eps estimate, y_scale) — how far the loss model is off at this
    cell. per_term (a kind with its own weights): a second coarse run with finer steps (i) measures step
    (i)'s share apart (grids_v2.scales_from); otherwise y_scale = 1."""
    from certifier.bounds.grids_v2 import coarse, eps_estimate, finer_steps, k_scale_from, scales_from
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


def _upper_v2(ctx: Ctx):
    """Method v2 (certifier.bounds.upper_v2); returns (UpperResult, UpperV2) or None.

    With the numerical TV known, a calibration run on a grid 8x coarser first measures how far the
    loss model is off at this cell (k_scale) and estimates eps(1e-6) for the privacy rows' range.
    A target kind other than tv plans with its own margin and loss model (_kind_v2) at the pair's TV,
    and its calibration measures the kind's loss (the kind's upper value minus its numerical value).
    """
    claim, sigma, prec, out, say = ctx.claim, ctx.sigma, ctx.prec, ctx.out, ctx.say
    M, E = claim.pair()
    t2 = claim.t2_at(sigma)
    run = lambda m, prog: mt.UPPER_V2.run(claim, sigma, m, progress=prog)
    if ctx.kind.name == "tv":
        margin, tv, wts, need = _upper_margin(ctx), ctx.tv, None, 0.0
        lost = lambda r: float(r.bound) - tv
    else:
        margin, tv, wts, need, lost = _kind_v2(ctx)
    if margin is not None and margin > 0:
        first, guess = _v2_first(ctx, margin, tv, wts, need)
        refuse_if_slow(first, margin, ctx.limit)
        scale, est, out.y_scale = _calibrate(M, E, t2, first, tv, run, lost, out, say, "upper", wts is not None)
        out.k_scale, out.need_eps = scale, max(min(est, guess) + 3 if est < 100 else guess, need)

    def row(plan, r):
        out.bound = r.bound
        kb = {} if ctx.kind.upper_bound is None else {f"{ctx.kind.name}_bound": ctx.kind.upper_bound(r)}
        if ctx.kind.name != "tv":                 # a kind: the next try plans with the loss this one measured
            kb["measured_loss"] = lost(r)
            out.k_scale = relearn(out.k_scale, plan, kb["measured_loss"])
        return {**row_v2(plan, "bound", r.bound), **kb}          # bound: the grid's TV
    side = Side("upper", margin, SAFETY, V2_CEILING,
                lambda b: choose_v2(M, E, t2, b, tv, prec=prec or 100, k_scale=out.k_scale, need_eps=out.need_eps,
                                    weights=wts, y_scale=out.y_scale),
                run, lambda r: ctx.kind.upper_proves(r, claim.target), row, ctx.limit)
    return prove(side, ctx.max_tries, out.tries, say)


def _v2_first(ctx: Ctx, margin: float, tv: float, wts=None, need: float = 0.0):
    """(plan, eps range): method v2's first grid, planned before any calibration, with the rows' eps range guessed
    from the Gaussian pair and from the lognormal tail of the shifted step (heavy tails)."""
    from certifier.bounds.grids_v2 import EPS_CEILING, eps_gaussian, eps_tail
    M, E = ctx.claim.pair()
    t2 = ctx.claim.t2_at(ctx.sigma)
    guess = min(max(2 * eps_gaussian(tv) + 5, eps_tail(M, E, float(t2)) + 3, need), EPS_CEILING)
    return choose_v2(M, E, t2, budget(margin, SAFETY[0], V2_CEILING), tv, prec=ctx.prec or 100, need_eps=guess,
                     weights=wts), guess


def _v2_idle_seconds(ctx: Ctx, margin: float) -> float:
    """Method v2's first grid for a TV claim, predicted on grids_v1's idle core, its calibration run included."""
    return idle_seconds(_v2_first(ctx, margin, ctx.tv)[0].predicted_seconds) * V2_CALIBRATION[0]


def _faster_first(ctx: Ctx, candidates: list) -> list:
    """auto, a TV claim that method v1 fits: v1 first, unless its first grid is predicted slower than
    V2_SWITCH_SECONDS and method v2's first (its calibration included, rescaled to grids_v1's idle core) at most
    V2_GAIN of that -- then v2 first and v1 after it. (With a lattice per level, method-v2.md §10, v2 is the faster
    at large M and E: 102 s (calibration in) against 272 s at (10^6, 10^4, 0.1), sigma 0.70886.)"""
    if ctx.kind.name != "tv" or len(candidates) < 2 or candidates[0].method is not mt.UPPER_V1:
        return candidates
    margin = _upper_margin(ctx)
    if margin is None or margin <= 0:
        return candidates
    try:
        v1 = _plan_within(_v1_side(ctx), 0)[0].predicted_seconds
        if v1 <= V2_SWITCH_SECONDS:
            return candidates
        v2 = _v2_idle_seconds(ctx, margin)
    except (CannotCertifyError, ParameterError):
        return candidates                        # one of them plans nothing: the search order decides
    if v2 > V2_GAIN * v1:
        return candidates
    ctx.out.tries.append({"try": 0, "method": 1, "skipped": f"method v1's first grid is predicted at {v1:.0f} s, "
                          f"method v2's at {v2:.0f} s: v2 first"})
    return [candidates[1], candidates[0], *candidates[2:]]


def _step_instead(ctx: Ctx, err: CannotCertifyError, after) -> bool:
    """An automatic sigma (one resolution step to spare) whose v1 grid is predicted too slow: the next sigma
    step (a larger margin, usually a v1 grid within the limit) rather than method v2 at this sigma, unless v2
    is predicted far faster (_faster_first's rule). At (3, 10^4, 0.999) v1 was predicted at 313 s and v2 at
    254 s: v2 ran at sigma in 289 CPU s and 7 GB, where v1 one step up takes 52 s."""
    if not isinstance(err, TooSlowError) or ctx.limit >= MAX_PREDICTED_SECONDS or after.method is not mt.UPPER_V2:
        return False
    margin = _upper_margin(ctx)
    if ctx.kind.name != "tv" or margin is None or margin <= 0:
        return False
    try:
        v2 = _v2_idle_seconds(ctx, margin)
    except (CannotCertifyError, ParameterError):
        return False
    return v2 > V2_GAIN * err.seconds


def relearn(k_scale: float, plan, measured: float | None) -> float:
    """k_scale for the next try after a try on `plan` lost `measured` (a kind's v2 model can miss a part of
    the loss that the calibration's coarse grid does not show): scaled up by actual / predicted (at most 20x),
    never down."""
    if measured is None or not plan.predicted_loss > 0 or measured <= plan.predicted_loss:
        return k_scale
    return k_scale * min(20.0, measured / plan.predicted_loss)


def _kind_v2(ctx: Ctx):
    """(margin, tv, weights, need_eps, measured loss) for method v2's planner on a kind other than tv: with
    its own loss model (TargetKind.plan_weights) the kind's margin, planned at the pair's TV from the same
    line; otherwise the margin in TV units (/ loss_factor) at the pair's numerical TV. need_eps: the eps
    range its functional reads (ln loss_factor + 3, as for a run in stages). The calibration's loss is the
    kind's upper value minus its numerical value, in the planner's units (a value it cannot read: the
    stages' measured k_scale, KIND_UPPER_K_SCALE)."""
    import math

    k, claim = ctx.kind, ctx.claim
    margin, wts = _kind_plan(ctx, claim, ctx.sigma, ctx.tv, ctx.tv_err, upper=True)
    per = 1.0
    if wts is not None and wts.tv is not None and 0 < wts.tv < 1:
        tv = wts.tv
    else:
        wts, per, margin = None, k.loss_factor, _upper_margin(ctx)
        tv = kind("tv").numerics(claim, ctx.sigma)[0]
        tv = ctx.tv if tv is None else tv
    value = ctx.tv

    def lost(r):
        v = k.upper_bound(r)
        if v is None or value is None:            # no value to measure: the factor measured in stages
            return None
        return (float(parse_decimal("bound", v)) - value) / per
    return margin, tv, wts, math.log(k.loss_factor) + 3.0, lost


def _privacy(ctx: Ctx, res, meth):
    """The certified (eps, delta) and TPR rows from the upper bound's masses b; a row that cannot be
    certified is left out with its reason (out.rows_missing), the others are kept."""
    from certifier.bounds.privacy import privacy_rows_partial
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


def sigma_lows(sigma: fmpq):
    """sigma - res, then sigma - 2 res (res = res(sigma), docs/two-sided.md §1), while positive."""
    res = sigma_resolution(sigma)
    for k in (1, 2):
        if sigma - res * k <= 0:
            return
        yield sigma - res * k


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
        for lower_method, prove in _lower_order(ctx, search, low_claim, s_low, tv_low, err, meth):
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


def _lower_order(ctx: Ctx, search, low_claim, s_low, tv_low, err, meth) -> list:
    """The lower methods to try at s_low, in order: the search's (e.g. lower v1, then v2); for a TV claim that
    method v1 fits, lower v1 is also the fallback after v2, and v2 goes first where lower v1's first grid is
    predicted slower than V2_SWITCH_SECONDS and v2's (its calibration included) at most V2_GAIN of that."""
    lowers = list(search.lowers)
    names = [m.label for m, _ in lowers]
    if ctx.kind.name != "tv" or tv_low is None or not _v1_fits(low_claim, s_low, False):
        return lowers
    if mt.LOWER_V1.label not in names:
        lowers.append((mt.LOWER_V1, _lower_v1))
    if mt.LOWER_V2.label not in names:
        return lowers
    v1_first = sorted(lowers, key=lambda x: x[0] is not mt.LOWER_V1)
    margin = _lower_margin(ctx, low_claim, tv_low, err)
    if margin is None or margin <= 0:
        return v1_first
    try:
        v1 = _plan_within(_lower_v1_side(ctx, low_claim, s_low, tv_low, err, meth), 0)[0].predicted_seconds
        if v1 <= V2_SWITCH_SECONDS:
            return v1_first
        M, E = low_claim.pair()
        v2 = idle_seconds(choose_v2(M, E, low_claim.t2_at(s_low), budget(margin, LOWER_SAFETY[0], V2_CEILING),
                                    tv_low, prec=meth.prec, k_scale=ctx.out.k_scale * V2_LOWER_LOSS_RATIO,
                                    lower=True).predicted_seconds) * V2_CALIBRATION[1]
    except (CannotCertifyError, ParameterError):
        return v1_first
    if v2 > V2_GAIN * v1:
        return v1_first
    ctx.out.lower_tries.append({"sigma_low": decimal_str(s_low), "try": 0, "method": 1, "skipped": f"lower v1's "
                                f"first grid is predicted at {v1:.0f} s, lower v2's at {v2:.0f} s: v2 first"})
    return sorted(lowers, key=lambda x: x[0] is not mt.LOWER_V2)


def _lower_v1(ctx: Ctx, low_claim, s_low, tv_low, err, meth):
    found = prove(_lower_v1_side(ctx, low_claim, s_low, tv_low, err, meth), len(LOWER_SAFETY), ctx.out.lower_tries,
                   ctx.say)
    return None if found is None else (found[0], found[0].method)


def _lower_v1_side(ctx: Ctx, low_claim, s_low, tv_low, err, meth) -> Side:
    """The lower side of method v1 at s_low: its planner (plain, two-scale or banded), run, proof and record."""
    M, E = low_claim.pair()
    margin, wts = _kind_plan(ctx, low_claim, s_low, tv_low, err, upper=False)
    choose = lambda b: choose_lower_grid(M, E, _pair_sigma(low_claim, s_low), b, prec=meth.prec,  # noqa: E731
                                         weights=wts)
    two_scale = wts is None and low_claim.scheme == RANDOM_ALLOCATION    # two-scale (a)-(b), method-v2.md §9
    return Side("lower", margin, LOWER_SAFETY, LOWER_V1_CEILING,
                lambda b: _or_band(lambda: _plain_v1(choose, two_scale, M, E, _pair_sigma(low_claim, s_low), b),
                                   lambda: choose_lower_band_grid(M, E, _pair_sigma(low_claim, s_low), b,
                                                                  prec=max(meth.prec, BAND_PREC)),
                                   _band_allowed(ctx, low_claim) and wts is None),
                lambda m, prog: mt.LOWER_V1.run(low_claim, s_low, m, progress=prog),
                lambda L: ctx.kind.lower_proves(L, low_claim.target),
                lambda plan, L: {"sigma_low": decimal_str(s_low), "method": 1,
                                 **{k: L.method.to_json(M)[k] for k in ("h", "eta", "cap", "lattice_schedule")},
                                 "tv_exact": tv_low, "tv_lower": L.tv_lower, **_kind_lower_row(ctx.kind, L)})


def _kind_lower_row(target_kind: TargetKind, L) -> dict:
    """A lower try's certified value of the kind's functional (dp: the hockey-sticks at eps, tpr: 1 - T(alpha)),
    recorded beside the TV of the processed pair; {} for tv."""
    if target_kind.name == "tv":
        return {}
    v = target_kind.lower_value(L)
    return {f"{target_kind.name}_lower": None if v is None else round_down_sig(v, 12)}


def _lower_v2(ctx: Ctx, low_claim, s_low, tv_low, err, meth):
    M, E = low_claim.pair()
    out, say = ctx.out, ctx.say
    t2 = low_claim.t2_at(s_low)
    kind_claim = replace(low_claim, kind=ctx.claim.kind)   # a kind's lower map trims by the replay's rule
    run = lambda m, prog: mt.LOWER_V2.run(kind_claim, s_low, m, progress=prog)
    margin, wts = _kind_plan(ctx, low_claim, s_low, tv_low, err, upper=False)
    value_low = tv_low
    if wts is not None and wts.tv is not None and 0 < wts.tv < 1:
        tv_low, per = wts.tv, 1.0            # the kind's own loss model, planned at the pair's TV
    else:
        margin, wts, per = _lower_margin(ctx, low_claim, tv_low, err), None, ctx.kind.loss_factor
    scale = out.k_scale * V2_LOWER_LOSS_RATIO
    # the eps range matters to a kind's lower value only: TV's lower side reads no rows (they come from the
    # upper side), and the range would cost it fixed-point bits, k_top and a finer octave 0
    need = out.need_eps if ctx.kind.name != "tv" else 0.0
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
        scale, _, y_low = _calibrate(M, E, t2, first, tv_low, run, lost, out, say, "lower", True)
    else:
        y_low = 1.0
    at = [scale]

    def row(plan, L):
        # the next try plans with the loss this one measured: the coarse calibration misses part of the lower
        # map's loss at heavy tails (its step (a) floors every small step; at (10^7, 10^3, 0.999) the tries lost
        # 3-5x their prediction, y_scale from the calibration included)
        kb = {"measured_loss": lost(L), **_kind_lower_row(ctx.kind, L)}
        at[0] = relearn(at[0], plan, kb["measured_loss"])
        return {"sigma_low": decimal_str(s_low), **row_v2(plan, "tv_lower", L.tv_lower), "tv_exact": value_low, **kb}
    side = Side("lower", margin, LOWER_SAFETY, V2_CEILING,
                lambda b: choose_v2(M, E, t2, b, tv_low, prec=meth.prec, k_scale=at[0], need_eps=need,
                                    weights=wts, y_scale=y_low, lower=True),
                run, lambda L: ctx.kind.lower_proves(L, low_claim.target), row)
    return prove(side, len(LOWER_SAFETY), out.lower_tries, say)


# The upper methods in auto's order of preference, each with the lower methods tried after it.
LOWERS_V2 = ((mt.LOWER_V2, _lower_v2),)
SEARCHES = (
    Search(mt.GAUSSIAN_SHIFT_UPPER, None, lambda c, s, user_grid: c.pair()[0] == 1 and not user_grid,
           _gaussian_shift, _gaussian_shift_rows, True, ((mt.GAUSSIAN_SHIFT_LOWER, _gaussian_shift_lower),),
           screen_lower=False, grid_search=False),
    Search(mt.UPPER_V1, "v1", _v1_fits, _upper_v1, _privacy, False, ((mt.LOWER_V1, _lower_v1),) + LOWERS_V2),
    Search(mt.UPPER_V2, "v2", lambda c, s, user_grid: True, _upper_v2, _privacy, True, LOWERS_V2),
)
