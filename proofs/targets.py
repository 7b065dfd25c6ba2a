"""The quick bounds of the dp and tpr kinds (certifier.numerics.quick_bounds, docs/targets.md §5).

Row 19: the integer moments (R1) of L_M: M^{-q} sum over partitions of q into l <= M parts of
M!/(M-l)!/prod m_i! * q!/prod lambda_j! * e^{t^2/2 sum lambda_j(lambda_j - 1)} equals E[L_M^q],
expanded monomial by monomial with E[Y^k] = e^{k(k-1)t^2/2} (integrated symbolically), for all
M <= 4, q <= 5; and the implementation's integer coefficients are that sum.
Row 20: the tangent constant of (R2): for K > 0 and q >= 2, (x - K) <= C x^q on x > 0 with
C = K^{1-q}(q-1)^{q-1}/q^q, with equality at x = qK/(q-1): the gap C x^q - x + K is convex in x
with a double root there (q = 2..6 symbolic in x and K).
"""
from __future__ import annotations

import math

import sympy as sp

from ._core import Steps, check
from .chi2 import lognormal_moment, t


def _expect_polynomial(poly_expr, variables, moment):
    """E of a polynomial in independent copies of Y, using E[Y^k] = moment(k)."""
    poly = sp.Poly(sp.expand(poly_expr), *variables)
    return sp.Add(*[coef * sp.Mul(*[moment(k) for k in monom]) for monom, coef in poly.terms()])


def _partition_sum(m: int, q: int, exponent=lambda a: a * t**2 / 2):
    """(R1) written out from the partitions, in sympy."""
    from sympy.utilities.iterables import partitions
    total = 0
    for part in partitions(q):
        parts = sum(part.values())
        if parts > m:
            continue
        ways = sp.Integer(math.perm(m, parts))
        for mult in part.values():
            ways /= sp.factorial(mult)
        multinomial = sp.factorial(q)
        a = 0
        for size, mult in part.items():
            multinomial /= sp.factorial(size) ** mult
            a += mult * size * (size - 1)
        total += ways * multinomial * sp.exp(exponent(a))
    return total / sp.Integer(m) ** q


@check(19, "integer_moments", "E[L_M^q] = M^{-q} sum_partitions (M)_l/prod m_i! q!/prod lambda_j! e^{...}",
       "docs/targets.md (R1); Sec. 3")
def integer_moments(formula=_partition_sum, coefficients=None) -> Steps:
    from certifier.numerics.quick_bounds import moment_coefficients
    coefficients = coefficients or moment_coefficients
    s = Steps()
    k = sp.Symbol("k", integer=True, nonnegative=True)
    general = lognormal_moment(k)
    s.equal("E[Y^k] = e^{k(k-1)t^2/2} (integral, symbolic k)", general, sp.exp(k * (k - 1) * t**2 / 2))
    for m in range(1, 5):
        ys = sp.symbols(f"y1:{m + 1}", positive=True)
        for q in range(2, 6):
            expanded = _expect_polynomial((sp.Add(*ys) / m) ** q, ys, lambda j: general.subs(k, j))
            claimed = formula(m, q)
            s.equal(f"(R1) = E[L_M^q] at M={m}, q={q}", claimed, expanded)
            impl = sum(c * sp.exp(a * t**2 / 2) for a, c in coefficients(m, q)) / sp.Integer(m) ** q
            s.equal(f"implementation's coefficients = E[L_M^q] at M={m}, q={q}", impl, expanded)
    return s


def _tangent_default(big_k, q):
    return big_k ** (1 - q) * sp.Integer(q - 1) ** (q - 1) / sp.Integer(q) ** q


@check(20, "rdp_tangent", "(x - K)_+ <= K^{1-q}(q-1)^{q-1}/q^q x^q, equality at x = qK/(q-1)",
       "docs/targets.md (R2); Canonne-Kamath-Steinke Prop. 12")
def rdp_tangent(constant=_tangent_default) -> Steps:
    s = Steps()
    x, big_k = sp.symbols("x K", positive=True)
    for q in range(2, 7):
        c = constant(big_k, q)
        gap = c * x**q - (x - big_k)
        x0 = q * big_k / (q - 1)
        s.equal(f"q={q}: the gap vanishes at x = qK/(q-1)", gap.subs(x, x0), 0)
        s.equal(f"q={q}: so does its x-derivative (a double root)", sp.diff(gap, x).subs(x, x0), 0)
        s.holds(f"q={q}: the gap is convex in x (second derivative >= 0)",
                sp.simplify(sp.diff(gap, x, 2)).is_nonnegative)
        s.holds(f"q={q}: the gap is >= 0 at x -> 0+ (equals K), so (x - K)_+ <= C x^q",
                sp.simplify(gap.subs(x, 0)) == big_k)
    return s
