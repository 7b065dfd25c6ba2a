"""`certify` for a run in stages (one shared sigma): method v2 on both sides, the format-v5 predicate.

The upper side is certifier.bounds.stages_v2 (step (iv) multiplies the stages' log-grid polynomials),
the lower side certifier.bounds.stages_lower (step (d) multiplies the stages' bucket pmfs); both run
on ONE method-v2 grid, planned here from the stages' numerics: a plan of certifier.bounds.grids_v2 per
distinct M_s for the run's total epochs, merged into the finest grid covering every plan (smallest h and
eta, widest octaves, log range and k_top). Retries shrink the budget as for one block
(certifier.certify._prove). The exact TV and the exact shared sigma are certifier.numerics.stages'
(numerics only: they choose grids). The rows come from the upper side's b_k (Lemma C.5 functionals);
a row that cannot be certified is left out with its reason.
"""
from __future__ import annotations

import math
import time

from flint import fmpq

from certifier import certify as cf
from certifier.bounds.grids_v1 import Plan
from certifier.bounds.grids_v2 import choose_v2, plan_v2
from certifier.bounds.lower_v2 import method_json as lower_json
from certifier.bounds.stages_lower import lower_bound_v2_stages
from certifier.bounds.stages_v2 import rounding_bound_v2_stages
from certifier.bounds.upper_v2 import METHOD_NAME, METHOD_VERSION, UpperV2
from certifier.certificate.stages import build_stages, stages_claim
from certifier.errors import CannotCertifyError, ParameterError
from certifier.params import decimal_str, parse_decimal
from certifier.resolution import round_up
from certifier.targets import kind

LABEL = f"{METHOD_NAME} v{METHOD_VERSION} (stages)"


def _stages(spec) -> tuple[tuple[int, int], ...]:
    from certifier.numerics.stages import parse_stages
    return tuple((s.steps, s.epochs) for s in parse_stages(spec, sigma_per_stage=False))


def _t2(sigma: fmpq) -> fmpq:
    return 1 / (sigma * sigma)


def numerics(stages, sigma: fmpq) -> tuple[float, float]:
    """(exact TV, error estimate) of the stages at one sigma (certifier.numerics.stages)."""
    from certifier.numerics.stages import exact_tv_stages
    s = decimal_str(sigma)
    r = exact_tv_stages([(m, e, s) for m, e in stages])
    return r.tv, r.error


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


def plan_stages(stages, t2: fmpq, loss_budget: float, tv: float, k_scale: float = 1.0, prec: int = 100) -> Plan:
    """One grid for every stage: the cheapest plan per distinct M (for the total epochs), on a common
    mantissa and eta, merged. Predicted loss: the largest of the plans'; seconds: their sum."""
    E = sum(e for _, e in stages)
    Ms = sorted({m for m, _ in stages})
    first = [choose_v2(M, E, t2, loss_budget, tv, prec=prec, k_scale=k_scale) for M in Ms]
    n = max(p.method.mantissa_bits for p in first)
    eta = decimal_str(min(p.method.eta for p in first))
    plans = [plan_v2(M, E, t2, loss_budget, tv, n=n, eta=eta, prec=prec, k_scale=k_scale) for M in Ms]
    method = merge([p.method for p in plans], Ms)
    return Plan(method, max(p.predicted_loss for p in plans), sum(p.predicted_seconds for p in plans), loss_budget,
                {"seconds": {k: sum(p.detail["seconds"][k] for p in plans) for k in plans[0].detail["seconds"]},
                 "plans": len(plans)})


def certify_stages(stages, target: fmpq, sigma: fmpq | None = None, *, two_sided: bool = False,
                   max_tries: int = 3, progress=None, prec: int | None = None) -> cf.Outcome:
    """Certify TV(prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) <= target at one sigma (the exact shared sigma
    when absent), upper side by stages_v2, with two_sided the lower side at sigma - k res(sigma) by
    stages_lower; the predicate is format v5 (certifier.certificate.stages)."""
    stages = _stages(stages)
    if not isinstance(target, fmpq) or not 0 < target < 1:
        raise ParameterError(f"the tv target must be an exact rational strictly between 0 and 1, got {target!r}")
    t_start = time.perf_counter()
    say = cf._say(progress, t_start)
    tv_kind = kind("tv")
    if sigma is None:
        from certifier.numerics.stages import exact_sigma_stages
        say("exact sigma", 0.0)
        sigma = round_up(parse_decimal("sigma", exact_sigma_stages([(m, e) for m, e in stages],
                                                                   float(target))))
    if not isinstance(sigma, fmpq) or sigma <= 0:
        raise ParameterError("sigma must be a positive exact rational")
    claim = stages_claim(stages, sigma, target)
    say("exact tv", 0.0)
    tv, err = numerics(stages, sigma)
    out = cf.Outcome(False, None, claim.epochs, decimal_str(sigma), decimal_str(target), None, tv=tv, tv_error=err,
                     kind="tv")
    out.stages = [list(s) for s in stages]
    runs = lambda t2: [(m, e, t2) for m, e in stages]
    t2 = _t2(sigma)

    def row(plan, r):
        out.bound = r.bound
        return cf._row_v2(plan, "bound", r.bound)
    margin = tv_kind.upper_margin(target, tv, err)
    side = cf.Side("upper", margin, cf.SAFETY, cf.V2_CEILING,
                   lambda b: plan_stages(stages, t2, b, tv, prec=prec or 100),
                   lambda m, prog: rounding_bound_v2_stages(runs(t2), m),
                   lambda r: tv_kind.upper_proves(r, target), row)
    found = cf._prove(side, max_tries, out.tries, say)
    if found is None:
        say("done", 1.0)
        return out
    res, meth = found
    out.success, out.method = True, LABEL
    rows = _rows(out, res, meth)
    low = _lower(out, stages, claim, meth, say) if two_sided else None
    out.predicate = build_stages(claim, meth.to_json(), res, low, rows, tv, err, missing=out.rows_missing)
    if low is not None:
        out.two_sided, out.sigma_low, out.tv_lower = True, low["sigma_low"], low["tv_lower"]
    say("done", 1.0)
    return out


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


def _lower(out, stages, claim, meth: UpperV2, say) -> dict | None:
    """sigma_low = sigma - k res(sigma), k = 1, 2, certified to miss the target, or None."""
    tv_kind, target = kind("tv"), claim.target
    t0 = time.perf_counter()
    for s_low in cf._sigma_lows(claim.sigma):
        s_str = decimal_str(s_low)
        tv_low, err = numerics(stages, s_low)
        if tv_low - err <= float(target):
            out.lower_tries.append({"sigma_low": s_str, "skipped": f"numerical TV {tv_low:.12g} does not exceed "
                                    "the target"})
            continue
        t2 = _t2(s_low)
        side = cf.Side("lower", tv_kind.lower_margin(target, tv_low, err), cf.LOWER_SAFETY, cf.V2_CEILING,
                       lambda b, t2=t2, tv_low=tv_low: plan_stages(stages, t2, b, tv_low,
                                                                   k_scale=cf.V2_LOWER_LOSS_RATIO, prec=meth.prec),
                       lambda m, prog, t2=t2: lower_bound_v2_stages([(M, E, t2) for M, E in stages], m),
                       lambda L: tv_kind.lower_proves(L, target),
                       lambda plan, L, s_str=s_str, tv_low=tv_low: {"sigma_low": s_str,
                                                                    **cf._row_v2(plan, "tv_lower", L.tv_lower),
                                                                    "tv_exact": tv_low})
        try:
            found = cf._prove(side, len(cf.LOWER_SAFETY), out.lower_tries, say)
        except CannotCertifyError as e:
            out.lower_tries.append({"sigma_low": s_str, "skipped": str(e)})
            found = None
        if found is not None:
            out.lower_seconds = round(time.perf_counter() - t0, 3)
            L, lm = found
            return {"sigma_low": s_str, "method": lower_json(lm), "tv_lower": cf.tv_lower_str(L.exact, target),
                    "enclosures": L.enclosures}
    out.lower_seconds = round(time.perf_counter() - t0, 3)
    return None



def refuse_with_stages(steps, epochs, scheme, method, kind_name, iterations, grid) -> None:
    """For a face that accepts stages beside certify's options: a run in stages has no steps/epochs of its
    own, random allocation, method v2, kind tv and automatic grids; anything else is a one-line refusal."""
    from certifier.certificate.claim import RANDOM_ALLOCATION
    if steps is not None or epochs is not None:
        raise ParameterError("give either stages or steps and epochs, not both")
    if scheme != RANDOM_ALLOCATION or iterations is not None:
        raise ParameterError("a run in stages is certified for random allocation only (not fixed bins)")
    if method not in ("auto", "v2"):
        raise ParameterError(f"a run in stages is certified with method v2 only, not {method!r}")
    if kind_name != "tv":
        raise ParameterError(f"a run in stages is certified for the tv target only, not {kind_name!r}")
    if any(g is not None for g in grid):
        raise ParameterError("a run in stages takes no user grid (h, eta, cap): its grid is planned per stage")
