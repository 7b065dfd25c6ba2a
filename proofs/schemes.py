"""The fixed-bins scheme (jax_privacy BallsInBinsSampling; docs/integrations.md), rows 16-18.

The pair: P = N(0, I_{M x E}), Q = (1/M) sum_j N(t 1_{bin j}, I_{M x E}), t = 1/sigma: each record
has one bin j for the whole run and is in all E rounds of it.  Row 15 proves the reduction to the
one-epoch pair at t' = sqrt(E) t (sufficiency of S_j = sum_e x_{j,e}/sqrt(E)); row 17 the closed form
sqrt(E) * sigma(M, 1, lambda) and that fixed bins never need less closed-form noise than random
allocation; row 18 compares certifier.numerics.schemes with these expressions numerically.
"""
from __future__ import annotations

import math

import mpmath
import sympy as sp

from . import bound
from ._core import NUMERIC, Steps, check, gauss_density
from .chi2 import expect_polynomial, lognormal_moment, one_epoch_default

t, u = sp.Symbol("t", positive=True), sp.Symbol("u", real=True)
M, E = sp.symbols("M E", positive=True, integer=True)
b, m, c, lam = sp.symbols("b m c lambda", positive=True)
_x = sp.Symbol("x", real=True)


def _scale_default(E_):
    return sp.sqrt(E_)


def _mgf(mean):
    """E exp(u X / sqrt(E)) for X ~ N(mean, 1), by integration against the normal density."""
    integrand = sp.exp(u * (_x + mean) / sp.sqrt(E)) * gauss_density(_x)
    return sp.simplify(sp.integrate(integrand, (_x, -sp.oo, sp.oo), conds="none"))


@check(16, "fixed_bins_reduction", "fixed bins, E rounds: pair = one-epoch pair at t' = sqrt(E) t",
       "Sec. 2 (6); docs/integrations.md")
def fixed_bins_reduction(scale=_scale_default) -> Steps:
    """TV_fixed(M, E, sigma) = TV(M, 1, sigma/scale(E)) with scale(E) = sqrt(E).

    (a) the log-likelihood ratio of bin j's E coordinates, sum_e (t x_e - t^2/2), is
        t' S_j - t'^2/2 with S_j = sum_e x_e / sqrt(E) and t' = scale(E) t (a Sum over symbolic E);
    (b) S_j ~ N(0, 1) under P and N(t', 1) given bin j under Q (moment generating functions,
        integrated, raised to the power E);
    (c) the rest of bin j's coordinates, (I - u u^T) x with u = 1/sqrt(E), is orthogonal to u and
        does not see the mean shift t 1 (E = 1..4): same law under P and Q, independent of S;
    (d) cross-check on the whole pair: chi^2 of the fixed-bins pair = one-epoch chi^2 at t'
        (general M, E by integration; expanded monomial by monomial for M, E <= 3).
    So (S_1, ..., S_M) is sufficient and is the one-epoch pair (6) at t'; TV, every f-divergence
    and the trade-off curve are those of the one-epoch pair.
    """
    s = Steps()
    e = sp.Symbol("e", integer=True, positive=True)
    x = sp.IndexedBase("x")
    sum_x = sp.Sum(x[e], (e, 1, E))
    per_bin = sp.expand(sp.Sum(t * x[e] - t**2 / 2, (e, 1, E)).doit())
    S = sum_x / sp.sqrt(E)
    tp = scale(E) * t
    s.equal("(a) sum_e (t x_e - t^2/2) = t' S - t'^2/2", per_bin, sp.expand(tp * S - tp**2 / 2))
    s.equal("(b) E_P exp(u S) = e^{u^2/2}", _mgf(0) ** E, sp.exp(u**2 / 2))
    s.equal("(b) E_Q[exp(u S) | bin j] = e^{u t' + u^2/2}", _mgf(t) ** E, sp.exp(u * tp + u**2 / 2))
    for k in range(1, 5):
        one = sp.ones(k, 1)
        proj = sp.eye(k) - one * one.T / k
        s.zero(f"(c) E={k}: residual projection kills the mean shift t 1", proj * (t * one))
        s.zero(f"(c) E={k}: residual is orthogonal to u = 1/sqrt(E)", proj * one / sp.sqrt(k))
    m2 = lognormal_moment(2)
    full = (M * m2**E + M * (M - 1)) / M**2 - 1      # diagonal pairs: E[prod_e Y_e^2] = (E Y^2)^E
    s.equal("(d) chi^2 of the fixed-bins pair = (e^{t'^2} - 1)/M", full, one_epoch_default(tp, M))
    moment = {0: sp.Integer(1), 1: lognormal_moment(1), 2: m2}
    for mm in range(1, 4):
        for ee in range(1, 4):
            ys = [sp.symbols(f"y{j}_1:{ee + 1}", positive=True) for j in range(mm)]
            lam_ = sp.Add(*[sp.Mul(*row) for row in ys]) / mm
            e_l2 = expect_polynomial(lam_**2, [y for row in ys for y in row], moment.__getitem__)
            s.equal(f"(d) expanded chi^2 at M={mm}, E={ee}", e_l2 - 1,
                    one_epoch_default(scale(sp.Integer(ee)) * t, mm))
    return s


def _fixed_sigma_default(M_, E_, c_):
    return sp.sqrt(E_) * sp.log(1 + M_ * c_) ** sp.Rational(-1, 2)


@check(17, "fixed_bins_closed_form", "fixed-bins closed form sqrt(E) sigma(M,1,lambda); >= random allocation",
       "Cor. 3.4 at E=1; docs/integrations.md")
def fixed_bins_closed_form(sigma=_fixed_sigma_default) -> Steps:
    """sigma_fixed(M, E, lambda) = sqrt(E) * sigma(M, 1, lambda) solves U(chi^2) = lambda.

    (a) at sigma_fixed the fixed-bins chi-square (e^{E/sigma^2} - 1)/M is c_lambda, on both branches
        of U, so U(chi^2) = lambda (Theorem 3.3 at one epoch, row 16);
    (b) sigma_fixed equals sqrt(E) times eq. (12) at E = 1;
    (c) (e^{E t^2} - 1)/M >= (1 + (e^{t^2} - 1)/M)^E - 1 for M >= 1 (E = 1..6): with b = e^{t^2} - 1,
        M = 1 + m, M^E times the difference is a polynomial in b, m >= 0 with nonnegative
        coefficients; so the fixed-bins closed form never asks for less noise.
    """
    s = Steps()
    for name, c_l in (("low", bound.c_lambda_low(lam)), ("high", bound.c_lambda_high(lam))):
        sg = sigma(M, E, c_l)
        s.equal(f"(a) {name} branch: (e^(E/sigma^2) - 1)/M = c_lambda", (sp.exp(E / sg**2) - 1) / M, c_l)
    s.equal("(b) sigma_fixed = sqrt(E) * sigma(M, 1, lambda) of eq. (12)",
            sigma(M, E, c), sp.sqrt(E) * bound.sigma_default(M, sp.Integer(1), c))
    for k in range(1, 7):
        diff = ((1 + b) ** k - 1) / M - ((1 + b / M) ** k - 1)
        poly = sp.Poly(sp.expand(sp.cancel((diff * M**k).subs(M, 1 + m))), b, m)
        s.holds(f"(c) E={k}: M^E (chi2_fixed - chi2_random) has coefficients >= 0",
                all(coef >= 0 for coef in poly.coeffs()))
    return s


_sigma_fixed = sp.lambdify((M, E, c), _fixed_sigma_default(M, E, c), modules="mpmath")


def _sample(rng):
    return (int(10 ** rng.uniform(0, 6)), rng.randint(1, 500), rng.uniform(0.001, 0.999),
            10 ** rng.uniform(math.log10(0.3), 2))


@check(18, "fixed_bins_implementation", "certifier.numerics.schemes computes rows 16-17 (rel. 1e-12)",
       "docs/integrations.md", method=NUMERIC)
def fixed_bins_implementation(impl=None, n: int = 200) -> Steps:
    """certifier.numerics.schemes' fixed-bins closed form, chi-square and bound against rows 16-17 at 50 digits."""
    if impl is None:
        from certifier.numerics import schemes as impl
    from .implementation import ref_c_lambda, ref_U
    s = Steps()
    mp = mpmath.mpf
    s.mp_agree("closed_form_sigma (fixed-bins) = sqrt(E) sigma(M, 1, lambda)",
               lambda M_, E_, l_: impl.closed_form_sigma(M_, E_, l_, "fixed-bins"),
               lambda M_, E_, l_: _sigma_fixed(M_, E_, ref_c_lambda(mp(l_))),
               lambda rng: _sample(rng)[:3], n=n, dps=50, rtol=1e-12, relative=True)
    s.mp_agree("chi2 (fixed-bins) = (e^(E/sigma^2) - 1)/M",
               lambda M_, E_, sg: impl.chi2(M_, E_, sg, "fixed-bins"),
               lambda M_, E_, sg: mpmath.expm1(E_ / mp(sg) ** 2) / M_,
               lambda rng: (lambda p: (p[0], p[1], p[3] * math.sqrt(p[1])))(_sample(rng)),
               n=n, dps=50, rtol=1e-12, relative=True)
    s.mp_agree("tv_bound (fixed-bins) = U(chi2)",
               lambda M_, E_, sg: impl.tv_bound(M_, E_, sg, "fixed-bins"),
               lambda M_, E_, sg: ref_U(mpmath.expm1(E_ / mp(sg) ** 2) / M_),
               lambda rng: (lambda p: (p[0], p[1], p[3] * math.sqrt(p[1])))(_sample(rng)),
               n=n, dps=50, rtol=1e-12, relative=True)
    return s
