"""The Gaussian shift's search (M = 1): one closed-form bound per side, no grid (certifier.bounds.gaussian_shift)."""
from __future__ import annotations

import time

from flint import fmpq

from certifier.bounds.gaussian_shift import GaussianShift, rows
from certifier.claim import Claim
from certifier.methods.gaussian_shift import GAUSSIAN_SHIFT_LOWER, GAUSSIAN_SHIFT_UPPER
from certifier.methods.search import Ctx
from certifier.params import decimal_str


def prove_upper(ctx: Ctx):
    """M = 1: the pair is a Gaussian shift, certified in closed form (certifier.bounds.gaussian_shift)."""
    meth, out = GaussianShift(), ctx.out
    t0 = time.perf_counter()
    res = GAUSSIAN_SHIFT_UPPER.run(ctx.claim, ctx.sigma, meth)
    res.timings["total"] = round(time.perf_counter() - t0, 3)
    out.bound = res.bound
    ok = ctx.kind.upper_proves(res, ctx.claim.target)
    out.tries.append({"try": 1, "method": GAUSSIAN_SHIFT_UPPER.name, "bound": res.bound, "certified": ok,
                      "seconds": res.timings["total"]})
    return (res, meth) if ok else None


def privacy_rows(ctx: Ctx, res, meth):
    t1 = time.perf_counter()
    out = ctx.out
    out.privacy, out.tpr = found = rows(ctx.claim.pair()[1], ctx.claim.t2_at(ctx.sigma), meth.prec)
    out.privacy_seconds = round(time.perf_counter() - t1, 3)
    return found


def prove_lower(ctx: Ctx, low_claim: Claim, s_low: fmpq, tv_low, err, meth):
    L = GAUSSIAN_SHIFT_LOWER.run(low_claim, s_low, meth)
    ok = ctx.kind.lower_proves(L, low_claim.target)
    ctx.out.lower_tries.append({"sigma_low": decimal_str(s_low), "try": 1, "method": GAUSSIAN_SHIFT_LOWER.name,
                                "tv_lower": L.tv_lower, "certified": bool(ok)})
    return (L, meth) if ok else None
