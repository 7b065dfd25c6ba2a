"""auto's choice among the methods: the searches in order of preference (SEARCHES: gaussian-shift when M = 1;
upper v1, the paper's uniform lattice, where its fixed truncation at 8M is harmless; upper v2 otherwise), which
goes first where both fit (predicted time), the lower methods after each, and the grid the service prices."""
from __future__ import annotations

from flint import fmpq

from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.errors import CannotCertifyError, ParameterError
from certifier.methods import GAUSSIAN_SHIFT_LOWER, GAUSSIAN_SHIFT_UPPER, LOWER_V1, LOWER_V2, UPPER_V1, UPPER_V2
from certifier.methods.base import Method
from certifier.methods.gaussian_shift import search as gs
from certifier.methods.search import (
    LOWER_SAFETY,
    MAX_PREDICTED_SECONDS,
    Ctx,
    TooSlowError,
    lower_margin,
    plan_within,
    privacy_rows,
    upper_margin,
)
from certifier.methods.v1.band import BAND_PREC, choose_band_grid
from certifier.methods.v1.plan import budget, choose_grid
from certifier.methods.v1.search import (
    lower_v1,
    lower_v1_side,
    or_band,
    pair_sigma,
    plain_v1,
    upper_v1,
    v1_fits,
    v1_side,
)
from certifier.methods.v2 import stages
from certifier.methods.v2.plan import choose_v2, idle_seconds
from certifier.methods.v2.search import V2_CALIBRATION, V2_CEILING, V2_LOWER_LOSS_RATIO, lower_v2, upper_v2, v2_first
from certifier.params import decimal_str

V2_SWITCH_SECONDS = 60.0           # auto, a TV claim: a v1 grid predicted slower than this is compared with v2's
V2_GAIN = 0.4                      # ... and v2 goes first where predicted at most this share of it, calibration in

def v2_idle_seconds(ctx: Ctx, margin: float) -> float:
    """Method v2's first grid for a TV claim, predicted on methods.v1.plan's idle core, its calibration run included."""
    return idle_seconds(v2_first(ctx, margin, ctx.tv)[0].predicted_seconds) * V2_CALIBRATION[0]


def faster_first(ctx: Ctx, candidates: list) -> list:
    """auto, a TV claim that method v1 fits: v1 first, unless its first grid is predicted slower than
    V2_SWITCH_SECONDS and method v2's first (its calibration included, rescaled to methods.v1.plan's idle core) at most
    V2_GAIN of that -- then v2 first and v1 after it. (With a lattice per level, method-v2.md §10, v2 is the faster
    at large M and E: 102 s (calibration in) against 272 s at (10^6, 10^4, 0.1), sigma 0.70886.)"""
    if not ctx.kind.tv_functional or len(candidates) < 2 or candidates[0].method is not UPPER_V1:
        return candidates
    margin = upper_margin(ctx)
    if margin is None or margin <= 0:
        return candidates
    try:
        v1 = plan_within(v1_side(ctx), 0)[0].predicted_seconds
        if v1 <= V2_SWITCH_SECONDS:
            return candidates
        v2 = v2_idle_seconds(ctx, margin)
    except (CannotCertifyError, ParameterError):
        return candidates                        # one of them plans nothing: the search order decides
    if v2 > V2_GAIN * v1:
        return candidates
    ctx.out.tries.append({"try": 0, "method": 1, "skipped": f"method v1's first grid is predicted at {v1:.0f} s, "
                          f"method v2's at {v2:.0f} s: v2 first"})
    return [candidates[1], candidates[0], *candidates[2:]]


def step_instead(ctx: Ctx, err: CannotCertifyError, after) -> bool:
    """An automatic sigma (one resolution step to spare) whose v1 grid is predicted too slow: the next sigma
    step (a larger margin, usually a v1 grid within the limit) rather than method v2 at this sigma, unless v2
    is predicted far faster (faster_first's rule). At (3, 10^4, 0.999) v1 was predicted at 313 s and v2 at
    254 s: v2 ran at sigma in 289 CPU s and 7 GB, where v1 one step up takes 52 s."""
    if not isinstance(err, TooSlowError) or ctx.limit >= MAX_PREDICTED_SECONDS or after.method is not UPPER_V2:
        return False
    margin = upper_margin(ctx)
    if not ctx.kind.tv_functional or margin is None or margin <= 0:
        return False
    try:
        v2 = v2_idle_seconds(ctx, margin)
    except (CannotCertifyError, ParameterError):
        return False
    return v2 > V2_GAIN * err.seconds


def lower_order(ctx: Ctx, search, low_claim, s_low, tv_low, err, meth) -> list:
    """The lower methods to try at s_low, in order: the search's (e.g. lower v1, then v2); for a TV claim that
    method v1 fits, lower v1 is also the fallback after v2, and v2 goes first where lower v1's first grid is
    predicted slower than V2_SWITCH_SECONDS and v2's (its calibration included) at most V2_GAIN of that."""
    lowers = list(search.lowers)
    if not search.auto_lowers:
        return lowers
    names = [m.label for m, _ in lowers]
    if not ctx.kind.tv_functional or tv_low is None or not v1_fits(low_claim, s_low, False):
        return lowers
    if LOWER_V1.label not in names:
        lowers.append((LOWER_V1, lower_v1))
    if LOWER_V2.label not in names:
        return lowers
    v1_first = sorted(lowers, key=lambda x: x[0] is not LOWER_V1)
    margin = lower_margin(ctx, low_claim, tv_low, err)
    if margin is None or margin <= 0:
        return v1_first
    try:
        v1 = plan_within(lower_v1_side(ctx, low_claim, s_low, tv_low, err, meth), 0)[0].predicted_seconds
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
    return sorted(lowers, key=lambda x: x[0] is not LOWER_V2)


def planned_upper(claim: Claim, sigma: fmpq, budget: float):
    """The upper grid the automatic search plans first at `budget`, without computing a bound: method v1
    (plain, two-scale or banded, as upper_v1 chooses) where it fits the pair, else method v2 (as the search
    falls through to it) -- what the service's admission prices. CannotCertifyError where neither plans."""
    M, E = claim.pair()
    if v1_fits(claim, sigma, False):
        s_pair = pair_sigma(claim, sigma)
        choose = lambda b: choose_grid(M, E, s_pair, b, prec=100, allow_moved=True)  # noqa: E731
        band = not claim.kind and claim.scheme == RANDOM_ALLOCATION
        try:
            return or_band(lambda: plain_v1(choose, claim.scheme == RANDOM_ALLOCATION, M, E, s_pair, budget),
                            lambda: choose_band_grid(M, E, s_pair, budget, prec=BAND_PREC), band)
        except (CannotCertifyError, ParameterError):       # no v1 grid (or none within its limits): v2
            pass
    return choose_v2(M, E, claim.t2_at(sigma), budget, None)


def forced_method(method: str, scheme: str, searches: tuple | None = None):
    """The search of `searches` (auto's SEARCHES by default) a --method alias forces (None for auto), checked
    against the scheme."""
    aliases = {s.alias: s for s in (SEARCHES if searches is None else searches) if s.alias}
    if method != "auto" and method not in aliases:
        raise ParameterError(f"method must be auto, {' or '.join(aliases)}")
    forced = aliases.get(method)
    if forced is not None and scheme not in forced.method.schemes:
        raise ParameterError(f"method {method} covers {' and '.join(forced.method.schemes).replace('-', ' ')} only")
    return forced


# The upper methods in auto's order of preference, each with the lower methods tried after it.
LOWERS_V2 = ((LOWER_V2, lower_v2),)
SEARCHES = (
    Method(GAUSSIAN_SHIFT_UPPER, None, lambda c, s, user_grid: c.pair()[0] == 1 and not user_grid,
           gs.prove_upper, gs.privacy_rows, True, ((GAUSSIAN_SHIFT_LOWER, gs.prove_lower),),
           screen_lower=False, grid_search=False),
    Method(UPPER_V1, "v1", v1_fits, upper_v1, privacy_rows, False, ((LOWER_V1, lower_v1),) + LOWERS_V2),
    Method(UPPER_V2, "v2", lambda c, s, user_grid: True, upper_v2, privacy_rows, True, LOWERS_V2),
)
# A run in stages: method v2 on one grid planned for every stage (its lower side too), no other method.
STAGED_SEARCHES = (
    Method(UPPER_V2, "v2", lambda c, s, user_grid: True, stages.prove_upper, stages.privacy_rows, True,
           ((LOWER_V2, stages.prove_lower),), grid_search=False, label=stages.LABEL, rounded_law=False,
           auto_lowers=False, screen_names_tv=False),
)
