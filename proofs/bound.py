"""The closed-form bound: U(c), Corollary 3.4, the c_E sandwich and the GDP
multiplier (Theorem 3.3, Corollary 3.4 / eq. (12), Appendix B.2, B.3).
"""
from __future__ import annotations

import sympy as sp

from ._core import Phi, Steps, check, nonneg

c = sp.Symbol("c", positive=True)
lam = sp.Symbol("lambda", positive=True)
M, E = sp.symbols("M E", positive=True)


def u_low_expr(c_):
    return sp.sqrt(c_) / 2


def u_high_expr(c_):
    return c_ / (1 + c_)


@check(3, "U_function", "U: branches meet at c=1, U increasing, two-point pairs attain U",
       "Thm. 3.3; B.2")
def u_function(u_low=u_low_expr, u_high=u_high_expr) -> Steps:
    """U(c) = sqrt(c)/2 on [0, 1], c/(1 + c) on [1, oo) (Theorem 3.3).

    * continuity: both branches equal 1/2 at c = 1;
    * monotone: both derivatives are > 0 for c > 0;
    * attained (B.2): L = (1 + sqrt c, 1 - sqrt c) with probability 1/2 each
      (c <= 1) has E L = 1, chi^2 = c and TV = E(1 - L)_+ = u_low(c); for c >= 1
      the pair L in {0, 1/(1 - p)} with P(L = 0) = p = c/(1 + c) has E L = 1,
      chi^2 = c and TV = p = u_high(c).
    """
    s = Steps()
    s.equal("branches meet: u_low(1) = u_high(1)", u_low(sp.Integer(1)), u_high(sp.Integer(1)))
    s.equal("value at c=1 is 1/2", u_low(sp.Integer(1)), sp.Rational(1, 2))
    s.holds("u_low increasing (derivative > 0)", sp.simplify(sp.diff(u_low(c), c)).is_positive)
    s.holds("u_high increasing (derivative > 0)", sp.simplify(sp.diff(u_high(c), c)).is_positive)
    r = sp.sqrt(c)
    hi, lo = 1 + r, 1 - r
    half = sp.Rational(1, 2)
    s.equal("pair c<=1: E_P L = 1", half * hi + half * lo, 1)
    s.equal("pair c<=1: chi^2 = c", half * (hi - 1) ** 2 + half * (lo - 1) ** 2, c)
    # (1 - L)_+ = 0 on the upper atom and 1 - lo = sqrt(c) >= 0 on the lower atom
    s.equal("pair c<=1: TV = E(1-L)_+ = u_low(c)", half * 0 + half * (1 - lo), u_low(c))
    p = c / (1 + c)
    top = 1 / (1 - p)
    s.equal("pair c>=1: E_P L = 1", p * 0 + (1 - p) * top, 1)
    s.equal("pair c>=1: chi^2 = c", p * (0 - 1) ** 2 + (1 - p) * (top - 1) ** 2, c)
    s.holds("pair c>=1: the upper atom is >= 1", nonneg(sp.simplify(top - 1)))
    s.equal("pair c>=1: TV = E(1-L)_+ = u_high(c)", p * 1, u_high(c))
    return s


def c_lambda_low(l_):
    return 4 * l_**2


def c_lambda_high(l_):
    return l_ / (1 - l_)


def sigma_default(M_, E_, c_):
    return sp.log(1 + M_ * ((1 + c_) ** (1 / E_) - 1)) ** sp.Rational(-1, 2)


def c_epochs(M_, E_, sigma_):
    """c_E = (1 + (e^{1/sigma^2} - 1)/M)^E - 1 (eq. 9)."""
    return (1 + (sp.exp(1 / sigma_**2) - 1) / M_) ** E_ - 1


@check(4, "corollary_3_4", "sigma(M,E,lambda) solves U(c_E) = lambda on both branches",
       "Cor. 3.4 eq. (12); B.2")
def corollary_3_4(c_low=c_lambda_low, c_high=c_lambda_high, sigma=sigma_default) -> Steps:
    """Corollary 3.4.

    * c_lambda = 4 lambda^2 solves sqrt(c)/2 = lambda and lies in (0, 1] exactly
      for lambda in (0, 1/2]; c_lambda = lambda/(1 - lambda) solves c/(1+c) = lambda
      and lies in [1, oo) exactly for lambda in [1/2, 1) (solveset);
    * the two definitions agree at lambda = 1/2;
    * substituting sigma(M, E, c) into c_E gives c back (any c > 0, written as
      c = (1 + rho)^E - 1 with rho > 0), so U(c_E) = U(c_lambda) = lambda;
    * c_E is strictly decreasing in sigma, so the solution is unique.
    """
    s = Steps()
    unit = sp.Interval.open(0, 1)
    half = sp.Rational(1, 2)
    s.equal("low branch: sqrt(c_lambda)/2 = lambda", sp.sqrt(c_low(lam)) / 2, lam)
    s.holds("low branch: c_lambda <= 1 iff lambda <= 1/2",
            sp.solveset(c_low(lam) <= 1, lam, unit) == sp.Interval.Lopen(0, half))
    l_in = sp.Symbol("l", positive=True)
    l_high = l_in / (1 + l_in)  # any lambda in (0, 1)
    s.equal("high branch: c/(1+c) = lambda at c = c_lambda",
            c_high(l_high) / (1 + c_high(l_high)), l_high)
    s.holds("high branch: c_lambda >= 1 iff lambda >= 1/2",
            sp.solveset(c_high(lam) >= 1, lam, unit) == sp.Interval.Ropen(half, 1))
    s.equal("branches agree at lambda = 1/2", c_low(half), c_high(half))
    rho = sp.Symbol("rho", positive=True)
    cc = (1 + rho) ** E - 1
    sig = sigma(M, E, cc)
    s.equal("c_E(sigma(M, E, c)) = c", c_epochs(M, E, sig), cc)
    b = sp.Symbol("b", positive=True)
    sg = sp.Symbol("sigma", positive=True)
    s.holds("c_E increasing in b = e^{1/sigma^2} - 1",
            sp.diff((1 + b / M) ** E, b).is_positive)
    s.holds("b decreasing in sigma", sp.diff(sp.exp(1 / sg**2), sg).is_negative)
    return s


def _lower_default(x_):
    return x_


def _upper_default(x_):
    return sp.exp(x_) - 1


@check(5, "c_E_sandwich", "x <= c_E <= e^x - 1, x = E(e^{1/sigma^2}-1)/M",
       "Sec. 3; B.2")
def c_e_sandwich(lower=_lower_default, upper=_upper_default) -> Steps:
    """x <= c_E <= e^x - 1 (B.2), for every E >= 1 and u = b/M >= 0.

    With E = 1 + k (k >= 0) and u >= 0, c_E = (1 + u)^E - 1 and x = E u.
    Lower (Bernoulli): c_E - lower(x) vanishes at u = 0 and its u-derivative
    E((1 + u)^k - 1) is >= 0 since k log(1 + u) >= 0.  Upper:
    log(1 + upper(x)) - log(1 + c_E) = E(u - log(1 + u)) >= 0 (zero at u = 0,
    derivative u/(1 + u) >= 0).  Each inequality is established by the sound
    prover ``nonneg``; equality at E = 1 is checked for the lower bound.
    """
    s = Steps()
    u = sp.Symbol("u", nonnegative=True)
    k = sp.Symbol("k", nonnegative=True)
    e = 1 + k
    ce = (1 + u) ** e - 1
    x = e * u
    s.holds("lower: c_E - lower(x) >= 0 (u >= 0, E >= 1)", nonneg(ce - lower(x), u))
    s.equal("lower is tight at E = 1", ce.subs(k, 0), lower(x.subs(k, 0)))
    s.holds("upper: upper(x) - c_E >= 0 (u >= 0, E >= 1)", nonneg(upper(x) - ce, u))
    s.equal("both bounds vanish at x = 0", lower(sp.Integer(0)) + upper(sp.Integer(0)), 0)
    return s


def gdp_sigma_default(M_, E_, z_):
    return sp.log(1 + 4 * z_**2 * M_ / E_) ** sp.Rational(-1, 2)


@check(12, "gdp_limit_sigma", "GDP sigma solves Phi(mu/2) = 1/2 + lambda/2, mu^2 = r(e^{1/sigma^2}-1)",
       "Thm. 3.5; B.3")
def gdp_limit(sigma=gdp_sigma_default) -> Steps:
    """The GDP-limit multiplier of B.3.

    z = Phi^{-1}((1 + lambda)/2) = sqrt(2) erfinv(lambda) > 0.  With r = E/M and
    sigma = (ln(1 + 4 z^2 M/E))^{-1/2}: mu = sqrt(r(e^{1/sigma^2} - 1)) = 2z, and
    Phi(mu/2) = Phi(z) = 1/2 + lambda/2.  Also checks Phi(z) with z as written.
    """
    s = Steps()
    l_in = sp.Symbol("l", positive=True)
    lm = l_in / (1 + l_in)                     # any lambda in (0, 1)
    z = sp.sqrt(2) * sp.erfinv(lm)
    s.equal("Phi(z) = (1 + lambda)/2 for z = sqrt(2) erfinv(lambda)", Phi(z), (1 + lm) / 2)
    zp = sp.Symbol("z", positive=True)
    sig = sigma(M, E, zp)
    mu = sp.sqrt(E / M * (sp.exp(1 / sig**2) - 1))
    s.equal("mu = 2z", mu, 2 * zp)
    s.equal("Phi(mu/2) = 1/2 + lambda/2", Phi(mu.subs(zp, z) / 2), sp.Rational(1, 2) + lm / 2)
    return s
