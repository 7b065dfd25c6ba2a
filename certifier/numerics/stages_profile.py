"""The privacy profile, trade-off curve and exact sigma (dp, tpr) of a run in stages.

The pair of a run of stages s = 1..S (E_s epochs of M_s steps at sigma_s) is the product of the
stages' pairs, so its moment line is the product of theirs (Theorem 4.1 with a product):

    E_P Lambda^q = prod_s F_{M_s, sigma_s}(q)^{E_s},   q = 1/2 + iu,

and (P1) of certifier.numerics.profile turns that one line into G(K) = E_P min{Lambda, K}, hence
delta_{Q||P}(eps), delta_{P||Q}(eps) and 1 - T(alpha) exactly as for one block (|prod| <= 1 on the
strip, the aliasing bound unchanged).

  * route "laplace": every distinct (M, sigma) line of certifier.numerics.laplace_moments on one
    u-grid, raised to each stage's E_s and multiplied; per-node floor = sum_s |d prod / d F_s| x
    (truncation + round-off + F_FLOOR) of line s, variants = the products of the coarse r- and x-sums.
  * second route: "logconv" (the stages' lattice densities of ln L_{M_s} on one lattice, moments by
    FFT; lattice 2h as variant) where affordable, else "laplace'" (the second discretization).
  * all M_s = 1: the Gaussian shift mu^2 = sum_s E_s / sigma_s^2 (closed form).
Floating point with a-posteriori estimates, not a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import stages as _st
from certifier.numerics.exact import MIN_SIGMA
from certifier.numerics.laplace_moments import FIRST, SECOND, Discretization
from certifier.numerics.log_convolution import lattice_step, mean_density, moments
from certifier.numerics.pair_routes import F_FLOOR
from certifier.numerics.profile import MomentLineE, Route, Value
from certifier.numerics.saddle import Factor
from certifier.numerics.targets import (
    EPS_REL_ERROR,
    MAX_ERROR,
    ONE_LEVEL,
    Curve,
    GaussianLine,
    OneLine,
    check_eps,
    check_unit,
    checked,
    gdp_mu_for_delta,
    grid_search,
    isf,
    mu_for_delta,
    mu_for_tpr,
    route_at,
)
from certifier.numerics.tv_laplace import DU, MAX_TRIES, TAIL_LEVEL, next_u

__all__ = ["StagesProfile", "exact_privacy_product", "exact_sigma_dp_product", "exact_sigma_tpr_product",
           "product_route_at", "gaussian_mu_product"]


def gaussian_mu_product(runs) -> float:
    """All M_s = 1: the product of Gaussian shifts sqrt(E_s)/sigma_s is one shift, mu^2 = sum E_s/sigma_s^2."""
    return math.sqrt(sum(e / (s * s) for _, e, s in runs))


def _decayed_lines(runs, u_hint: float | None, disc: Discretization):
    """The stages' lines on one u-grid, grown until the product has decayed (or met a round-off floor)."""
    groups = _st.line_groups(runs)
    total_e = sum(e for _, e, _ in runs)
    u_top = u_hint or _st.u_guess_product(runs)
    for _ in range(MAX_TRIES):
        lines = {key: _st.stage_line(key[0], key[1], u_top, disc) for key in groups}
        n_all = min(ln.f.size for ln in lines.values())
        log_mag = np.zeros(n_all)
        floor = np.zeros(n_all, dtype=bool)
        for key, epochs in groups.items():
            mag = np.abs(lines[key].f[:n_all])
            log_mag += sum(epochs) * np.log(np.maximum(mag, 1e-300))
            floor |= mag < 3.0 * lines[key].roundoff[:n_all]
        loud = np.nonzero(~((log_mag < math.log(TAIL_LEVEL)) | floor))[0]
        cut = int(loud[-1]) + 1 if loud.size else 1
        if cut < 0.9 * n_all:
            return lines, groups, min(cut + 1, n_all)
        # the product decays like one line of E = sum E_s with |prod|^(1/sum E_s) as magnitude
        u = DU * np.arange(n_all)
        u_top = next_u(u, np.exp(log_mag / total_e), total_e, u_top)
    raise NumericsUnreliableError(f"the product of the stages' moments has not decayed by u = {u_top:.0f}")


def laplace_route_product(runs, u_hint: float | None = None, disc: Discretization = FIRST) -> Route:
    lines, groups, n = _decayed_lines(runs, u_hint, disc)
    mags = {key: np.maximum(np.abs(lines[key].f[:n]), 1e-300) for key in groups}
    log_total = sum(sum(ep) * np.log(mags[key]) for key, ep in groups.items())
    floor = np.zeros(n)
    for key, epochs in groups.items():  # |d prod / d F_s| <= (sum of its stages' E) |prod| / |F_s|
        slope = sum(epochs) * np.exp(log_total - np.log(mags[key]))
        ln = lines[key]
        floor += slope * (ln.truncation[:n] + ln.roundoff[:n] + (F_FLOOR if key[0] > 1 else 0.0))
    fe = _st.line_product(lines, groups, "f", n)
    main = MomentLineE(DU, fe, floor, tail=float(abs(fe[-1])))
    variants = tuple(MomentLineE(DU, _st.line_product(lines, groups, a, n)) for a in ("f_coarse_r", "f_coarse_x"))
    return Route("laplace" if disc is FIRST else "laplace'", main, variants, float(DU * (n - 1)),
                 factors=tuple(Factor(m, e, s) for m, e, s in runs), second_tails=disc is not FIRST)


def _logconv_line(runs, step: float) -> MomentLineE:
    groups = _st.line_groups(runs)
    du = 2.0 * math.pi / (step * round(2.0 * math.pi / (DU * step)))
    n_u = int(round(2.0 * math.pi / (du * step))) // 2
    prod = np.ones(n_u, dtype=complex)
    defect = 0.0
    for (m, s), epochs in groups.items():
        if m == 1:
            u = du * np.arange(n_u)
            f = np.exp(-(0.25 + u * u) / (2.0 * s * s)).astype(complex)
        else:
            d = mean_density(m, s, step)
            f = moments(d, du, n_u)
            defect += sum(epochs) * abs(1.0 - float(d.f.sum() * step))
        for e in epochs:
            prod = prod * f ** e
    loud = np.nonzero(np.abs(prod) >= TAIL_LEVEL)[0]
    cut = int(loud[-1]) + 2 if loud.size else 2
    prod = prod[:cut]
    return MomentLineE(du, prod, defect=defect, tail=float(abs(prod[-1])))


def logconv_route_product(runs) -> Route:
    h = min(lattice_step(m, s) for m, _, s in runs if m > 1)
    return Route("logconv", _logconv_line(runs, h), (_logconv_line(runs, 2.0 * h),),
                 factors=tuple(Factor(m, e, s) for m, e, s in runs), second_tails=True)


def product_route_at(runs, check: bool = True, u_hint: float | None = None) -> tuple[Route, Route | None]:
    """The primary route and (check=True) the second one for the pair of the stages [(M, E, sigma)]: a block's
    (certifier.numerics.targets.route_at) for one stage, else the product's (certifier.numerics.stages.product_of)."""
    return _st.product_of(runs).pick(lambda run: route_at(*run, check=check, u_hint=u_hint),
                                     lambda runs: _product_routes(runs, check, u_hint))


def _product_routes(runs, check: bool = True, u_hint: float | None = None) -> tuple[Route, Route | None]:
    """The routes of the product of several stages' pairs (product_route_at)."""
    if all(m == 1 for m, _, _ in runs):
        return Route("closed-form M=1", GaussianLine(gaussian_mu_product(runs))), None
    b = _st.one_minus_tv_bound_product(runs)
    low = min(s for m, _, s in runs if m > 1)
    if low < MIN_SIGMA:
        raise NumericsUnreliableError(f"the exact privacy profile is computed for sigma >= {MIN_SIGMA}; a stage has "
                                      f"sigma = {low:g} and E Lambda^(1/2) <= {b:.1e}")
    if b <= ONE_LEVEL:
        return Route("bound E Lambda^{1/2} <= prod_s (sqrt(M_s) e^{-1/(8 sigma_s^2)})^{E_s}", OneLine(b)), None
    first = laplace_route_product(runs, u_hint)
    if not check:
        return first, None
    if _st.logconv_product_affordable(runs):
        return first, logconv_route_product(runs)
    return first, laplace_route_product(runs, None if first.u_max is None else 1.1 * first.u_max, SECOND)


@dataclass(frozen=True)
class StagesProfile:
    """As certifier.numerics.targets.PrivacyProfile, for a run in stages (each Stage with its sigma)."""
    stages: tuple
    method: str
    tv: Value
    epsilon: dict
    delta: dict
    tpr: dict


def exact_privacy_product(stages, *, deltas=(), epsilons=(), fprs=(), check: bool = True) -> StagesProfile:
    """eps at each delta, delta at each eps and the TPR at each FPR of the run in stages (each stage
    its sigma), with error estimates; with check=True the second route widens each estimate by any
    disagreement beyond both (certifier.numerics.exact's rule)."""
    stages = _st.parse_stage_list(stages, sigma_per_stage=True)
    deltas = [check_unit("delta", d) for d in deltas]
    epsilons = [check_eps(e) for e in epsilons]
    fprs = [check_unit("false-positive rate", a) for a in fprs]
    first, other = product_route_at(_st.sigma_runs(stages), check)
    method = first.name + ("+" + other.name if other is not None else "") + _st.product_of(stages).suffix
    tv = checked(first.tv(), other.tv() if other else None)
    eps_at = {d: checked(first.epsilon(d), other.epsilon(d) if other else None) for d in deltas}
    delta_at = {e: checked(first.delta(e), other.delta(e) if other else None) for e in epsilons}
    tpr_at = {a: checked(first.tpr(a), other.tpr(a) if other else None) for a in fprs}
    name = ",".join(map(str, stages))
    for what, v in [("TV", tv)] + [(f"delta({e:g})", v) for e, v in delta_at.items()] + \
            [(f"TPR({a:g})", v) for a, v in tpr_at.items()]:
        if not (math.isfinite(v.value) and (v.error <= MAX_ERROR or v.error <= 0.01 * abs(v.value))):
            raise NumericsUnreliableError(f"the exact {what} of the stages {name} is not reliable "
                                          f"(error estimate {v.error:.1e})")
    for d, v in eps_at.items():
        if not (math.isfinite(v.value) and v.error <= EPS_REL_ERROR * max(1.0, v.value)):
            raise NumericsUnreliableError(f"eps at delta={d:g} (about {v.value:.3g}) of the stages {name} is not "
                                          f"reliable (error estimate {v.error:.1e})")
    return StagesProfile(stages, method, tv, eps_at, delta_at, tpr_at)


class StagesCurve(Curve):
    """sigma (shared) -> value - target for the stages, on the primary route, cached."""

    def __init__(self, stages, functional, target: float, what: str, mu_of=None):
        super().__init__(0, 0, 1, functional, target, what, mu_of=mu_of)
        self.stages = stages
        self.runs_at = _st.shared_sigma_runs(stages)

    def route(self, sigma: float, u_hint):
        runs = self.runs_at(sigma)
        if sigma < MIN_SIGMA and any(m > 1 for m, _, _ in runs):
            raise NumericsUnreliableError(f"the exact sigma for {self.what} lies below {MIN_SIGMA}")
        return product_route_at(runs, check=False, u_hint=u_hint)[0]


def _seed(stages, mu: float) -> float:
    """The GDP limit (B.3) of the product: mu^2 = sum_s (E_s/M_s)(e^{1/sigma^2} - 1) (a seed, not a bound)."""
    ratio = sum(s.epochs / s.steps for s in stages)
    return math.log1p(mu * mu / ratio) ** -0.5


def _shared(stages, resolution):
    stages = _st.parse_stage_list(stages, sigma_per_stage=False)
    if resolution is None:
        resolution = "1e-6"
    return stages, resolution


def exact_sigma_dp_product(stages, epsilon, delta, resolution="1e-6") -> str:
    """Least sigma on the resolution grid, shared by every stage, with both hockey-sticks at eps <= delta.

    Each stage's pair at a larger sigma is a post-processing of the one at a smaller sigma (C.4), so is
    the product: the feasible sigma form a half-line and certifier.numerics.targets' grid search applies."""
    stages, resolution = _shared(stages, resolution)
    eps, dlt = check_eps(epsilon), check_unit("delta", delta)
    f = StagesCurve(stages, lambda r: r.delta_for(eps, dlt), dlt, f"delta({eps:g}) <= {dlt:g}",
                    mu_of=lambda v: mu_for_delta(eps, v))
    return grid_search(f, _seed(stages, gdp_mu_for_delta(eps, dlt)), resolution)


def exact_sigma_tpr_product(stages, fpr, tpr, resolution="1e-6") -> str:
    """Least sigma on the resolution grid, shared by every stage, with 1 - T(alpha) <= beta."""
    stages, resolution = _shared(stages, resolution)
    alpha, beta = check_unit("false-positive rate", fpr), check_unit("true-positive rate", tpr)
    if beta <= alpha:
        raise ParameterError(f"the TPR target must exceed the FPR (a coin with bias alpha has TPR = alpha); "
                             f"got fpr={alpha:g}, tpr={beta:g}")
    f = StagesCurve(stages, lambda r: r.tpr(alpha), beta, f"TPR({alpha:g}) <= {beta:g}",
                    mu_of=lambda v: mu_for_tpr(alpha, v))
    return grid_search(f, _seed(stages, isf(alpha) - isf(beta)), resolution)
