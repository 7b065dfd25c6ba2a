"""Orchestration of `sigmacert certify`: exact sigma, grid choice, the Lemma C.5 bound, the predicate.

The certified statement is only what rounding.rounding_bound proves (1 - O >= TV,
a rigorous ball computation); everything from the exact-TV numerics is used to
choose grids and is recorded under `numerics` as informative.
"""
from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field

import flint
from flint import fmpq

from certifier import __version__
from certifier.errors import CannotCertify
from certifier.grids import budget_for, budget_for_lower, choose_grid, choose_lower_grid, truncation_loss
from certifier.params import decimal_str, parse_decimal
from certifier.rounding import rounding_bound

SAFETY = (0.6, 0.3, 0.12)       # share of the margin the grid may lose, per try
SEARCH_RESOLUTION = "1e-6"
MAX_PREDICTED_SECONDS = 3600.0  # refuse automatic grids predicted to run longer than this
LOWER_SAFETY = (0.8, 0.45, 0.2)  # share of TV(sigma_low) - target the lower side may lose, per try
LOWER_STEPS = 2                  # sigma_low = sigma - k * resolution for k = 1, ..., LOWER_STEPS
LOWER_MAX_PREDICTED_SECONDS = 600.0
STATEMENT_TEXT = ("TV(P_M^E, Q_M^E) <= target, so every membership-inference test has accuracy "
                  "<= 1/2 + target/2")


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


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def claim_of(steps: int, epochs: int, sigma: str, target: str) -> dict:
    """The `claim` object of docs/certificate.md §3."""
    return {"mechanism": "dp-sgd/random-allocation", "adjacency": "zero-out", "steps": steps,
            "epochs": epochs, "sigma": sigma, "target": target, "statement": STATEMENT_TEXT}


def _check_truncation(steps: int, epochs: int, lam: float, sigma: fmpq | None) -> None:
    """Refuse at once when step (ii)'s truncation at 8M alone must exceed every budget.

    Without sigma we test at the closed-form sigma, which is above the exact sigma
    (Corollary 3.4), so the tail there is lighter than at any sigma we could certify.
    """
    from certifier.closed_form import closed_form_sigma
    s = float(sigma) if sigma is not None else closed_form_sigma(steps, epochs, lam)
    loss = truncation_loss(steps, epochs, s)
    if loss > SAFETY[0] * 1e-7:
        where = f"sigma {decimal_str(sigma)}" if sigma is not None else f"the closed-form sigma {s:.6f}"
        raise CannotCertify(f"cannot certify M={steps}, E={epochs}: the truncation of step (ii) at 8M alone deletes "
                         f"about {loss:.2g} of mass at {where} (Y is too heavy-tailed; method v1 needs larger M "
                         "or sigma)")


def certify(steps: int, epochs: int, target: fmpq, sigma: fmpq | None = None, *, h=None, eta=None,
            cap=None, prec: int | None = None, progress=None, max_tries: int = 3,
            two_sided: bool = False) -> Outcome:
    """Find the exact sigma if absent, choose a grid, compute the bound; refine and retry if short.

    progress(stage, percent, elapsed_seconds) is called throughout. Every try is
    recorded in Outcome.tries (grid, predicted loss, bound, seconds). With two_sided, after
    the upper side succeeds, `certify_lower` proves that sigma - k * resolution (k = 1, 2)
    misses the target and the predicate becomes v2 (docs/two-sided.md) with the certified
    privacy and TPR rows; if no sigma_low can be certified the predicate stays v1.
    """
    t_start = time.perf_counter()
    report = progress or (lambda stage, pct, el: None)
    say = lambda stage, frac: report(stage, 100.0 * frac, time.perf_counter() - t_start)  # noqa: E731
    lam = float(target)
    _check_truncation(steps, epochs, lam, sigma)  # fail fast, before any long search
    if sigma is None:
        from certifier.exact import exact_sigma
        say("exact sigma", 0.0)
        sigma = parse_decimal("sigma", exact_sigma(steps, epochs, target, resolution=SEARCH_RESOLUTION))
        say("exact sigma", 1.0)
    sigma_s, target_s = decimal_str(sigma), decimal_str(target)
    tv = tv_err = None
    say("exact tv", 0.0)
    try:
        from certifier.exact import exact_tv
        res = exact_tv(steps, epochs, float(sigma), check=False)  # FFT route: enough for a margin
        tv, tv_err = float(res.tv), float(res.error)
    except (ImportError, ArithmeticError, ValueError, OverflowError):
        tv = tv_err = None  # numerics unavailable: the grid model falls back to a default budget
    say("exact tv", 1.0)
    out = Outcome(False, steps, epochs, sigma_s, target_s, None, tv=tv, tv_error=tv_err)
    user_grid = any(x is not None for x in (h, eta, cap))
    n_tries = 1 if user_grid else max_tries
    margin_ok = tv is None or lam - tv - (tv_err or 0) > 0
    for k in range(n_tries):
        budget = budget_for(lam, tv, tv_err or 0.0, SAFETY[min(k, len(SAFETY) - 1)])
        say(f"grid (try {k + 1})", 0.0)
        try:
            plan = choose_grid(steps, epochs, sigma, budget, h=h, eta=eta, cap=cap, prec=prec or 100)
            if plan.predicted_seconds > MAX_PREDICTED_SECONDS and not user_grid:
                raise CannotCertify(f"the margin target - TV = {lam - (tv or 0):.3g} needs a grid predicted to "
                                 f"take {plan.predicted_seconds:.0f} s; pass --h/--eta/--cap to force one")
        except ValueError as err:  # includes ParameterError (grid too fine)
            if k == 0:
                raise
            out.tries.append({"try": k + 1, "skipped": str(err)})
            break
        t0 = time.perf_counter()
        r = rounding_bound(steps, epochs, sigma, plan.method,
                           progress=lambda stage, frac, k=k: say(f"{stage} (try {k + 1})", frac))
        secs = time.perf_counter() - t0
        ok = parse_decimal("bound", r.bound) <= target
        mj = plan.method.to_json(steps)
        out.tries.append({"try": k + 1, "h": mj["h"], "eta": mj["eta"], "cap": mj["cap"],
                          "tail_start": mj["tail_start"], "tail_step": mj["tail_step"],
                          "lattice_schedule": mj["lattice_schedule"], "prec": mj["prec"],
                          "budget": budget, "predicted_loss": plan.predicted_loss,
                          "bound": r.bound, "seconds": round(secs, 3), "certified": ok})
        out.bound = r.bound
        if ok:
            out.success = True
            out.predicate = build_predicate(steps, epochs, sigma_s, target_s, mj, r, tv, tv_err, lam,
                                            time.perf_counter() - t_start)
            if two_sided:
                _two_sided(out, r, plan.method, sigma, target, prec or 100, say)
            break
        if not margin_ok:
            break  # exact TV is above the target: no grid can certify; do not grind
    say("done", 1.0)
    return out


def _two_sided(out: Outcome, r, method, sigma: fmpq, target: fmpq, prec: int, say) -> None:
    """Add the lower side, privacy and TPR rows to a successful one-sided outcome (in place)."""
    from certifier.privacy import privacy_rows
    t0 = time.perf_counter()
    low = certify_lower(out.steps, out.epochs, target, sigma, prec=prec, say=say)
    out.lower_tries = low["tries"]
    out.lower_seconds = round(time.perf_counter() - t0, 3)   # lower side incl. its numerics
    if low["result"] is None:
        return
    t1 = time.perf_counter()
    L = low["result"]
    say("privacy rows", 0.0)
    try:
        priv, tpr = privacy_rows(r.b, method.eta, method.fixed_point_bits, method.prec)
    except ArithmeticError as err:                        # no certified row: stay one-sided (v1)
        out.lower_tries.append({"sigma_low": low["sigma_low"], "try": 0, "skipped": f"privacy rows: {err}"})
        return
    say("privacy rows", 1.0)
    out.privacy_seconds = round(time.perf_counter() - t1, 3)
    out.two_sided, out.sigma_low, out.tv_lower = True, low["sigma_low"], L.tv_lower
    out.privacy, out.tpr = priv, tpr
    out.predicate["lower"] = {"sigma_low": low["sigma_low"], "target": out.target,
                              "method": L.method.to_json(out.steps), "tv_lower": L.tv_lower,
                              "enclosures": L.enclosures}
    out.predicate["privacy"] = priv
    out.predicate["tpr"] = tpr


def certify_lower(steps: int, epochs: int, target: fmpq, sigma_high: fmpq, *, prec: int = 100,
                  resolution: str = SEARCH_RESOLUTION, say=None) -> dict:
    """Prove that sigma_low = sigma_high - k * resolution misses the target (TV > target), k = 1, 2.

    Returns {"result": LowerResult or None, "sigma_low": str or None, "tries": [...]}. The exact-TV
    numerics at sigma_low only choose the grid (budget = a share of TV - target); the statement
    is the exact rational lower bound of certifier.lower.
    """
    from certifier.exact import exact_tv
    from certifier.lower import lower_bound
    say = say or (lambda stage, frac: None)
    lam, res = float(target), parse_decimal("resolution", resolution)
    tries = []
    for k in range(1, LOWER_STEPS + 1):
        s_low = sigma_high - res * k
        s_str = decimal_str(s_low)
        if s_low <= 0:
            break
        try:
            e = exact_tv(steps, epochs, float(s_low), check=False)
            tv_low, err = float(e.tv), float(e.error)
        except (ImportError, ArithmeticError, ValueError, OverflowError):
            tv_low, err = None, 0.0
        if tv_low is not None and tv_low - err <= lam:
            tries.append({"sigma_low": s_str, "skipped": f"numerical TV {tv_low:.12g} does not exceed the target"})
            continue
        for j, safety in enumerate(LOWER_SAFETY):
            budget = budget_for_lower(lam, tv_low, err, safety)
            try:
                plan = choose_lower_grid(steps, epochs, s_low, budget, prec=prec)
            except ValueError as err_:
                tries.append({"sigma_low": s_str, "try": j + 1, "skipped": str(err_)})
                break
            if plan.predicted_seconds > LOWER_MAX_PREDICTED_SECONDS:
                tries.append({"sigma_low": s_str, "try": j + 1, "skipped":
                              f"grid predicted to take {plan.predicted_seconds:.0f} s"})
                break
            t0 = time.perf_counter()
            try:
                L = lower_bound(steps, epochs, s_low, plan.method,
                                progress=lambda stage, frac, s=s_str: say(f"{stage} (sigma_low {s})", frac))
            except (ArithmeticError, ValueError) as err_:   # e.g. disjoint supports on a coarse grid
                tries.append({"sigma_low": s_str, "try": j + 1, "skipped": f"lower bound failed: {err_}"})
                continue
            ok = L.exact > target
            mj = L.method.to_json(steps)
            tries.append({"sigma_low": s_str, "try": j + 1, "h": mj["h"], "eta": mj["eta"], "cap": mj["cap"],
                          "lattice_schedule": mj["lattice_schedule"], "budget": budget,
                          "predicted_loss": plan.predicted_loss, "tv_exact": tv_low,
                          "tv_lower": L.tv_lower, "seconds": round(time.perf_counter() - t0, 3),
                          "certified": bool(ok)})
            if ok:
                return {"result": L, "sigma_low": s_str, "tries": tries}
    return {"result": None, "sigma_low": None, "tries": tries}


def build_predicate(steps, epochs, sigma_s, target_s, method_json, r, tv, tv_err, lam, total) -> dict:
    """The predicate of docs/certificate.md §3 from a successful bound."""
    from certifier.closed_form import closed_form_sigma
    try:
        cfs = f"{closed_form_sigma(steps, epochs, lam):.6f}"
    except (ValueError, ArithmeticError, OverflowError):
        cfs = "n/a"
    timings = {k: r.timings[k] for k in ("step_i", "step_ii", "step_iii", "step_iv", "total")}
    return {
        "claim": claim_of(steps, epochs, sigma_s, target_s),
        "method": method_json,
        "enclosures": r.enclosures,
        "bound": r.bound,
        "numerics": {"tv_exact": "n/a" if tv is None else f"{tv:.12g}",
                     "tv_error": "n/a" if tv_err is None else f"{tv_err:.3g}",
                     "closed_form_sigma": cfs, "search_resolution": SEARCH_RESOLUTION},
        "software": {"sigmacert": __version__, "python-flint": flint.__version__,
                     "flint": flint.__FLINT_VERSION__},
        "issued_at": _now(),
        "timings": timings,
    }
