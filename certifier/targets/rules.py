"""What the certifier needs of a target: the functional its bounds bound, and how a bound decides it.

A rule (TargetKind) holds the kind's numerics (a float estimate and its error, never a proof: they only
choose grids and sigma), the exact-sigma search on a claim, the margins the grid planners may spend, and
what an upper / lower result must show. Every rigorous bound (certifier.methods) bounds a functional
non-decreasing in Lambda. Each kind module (tv, dp, tpr) builds its own rule from these parts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flint import fmpq

from certifier.bounds.result import LowerResult, UpperResult
from certifier.certificate.stages import runs_at
from certifier.claim import Claim
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.methods.v1.plan import KindWeights
from certifier.numerics.kink_density import f_p, line
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.numerics.targets import exact_privacy_scheme
from certifier.params import parse_decimal
from certifier.resolution import AUTO
from certifier.run import Run

SEARCH_RESOLUTION = AUTO   # res(sigma) where the answer lies; every caller rounds the answer up to it
CURVATURE_FLOOR = 1e-4   # the kinds' curvature ratio is never taken below this times the target (the noise)
KINK_STEP = 0.01         # the difference step in eps of the densities read off the profile itself


def hockey_density(delta, eps: float, d: float = KINK_STEP) -> float:
    """The density of ln Lambda at the kink of a hockey-stick divergence, delta'' - delta' at eps by central
    differences of the profile itself: f^Q(eps) from delta_{Q||P}, f^P(-eps) from delta_{P||Q} (both
    satisfy delta'' = delta' + f). Differences of delta, not of G = 1 - delta, keep the error relative to
    delta: at delta = 1e-10 the line's G has an absolute error near delta itself, and a density from it is
    noise (a planner that reads noise plans grids 10^5 times finer than the kink needs)."""
    a, b, c = delta(eps - d), delta(eps), delta(eps + d)
    return (a - 2 * b + c) / (d * d) - (c - a) / (2 * d)


@dataclass(frozen=True)
class TargetKind:
    name: str
    functional: str
    numerics: Callable[[Claim, fmpq], tuple]            # (estimate, error) at sigma, or (None, None)
    exact_sigma: Callable[[Claim, fmpq], fmpq]          # the least sigma on the search grid meeting the target
    upper_proves: Callable[[UpperResult, fmpq], bool]   # the upper bound meets the target
    lower_proves: Callable[[LowerResult, fmpq], bool]   # the lower bound misses the target
    params: tuple = ()                                   # the kind's exact decimal parameters, (name, value)
    upper_bound: Callable[[UpperResult], str] | None = None   # the certified value of the kind's functional
    lower_side: bool = True                              # a certified lower side exists for this kind
    loss_factor: float = 1.0                             # the planners' TV loss times this bounds the kind's loss
    certificate: bool = True                             # a certificate format records this kind
    upper_methods: tuple | None = None                   # labels of the upper methods it may use (None: all)
    lower_value: Callable[[LowerResult], fmpq | None] | None = None   # the certified lower value (exact)
    upper_record: Callable[[UpperResult], dict] | None = None  # format v4's `upper` object (bound, ...)
    plan_weights: Callable[[Claim, fmpq], object] | None = None   # its own loss model for the planners (v1, v2)
    named: tuple = ()                                    # Claim.kind: () for tv, (("name", ...), params...) else
    tv_functional: bool = False                          # the functional is the TV itself (its bound: 1 - O;
                                                         # the rows and TV-only methods and screens apply)

    @staticmethod
    def upper_margin(target: fmpq, value: float | None, error: float | None) -> float | None:
        """target - value - error: what the upper side's grid may lose (None: numerics unavailable); where the
        error estimate covers the margin but the value meets the target, half of target - value (as
        lower_margin: at (10^6, 100, eps 2, delta 1e-10) the margin at the exact sigma is 3.8e-15 against an
        error estimate of 2.5e-14, and the next sigma step would be no better)."""
        if value is None:
            return None
        m = float(target) - value - (error or 0)
        return (float(target) - value) / 2 if m <= 0 < float(target) - value else m

    @staticmethod
    def lower_margin(target: fmpq, value: float | None, error: float | None) -> float | None:
        """value - error - target: what the lower side's grid may lose; where the numerics' error estimate
        covers the margin but the value still misses the target, half of value - target (sigma_low one step
        below the exact sigma misses the target if the value is right, and an error estimate of 4e-13 at
        delta 1e-6, (3, 2, eps 1), must not cost the certificate a second step)."""
        if value is None:
            return None
        m = value - (error or 0) - float(target)
        return (value - float(target)) / 2 if m <= 0 < value - float(target) else m


def proves_below(upper):
    """upper_proves of a kind whose certified value is upper(r) (decimal text, None: not computed)."""
    return lambda r, target: (lambda v: v is not None and parse_decimal("bound", v) <= target)(upper(r))


def proves_above(lower):
    """lower_proves of a kind whose certified lower value is lower(r) (exact, None: not computed)."""
    return lambda r, target: (lambda v: v is not None and v > target)(lower(r))


def profile_numerics(what: str, x: float):
    """The numerics of a dp (what="dp", x = eps) or tpr (x = alpha) kind from the privacy profile."""
    def numerics(claim: Claim, sigma: fmpq):
        try:
            kw = {"epsilons": (x,)} if what == "dp" else {"fprs": (x,)}
            p = Run.of_claim(claim).pick(
                lambda steps, epochs, scheme: exact_privacy_scheme(steps, epochs, float(sigma), scheme=scheme,
                                                                   check=False, **kw),
                lambda stages: exact_privacy_product(runs_at(claim, sigma), check=False, **kw))
        except (NumericsUnreliableError, ParameterError, OverflowError):
            return None, None
        v = (p.delta if what == "dp" else p.tpr)[x]
        return float(v.value), float(v.error)
    return numerics


def plan_weights(kinks, deletion):
    """plan_weights of a kind: KindWeights(max density at its kinks / f^P(0), deletion) from the numerics'
    line at sigma (f^P(0) from its G, the kinks' densities from its profile, hockey_density); None where the
    numerics refuse (then loss_factor). The curvature is floored at CURVATURE_FLOOR times the target: an
    absolute floor would price a delta-target of 1e-10 as if its kink held 1e-4 of the bulk's density."""
    def weights(claim: Claim, sigma: fmpq):
        ln = line(Run.of_claim(claim).pick(lambda steps, epochs, scheme: [(*claim.pair(),
                                                                          claim.sigma_of_pair(float(sigma)))],
                                           lambda stages: [(m, e, float(s)) for m, e, s in runs_at(claim, sigma)]))
        if ln is None:
            return None
        f0 = f_p(ln.g, 0.0)
        fk = kinks(ln)
        if not (f0 > 0 and fk == fk):
            return None
        floor = CURVATURE_FLOOR * min(1.0, float(claim.target))
        return KindWeights(max(fk / f0, floor), deletion(ln), 1.0 - ln.g(0.0))
    return weights


# A kind with plan_weights gives the planners (v1 and v2, both sides) its own margin and
# KindWeights (with the pair's TV from the same line, which v2's model reads): the rounding terms
# scaled by the density of ln Lambda at the functional's kink against at 0 (measured actual / predicted
# 0.87-1.02 at the done-when cells, 1.3 at (10, 2); docs/targets.md §8), deletions by what a deleted
# unit of P-mass may cost (e^eps).
# Without it (numerics refused) the TV-unit model below applies.
# The planners' loss model is in TV units (1 - E_P min{Lambda, 1}). A deletion or rounding of P-mass
# at Lambda costs min{Lambda, e^eps} <= e^eps times what min{Lambda, 1} costs (and e^eps Lambda for
# P||Q), so the hockey-stick loss is at most e^eps times the TV loss: the margin given to the
# planners is divided by e^eps (tpr: the bound uses delta_{Q||P}(gamma) with e^gamma about the slope
# beta/alpha of the trade-off curve, so the margin is divided by max(1, beta/alpha)).
# The lower side spends its margin by the same factor: its TV loss is W-mass lost plus U-mass lost
# (floors, deletions); in the dp lower bound W(A) - e^eps (U(A) + deleted_p) the U-side loss is
# weighted by e^eps, the W-side by 1. In the tpr lower bound a lost P-mass d shrinks the test's
# budget by d and costs d times the slope of the concave ROC at alpha, which is <= TPR(alpha)/alpha
# (a concave curve through (0, 0)), about beta/alpha; a lost W-mass costs at most itself.

# dp, tpr: the upper side by the closed form at M = 1, method v1 (either scheme) where its truncation at 8M
# is harmless, otherwise method v2 planned with the kind's own loss model (certifier.methods.v2.search.kind_v2);
# format v4
KIND_UPPER = {"certificate": True,
              "upper_methods": ("gaussian-shift v1", "lemma-c5-rounding v1", "lemma-c5-rounding v2")}
