"""The densities of ln Lambda under P and Q at a functional's kink, from the exact numerics' G (never a proof).

With G(s) = E_P min{Lambda, e^s} (docs/targets.md §3, (P1)): G'(s) = e^s P(ln Lambda > s) and
G''(s) = G'(s) - e^s f^P(s), so f^Q(s) = e^s f^P(s) = G'(s) - G''(s) (dQ = Lambda dP). Central
differences of step D on the line's G give both. Only the grid planners read them
(certifier.methods.v1.plan.KindWeights: how much a rounding costs a kind against TV).
"""
from __future__ import annotations

import math

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics.stages_profile import product_route_at

D = 1e-3              # the difference step in s = ln K (G is smooth; its error ~1e-12 is far below D^2 f)


def f_q(g, s: float, d: float = D) -> float:
    """The density of ln Lambda under Q at s: G'(s) - G''(s) by central differences of g."""
    g0, gp, gm = g(s), g(s + d), g(s - d)
    return (gp - gm) / (2 * d) - (gp - 2 * g0 + gm) / (d * d)


def f_p(g, s: float, d: float = D) -> float:
    """The density of ln Lambda under P at s: e^{-s} f^Q(s)."""
    return math.exp(-s) * f_q(g, s, d)


def line(runs):
    """The primary route's line (its g(s) = G(e^s)) of the pair of a run [(M_s, E_s, sigma_s)] (a block: one
    stage; a run in stages: the product of the stages' pairs), or None where the numerics refuse."""
    try:
        return product_route_at(runs, check=False)[0].main
    except (NumericsUnreliableError, ParameterError, OverflowError, ValueError):
        return None
