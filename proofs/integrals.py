"""The integral formulas of Appendix C.1 and the ratio limit of Appendix C.6.
"""
from __future__ import annotations

import sympy as sp

from ._core import Phi, Steps, check, gauss_density

I = sp.I


def _transform_default(z):
    return 1 / (z**2 - I * z)


def _kernel_default(u):
    return 1 / (u**2 + sp.Rational(1, 4))


@check(9, "min_transform", "min{1,x} = sqrt(x)/(2pi) int x^{-iu}/(u^2+1/4) du, Lewis 1/(z^2-iz)",
       "C.1 (Lewis 2001); eq. (14)")
def min_transform(transform=_transform_default, kernel=_kernel_default) -> Steps:
    """The payoff w(y) = min{e^y, 1} and its generalized Fourier transform.

    (a) For z = u + iv in the strip 0 < v < 1: int_{-oo}^0 e^{izy} e^y dy +
        int_0^oo e^{izy} dy (integrated) equals transform(z).
    (b) On the line v = 1/2: transform(u + i/2) = kernel(u) and
        e^{-i(u + i/2)y} = e^{y/2} e^{-iuy}.
    (c) Inversion: (1/2pi) int_R e^{-iuy} kernel(u) du = (1/pi) int_0^oo cos(uy) kernel(u) du
        (kernel even), integrated for y > 0, equals e^{-|y|/2}; so
        e^{y/2}(...) = min{e^y, 1} for y > 0 and for y < 0 (evenness in y).
        With x = e^y this is the lemma min{1, x} = sqrt(x)/(2 pi) int x^{-iu}/(u^2 + 1/4) du.
    """
    s = Steps()
    u = sp.Symbol("u", real=True)
    w = sp.Symbol("w", positive=True)
    yv = sp.Symbol("y", real=True)
    v = 1 / (1 + w)                                  # any v in (0, 1)
    z = u + I * v
    left = sp.integrate(sp.exp((1 + I * z) * yv), (yv, -sp.oo, 0), conds="none")
    right = sp.integrate(sp.exp(I * z * yv), (yv, 0, sp.oo), conds="none")
    s.holds("(a) convergence: Re(1 + iz) = 1 - v > 0 and Re(iz) = -v < 0",
            sp.re(sp.expand(1 + I * z)).is_positive and sp.re(sp.expand(I * z)).is_negative)
    s.equal("(a) transform of min{e^y, 1} on the strip = claim", left + right, transform(z))
    s.equal("(b) claim on Im z = 1/2 equals the kernel", transform(u + I / 2), kernel(u))
    s.equal("(b) e^{-izy} = e^{y/2} e^{-iuy} on Im z = 1/2",
            sp.exp(-I * (u + I / 2) * yv), sp.exp(yv / 2) * sp.exp(-I * u * yv))
    s.equal("(c) kernel is even", kernel(u) - kernel(-u), 0)
    up = sp.Symbol("u", positive=True)
    yp = sp.Symbol("y", positive=True)
    inv = sp.integrate(sp.cos(up * yp) * kernel(up), (up, 0, sp.oo)) / sp.pi
    s.equal("(c) (1/pi) int_0^oo cos(uy) kernel du = e^{-y/2} (y > 0)", inv, sp.exp(-yp / 2))
    s.equal("(c) y > 0: e^{y/2} e^{-y/2} = min{e^y, 1} = 1", sp.exp(yp / 2) * inv, 1)
    s.equal("(c) y < 0: e^{-y/2} e^{-y/2} = min{e^y, 1} = e^{-y} (y -> -y)",
            sp.exp(-yp / 2) * inv, sp.exp(-yp))
    return s


def _abs_default(z):
    return sp.pi * sp.Abs(z) / 2


@check(10, "abs_integral", "int_0^oo (1 - cos(uz))/u^2 du = pi |z|/2",
       "C.1")
def abs_integral(claimed=_abs_default) -> Steps:
    """(a) Direct symbolic integration for z > 0; z < 0 by evenness of cos; z = 0.
    (b) The paper's route: the substitution v = uz scales out z, 1/v^2 = int_0^oo x e^{-vx} dx,
        int_0^oo (1 - cos v) e^{-vx} dv = 1/(x(1 + x^2)), and int_0^oo x/(x(1+x^2)) dx = pi/2.
    """
    s = Steps()
    u, zp, v, x = sp.symbols("u z v x", positive=True)
    direct = sp.integrate((1 - sp.cos(u * zp)) / u**2, (u, 0, sp.oo))
    s.equal("(a) z > 0: direct integral = claim", direct, claimed(zp))
    s.equal("(a) z < 0: integrand even in z, claim(-z) = claim(z)",
            (1 - sp.cos(u * (-zp))) / u**2 - (1 - sp.cos(u * zp)) / u**2
            + claimed(-zp) - claimed(zp), 0)
    s.equal("(a) z = 0: claim(0) = 0", claimed(sp.Integer(0)), 0)
    s.equal("(b) 1/v^2 = int_0^oo x e^{-vx} dx",
            sp.integrate(x * sp.exp(-v * x), (x, 0, sp.oo)), 1 / v**2)
    inner = sp.integrate((1 - sp.cos(v)) * sp.exp(-v * x), (v, 0, sp.oo))
    s.equal("(b) inner integral = 1/(x(1 + x^2))", inner, 1 / (x * (1 + x**2)))
    outer = sp.integrate(sp.simplify(x * inner), (x, 0, sp.oo))
    s.equal("(b) outer integral = pi/2, so the integral is |z| pi/2 = claim",
            sp.Abs(zp) * outer, claimed(zp))
    return s


def _ratio_default():
    return sp.sqrt(sp.pi / 2)


def _lead_default():
    return 1 / sp.sqrt(2 * sp.pi)


@check(11, "ratio_limit", "U(c_E)/TV -> sqrt(pi/2); 2 Phi(s/2) - 1 = s/sqrt(2pi) + O(s^3)",
       "Sec. 3; C.6")
def ratio_limit(ratio=_ratio_default, lead=_lead_default) -> Steps:
    """(a) Series: 2 Phi(s/2) - 1 = lead s + O(s^3) (no s^2 term).
    (b) Half the mean absolute value of N(0, s^2) is lead * s (integrated).
    (c) With s^2 <= c_E <= e^{s^2} - 1 (row 5), the ratio (sqrt(c_E)/2)/(2 Phi(s/2) - 1)
        tends to the claimed ratio at both ends of the sandwich (limits s -> 0+),
        hence (squeeze) for c_E itself.
    """
    s = Steps()
    sv = sp.Symbol("s", positive=True)
    tv = 2 * Phi(sv / 2) - 1
    ser = sp.series(tv, sv, 0, 4).removeO()
    s.equal("(a) coefficient of s = lead", ser.coeff(sv, 1), lead())
    s.equal("(a) no constant or s^2 term", ser.coeff(sv, 0) + ser.coeff(sv, 2), 0)
    xx = sp.Symbol("x", real=True)
    half_abs = sp.integrate(sp.Abs(xx) * gauss_density(xx / sv) / sv, (xx, -sp.oo, sp.oo)) / 2
    s.equal("(b) E|N(0, s^2)|/2 = lead * s", half_abs, lead() * sv)
    for name, ce in (("c_E = s^2", sv**2), ("c_E = e^{s^2} - 1", sp.exp(sv**2) - 1)):
        lim = sp.limit((sp.sqrt(ce) / 2) / tv, sv, 0, "+")
        s.equal(f"(c) lim (sqrt(c_E)/2)/TV at {name} = claimed ratio", lim, ratio())
    return s
