"""Orchestration of `sigmacert certify`: exact sigma, method and grid choice, the bounds, the predicate.

The certified statements are only what the rigorous bounds prove (certifier.bounds.upper_v1 /
upper_v2 for the upper bound, certifier.bounds.lower_v1 / lower_v2 for the lower, certifier.bounds.privacy for
the rows); the exact-TV numerics only choose grids and are recorded under `numerics`.

Method choice: v1 (uniform lattice, Appendix C.5 as in the paper) where its fixed truncation at
8M is harmless and the cost model finds it cheaper; otherwise v2 (multiscale lattice with moves,
docs/method-v2.md), which covers heavy tails, one epoch, large lambda and the fixed-bins scheme.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from flint import fmpq

from certifier.bounds.fixedpoint import round_down_sig
from certifier.bounds.grids_v1 import budget, choose_grid, choose_lower_grid, truncation_loss
from certifier.bounds.grids_v2 import choose_v2
from certifier.certificate import predicate as pred_
from certifier.certificate.claim import RANDOM_ALLOCATION, Claim
from certifier.domain import OutsideDomain, check_cell, check_sigma
from certifier.errors import CannotCertify, NumericsUnreliable, ParameterError
from certifier.params import decimal_str, parse_decimal
from certifier.resolution import issued, round_up, sigma_resolution, step_up

SAFETY = (0.6, 0.3, 0.12)          # share of the margin the grid may lose, per try
SEARCH_RESOLUTION = "1e-6"         # the search's grid; the issued sigma is then rounded up to res(sigma)
MAX_PREDICTED_SECONDS = 3600.0     # refuse automatic grids predicted to run longer than this
STEP_SECONDS = 300.0               # automatic sigma: a thinner margin than this buys goes to the next sigma step
LOWER_SAFETY = (0.8, 0.45, 0.2)    # share of TV(sigma_low) - target the lower side may lose, per try
V2_LOWER_LOSS_RATIO = 2.5          # measured (lower-side loss) / (upper-side loss) on the same grid
V2_CEILING = 1e-6                  # method v2 may use margins up to this (v1: 1e-7)
NEAREST_TARGETS = tuple(fmpq(k, 100) for k in (98, 95, 90, 50))   # tried when the search fails


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
    need_eps: float = 0.0             # method v2: estimated eps(1e-6), the range the rows need
    rows_missing: dict | None = None  # rows that could not be certified: {"privacy"|"tpr": {key: reason}}
    sigma_steps: int = 0              # automatic sigma: resolution steps taken above the exact sigma


def _say(progress, t_start):
    report = progress or (lambda stage, pct, el: None)
    return lambda stage, frac: report(stage, 100.0 * frac, time.perf_counter() - t_start)


def exact_sigma_for(claim_like: Claim, target: fmpq) -> fmpq:
    """The exact sigma on the res(sigma) grid (certifier.resolution) for the claim's scheme (Theorem 4.1,
    numerical; certifier.numerics.schemes); a search that fails because sigma lies below 0.1 is a domain refusal."""
    from certifier.numerics.schemes import exact_sigma
    try:
        found = exact_sigma(claim_like.steps, claim_like.epochs, target, scheme=claim_like.scheme,
                            resolution=SEARCH_RESOLUTION)
    except NumericsUnreliable as err:
        raise OutsideDomain(f"the exact sigma of M={claim_like.steps}, E={claim_like.epochs}, lambda="
                            f"{decimal_str(target)} is outside what the numerics cover ({err}); "
                            f"{_nearest_target(claim_like, target)}") from None
    return round_up(parse_decimal("sigma", found))


def _nearest_target(claim_like: Claim, target: fmpq) -> str:
    """The nearest of a few targets whose exact sigma the numerics find (a few seconds at most): smaller
    ones where sigma is small (large lambda, heavy tails), larger ones where it is huge (tiny lambda)."""
    from certifier.numerics.schemes import exact_sigma
    big = target >= fmpq(1, 2)
    for lam in (NEAREST_TARGETS if big else tuple(target * k for k in (2, 5, 10))):
        if (lam < target) == big and lam < 1:
            try:
                s = exact_sigma(claim_like.steps, claim_like.epochs, lam, scheme=claim_like.scheme)
            except NumericsUnreliable:
                continue
            return f"the nearest target that works is lambda = {decimal_str(lam)} (exact sigma {issued(s)})"
    return ("a smaller target lambda gives a larger sigma" if big else
            "a larger target lambda gives a smaller sigma")


def _numerics(claim: Claim, sigma: fmpq) -> tuple[float | None, float | None]:
    """The exact TV at sigma (FFT route) and its error estimate, or (None, None) if unavailable."""
    from certifier.numerics.exact import exact_tv
    M, E = claim.pair()
    try:
        r = exact_tv(M, E, claim.sigma_of_pair(float(sigma)), check=False)
        return float(r.tv), float(r.error)
    except (NumericsUnreliable, ParameterError, OverflowError):
        return None, None


def _v1_fits(claim: Claim, lam: float, sigma: float) -> bool:
    """Method v1 applies: random allocation and its fixed truncation at 8M costs < 1e-9."""
    if claim.scheme != RANDOM_ALLOCATION:
        return False
    return truncation_loss(claim.steps, claim.epochs, sigma) < 1e-9


def certify(steps: int, epochs: int, target: fmpq, sigma: fmpq | None = None, *, scheme: str = RANDOM_ALLOCATION,
            iterations: int | None = None, h=None, eta=None, cap=None, prec: int | None = None, progress=None,
            max_tries: int = 3, two_sided: bool = False, method: str = "auto") -> Outcome:
    """Find the exact sigma if absent, choose the method and grid, compute the bound; refine and retry if short.

    progress(stage, percent, elapsed_seconds) is called throughout; every try is recorded in
    Outcome.tries. After the upper side succeeds, the certified (eps, delta) and TPR rows are added
    whenever they can be certified, and with two_sided the lower side at sigma - 1e-6 (1e-6, then
    2e-6) when the numerics say it can succeed. method: "auto", "v1" or "v2".
    """
    t_start = time.perf_counter()
    say = _say(progress, t_start)
    check_cell(steps, epochs, target)                 # the stated domain, before any computation
    probe = Claim(scheme, steps, epochs, sigma or fmpq(1), target, iterations)
    if method not in ("auto", "v1", "v2"):
        raise ParameterError("method must be auto, v1 or v2")
    if method == "v1" and scheme != RANDOM_ALLOCATION:
        raise ParameterError("method v1 covers random allocation only")
    given = sigma is not None
    if sigma is None:
        say("exact sigma", 0.0)
        sigma = exact_sigma_for(probe, target)
        say("exact sigma", 1.0)
    check_sigma(probe.sigma_of_pair(float(sigma)), *probe.pair(), target, given)
    user_grid = any(x is not None for x in (h, eta, cap))
    grid = (h, eta, cap, prec, max_tries, method, user_grid)
    spare = 0 if given or user_grid else 1            # automatic sigma: one more resolution step if needed
    earlier: list = []
    while True:
        try:
            claim, out, r, use_v1 = _upper_at(scheme, steps, epochs, target, iterations, sigma, grid, two_sided,
                                              say, STEP_SECONDS if spare else MAX_PREDICTED_SECONDS)
        except CannotCertify as err:
            if not spare:
                raise
            claim, out, r, use_v1 = None, None, None, False
            earlier.append({"try": len(earlier) + 1, "sigma": decimal_str(sigma), "skipped": str(err)})
        if out is not None and (out.success or r is not None or not spare):
            break
        if out is not None:
            earlier += [{"sigma": decimal_str(sigma), **t} for t in out.tries]
        spare, sigma = spare - 1, step_up(sigma)
        say(f"next sigma step {decimal_str(sigma)}", 0.0)
    out.tries, out.sigma_steps = earlier + out.tries, (1 if earlier else 0)
    if isinstance(r, Outcome):                        # M = 1: the closed form did everything
        return r
    if r is None:
        say("done", 1.0)
        return out
    out.success, out.method = True, f"lemma-c5-rounding v{1 if use_v1 else 2}"
    res, meth = r
    rows = None
    if two_sided or not use_v1:
        rows = _privacy(res, meth, out, say)
    low = _lower(claim, sigma, meth, use_v1, out, say) if two_sided else None
    method_json = meth.to_json(claim.steps) if use_v1 else meth.to_json()
    return _finish(out, claim, method_json, res, low, rows, say)


def _upper_at(scheme, steps, epochs, target, iterations, sigma, grid, two_sided, say, limit):
    """The upper side at sigma: (claim, outcome, (result, method) or None, use_v1); M = 1: the Outcome itself."""
    h, eta, cap, prec, max_tries, method, user_grid = grid
    claim = Claim(scheme, steps, epochs, sigma, target, iterations)
    say("exact tv", 0.0)
    tv, tv_err = _numerics(claim, sigma)
    say("exact tv", 1.0)
    out = Outcome(False, steps, epochs, decimal_str(sigma), decimal_str(target), None, tv=tv, tv_error=tv_err,
                  scheme=scheme)
    if method == "auto" and claim.pair()[0] == 1 and not user_grid:
        done = _gaussian_shift(claim, sigma, two_sided, out, say)
        return claim, done, (done if done.success else None), False
    if limit < MAX_PREDICTED_SECONDS and tv is not None and float(target) - tv - (tv_err or 0) <= 0:
        raise CannotCertify(f"the margin target - TV at sigma {decimal_str(sigma)} is {float(target) - tv:.3g}, "
                            f"below the numerics' error {tv_err:.2g}: no grid can decide it")
    use_v1 = method == "v1" or user_grid or (method == "auto" and _v1_fits(claim, float(target), float(sigma)))
    r = None
    if use_v1:
        try:
            r = _upper_v1(claim, sigma, tv, tv_err, h, eta, cap, prec, max_tries, out, say, limit)
        except CannotCertify as err:
            if method == "v1" or user_grid:
                raise
            out.tries.append({"try": 0, "method": 1, "skipped": f"method v1: {err}"})
            use_v1 = False                          # auto: v1's grid model found nothing; v2 covers every cell
    if not use_v1:
        r = _upper_v2(claim, sigma, tv, tv_err, prec, max_tries, out, say, limit)
    return claim, out, r, use_v1


def _finish(out: Outcome, claim: Claim, method_json: dict, res, low: dict | None, rows, say) -> Outcome:
    """Record the lower side and build the predicate of a successful upper bound."""
    out.predicate = pred_.build(claim, method_json, res, low, rows, out.tv, out.tv_error, missing=out.rows_missing)
    if low is not None:
        out.two_sided, out.sigma_low, out.tv_lower = True, low["sigma_low"], low["tv_lower"]
    say("done", 1.0)
    return out


def tv_lower_str(exact: fmpq, target: fmpq) -> str:
    """The recorded tv_lower: `exact` (> target) rounded down to 10 significant digits, or to as many
    more as it takes to stay above the target (two-sided.md §1: tv_lower > target)."""
    for digits in range(10, 60):
        s = round_down_sig(exact, digits)
        if parse_decimal("tv_lower", s) > target:
            return s
    raise NumericsUnreliable(f"the lower bound {exact} is not above the target {target} at 60 digits")


def _gaussian_shift(claim: Claim, sigma: fmpq, two_sided: bool, out: Outcome, say) -> Outcome:
    """M = 1: the pair is a Gaussian shift, certified in closed form (certifier.bounds.gaussian_shift)."""
    from certifier.bounds import gaussian_shift as gs
    meth = gs.GaussianShift()
    E = claim.pair()[1]
    t0 = time.perf_counter()
    res = gs.upper(1, E, claim.t2_at(sigma), meth)
    res.timings["total"] = round(time.perf_counter() - t0, 3)
    out.bound = res.bound
    ok = parse_decimal("bound", res.bound) <= claim.target
    out.tries.append({"try": 1, "method": "gaussian-shift", "bound": res.bound, "certified": ok,
                      "seconds": res.timings["total"]})
    if not ok:
        say("done", 1.0)
        return out
    out.success, out.method = True, "gaussian-shift v1"
    t1 = time.perf_counter()
    rows = gs.rows(E, claim.t2_at(sigma), meth.prec)
    out.privacy, out.tpr = rows
    out.privacy_seconds = round(time.perf_counter() - t1, 3)
    low = None
    if two_sided:
        t2 = time.perf_counter()
        for s_low in _sigma_lows(sigma):
            exact, tv_lower, enc = gs.lower(1, E, claim.t2_at(s_low), meth)
            ok = exact > claim.target
            out.lower_tries.append({"sigma_low": decimal_str(s_low), "try": 1, "method": "gaussian-shift",
                                    "tv_lower": tv_lower, "certified": bool(ok)})
            if ok:
                low = {"sigma_low": decimal_str(s_low), "method": meth.to_json(),
                       "tv_lower": tv_lower_str(exact, claim.target), "enclosures": enc}
                break
        out.lower_seconds = round(time.perf_counter() - t2, 3)
    return _finish(out, claim, meth.to_json(), res, low, rows, say)


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


def _refuse_if_slow(plan, margin: float, limit: float = MAX_PREDICTED_SECONDS) -> None:
    """Fail fast, before any long computation, when the grid the margin needs is predicted to be too slow."""
    if plan.predicted_seconds > limit:
        raise CannotCertify(f"the margin target - TV = {margin:.3g} needs a grid predicted to take "
                            f"{plan.predicted_seconds:.0f} s (more than {limit:.0f} s); a slightly "
                            "larger sigma gives a larger margin")


def _prove(side: Side, max_tries: int, tries: list, say, single: bool = False):
    """Try grids of decreasing predicted loss until the bound decides the target; (result, method) or None."""
    for k in range(1 if single else max_tries):
        b = budget(side.margin, side.safeties[min(k, len(side.safeties) - 1)], side.ceiling)
        say(f"{side.label} grid (try {k + 1})", 0.0)
        try:
            plan = side.plan(b)
            if not single:
                _refuse_if_slow(plan, side.margin or 0.0, side.limit)
        except CannotCertify as err:
            if k == 0 and side.label == "upper":
                raise
            tries.append({"try": k + 1, "skipped": str(err)})
            return None
        t0 = time.perf_counter()
        try:
            res = side.run(plan.method, lambda stage, frac, k=k: say(f"{stage} ({side.label} try {k + 1})", frac))
        except NumericsUnreliable as err:
            tries.append({"try": k + 1, "skipped": f"bound failed: {err}"})
            continue
        ok = bool(side.proves(res))
        tries.append({"try": k + 1, **side.row(plan, res), "budget": b, "predicted_loss": plan.predicted_loss,
                      "seconds": round(time.perf_counter() - t0, 3), "certified": ok})
        if ok:
            return res, plan.method
        if side.margin is not None and side.margin <= 0:
            return None                          # the numerics say no grid can decide it: do not grind
    return None


def _upper_v1(claim, sigma, tv, tv_err, h, eta, cap, prec, max_tries, out, say, limit=MAX_PREDICTED_SECONDS):
    """Method v1 (certifier.bounds.upper_v1); returns (BoundResult, Method) or None."""
    from certifier.bounds.upper_v1 import rounding_bound
    loss = truncation_loss(claim.steps, claim.epochs, float(sigma))
    if loss > SAFETY[0] * 1e-7:
        raise CannotCertify(f"cannot certify M={claim.steps}, E={claim.epochs} with method v1: its truncation at 8M "
                            f"deletes about {loss:.2g} at sigma {decimal_str(sigma)} (use method v2)")
    user_grid = any(x is not None for x in (h, eta, cap))

    def row(plan, r):
        mj = plan.method.to_json(claim.steps)
        out.bound = r.bound
        return {"method": 1, **{k: mj[k] for k in ("h", "eta", "cap", "tail_start", "tail_step", "lattice_schedule",
                                                   "prec")}, "bound": r.bound}
    side = Side("upper", None if tv is None else float(claim.target) - tv - (tv_err or 0), SAFETY, 1e-7,
                lambda b: choose_grid(claim.steps, claim.epochs, sigma, b, h=h, eta=eta, cap=cap, prec=prec or 100),
                lambda m, prog: rounding_bound(claim.steps, claim.epochs, sigma, m, progress=prog),
                lambda r: parse_decimal("bound", r.bound) <= claim.target, row, limit)
    return _prove(side, max_tries, out.tries, say, single=user_grid)


def _calibrate(M, E, t2, plan, tv, run, measured_loss, out, say, label) -> tuple[float, float]:
    """A run on the grid 8x coarser: (k_scale, eps estimate) — how far the loss model is off at this cell."""
    from certifier.bounds.grids_v2 import coarse, eps_estimate, k_scale_from
    cal = coarse(plan, M, E, t2, tv, drop=3)
    t0 = time.perf_counter()
    res = run(cal.method, lambda stage, frac: say(f"calibration ({label}) {stage}", frac))
    scale = k_scale_from(cal, measured_loss(res))
    eps = eps_estimate(res.b, cal.method.eta, cal.method.fixed_point_bits) if hasattr(res, "b") else None
    out.tries.append({"try": 0, "calibration": label, "mantissa_bits": cal.method.mantissa_bits,
                      "eta": decimal_str(cal.method.eta), "k_scale": round(scale, 3), "eps_estimate": eps,
                      "seconds": round(time.perf_counter() - t0, 3)})
    return scale, eps


def _row_v2(plan, bound_key, value):
    mj = plan.method.to_json()
    return {"method": 2, **{k: mj[k] for k in ("h", "mantissa_bits", "eta", "cap", "top_octave")},
            "predicted_seconds": round(plan.predicted_seconds, 2),
            "predicted_steps": {k: round(v, 2) for k, v in plan.detail["seconds"].items()}, bound_key: value}


def _upper_v2(claim, sigma, tv, tv_err, prec, max_tries, out, say, limit=MAX_PREDICTED_SECONDS):
    """Method v2 (certifier.bounds.upper_v2); returns (BoundResultV2, MethodV2) or None.

    With the numerical TV known, a calibration run on a grid 8x coarser first measures how far the
    loss model is off at this cell (k_scale) and estimates eps(1e-6) for the privacy rows' range.
    """
    from certifier.bounds.grids_v2 import EPS_CEILING, eps_gaussian, eps_tail
    from certifier.bounds.upper_v2 import rounding_bound_v2
    M, E = claim.pair()
    t2 = claim.t2_at(sigma)
    run = lambda m, prog: rounding_bound_v2(M, E, t2, m, progress=prog)
    margin = None if tv is None else float(claim.target) - tv - (tv_err or 0)
    if margin is not None and margin > 0:
        guess = min(max(2 * eps_gaussian(tv) + 5, eps_tail(M, E, float(t2)) + 3), EPS_CEILING)   # heavy tails
        first = choose_v2(M, E, t2, budget(margin, SAFETY[0], V2_CEILING), tv, prec=prec or 100, need_eps=guess)
        _refuse_if_slow(first, margin, limit)
        scale, est = _calibrate(M, E, t2, first, tv, run, lambda r: float(r.bound) - tv, out, say, "upper")
        out.k_scale, out.need_eps = scale, (min(est, guess) + 3 if est < 100 else guess)

    def row(plan, r):
        out.bound = r.bound
        return _row_v2(plan, "bound", r.bound)
    side = Side("upper", margin, SAFETY, V2_CEILING,
                lambda b: choose_v2(M, E, t2, b, tv, prec=prec or 100, k_scale=out.k_scale, need_eps=out.need_eps),
                run, lambda r: parse_decimal("bound", r.bound) <= claim.target, row, limit)
    return _prove(side, max_tries, out.tries, say)


def _privacy(res, meth, out, say):
    """The certified (eps, delta) and TPR rows from the upper bound's masses b; a row that cannot be
    certified is left out with its reason (out.rows_missing), the others are kept."""
    from certifier.bounds.privacy import privacy_rows_partial
    t1 = time.perf_counter()
    say("privacy rows", 0.0)
    priv, tpr, missing = privacy_rows_partial(res.b, meth.eta, meth.fixed_point_bits, meth.prec)
    for kind, why in missing.items():
        for key, reason in why.items():
            out.lower_tries.append({"try": 0, "skipped": f"{kind} row {key}: {reason}"})
    out.rows_missing = missing or None
    say("privacy rows", 1.0)
    out.privacy_seconds = round(time.perf_counter() - t1, 3)
    out.privacy, out.tpr = priv, tpr
    return priv, tpr


def _sigma_lows(sigma: fmpq):
    """sigma - res, then sigma - 2 res (res = res(sigma), docs/two-sided.md §1), while positive."""
    res = sigma_resolution(sigma)
    for k in (1, 2):
        if sigma - res * k <= 0:
            return
        yield sigma - res * k


def _lower(claim: Claim, sigma: fmpq, meth, use_v1: bool, out: Outcome, say) -> dict | None:
    """The lower side: sigma_low = sigma - k 1e-6 (k = 1, 2) certified to miss the target, or None."""
    t0 = time.perf_counter()
    for s_low in _sigma_lows(sigma):
        low_claim = Claim(claim.scheme, claim.steps, claim.epochs, s_low, claim.target, claim.iterations)
        tv_low, err = _numerics(low_claim, s_low)
        s_str = decimal_str(s_low)
        if tv_low is not None and tv_low - err <= float(claim.target):
            out.lower_tries.append({"sigma_low": s_str, "skipped": f"numerical TV {tv_low:.12g} does not exceed "
                                    "the target"})
            continue
        found, version = None, 0
        for v, prove in ((1, _lower_v1), (2, _lower_v2)) if use_v1 else ((2, _lower_v2),):
            found, version = prove(low_claim, s_low, tv_low, err, meth, out, say), v   # v1 first, then v2
            if found is not None:
                break
        if found is not None:
            out.lower_seconds = round(time.perf_counter() - t0, 3)
            L, lm = found
            if version == 1:
                method_json = lm.to_json(claim.steps)
            else:
                from certifier.bounds.lower_v2 import METHOD_NAME, METHOD_VERSION
                method_json = {**lm.to_json(), "name": METHOD_NAME, "version": METHOD_VERSION}
                method_json.pop("trim_shift")
            return {"sigma_low": s_str, "method": method_json, "tv_lower": tv_lower_str(L.exact, claim.target),
                    "enclosures": L.enclosures}
    out.lower_seconds = round(time.perf_counter() - t0, 3)
    return None


def _lower_v1(low_claim, s_low, tv_low, err, meth, out, say):
    from certifier.bounds.lower_v1 import lower_bound
    M, E = low_claim.pair()
    side = Side("lower", None if tv_low is None else tv_low - err - float(low_claim.target), LOWER_SAFETY, 1e-7,
                lambda b: choose_lower_grid(M, E, s_low, b, prec=meth.prec),
                lambda m, prog: lower_bound(M, E, s_low, m, progress=prog),
                lambda L: L.exact > low_claim.target,
                lambda plan, L: {"sigma_low": decimal_str(s_low), "method": 1,
                                 **{k: L.method.to_json(M)[k] for k in ("h", "eta", "cap", "lattice_schedule")},
                                 "tv_exact": tv_low, "tv_lower": L.tv_lower})
    found = _prove(side, len(LOWER_SAFETY), out.lower_tries, say)
    return None if found is None else (found[0], found[0].method)


def _lower_v2(low_claim, s_low, tv_low, err, meth, out, say):
    from certifier.bounds.lower_v2 import lower_bound_v2
    M, E = low_claim.pair()
    t2 = low_claim.t2_at(s_low)
    run = lambda m, prog: lower_bound_v2(M, E, t2, m, progress=prog)
    margin = None if tv_low is None else tv_low - err - float(low_claim.target)
    scale = out.k_scale * V2_LOWER_LOSS_RATIO
    if margin is not None and margin > 0:
        try:
            first = choose_v2(M, E, t2, budget(margin, LOWER_SAFETY[0], V2_CEILING), tv_low, prec=meth.prec,
                              k_scale=scale, need_eps=out.need_eps)
        except CannotCertify as err:
            out.lower_tries.append({"sigma_low": decimal_str(s_low), "try": 1, "method": 2, "skipped": str(err)})
            return None
        scale, _ = _calibrate(M, E, t2, first, tv_low, run, lambda L: tv_low - float(L.exact), out, say, "lower")
    side = Side("lower", margin, LOWER_SAFETY, V2_CEILING,
                lambda b: choose_v2(M, E, t2, b, tv_low, prec=meth.prec, k_scale=scale, need_eps=out.need_eps),
                run, lambda L: L.exact > low_claim.target,
                lambda plan, L: {"sigma_low": decimal_str(s_low), **_row_v2(plan, "tv_lower", L.tv_lower),
                                 "tv_exact": tv_low})
    return _prove(side, len(LOWER_SAFETY), out.lower_tries, say)
