"""Method v1's search: its upper and lower sides for certify's try loop (certifier.methods.search), planned by
its planners (plain, two-scale or banded: certifier.methods.v1.plan, two_scale_plan, band)."""
from __future__ import annotations

from dataclasses import replace

from flint import fmpq

from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.errors import CannotCertifyError
from certifier.methods.search import (
    LOWER_SAFETY,
    SAFETY,
    Ctx,
    Side,
    kind_lower_row,
    kind_plan,
    pair_sigma,
    prove,
    relearn,
)
from certifier.methods.v1 import LOWER_V1, UPPER_V1
from certifier.methods.v1.band import BAND_PREC, choose_band_grid, choose_lower_band_grid
from certifier.methods.v1.plan import choose_grid, choose_lower_grid, truncation_loss
from certifier.methods.v1.two_scale_plan import with_two_scale
from certifier.params import decimal_str, parse_decimal

UPPER_V1_CEILING = 1e-7            # upper v1 spends at most this of its margin (the rows read its b_k) ...
UPPER_V1_WIDE_CEILING = 2e-7       # ... or this, where the grid at the first is predicted slower than WIDE_SECONDS
LOWER_V1_CEILING = 2e-7            # lower v1: its loss model is within 5 % at the Table 4 cells (docs/coverage.md)
BAND_SWITCH_SECONDS = 60.0         # a v1 grid predicted slower than this is compared with a banded one
BAND_GAIN = 0.5                    # ... and replaced when the band is predicted at most this share of its time


def v1_covers(claim: Claim) -> bool:
    """Method v1's pair: random allocation, or fixed bins for a target kind (format v4; a TV claim in fixed
    bins keeps method v2, as format v3 has it)."""
    return claim.scheme == RANDOM_ALLOCATION or bool(claim.kind)


def v1_fits(claim: Claim, sigma: fmpq, user_grid: bool) -> bool:
    """Method v1 applies: its pair is covered, and a user grid or its fixed truncation at 8M costs < 1e-9."""
    if not v1_covers(claim):
        return False
    return user_grid or truncation_loss(*claim.pair(), float(pair_sigma(claim, sigma))) < 1e-9


def band_allowed(ctx: Ctx, claim: Claim) -> bool:
    """Method v1 with a band (docs/method-v2.md §8, format v3): a TV claim in random allocation, automatic grids."""
    return ctx.kind.tv_functional and claim.scheme == RANDOM_ALLOCATION and not ctx.grid


def plain_v1(choose, two_scale: bool, M: int, E: int, s_pair, budget: float):
    """The plain v1 plan, with two-scale partial sums where they apply (method-v2.md §9); the one-scale grid
    where the two-scale planner, planning on part of the budget, finds nothing."""
    if not two_scale:
        return choose(budget)
    try:
        return with_two_scale(choose, M, E, s_pair, budget)
    except CannotCertifyError:
        return choose(budget)


def or_band(plain, banded, band: bool):
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


def upper_v1(ctx: Ctx):
    """Method v1 (certifier.bounds.upper_v1); returns (UpperResult, UpperV1) or None."""
    return prove(v1_side(ctx), ctx.max_tries, ctx.out.tries, ctx.say, single=bool(ctx.grid))


def v1_side(ctx: Ctx) -> Side:
    """The upper side of method v1: its planner (plain, two-scale or banded), run, proof and record."""
    claim, sigma, out = ctx.claim, ctx.sigma, ctx.out
    h, eta, cap = (ctx.grid.get(k) for k in ("h", "eta", "cap"))
    if not v1_covers(claim):
        raise CannotCertifyError("method v1 covers random allocation only for a TV target (use method v2)")
    M, E = claim.pair()                                    # fixed bins: the one-epoch pair at sigma/sqrt(E)
    s_pair = pair_sigma(claim, sigma)
    loss = truncation_loss(M, E, float(s_pair))
    if loss > SAFETY[0] * 1e-7:
        raise CannotCertifyError(f"cannot certify M={claim.steps}, E={claim.epochs} with method v1: its "
                                 f"truncation at 8M deletes about {loss:.2g} at sigma {decimal_str(sigma)} "
                                 "(use method v2)")

    margin, wts = kind_plan(ctx, claim, sigma, ctx.tv, ctx.tv_err, upper=True)
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
                lambda b: or_band(lambda: plain_v1(choose, two_scale, M, E, s_pair, b),
                                   lambda: choose_band_grid(M, E, s_pair, b, prec=ctx.prec or BAND_PREC),
                                   band_allowed(ctx, claim) and wts is None),
                lambda m, prog: UPPER_V1.run(claim, sigma, m, progress=prog),
                lambda r: ctx.kind.upper_proves(r, claim.target), row, ctx.limit,
                UPPER_V1_WIDE_CEILING if wts is None else None)


def lower_v1(ctx: Ctx, low_claim, s_low, tv_low, err, meth):
    side = lower_v1_side(ctx, low_claim, s_low, tv_low, err, meth)
    found = prove(side, ctx.lower_tries(LOWER_SAFETY), ctx.out.lower_tries, ctx.say)
    return None if found is None else (found[0], found[0].method)


def lower_v1_side(ctx: Ctx, low_claim, s_low, tv_low, err, meth) -> Side:
    """The lower side of method v1 at s_low: its planner (plain, two-scale or banded), run, proof and record."""
    M, E = low_claim.pair()
    margin, wts = kind_plan(ctx, low_claim, s_low, tv_low, err, upper=False)
    choose = lambda b: choose_lower_grid(M, E, pair_sigma(low_claim, s_low), b, prec=meth.prec,  # noqa: E731
                                         weights=wts)
    two_scale = wts is None and low_claim.scheme == RANDOM_ALLOCATION    # two-scale (a)-(b), method-v2.md §9
    return Side("lower", margin, LOWER_SAFETY, LOWER_V1_CEILING,
                lambda b: or_band(lambda: plain_v1(choose, two_scale, M, E, pair_sigma(low_claim, s_low), b),
                                   lambda: choose_lower_band_grid(M, E, pair_sigma(low_claim, s_low), b,
                                                                  prec=max(meth.prec, BAND_PREC)),
                                   band_allowed(ctx, low_claim) and wts is None),
                lambda m, prog: LOWER_V1.run(low_claim, s_low, m, progress=prog),
                lambda L: ctx.kind.lower_proves(L, low_claim.target),
                lambda plan, L: {"sigma_low": decimal_str(s_low), "method": 1,
                                 **{k: L.method.to_json(M)[k] for k in ("h", "eta", "cap", "lattice_schedule")},
                                 "tv_exact": tv_low, "tv_lower": L.tv_lower, **kind_lower_row(ctx.kind, L)})
