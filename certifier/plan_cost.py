"""The plan `certify` runs first, side by side: the feature of the service's cost model (service/costmodel.py).

    p = tv_plan(steps, epochs, target, sigma)     # Plan: each side's planned seconds and method, M, E, lambda
    p = plan(run, target, sigma, exact_sigma)     # any run and target: tv as above; dp / tpr, fixed bins and
                                                  # stages by their planners' own seconds at a fixed loss budget

A tv claim in random allocation follows certify's own choices with the certifier's planners and constants (no
bound is computed): at the exact sigma (or the request's) and at sigma - res(sigma), the numerics' margin on each
side; method v1 (plain, two-scale or banded, the wider ceiling where the first is slow) where its truncation at
8M fits, method v2 where v1 plans nothing or is slower than V2_SWITCH_SECONDS and v2 (its calibration runs in)
takes at most V2_GAIN of it. Method v2's seconds are rescaled to the reference idle core (idle_seconds): its
planner prices on a product timed now, under whatever load. Other requests keep the former admission's feature,
the planner's seconds for both sides at a fixed small loss budget (`predicted_seconds`,
`predicted_seconds_product`), fitted on a grid of their own.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

from certifier.claim import FIXED_BINS, RANDOM_ALLOCATION, Claim
from certifier.errors import CannotCertifyError, ParameterError
from certifier.methods.auto import V2_GAIN, V2_SWITCH_SECONDS, planned_upper
from certifier.methods.search import LOWER_SAFETY, SAFETY, WIDE_SECONDS
from certifier.methods.v1.band import BAND_PREC, choose_band_grid, choose_lower_band_grid
from certifier.methods.v1.plan import budget, choose_grid, choose_lower_grid, truncation_loss
from certifier.methods.v1.search import (
    BAND_GAIN,
    BAND_SWITCH_SECONDS,
    LOWER_V1_CEILING,
    UPPER_V1_CEILING,
    UPPER_V1_WIDE_CEILING,
)
from certifier.methods.v1.two_scale_plan import with_two_scale
from certifier.methods.v2.plan import EPS_CEILING, choose_v2, eps_gaussian, eps_tail, idle_seconds
from certifier.methods.v2.search import V2_CALIBRATION, V2_CEILING, V2_LOWER_LOSS_RATIO
from certifier.methods.v2.stages import plan_product
from certifier.numerics.schemes import closed_form_sigma
from certifier.numerics.stages import Stage, closed_form_sigma_product
from certifier.params import decimal_str, parse_decimal
from certifier.resolution import resolution_str, round_up
from certifier.run import Run
from certifier.targets import Target
from certifier.targets import kind as target_kind

NO_PLAN = (CannotCertifyError, ParameterError)


@dataclass(frozen=True)
class Plan:
    """What certify is predicted to run: family "tv" (a tv claim in random allocation, M > 1), "other" (dp / tpr,
    fixed bins, stages: `up` is the former both-sides feature, `lo` 0) or "gs" (M = 1, closed forms)."""
    family: str
    up: float           # planned seconds, upper side (reference idle core)
    lo: float           # planned seconds, lower side
    up_v2: bool
    lo_v2: bool
    steps: int          # M of the pair (stages: the largest)
    epochs: int         # E of the pair (stages: the total)
    lam: float          # the target (tv: lambda; dp: delta; tpr: the TPR bound)
    what: str = "tv"    # tv / dp / tpr
    stages: bool = False
    fixed_bins: bool = False

    @property
    def coord(self) -> tuple:
        """Where the cell sits for the recorded residuals (costmodel's kernel): log10 M, log10 E, the target's
        log-odds, and the kind of job, far apart."""
        lam = min(max(self.lam, 1e-15), 1 - 1e-15)
        group = ("tv", "dp", "tpr").index(self.what) + 3 * self.stages + 6 * self.fixed_bins
        return (math.log10(self.steps), math.log10(self.epochs), math.log10(lam / (1 - lam)), 100.0 * group)


def idle(plan) -> float:
    """A plan's seconds on the reference idle core: method v2's planner prices on a product timed now."""
    v2 = type(plan.method).__name__ == "UpperV2"
    return idle_seconds(plan.predicted_seconds) if v2 else plan.predicted_seconds


def _v1_upper(M: int, E: int, s, b: float):
    """Method v1's upper plan as certify chooses it first (plain, two-scale or banded)."""
    choose = lambda x: choose_grid(M, E, s, x, prec=100, allow_moved=True)  # noqa: E731
    return _v1(choose, lambda x: choose_band_grid(M, E, s, x, prec=BAND_PREC), M, E, s, b)


def _v1_lower(M: int, E: int, s, b: float):
    choose = lambda x: choose_lower_grid(M, E, s, x, prec=100)  # noqa: E731
    return _v1(choose, lambda x: choose_lower_band_grid(M, E, s, x, prec=BAND_PREC), M, E, s, b)


def _v1(choose, band, M: int, E: int, s, b: float):
    try:
        try:
            plan = with_two_scale(choose, M, E, s, b)
        except NO_PLAN:
            plan = choose(b)
    except NO_PLAN:
        return band(b)
    if plan.predicted_seconds > BAND_SWITCH_SECONDS:
        try:
            other = band(b)
            if other.predicted_seconds <= BAND_GAIN * plan.predicted_seconds:
                return other
        except NO_PLAN:
            pass
    return plan


def side(M: int, E: int, s, lam: float, value: float | None, err: float | None, upper: bool,
         margin: float | None = None) -> tuple[float, bool]:
    """(planned seconds, method v2) of one side at sigma s: v1 where it fits and is not much slower than v2.
    margin: the numerics' (from value, err) unless given."""
    if margin is None:
        margin = None if value is None else (lam - value if upper else value - lam) - (err or 0)
    safety = SAFETY[0] if upper else LOWER_SAFETY[0]
    v1 = None
    if truncation_loss(M, E, float(s)) < 1e-9:
        try:
            if upper:
                v1 = _v1_upper(M, E, s, budget(margin, safety, UPPER_V1_CEILING)).predicted_seconds
                if v1 > WIDE_SECONDS:
                    try:
                        wide = budget(margin, safety, UPPER_V1_WIDE_CEILING)
                        v1 = min(v1, _v1_upper(M, E, s, wide).predicted_seconds)
                    except NO_PLAN:
                        pass
            else:
                v1 = _v1_lower(M, E, s, budget(margin, safety, LOWER_V1_CEILING)).predicted_seconds
        except NO_PLAN:
            v1 = None
    v2 = None
    if v1 is None or v1 > V2_SWITCH_SECONDS:
        t2 = 1 / (s * s)
        b = budget(margin, safety, V2_CEILING)
        try:
            if upper:
                guess = 0.0 if value is None else min(max(2 * eps_gaussian(value) + 5, eps_tail(M, E, float(t2)) + 3),
                                                      EPS_CEILING)
                p = choose_v2(M, E, t2, b, value, need_eps=guess)
            else:
                p = choose_v2(M, E, t2, b, value, k_scale=V2_LOWER_LOSS_RATIO, lower=True)
            v2 = idle_seconds(p.predicted_seconds) * V2_CALIBRATION[0 if upper else 1]
        except NO_PLAN:
            v2 = None
    if v1 is not None and (v2 is None or v2 > V2_GAIN * v1):
        return v1, False
    if v2 is None:
        raise CannotCertifyError("no grid plans this cell")
    return v2, True


@functools.lru_cache(maxsize=4096)
def tv_plan(steps: int, epochs: int, target: str, sigma: str | None) -> Plan:
    """The plan of a two-sided tv certificate in random allocation (module docstring)."""
    tv = target_kind("tv")
    lam = parse_decimal("target", target)
    probe = Claim(RANDOM_ALLOCATION, steps, epochs, parse_decimal("sigma", sigma or "1"), lam)
    M, E = probe.pair()
    if M == 1:
        return Plan("gs", 0.0, 0.0, False, False, 1, E, float(lam))
    s = parse_decimal("sigma", sigma) if sigma is not None else round_up(tv.exact_sigma(probe, lam))
    low = s - parse_decimal("sigma", resolution_str(s))
    out = []
    for at, upper in ((s, True), (low, False)):
        value, err = tv.numerics(Claim(RANDOM_ALLOCATION, steps, epochs, at, lam), at)
        out.append(side(M, E, at, float(lam), value, err, upper))
    (up, up_v2), (lo, lo_v2) = out
    return Plan("tv", up, lo, up_v2, lo_v2, M, E, float(lam))


@functools.lru_cache(maxsize=4096)
def predicted_seconds(steps: int, epochs: int, target: str, sigma: str | None, scheme: str,
                      kind: tuple = ()) -> float:
    """The planner's seconds of a two-sided job at a fixed loss budget, both sides (the former admission, 1-88x
    too high for tv; the feature of the "other" family). kind: () for tv, or (name, (parameter, value)) of a dp /
    tpr target: its sigma is the kind's exact sigma and the grid's budget is divided by the kind's loss factor;
    a tv sigma defaults to the closed form of Corollary 3.4 (>= the exact sigma)."""
    lam = parse_decimal("target", target)
    factor = 1.0
    if kind:
        tk = target_kind(kind[0], {kind[1][0]: kind[1][1]}, lam)
        factor = tk.loss_factor
        if sigma is None:
            sigma = decimal_str(round_up(tk.exact_sigma(Claim(scheme, steps, epochs, parse_decimal("sigma", "1"),
                                                              lam), lam)))
    if sigma is None:
        s = closed_form_sigma(steps, epochs, float(lam), scheme)  # Cor. 3.4: >= the exact sigma
        sigma = f"{math.ceil(s * 1e6) / 1e6:.6f}"
    claim = Claim(scheme, steps, epochs, parse_decimal("sigma", sigma), lam)
    m, e = claim.pair()
    if m == 1:
        return 0.0  # M = 1: the Gaussian-shift closed forms, nothing to compute
    if kind:   # a kind plans with its own weights: priced by method v2's model
        plan = choose_v2(m, e, claim.t2_at(claim.sigma), budget(None, 0.5) / factor, None)
    else:      # the grid certify itself plans first (method v1, a band, two-scale sums or v2)
        plan = planned_upper(claim, claim.sigma, budget(None, 0.5))
    return 2.0 * idle(plan)


def stages_pair(pairs) -> tuple[int, int]:
    """(M, E) a Plan records for a run in stages ((M_s, E_s), ...): the largest M_s and the total epochs (M = 1: every
    stage is a Gaussian shift, as for a block's pair)."""
    return max(m for m, _ in pairs), sum(e for _, e in pairs)


@functools.lru_cache(maxsize=1024)
def predicted_seconds_product(stages: tuple, target: str, sigma: str | None) -> float:
    """The planner's seconds of a two-sided certificate of a run in stages ((M_s, E_s), ...) at one sigma
    (certifier.stages_certify.plan_product: a method-v2 plan per distinct M_s for the total epochs, summed) at the
    closed-form sigma of the product's chi-square when none is given, both sides."""
    lam = parse_decimal("target", target)
    if sigma is None:
        s = closed_form_sigma_product([Stage(m, e) for m, e in stages], float(lam))
        sigma = f"{math.ceil(s * 1e6) / 1e6:.6f}"
    m, _ = stages_pair(stages)
    if m == 1:
        return 0.0  # M = 1: the Gaussian-shift closed forms, nothing to compute
    q = parse_decimal("sigma", sigma)
    return 2.0 * idle(plan_product(stages, 1 / (q * q), budget(None, 0.5), None))


def _at_sigma_and_below(sigma: str) -> tuple:
    """((sigma, upper side), (sigma - res(sigma), lower side)): where the two sides of a certificate are planned."""
    s = parse_decimal("sigma", sigma)
    return (s, True), (s - parse_decimal("sigma", resolution_str(s)), False)


@functools.lru_cache(maxsize=1024)
def ceiling_plan(pair: tuple, scheme: str, sigma: str) -> tuple[float, float, bool, bool]:
    """(upper s, lower s, v2, v2) of a block job other than a tv block in random allocation: the planners at the
    job's sigma and at sigma - res(sigma) with the margin at the methods' ceilings (a kind's margin, in its own
    units and weights, is not the TV's: what the pair's grid costs at the usual budget is the feature)."""
    out = []
    for at, upper in _at_sigma_and_below(sigma):
        M, E = pair
        t_factor = E if scheme == FIXED_BINS else 1      # fixed bins: the pair (M, 1) at sigma / sqrt(E)
        s_pair = at if t_factor == 1 else parse_decimal("sigma", repr(float(at) / t_factor ** 0.5))
        out.append(side(M, 1 if t_factor > 1 else E, s_pair, 0.0, None, None, upper, margin=1.0))
    (up, up_v2), (lo, lo_v2) = out
    return up, lo, up_v2, lo_v2


@functools.lru_cache(maxsize=1024)
def ceiling_plan_product(pairs: tuple, sigma: str) -> tuple[float, float, bool, bool]:
    """ceiling_plan of a run in stages: method v2, one plan per distinct M_s for the total epochs, at the
    methods' ceilings, at sigma and at sigma - res(sigma)."""
    up, lo = (idle(plan_product(pairs, 1 / (at * at),
                                budget(1.0, (SAFETY if upper else LOWER_SAFETY)[0], V2_CEILING), None))
              for at, upper in _at_sigma_and_below(sigma))
    return up, lo, True, True


def plan(run: Run, target: Target, sigma: str | None, exact_sigma: Callable[[Run, Target], str]) -> Plan:
    """The Plan of a run and target at sigma (exact decimal text; None: the exact sigma, exact_sigma(run, target)
    of the run without its stages' own sigmas): a tv target (the planners' own TV-unit loss model) in random
    allocation follows certify (tv_plan), every other job the planners at the methods' ceilings (ceiling_plan)."""
    what, lam = target.name, float(target.value)

    def job_sigma() -> str:
        bare = run.pick(lambda m, e, scheme: run, lambda stages: Run.composed([(s.steps, s.epochs) for s in stages]))
        return sigma if sigma is not None else exact_sigma(bare, target)

    def staged(stages) -> Plan:
        pairs = tuple((s.steps, s.epochs) for s in stages)
        m, e = stages_pair(pairs)
        if m == 1:
            return Plan("gs", 0.0, 0.0, False, False, 1, e, lam, what, stages=True)
        up, lo, u2, l2 = ceiling_plan_product(pairs, job_sigma())
        return Plan("other", up, lo, u2, l2, m, e, lam, what, stages=True)

    def block(steps: int, epochs: int, scheme: str) -> Plan:
        fb = scheme == FIXED_BINS
        if target.rule().plan_weights is None and not fb:
            return tv_plan(steps, epochs, target.target, sigma)
        claim = Claim(scheme, steps, epochs, parse_decimal("sigma", "1"), target.value, run.iterations)
        m, e = claim.steps, claim.epochs     # fixed bins: the pair is (M, 1) at sigma/sqrt(E); the job runs E rounds
        if m == 1:
            return Plan("gs", 0.0, 0.0, False, False, 1, e, lam, what, fixed_bins=fb)
        up, lo, u2, l2 = ceiling_plan((m, e), scheme, job_sigma())
        return Plan("other", up, lo, u2, l2, m, e, lam, what, fixed_bins=fb)

    return run.pick(block, staged)
