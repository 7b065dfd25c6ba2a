"""The facts behind method v2 (docs/method-v2.md §1): monotone concave payoffs, Lambda monotone and
linear in every step, moves and halvings that can only lower the certified expectation."""
from __future__ import annotations

import sympy as sp

from ._core import Steps, check, nonneg

L, e, c = sp.symbols("Lambda epsilon c", positive=True)
_payoffs_default = {
    "min{1, Lambda}": ((L, 1), 1),                       # (left piece, right piece), kink
    "min{Lambda, e^eps}": ((L, sp.exp(e)), sp.exp(e)),
    "min{1, e^eps Lambda}": ((sp.exp(e) * L, 1), sp.exp(-e)),
}


def _lambda_default(Y, M, E):
    """Lambda = prod_e (1/M) sum_i Y_{e,i} (Section 3, B.1)."""
    return sp.Mul(*[sp.Add(*Y[k]) / M for k in range(E)])


def _half_default(m):
    """`half` of an odd index m: weights to (m-1)/2 and (m+1)/2 on the lattice twice as coarse."""
    return (sp.Rational(1, 2), sp.Rational(1, 2))


@check(15, "moves_and_payoffs",
       "payoffs non-decreasing concave in Lambda; Lambda monotone linear in each Y; moves/halvings lower O",
       "docs/method-v2.md §1 (generalised Lemma C.5)")
def moves_and_payoffs(payoffs=None, lam=_lambda_default, half=_half_default, top=None) -> Steps:
    """(a) Each payoff g is continuous at its kink, its pieces have slopes >= 0, the slope drops at the kink
    and each piece has g'' <= 0: g is non-decreasing and concave, so conditional Jensen and moves down apply.
    (b) For M = E = 2 with positive symbols: dLambda/dY >= 0 and d^2 Lambda/dY^2 = 0 for every step.
    (c) `half` of an odd index keeps mass and mean (a mean-preserving randomisation).
    (d) One epoch: moving L above a cut c >= 1 down to c leaves min{1, L} unchanged on both sides of c."""
    s = Steps()
    for name, ((left, right), kink) in (payoffs or _payoffs_default).items():
        left, right = sp.sympify(left), sp.sympify(right)
        s.equal(f"(a) {name}: continuous at the kink", left.subs(L, kink), right.subs(L, kink))
        dl, dr = sp.diff(left, L), sp.diff(right, L)
        s.holds(f"(a) {name}: slopes >= 0", nonneg(dl) and nonneg(dr))
        s.holds(f"(a) {name}: slope drops at the kink", nonneg(sp.simplify(dl.subs(L, kink) - dr.subs(L, kink))))
        s.holds(f"(a) {name}: concave pieces", nonneg(-sp.diff(left, L, 2)) and nonneg(-sp.diff(right, L, 2)))
    M, E = 2, 2
    Y = [[sp.Symbol(f"Y_{k}_{i}", positive=True) for i in range(M)] for k in range(E)]
    Lam = lam(Y, M, E)
    for row in Y:
        for y in row:
            s.holds(f"(b) dLambda/d{y} >= 0", nonneg(sp.diff(Lam, y)))
            s.equal(f"(b) d2Lambda/d{y}2 = 0", sp.diff(Lam, y, 2), 0)
    m = sp.Symbol("m", integer=True, positive=True)
    w0, w1 = half(m)
    s.equal("(c) half keeps mass", w0 + w1, 1)
    s.equal("(c) half keeps the mean (2 (m-1)/2 w0 + 2 (m+1)/2 w1 = m)", (m - 1) * w0 + (m + 1) * w1, m)
    cut = top if top is not None else (lambda C: C)
    x = sp.Symbol("x", positive=True)
    C = 1 + c                                            # any cut >= 1
    s.equal("(d) L = c + x above the cut: min{1, L} = min{1, moved L}", sp.Min(1, C + x), sp.Min(1, cut(C)))
    return s
