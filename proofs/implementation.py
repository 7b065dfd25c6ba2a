"""Row 14: ``certifier.numerics.closed_form`` implements the expressions proved above.

This row is numeric by nature: the float functions of the module are compared
with the sympy expressions of rows 3-5, 12 and 13 evaluated by mpmath at 50
digits, at many seeded random (M, E, sigma, lambda, alpha, c) points, with
relative tolerance 1e-12.  ``largest_epochs`` and ``smallest_steps`` are
integer searches; they are checked against their defining property
(U(c_E) <= lambda at the answer and > lambda one step further) evaluated in
50-digit arithmetic.
"""
from __future__ import annotations

import math
import sys

import mpmath
import sympy as sp

from . import bound, chi2
from ._core import NUMERIC, Steps, check

RTOL = 1e-12
DPS = 50
N_POINTS = 300
_FLOAT_MAX = mpmath.mpf(sys.float_info.max)

_M, _E, _sig, _lam, _c, _al = sp.symbols("M E sigma lambda c alpha", positive=True)


def _mp(expr, *args):
    return sp.lambdify(args, expr, modules="mpmath")


# the proved expressions, as 50-digit functions
_cE = _mp(bound.c_epochs(_M, _E, _sig), _M, _E, _sig)
_U_low = _mp(bound.u_low_expr(_c), _c)
_U_high = _mp(bound.u_high_expr(_c), _c)
_cl_low = _mp(bound.c_lambda_low(_lam), _lam)
_cl_high = _mp(bound.c_lambda_high(_lam), _lam)
_sigma = _mp(bound.sigma_default(_M, _E, _c), _M, _E, _c)
_gdp = _mp(bound.gdp_sigma_default(_M, _E, sp.sqrt(2) * sp.erfinv(_lam)), _M, _E, _lam)
_tpr = _mp(chi2.tpr_default(_al, _c), _al, _c)
_x = _mp(_E * (sp.exp(1 / _sig**2) - 1) / _M, _M, _E, _sig)


def _float_range(v):
    """A value above the largest double is what the float code reports as inf."""
    return mpmath.inf if v > _FLOAT_MAX else v


def ref_U(c):
    return _U_low(c) if c <= 1 else _U_high(c)


def ref_c_lambda(lam):
    return _cl_low(lam) if lam <= 0.5 else _cl_high(lam)


def ref_tv(M, E, sigma):
    return ref_U(_cE(M, E, sigma))


def _sample(rng):
    M = int(10 ** rng.uniform(0, 6))
    E = rng.randint(1, 200)
    sigma = 10 ** rng.uniform(math.log10(0.2), math.log10(50))
    lam = rng.uniform(0.001, 0.999)
    alpha = rng.uniform(0, 1)
    c = 10 ** rng.uniform(-6, 3)
    return M, E, sigma, lam, alpha, c


def _mpf(v):
    return mpmath.mpf(v)  # exact conversion of the float input


@check(14, "implementation", "certifier.numerics.closed_form computes rows 3-5, 12, 13 (rel. 1e-12)",
       "eqs. (9)-(12); B.2-B.4", method=NUMERIC)
def implementation(impl=None, n: int = N_POINTS) -> Steps:
    """Compare each float function of ``impl`` (default certifier.numerics.closed_form)."""
    if impl is None:
        from certifier.numerics import closed_form as impl
    s = Steps()
    pts = lambda pick: (lambda rng: pick(*_sample(rng)))
    agree = lambda label, f, g, pick: s.mp_agree(label, f, g, pts(pick), n=n, dps=DPS,
                                                  rtol=RTOL, relative=True)
    agree("c_E", lambda M, E, sg: impl.c_E(M, E, sg),
          lambda M, E, sg: _float_range(_cE(M, E, _mpf(sg))), lambda M, E, sg, *_: (M, E, sg))
    agree("c_E_sandwich lower x", lambda M, E, sg: impl.c_E_sandwich(M, E, sg)[0],
          lambda M, E, sg: _float_range(_x(M, E, _mpf(sg))), lambda M, E, sg, *_: (M, E, sg))
    agree("c_E_sandwich upper e^x - 1", lambda M, E, sg: impl.c_E_sandwich(M, E, sg)[1],
          lambda M, E, sg: _float_range(mpmath.expm1(_x(M, E, _mpf(sg)))),
          lambda M, E, sg, *_: (M, E, sg))
    agree("U", lambda c: impl.U(c), lambda c: ref_U(_mpf(c)), lambda *p: (p[5],))
    agree("U near and above 1", lambda c: impl.U(c), lambda c: ref_U(_mpf(c)),
          lambda *p: (p[3] * 2,))
    agree("tv_bound = U(c_E)", lambda M, E, sg: impl.tv_bound(M, E, sg),
          lambda M, E, sg: ref_tv(M, E, _mpf(sg)), lambda M, E, sg, *_: (M, E, sg))
    agree("accuracy_bound = 1/2 + U(c_E)/2", lambda M, E, sg: impl.accuracy_bound(M, E, sg),
          lambda M, E, sg: (1 + ref_tv(M, E, _mpf(sg))) / 2, lambda M, E, sg, *_: (M, E, sg))
    agree("c_lambda", lambda lam: impl.c_lambda(lam), lambda lam: ref_c_lambda(_mpf(lam)),
          lambda *p: (p[3],))
    agree("closed_form_sigma (eq. 12)", lambda M, E, lam: impl.closed_form_sigma(M, E, lam),
          lambda M, E, lam: _sigma(M, E, ref_c_lambda(_mpf(lam))),
          lambda M, E, sg, lam, *_: (M, E, lam))
    agree("U(c_E) at closed_form_sigma = lambda",
          lambda M, E, lam: lam,
          lambda M, E, lam: ref_tv(M, E, _mpf(impl.closed_form_sigma(M, E, lam))),
          lambda M, E, sg, lam, *_: (M, E, lam))
    agree("gdp_limit_sigma (B.3)", lambda M, E, lam: impl.gdp_limit_sigma(M, E, lam),
          lambda M, E, lam: _gdp(M, E, _mpf(lam)), lambda M, E, sg, lam, *_: (M, E, lam))
    agree("chi2_tpr_bound = min(1, alpha + sqrt(c alpha(1-alpha)))",
          lambda al, c: impl.chi2_tpr_bound(al, c),
          lambda al, c: min(mpmath.mpf(1), _tpr(_mpf(al), _mpf(c))),
          lambda M, E, sg, lam, al, c: (al, c))
    agree("chi2_tpr_bound at small alpha",
          lambda al, c: impl.chi2_tpr_bound(al, c),
          lambda al, c: min(mpmath.mpf(1), _tpr(_mpf(al), _mpf(c))),
          lambda M, E, sg, lam, al, c: (al**4, c))

    # hand-picked edge points: overflow of e^{1/sigma^2}, branch points lambda = 1/2
    # and c = 1, alpha at 0 and 1, huge sigma (c_E tiny), M = E = 1
    edges = [(1, 1, 0.05, 0.5, 0.0, 1.0), (100, 10, 0.1, 0.5, 1.0, 1.0),
             (1, 1, 1e3, 0.25, 0.5, 1e-12), (10**6, 1, 1e3, 0.999, 1e-9, 1e3),
             (7, 3, 0.5, 0.001, 0.25, 4.0)]

    def edge(pick):
        """A 'sampler' that walks through the edge points in order."""
        points = iter(edges)
        return lambda rng: pick(*next(points))

    ref_cE = lambda M, E, sg: _float_range(_cE(M, E, _mpf(sg)))
    s.mp_agree("edge points: c_E", impl.c_E, ref_cE, edge(lambda M, E, sg, *_: (M, E, sg)),
               n=len(edges), dps=DPS, rtol=RTOL, relative=True)
    s.mp_agree("edge points: tv_bound", impl.tv_bound, lambda M, E, sg: ref_tv(M, E, _mpf(sg)),
               edge(lambda M, E, sg, *_: (M, E, sg)), n=len(edges), dps=DPS, rtol=RTOL,
               relative=True)
    s.mp_agree("edge points: U", impl.U, lambda c: ref_U(_mpf(c)), edge(lambda *p: (p[5],)),
               n=len(edges), dps=DPS, rtol=RTOL, relative=True)
    s.mp_agree("edge points: closed_form_sigma", impl.closed_form_sigma,
               lambda M, E, lam: _sigma(M, E, ref_c_lambda(_mpf(lam))),
               edge(lambda M, E, sg, lam, *_: (M, E, lam)), n=len(edges), dps=DPS, rtol=RTOL,
               relative=True)
    s.mp_agree("edge points: chi2_tpr_bound", impl.chi2_tpr_bound,
               lambda al, c: min(mpmath.mpf(1), _tpr(_mpf(al), _mpf(c))),
               edge(lambda M, E, sg, lam, al, c: (al, c)), n=len(edges), dps=DPS, rtol=RTOL,
               relative=True)

    def epochs_ok(M, sg, lam):
        e = impl.largest_epochs(M, sg, lam)
        ok = e >= 0 and (e == 0 or ref_tv(M, e, _mpf(sg)) <= lam * (1 + RTOL))
        ok = ok and ref_tv(M, e + 1, _mpf(sg)) > lam * (1 - RTOL)
        return 1 if ok else 0

    def steps_ok(E, sg, lam):
        try:
            m = impl.smallest_steps(E, sg, lam)
        except OverflowError:
            return 1 if ref_tv(2**86, E, _mpf(sg)) > lam else 0
        ok = m >= 1 and ref_tv(m, E, _mpf(sg)) <= lam * (1 + RTOL)
        ok = ok and (m == 1 or ref_tv(m - 1, E, _mpf(sg)) > lam * (1 - RTOL))
        return 1 if ok else 0

    s.mp_agree("largest_epochs: U(c_E) <= lambda at E, > lambda at E + 1", epochs_ok,
               lambda *p: 1, pts(lambda M, E, sg, lam, *_: (M, 1 + sg, lam)), n=n // 3, dps=DPS)
    s.mp_agree("smallest_steps: U(c_E) <= lambda at M, > lambda at M - 1", steps_ok,
               lambda *p: 1, pts(lambda M, E, sg, lam, *_: (E, 0.5 + sg, lam)), n=n // 3, dps=DPS)
    return s
