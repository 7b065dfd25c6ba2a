"""Target kinds: the functional a certificate bounds, and how a bound decides its target.

Kinds `tv` (TV(P_M^E, Q_M^E) <= lambda, Section 2), `dp` and `tpr`; a claim in stages (Claim.stages)
has its numerics and exact sigma from the product of the stages' lines (certifier.numerics.stages*).
A kind holds its numerics (a float estimate and its error, never a proof: they only choose grids and
sigma), the exact-sigma search, the margins the grid planners may spend, and what an upper / lower
result must show. Every rigorous bound (certifier.methods) bounds a functional non-decreasing in
Lambda. A new kind is one entry.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from flint import fmpq

from certifier.bounds.result import LowerResult, UpperResult
from certifier.certificate.claim import Claim
from certifier.certificate.stages import runs_at
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.params import parse_decimal

SEARCH_RESOLUTION = "1e-6"


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
    lambda_domain: bool = True                           # the target is a lambda of the stated domain
    lower_value: Callable[[LowerResult], fmpq | None] | None = None   # the certified lower value (exact)
    upper_record: Callable[[UpperResult], dict] | None = None  # format v4's `upper` object (bound, ...)
    plan_weights: Callable[[Claim, fmpq], object] | None = None   # its own loss model for the planners (v1, v2)

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


def _tv_numerics(claim: Claim, sigma: fmpq) -> tuple[float | None, float | None]:
    """The exact TV at sigma (FFT route; a run in stages: the product route, checked) and its error
    estimate, or (None, None) if unavailable."""
    from certifier.numerics.exact import exact_tv
    from certifier.numerics.stages import exact_tv_stages
    M, E = claim.pair()
    try:
        r = (exact_tv_stages(runs_at(claim, sigma)) if claim.stages else
             exact_tv(M, E, claim.sigma_of_pair(float(sigma)), check=False))
        return float(r.tv), float(r.error)
    except (NumericsUnreliableError, ParameterError, OverflowError):
        return None, None


def _tv_exact_sigma(claim: Claim, target: fmpq) -> fmpq:
    """The exact sigma on the 1e-6 grid for the claim's scheme (Theorem 4.1, numerical)."""
    from certifier.numerics.schemes import exact_sigma
    from certifier.numerics.stages import exact_sigma_stages
    if claim.stages:                                     # one sigma shared by the stages
        return parse_decimal("sigma", exact_sigma_stages(claim.stages, float(target)))
    return parse_decimal("sigma", exact_sigma(claim.steps, claim.epochs, target, scheme=claim.scheme,
                                              resolution=SEARCH_RESOLUTION))


TV = TargetKind("tv", "TV(P_M^E, Q_M^E)", _tv_numerics, _tv_exact_sigma,
                lambda r, target: parse_decimal("bound", r.bound) <= target,
                lambda r, target: r.exact > target, lower_value=lambda r: r.exact)

def _masses(r: UpperResult):
    """The step-(iv) masses b_k of a Lemma C.5 upper bound as certifier.bounds.privacy.Masses (None: no b)."""
    from certifier.bounds.privacy import Masses
    if r.b is None or r.method is None or not hasattr(r.method, "eta"):
        return None
    return Masses(r.b, r.method.eta, r.method.fixed_point_bits, r.method.prec)


def _dp_upper(r: UpperResult, epsilon: fmpq) -> str | None:
    """max of the certified upper ends of delta_{Q||P}(eps), delta_{P||Q}(eps) (Lemma C.5, concave
    functionals min{Lambda, e^eps}, min{1, e^eps Lambda}; certifier.bounds.privacy), rounded up."""
    from certifier.bounds.fixedpoint import round_up_sig
    if r.shift2 is not None:                          # M = 1: the Gaussian shift's closed form
        from certifier.bounds.gaussian_shift import dp_upper
        return dp_upper(r.shift2, epsilon, r.method.prec)
    ms = _masses(r)
    if ms is None:
        return None
    a, b = ms.dqp_ball(epsilon), ms.dpq_ball(epsilon)
    return max((round_up_sig(x, 10) for x in (a, b)), key=lambda v: parse_decimal("delta", v))


def _tpr_row(r: UpperResult, alpha: fmpq) -> dict | None:
    """{tpr, epsilon}: min over gamma = epsilon on the grid of e^gamma alpha + delta_{Q||P}(gamma), upper end
    (1 - T(alpha) <= it for every gamma, (7))."""
    from certifier.bounds.privacy import EPSILON_GRID, tpr_at_fpr
    if r.shift2 is not None:                          # M = 1: at the tangent of the closed form
        from certifier.bounds.gaussian_shift import tpr_upper
        return tpr_upper(r.shift2, alpha, r.method.prec)
    ms = _masses(r)
    return None if ms is None else tpr_at_fpr(ms, alpha, parse_decimal("epsilon_grid", EPSILON_GRID))


def _tpr_upper(r: UpperResult, alpha: fmpq) -> str | None:
    row = _tpr_row(r, alpha)
    return None if row is None else row["tpr"]


def _proves_below(upper):
    return lambda r, target: (lambda v: v is not None and parse_decimal("bound", v) <= target)(upper(r))


def _dp_lower(r: LowerResult, epsilon: fmpq) -> fmpq | None:
    """max of the data-processing lower bounds on delta_{Q||P}(eps), delta_{P||Q}(eps) (exact; None: no pmfs)."""
    from certifier.bounds.lower_kinds import dp_lower, exp_upper
    if r.shift2 is not None:                          # M = 1: the closed form's lower end
        from certifier.bounds import gaussian_shift as gs
        return gs.dp_lower(r.shift2, epsilon, r.method.prec)
    if r.pmfs is None:
        return None
    # another replay's pmfs may hold r.slack less mass (floors): on the Q side that costs its own amount, on
    # the P side e^eps times as much (it enters as deleted P-mass), so at most e^eps r.slack in all
    return dp_lower(r.pmfs, epsilon) - exp_upper(epsilon) * r.slack


def _tpr_lower(r: LowerResult, alpha: fmpq) -> fmpq | None:
    """The data-processing lower bound on 1 - T(alpha) (exact; None: no pmfs)."""
    from certifier.bounds.lower_kinds import tpr_lower
    if r.shift2 is not None:                          # M = 1: Phi(mu + z_lo), z_lo <= Phi^-1(alpha)
        from certifier.bounds import gaussian_shift as gs
        return gs.tpr_lower(r.shift2, alpha, r.method.prec)
    if r.pmfs is None:
        return None
    # a P-mass d less shrinks the test's budget by d, at most d times the ROC's slope <= 1/alpha (a concave
    # curve through (0, 0) below 1); a Q-mass d less costs d: at most r.slack / alpha in all
    return tpr_lower(r.pmfs, alpha) - r.slack / alpha


def _proves_above(lower):
    return lambda r, target: (lambda v: v is not None and v > target)(lower(r))


def _profile_numerics(what: str, x: float):
    def numerics(claim: Claim, sigma: fmpq):
        from certifier.numerics.stages_profile import exact_privacy_stages
        from certifier.numerics.targets import exact_privacy_scheme
        try:
            kw = {"epsilons": (x,)} if what == "dp" else {"fprs": (x,)}
            p = (exact_privacy_stages(runs_at(claim, sigma), check=False, **kw) if claim.stages else
                 exact_privacy_scheme(claim.steps, claim.epochs, float(sigma), scheme=claim.scheme, check=False,
                                      **kw))
        except (NumericsUnreliableError, ParameterError, OverflowError):
            return None, None
        v = (p.delta if what == "dp" else p.tpr)[x]
        return float(v.value), float(v.error)
    return numerics


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


def _plan_weights(kinks, deletion):
    """plan_weights of a kind: KindWeights(max density at its kinks / f^P(0), deletion) from the numerics'
    line at sigma (f^P(0) from its G, the kinks' densities from its profile, hockey_density); None where the
    numerics refuse (then loss_factor). The curvature is floored at CURVATURE_FLOOR times the target: an
    absolute floor would price a delta-target of 1e-10 as if its kink held 1e-4 of the bulk's density."""
    def weights(claim: Claim, sigma: fmpq):
        from certifier.bounds.grids_v1 import KindWeights
        from certifier.numerics.kink_density import f_p, line, line_stages
        if claim.stages:
            ln = line_stages([(m, e, float(s)) for m, e, s in runs_at(claim, sigma)])
        else:
            M, E = claim.pair()
            ln = line(M, E, claim.sigma_of_pair(float(sigma)))
        if ln is None:
            return None
        f0 = f_p(ln.g, 0.0)
        fk = kinks(ln)
        if not (f0 > 0 and fk == fk):
            return None
        floor = CURVATURE_FLOOR * min(1.0, float(claim.target))
        return KindWeights(max(fk / f0, floor), deletion(ln), 1.0 - ln.g(0.0))
    return weights


def _dp_kinks(eps: float):
    """delta_{Q||P}(eps) has its kink at ln Lambda = eps (weight f^Q), delta_{P||Q}(eps) at -eps (f^P)."""
    return lambda ln: max(hockey_density(ln.dqp, eps), hockey_density(ln.dpq, eps))


def _tpr_kink(alpha: float):
    """The TPR bound e^gamma alpha + delta_{Q||P}(gamma) has its kink at gamma = ln K, the Neyman-Pearson
    threshold at alpha (the minimiser of the line's TPR)."""
    return lambda ln: hockey_density(ln.dqp, ln.tpr(alpha)[1])


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
def dp_kind(epsilon: str, delta: fmpq) -> TargetKind:
    """(eps, delta)-DP: max(delta_{Q||P}(eps), delta_{P||Q}(eps)) <= delta (Appendix B.4); target = delta."""
    from certifier.numerics.stages_profile import exact_sigma_dp_stages
    from certifier.numerics.targets import exact_sigma_dp
    eps = parse_decimal("epsilon", epsilon)
    if not (0 <= eps <= 100):
        raise ParameterError(f"epsilon must lie in [0, 100], got {epsilon}")
    e = float(eps)
    upper = lambda r: _dp_upper(r, eps)
    lower = lambda r: _dp_lower(r, eps)
    return TargetKind(
        "dp", f"max(delta_Q||P({epsilon}), delta_P||Q({epsilon}))", _profile_numerics("dp", e),
        lambda claim, target: parse_decimal("sigma", exact_sigma_dp_stages(claim.stages, e, float(target)) if
                                            claim.stages else exact_sigma_dp(claim.steps, claim.epochs, e,
                                                                             float(target), SEARCH_RESOLUTION,
                                                                             scheme=claim.scheme)),
        _proves_below(upper), _proves_above(lower), (("epsilon", epsilon),), upper, True, math.exp(e),
        lower_value=lower, upper_record=lambda r: {"bound": upper(r)},
        plan_weights=_plan_weights(_dp_kinks(e), lambda ln: math.exp(e)), **_KIND_UPPER)


def tpr_kind(fpr: str, tpr: fmpq) -> TargetKind:
    """Every test with FPR <= alpha has TPR <= beta: 1 - T(alpha) <= beta ((7)); target = beta."""
    from certifier.numerics.stages_profile import exact_sigma_tpr_stages
    from certifier.numerics.targets import exact_sigma_tpr
    alpha = parse_decimal("fpr", fpr)
    if not (0 < alpha < 1):
        raise ParameterError(f"the false-positive rate must lie strictly between 0 and 1, got {fpr}")
    a = float(alpha)
    upper = lambda r: _tpr_upper(r, alpha)
    lower = lambda r: _tpr_lower(r, alpha)
    return TargetKind(
        "tpr", f"1 - T({fpr})", _profile_numerics("tpr", a),
        lambda claim, target: parse_decimal("sigma", exact_sigma_tpr_stages(claim.stages, a, float(target)) if
                                            claim.stages else exact_sigma_tpr(claim.steps, claim.epochs, a,
                                                                              float(target), SEARCH_RESOLUTION,
                                                                              scheme=claim.scheme)),
        _proves_below(upper), _proves_above(lower), (("fpr", fpr),), upper, True, max(1.0, float(tpr) / a),
        lower_value=lower, upper_record=lambda r: (lambda row: {"bound": row["tpr"], "epsilon": row["epsilon"]})(
            _tpr_row(r, alpha)),
        plan_weights=_plan_weights(_tpr_kink(a), lambda ln: max(1.0, math.exp(ln.tpr(a)[1]))), **_KIND_UPPER)


TARGETS = {k.name: k for k in (TV,)}
# dp, tpr: the upper side by the closed form at M = 1, method v1 (either scheme) where its truncation at 8M
# is harmless, otherwise method v2 planned with the kind's own loss model (certifier.certify._kind_v2);
# format v4
_KIND_UPPER = {"certificate": True,
               "upper_methods": ("gaussian-shift v1", "lemma-c5-rounding v1", "lemma-c5-rounding v2"),
               "lambda_domain": False}
FACTORIES = {"dp": (dp_kind, "epsilon"), "tpr": (tpr_kind, "fpr")}


def kind(name: str, params: dict | None = None, target: fmpq | None = None) -> TargetKind:
    """The target kind `name`; dp and tpr take their parameter (epsilon / fpr, an exact decimal string)."""
    if name in FACTORIES:
        make, key = FACTORIES[name]
        if not params or key not in params:
            raise ParameterError(f"target kind {name!r} needs {key}")
        return make(str(params[key]), target if target is not None else fmpq(1, 2))
    try:
        return TARGETS[name]
    except KeyError:
        raise ParameterError(f"unknown target kind {name!r} (known: {', '.join([*TARGETS, *FACTORIES])})") from None
