"""Chi-square of the Gaussian pair: one epoch, composition, and the
small-false-positive bound (Section 3, eqs. (8)-(9); Appendix B.1; Prop. B.2).

Notation: t = 1/sigma, X ~ N(0, 1), Y = exp(tX - t^2/2) (Section 3, eq. (8)),
L_M = (1/M) sum_j Y_j, c = chi^2.
"""
from __future__ import annotations

import itertools

import sympy as sp

from ._core import Steps, check, gauss_density

t = sp.Symbol("t", positive=True)
M, E = sp.symbols("M E", positive=True, integer=True)
c = sp.Symbol("c", nonnegative=True)
_x = sp.Symbol("x", real=True)


def lognormal_moment(k):
    """E[Y^k] by symbolic integration against the N(0, 1) density (B.1)."""
    integrand = sp.exp(k * (t * _x - t**2 / 2)) * gauss_density(_x)
    return sp.simplify(sp.integrate(integrand, (_x, -sp.oo, sp.oo), conds="none"))


def expect_polynomial(poly_expr, variables, moment):
    """E of a polynomial in independent copies of Y, using E[Y^k] = moment(k)."""
    poly = sp.Poly(sp.expand(poly_expr), *variables)
    return sp.Add(*[coef * sp.Mul(*[moment(k) for k in monom])
                    for monom, coef in poly.terms()])


def one_epoch_default(t_, M_):
    return (sp.exp(t_**2) - 1) / M_


@check(1, "one_epoch_chi2", "chi^2(Q_M||P_M) = E_P[L_M^2] - 1 = (e^{t^2}-1)/M",
       "Sec. 3 eq. (8); B.1")
def one_epoch_chi2(claimed=one_epoch_default) -> Steps:
    """chi^2(Q_M || P_M) = E_P[L_M^2] - 1 from E[Y_i Y_j] (Section 3).

    E[Y] = 1 and E[Y^2] = e^{t^2} by integration; for i != j independence gives
    E[Y_i Y_j] = E[Y]^2.  Among the M^2 pairs (i, j), M are diagonal, so
    E[L_M^2] = (M E[Y^2] + M(M - 1) E[Y]^2)/M^2.  The same expectation is also
    expanded monomial by monomial for M = 1..5 as a cross-check of the count.
    """
    s = Steps()
    m1, m2 = lognormal_moment(1), lognormal_moment(2)
    s.equal("E[Y] = 1 (integral)", m1, 1)
    s.equal("E[Y^2] = e^{t^2} (integral)", m2, sp.exp(t**2))
    second = (M * m2 + M * (M - 1) * m1**2) / M**2
    s.equal("E[L_M^2] - 1 equals the claim (general M)", second - 1, claimed(t, M))
    moments = {0: sp.Integer(1), 1: m1, 2: m2}   # L_M^2 has degree <= 2 in each Y_j
    for m in range(1, 6):
        ys = sp.symbols(f"y1:{m + 1}", positive=True)
        e_l2 = expect_polynomial((sp.Add(*ys) / m) ** 2, ys, moments.__getitem__)
        s.equal(f"expanded E[L_M^2] - 1 equals the claim at M={m}", e_l2 - 1, claimed(t, m))
    return s


def _composed_default(c_, E_):
    return (1 + c_) ** E_


@check(2, "composition", "1 + chi^2(Q^(x)E||P^(x)E) = (1 + chi^2)^E",
       "Sec. 3 eq. (9); B.1")
def composition(claimed=_composed_default) -> Steps:
    """Composition over E independent epochs (eq. (9)).

    The likelihood ratio of a product pair is the product of the factors (B.1),
    so E_P[Lambda^2] is a product of E equal factors 1 + c.  Proved for general
    E by induction on the claim (base E = 1, step E -> E + 1), and checked by
    expanding E_P[Lambda^2] for the Gaussian pair with E[Y^k] = e^{k(k-1)t^2/2}
    (integrated symbolically) for all M, E <= 3.
    """
    s = Steps()
    s.equal("base case E=1: claim = 1 + c", claimed(c, 1), 1 + c)
    s.equal("induction step: claim(E+1) = claim(E)(1 + c)",
            claimed(c, E + 1), claimed(c, E) * (1 + c))
    k = sp.Symbol("k", integer=True, nonnegative=True)
    general = lognormal_moment(k)
    s.equal("E[Y^k] = e^{k(k-1)t^2/2} (integral, symbolic k)", general,
            sp.exp(k * (k - 1) * t**2 / 2))
    moment = lambda j: general.subs(k, j)
    for m, e in itertools.product(range(1, 4), range(1, 4)):
        ys = [sp.symbols(f"y{ep}_1:{m + 1}", positive=True) for ep in range(e)]
        lam = sp.Mul(*[sp.Add(*row) / m for row in ys])
        flat = [y for row in ys for y in row]
        e_lam2 = expect_polynomial(lam**2, flat, moment)
        one_epoch = (sp.exp(t**2) - 1) / m
        s.equal(f"E_P[Lambda^2] = claim at M={m}, E={e}", e_lam2, claimed(one_epoch, e))
    return s


def tpr_default(alpha_, c_):
    return alpha_ + sp.sqrt(c_ * alpha_ * (1 - alpha_))


@check(13, "chi2_tpr_bound", "TPR <= alpha + sqrt(c alpha(1-alpha)) (Cauchy-Schwarz), attained",
       "Prop. B.2 (B.4)")
def chi2_tpr(claimed=tpr_default) -> Steps:
    """Proposition B.2: the Cauchy-Schwarz step and the pair that attains it.

    (a) Cauchy-Schwarz for a finite distribution, by Lagrange's identity
        (sum p a^2)(sum p b^2) - (sum p a b)^2 = 1/2 sum p_i p_j (a_i b_j - a_j b_i)^2.
    (b) For 0 <= phi <= 1 with E phi = alpha: alpha(1 - alpha) - E(phi - alpha)^2
        = E[phi(1 - phi)] >= 0.
    (c) Extreme: phi = 1{A}, P(A) = alpha, L - 1 = k(phi - alpha) with
        k = sqrt(c/(alpha(1-alpha))) has E_P L = 1, chi^2 = c and E_Q phi equal
        to the claimed bound; and the claim equals alpha + sqrt(c) sqrt(alpha(1-alpha)),
        the product of the two Cauchy-Schwarz factors.  (L >= 0 there needs
        c <= (1 - alpha)/alpha, the range where the bound is below 1.)
    """
    s = Steps()
    n = 3
    p = sp.symbols("p1:4", nonnegative=True)
    a = sp.symbols("a1:4", real=True)
    b = sp.symbols("b1:4", real=True)
    ex = lambda f: sp.Add(*[p[i] * f(i) for i in range(n)])
    lagrange = sp.Rational(1, 2) * sp.Add(*[p[i] * p[j] * (a[i] * b[j] - a[j] * b[i]) ** 2
                                            for i in range(n) for j in range(n)])
    lhs = (ex(lambda i: a[i] ** 2) * ex(lambda i: b[i] ** 2) - ex(lambda i: a[i] * b[i]) ** 2)
    s.equal("Lagrange identity (3-point distribution, sum p = 1)",
            lhs.subs(p[2], 1 - p[0] - p[1]), lagrange.subs(p[2], 1 - p[0] - p[1]))
    s.holds("Lagrange sum is >= 0", lagrange.is_nonnegative)
    phi = sp.symbols("f1:4", nonnegative=True)
    one_minus = sp.symbols("g1:4", nonnegative=True)  # g_i = 1 - f_i >= 0
    alpha = ex(lambda i: phi[i])
    var = ex(lambda i: (phi[i] - alpha) ** 2)
    slack = ex(lambda i: phi[i] * one_minus[i])
    s.equal("alpha(1-alpha) - E(phi-alpha)^2 = E[phi(1-phi)] (sum p = 1)",
            (alpha * (1 - alpha) - var - slack).subs({one_minus[i]: 1 - phi[i] for i in range(n)})
            .subs(p[2], 1 - p[0] - p[1]), 0)
    s.holds("E[phi(1-phi)] >= 0", slack.is_nonnegative)
    w = sp.Symbol("w", positive=True)
    al = 1 / (1 + w)                                   # any alpha in (0, 1)
    cc = sp.Symbol("c", positive=True)
    k = sp.sqrt(cc / (al * (1 - al)))
    l_in, l_out = 1 + k * (1 - al), 1 - k * al          # L on A and off A
    s.equal("extreme pair: E_P L = 1", al * l_in + (1 - al) * l_out, 1)
    s.equal("extreme pair: chi^2 = c", al * (l_in - 1) ** 2 + (1 - al) * (l_out - 1) ** 2, cc)
    s.equal("extreme pair: E_Q phi = E_P[L phi] = claim", al * l_in, claimed(al, cc))
    s.equal("claim = alpha + sqrt(c) * sqrt(alpha(1-alpha)) (Cauchy-Schwarz product)",
            claimed(al, cc), al + sp.sqrt(cc) * sp.sqrt(al * (1 - al)))
    return s
