"""The report of a run in stages (format v5: claim.stages, no steps/epochs; docs/compose.md §3).

The pair of a run in stages is the product of the stages' pairs, E Lambda^q = prod_s F_{M_s, sigma_s}(q)^{E_s}
(Theorem 4.1 with a product in place of a power). Its curves are the stages numerics
(certifier.numerics.stages, stages_profile): floating point with error estimates, not certified. A stage
entry may carry its own `sigma`; otherwise it runs at the claim's shared sigma.
"""
from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal

import numpy as np

from certifier.door import (
    Stage,
    U,
    closed_form_sigma_product,
    exact_privacy_product,
    exact_privacy_scheme,
    exact_tv_product,
    given_form,
    log1p_b_over_m,
    product_route_at,
)
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.params import parse_sigma
from sigmacert.report import curves, plots

TV_PRODUCT = r"$d_{TV}(\prod_s P_{M_s}^{\otimes E_s}, \prod_s Q_{M_s}^{\otimes E_s})$"


def stage_list(claim: dict) -> list[tuple[int, int, str | None]]:
    """(M_s, E_s, the stage's own sigma text or None) in the order the claim lists them."""
    return [(st["steps"], st["epochs"], st.get("sigma")) for st in claim["stages"]]


def per_stage_sigma(claim: dict) -> bool:
    return any(s is not None for _, _, s in stage_list(claim))


def runs_at(claim: dict, sigma=None) -> list[tuple[int, int, float]]:
    """[(M_s, E_s, sigma_s)] as floats: each stage's own sigma, else `sigma` (default: the claim's shared one)."""
    shared = claim.get("sigma") if sigma is None else sigma
    return [(m, e, float(parse_sigma(str(s if s is not None else shared)))) for m, e, s in stage_list(claim)]


def profile_at(claim: dict, sigma: float, **kw):
    """The claim's pair's numerical profile at sigma (exact_privacy_scheme of a block; of a run in stages
    exact_privacy_product, every stage at sigma unless it carries its own), None where the numerics refuse."""
    def block():
        return exact_privacy_scheme(claim["steps"], claim["epochs"], sigma, claim.get("scheme"), check=False, **kw)

    def product(_):
        return exact_privacy_product([(m, e, repr(s)) for m, e, s in runs_at(claim, repr(sigma))], check=False, **kw)
    try:
        return given_form(claim.get("stages")).pick(block, product)
    except (NumericsUnreliableError, ParameterError):
        return None


def chi2(runs) -> float:
    """The product pair's chi-square: 1 + c = prod_s (1 + (e^{1/sigma_s^2} - 1)/M_s)^{E_s} (eq. 9, a product)."""
    return math.expm1(sum(e * log1p_b_over_m(s, m) for m, e, s in runs))


class StagesPair:
    """The product pair's optimal TPR and hockey-stick curve (the primary route of stages_profile)."""

    def __init__(self, runs):
        self.route = product_route_at(runs, check=False)[0]

    def tpr(self, alpha: float) -> float:
        return self.route.tpr(alpha).value

    def delta(self, eps: float) -> float:  # the larger of delta_{Q||P}, delta_{P||Q}
        return self.route.delta(eps).value


def stages_pair(runs):
    """StagesPair, or None when the numerics refuse."""
    try:
        return StagesPair(runs)
    except (NumericsUnreliableError, ParameterError):
        return None


def tv_curves(claim: dict, sigma: float, sigma_low: float | None) -> curves.TVCurves:
    """The closed-form bound U(c) of the product's chi-square on a dense shared-sigma grid (Theorem 3.3 holds
    for any pair) and the exact TV of the stages at a few points, sigma and sigma_low included."""
    lam = float(claim["target"])
    shape = [(m, e) for m, e, _ in stage_list(claim)]
    closed_f = closed_form_sigma_product([Stage(m, e) for m, e in shape], lam)
    closed = Decimal(repr(closed_f)).quantize(Decimal("1e-6"), rounding=ROUND_CEILING)
    lo, hi = 0.92 * min(sigma, float(closed)), 1.06 * max(sigma, float(closed))
    grid = np.linspace(lo, hi, 241)
    bound = np.array([U(chi2([(m, e, s) for m, e in shape])) for s in grid])
    points = {*np.linspace(lo, hi, curves.WIDE_POINTS).tolist(), sigma} | ({sigma_low} if sigma_low else set())
    exact, refused = {}, []
    for s in sorted(points):
        try:
            exact[s] = exact_tv_product([(m, e, repr(s)) for m, e in shape], check=False).tv
        except (NumericsUnreliableError, ParameterError):
            refused.append(s)
    return curves.TVCurves(grid, bound, exact, tuple(refused), closed)


def stages_plots(f) -> tuple[dict, dict]:
    """The three figures of an accepted tv certificate of a run in stages, and a remark per figure."""
    c, p = f.claim, f.predicate
    runs = runs_at(c)
    lam = float(c["target"])
    pair = stages_pair(runs)
    refused_pair = "" if pair else "The numerics refused the product pair's density at this sigma."
    tpr = [(float(a), float(row["tpr"])) for a, row in f.tpr_rows]
    eps = [(float(d), float(row["epsilon"])) for d, row in f.epsilon_rows]
    t = curves.trade_off(pair, 0, 0, 0.0, lam, c=chi2(runs))
    svgs, notes = {}, {}
    if not per_stage_sigma(c):        # TV against the one shared sigma
        cert = {"sigma": c["sigma"], "target": c["target"], "bound": p["bound"]}
        if f.two_sided:
            cert.update(sigma_low=p["lower"]["sigma_low"], tv_lower=p["lower"]["tv_lower"])
        tv = tv_curves(c, float(c["sigma"]), float(cert["sigma_low"]) if f.two_sided else None)
        svgs["tv"] = plots.svg(plots.tv_figure(tv, cert, ylabel=TV_PRODUCT, bound_label=r"closed-form bound "
                                               r"$U(c)$, $1 + c = \prod_s (1 + c_s)^{E_s}$ (Thm 3.3)"), "tv")
        refused = ", ".join(f"{s:.6g}" for s in tv.refused)
        notes["tv"] = f"The exact-TV numerics refused sigma = {refused}; those points are left out." if refused else ""
    else:
        notes["plots"] = ("The stages carry their own sigma, so TV is not drawn against one shared sigma; the "
                          "trade-off and (epsilon, delta) plots are at the stages' sigmas.")
    svgs["tradeoff"] = plots.svg(plots.tradeoff_figure(t, lam, tpr), "tradeoff")
    svgs["epsilon"] = plots.svg(plots.epsilon_figure(curves.epsilon_curve(pair), eps), "epsilon")
    notes.update(tradeoff=refused_pair, epsilon=refused_pair)
    return svgs, notes
