"""The lognormal one-step variable Y behind the certificate and the M = 1 case
(Section 3, eq. (8); Appendix C.3-C.5; docs/certificate.md section 4 (i)-(iii)).

Y = exp(tX - t^2/2), X ~ N(0, 1), t = 1/sigma > 0.
"""
from __future__ import annotations

import sympy as sp

from ._core import Phi, Steps, check, gauss_density

t = sp.Symbol("t", positive=True)
y = sp.Symbol("y", positive=True)
_x = sp.Symbol("x", real=True)
_A = sp.Symbol("A", real=True)


def _f0_default(y_, t_):
    return Phi((sp.log(y_) + t_**2 / 2) / t_)


def _f1_default(y_, t_):
    return Phi((sp.log(y_) - t_**2 / 2) / t_)


def lognormal_cdf_and_partial_mean():
    """(Pr(Y <= y), E[Y 1{Y <= y}]) by integrating over {X <= (ln y + t^2/2)/t}."""
    a = (sp.log(y) + t**2 / 2) / t
    f0 = sp.integrate(gauss_density(_x), (_x, -sp.oo, _A), conds="none")
    f1 = sp.integrate(sp.exp(t * _x - t**2 / 2) * gauss_density(_x), (_x, -sp.oo, _A),
                      conds="none")
    return f0.subs(_A, a), f1.subs(_A, a)


@check(6, "lognormal_partial", "Pr(Y<=y) = Phi((ln y+t^2/2)/t), E[Y;Y<=y] = Phi((ln y-t^2/2)/t)",
       "C.5 step 1; C.3")
def lognormal_partial(F0=_f0_default, F1=_f1_default) -> Steps:
    """Y <= y iff X <= a(y) = (ln y + t^2/2)/t (t > 0, log increasing), so
    Pr(Y <= y) = int_{-oo}^{a} phi and E[Y 1{Y <= y}] = int_{-oo}^{a} e^{tx - t^2/2} phi(x) dx,
    both integrated symbolically.  Also: the limits y -> 0+ (0, 0) and y -> oo
    (1, E Y = 1), and dF0/dy is the lognormal density f_t of Appendix C.3.
    """
    s = Steps()
    # ln Y - ln y = t (X - a(y)) with t > 0, so Y <= y iff X <= a(y)
    s.equal("ln Y - ln y = t (X - (ln y + t^2/2)/t)",
            t * _x - t**2 / 2 - sp.log(y), t * (_x - (sp.log(y) + t**2 / 2) / t))
    s.holds("t > 0", t.is_positive)
    f0, f1 = lognormal_cdf_and_partial_mean()
    s.equal("Pr(Y <= y) = claim (integral)", f0, F0(y, t))
    s.equal("E[Y 1{Y <= y}] = claim (integral)", f1, F1(y, t))
    s.equal("claimed F0(0+) = 0", sp.limit(F0(y, t), y, 0, "+"), 0)
    s.equal("claimed F1(0+) = 0", sp.limit(F1(y, t), y, 0, "+"), 0)
    s.equal("claimed F0(oo) = 1", sp.limit(F0(y, t), y, sp.oo), 1)
    s.equal("claimed F1(oo) = E Y = 1", sp.limit(F1(y, t), y, sp.oo), 1)
    f_c3 = sp.exp(-(sp.log(y) + t**2 / 2) ** 2 / (2 * t**2)) / (y * t * sp.sqrt(2 * sp.pi))
    s.equal("dF0/dy = f_t(y) of App. C.3", sp.diff(F0(y, t), y), f_c3)
    return s


def _tail0_default(y_, t_):
    """1 - F0(y) = Pr(Y > y) in the erfc form the certifier evaluates."""
    return sp.erfc((sp.log(y_) + t_**2 / 2) / (t_ * sp.sqrt(2))) / 2


def _tail1_default(y_, t_):
    """E[Y 1{Y > y}] in the erfc form the certifier evaluates."""
    return sp.erfc((sp.log(y_) - t_**2 / 2) / (t_ * sp.sqrt(2))) / 2


def _cell_default(a, b, m, mu):
    """Lemma C.5 rounding of a cell (a, b] with mass m and partial mean mu."""
    return (b * m - mu) / (b - a), (mu - a * m) / (b - a)


@check(7, "two_point_rounding", "two-point rounding keeps mean and mass; p_k = rounded lognormal",
       "Lemma C.5; C.5 steps 1-3")
def two_point_rounding(cell=_cell_default, tail0=_tail0_default, tail1=_tail1_default) -> Steps:
    """The two-point rounding of Lemma C.5 as the certifier applies it.

    (a) cell(a, b, m, mu) = (to_a, to_b): to_a + to_b = m and a to_a + b to_b = mu.
    (b) to_b = int_a^b (y - a)/(b - a) f_t(y) dy and to_a = int_a^b (b - y)/(b - a) f_t(y) dy
        for the lognormal density f_t, i.e. the cell formula with
        m = F0(b) - F0(a), mu = F1(b) - F1(a) is exactly the per-value rounding
        of Lemma C.5 integrated over the cell (fundamental theorem of calculus:
        both sides vanish at b = a, resp. a = b, and have equal derivatives).
    (c) On a grid 0 = g_0 < ... < g_4 (any spacing, generic F0, F1 with
        F0(0) = F1(0) = 0) the point masses p_g telescope: sum p_g = F0(g_4)
        (mass kept) and sum g p_g = F1(g_4) (mean kept).
    (d) Step (ii) re-rounding j -> multiples of g (r = j mod g) and step (iii)
        log-grid rounding keep mass and mean; the B_k shortcut of 4(iii) gives
        the same upper share.
    (e) The forms the certifier evaluates (certifier/bounds/upper_v1.py step_i): the
        tails tail0 = 1 - F0 and tail1 = E[Y 1{Y > y}] = E Y - F1 = 1 - F1 in erfc
        form, cell masses/means as tail differences, grid points in units of h
        (cell(a h, b h, m, mu) = cell(a, b, m, mu/h)), and "up = m - down".
    (f) Why rounding can only lower E min{1, Lambda} (Lemma C.5): a single value
        y = a + s(b - a), 0 < s < 1, gets the weights cell(a, b, 1, y) = (1 - s, s),
        both >= 0, and the chord of every affine l(y) = alpha y + beta is exact, so
        for g = min{1, P y} = min(l_1, l_2) (P >= 0 the other factors):
        chord(g)(y) <= chord(l_i)(y) = l_i(y) for i = 1, 2, i.e. chord(g) <= g.
    """
    s = Steps()
    a, b, m, mu = sp.symbols("a b m mu", real=True)
    lo, hi = cell(a, b, m, mu)
    s.equal("(a) masses sum to the cell mass", lo + hi, m)
    s.equal("(a) mean preserved", a * lo + b * hi, mu)
    # (b) against the lognormal
    ap, bp = sp.symbols("a_p b_p", positive=True)
    F0 = lambda v: Phi((sp.log(v) + t**2 / 2) / t)
    F1 = lambda v: Phi((sp.log(v) - t**2 / 2) / t)
    f = sp.diff(F0(y), y)
    s.equal("(b) dF1/dy = y f_t(y)", sp.diff(F1(y), y), y * f)
    lo_p, hi_p = cell(ap, bp, F0(bp) - F0(ap), F1(bp) - F1(ap))
    up_int = hi_p * (bp - ap)    # claimed int_a^b (y - a) f dy
    dn_int = lo_p * (bp - ap)    # claimed int_a^b (b - y) f dy
    s.equal("(b) up share vanishes at b = a", up_int.subs(bp, ap), 0)
    s.equal("(b) d/db of up share = (b - a) f(b)", sp.diff(up_int, bp), (bp - ap) * f.subs(y, bp))
    s.equal("(b) down share vanishes at a = b", dn_int.subs(ap, bp), 0)
    s.equal("(b) d/da of down share = -(b - a) f(a)", sp.diff(dn_int, ap), -(bp - ap) * f.subs(y, ap))
    # (c) a generic grid
    G0, G1 = sp.Function("F0"), sp.Function("F1")
    g = [sp.Integer(0)] + list(sp.symbols("g1:5", positive=True))
    F0g = lambda v: 0 if v == 0 else G0(v)
    F1g = lambda v: 0 if v == 0 else G1(v)
    p = [0] * len(g)
    for i in range(len(g) - 1):
        lo_i, hi_i = cell(g[i], g[i + 1], F0g(g[i + 1]) - F0g(g[i]), F1g(g[i + 1]) - F1g(g[i]))
        p[i] += lo_i
        p[i + 1] += hi_i
    s.equal("(c) sum of point masses = F0(top)", sp.Add(*p), G0(g[-1]))
    s.equal("(c) sum of g * point masses = F1(top)", sp.Add(*[gi * pi for gi, pi in zip(g, p)]),
            G1(g[-1]))
    # (d) step (ii): a value j h rounded onto multiples of g h, r = j mod g
    j, gg, r, w = sp.symbols("j g r w", positive=True)
    base = j - r
    lo_d, hi_d = cell(base, base + gg, w, w * j)
    s.equal("(d) step (ii): down share = w (g - r)/g", lo_d, w * (gg - r) / gg)
    s.equal("(d) step (ii): up share = w r/g", hi_d, w * r / gg)
    # (d) step (iii): L in [e^{k eta}, e^{(k+1) eta}), S = j g h, L = S/M
    eta, kk, hh, MM = sp.symbols("eta k h M", positive=True)
    ek, ek1 = sp.exp(kk * eta), sp.exp((kk + 1) * eta)
    L = j * gg * hh / MM
    lo_l, hi_l = cell(ek, ek1, w, w * L)
    s.equal("(d) step (iii): down share = (e^{(k+1)eta} - L)/(e^{(k+1)eta} - e^{k eta})",
            lo_l, w * (ek1 - L) / (ek1 - ek))
    Bk, Bk1 = MM * ek / (gg * hh), MM * ek1 / (gg * hh)
    s.equal("(d) step (iii): up share = (j - B_k)/(B_{k+1} - B_k)", hi_l, w * (j - Bk) / (Bk1 - Bk))
    # (e) the certifier's complementary (erfc) forms and units of h
    s.equal("(e) tail0 = 1 - F0", tail0(y, t), 1 - F0(y))
    s.equal("(e) tail1 = E Y - F1 = 1 - F1", tail1(y, t), 1 - F1(y))
    s.equal("(e) cell mass = tail0(a) - tail0(b)", tail0(ap, t) - tail0(bp, t), F0(bp) - F0(ap))
    s.equal("(e) cell mean = tail1(a) - tail1(b)", tail1(ap, t) - tail1(bp, t), F1(bp) - F1(ap))
    s.equal("(e) cell at (a h, b h) = cell at (a, b) with mean mu/h",
            sp.Matrix(cell(a * hh, b * hh, m, mu)) - sp.Matrix(cell(a, b, m, mu / hh)), sp.zeros(2, 1))
    s.equal("(e) up share = m - down share", hi, m - lo)
    # (f) concavity: the chord of min{1, P y} lies below it
    d, sw = sp.symbols("d w", positive=True)
    sv = 1 / (1 + sw)                                  # any s in (0, 1)
    yv = a + sv * d
    wa, wb = cell(a, a + d, 1, yv)
    s.holds("(f) weights of one value are >= 0", sp.simplify(wa).is_nonnegative
            and sp.simplify(wb).is_nonnegative)
    al, be = sp.symbols("alpha beta", real=True)
    aff = lambda v: al * v + be
    s.equal("(f) the chord of an affine function is exact", wa * aff(a) + wb * aff(a + d), aff(yv))
    return s


def _F1_default(q, t_):
    return sp.exp(q * (q - 1) * t_**2 / 2)


def _tv1_default(t_, E_):
    return 2 * Phi(t_ * sp.sqrt(E_) / 2) - 1


@check(8, "M_equals_1", "F_1(q) = e^{q(q-1)t^2/2}; at M=1, TV = 2 Phi(t sqrt(E)/2) - 1",
       "C.4; eq. (14)")
def m_equals_1(F1=_F1_default, tv1=_tv1_default) -> Steps:
    """The M = 1 checks of Appendix C.4.

    * F_1(q) = E e^{q(tX - t^2/2)} by integration (symbolic q);
    * the pair N(0, I_E) vs N(t 1, I_E) has log-likelihood ratio mu S - mu^2/2
      with S = sum x_e / sqrt(E) ~ N(0, 1), mu = t sqrt(E); Lambda < 1 iff S < mu/2;
      TV = E_P(1 - Lambda)_+ = int_{-oo}^{mu/2} (1 - e^{mu s - mu^2/2}) phi(s) ds
      is integrated and equals the claim;
    * formula (14) with this F_1 gives the claim: F_1(1/2 + iu)^E = e^{-g(u^2 + 1/4)},
      g = E t^2/2, and I(g) = (1/pi) int_0^oo (1 - e^{-g(u^2+1/4)})/(u^2 + 1/4) du
      has I(0) = 0 and I'(g) = (1/pi) int_0^oo e^{-g(u^2+1/4)} du (integrated),
      which equals d/dg of the claim written in g.
    """
    s = Steps()
    q = sp.Symbol("q", real=True)
    mom = sp.integrate(sp.exp(q * (t * _x - t**2 / 2)) * gauss_density(_x), (_x, -sp.oo, sp.oo),
                       conds="none")
    s.equal("F_1(q) = E e^{q(tX - t^2/2)} (integral)", mom, F1(q, t))
    E = sp.Symbol("E", positive=True)
    mu = t * sp.sqrt(E)
    sx, sv = sp.Symbol("Sx", real=True), sp.Symbol("s", real=True)
    s.equal("log Lambda = t sum x - E t^2/2 = mu S - mu^2/2",
            t * sx - E * t**2 / 2, mu * (sx / sp.sqrt(E)) - mu**2 / 2)
    s.holds("Lambda < 1 iff S < mu/2",
            sp.solveset(mu * sv - mu**2 / 2 < 0, sv, sp.S.Reals) == sp.Interval.open(-sp.oo, mu / 2))
    m_ = sp.Symbol("m", positive=True)
    tv = sp.integrate((1 - sp.exp(m_ * sv - m_**2 / 2)) * gauss_density(sv), (sv, -sp.oo, m_ / 2),
                      conds="none")
    s.equal("TV = E_P(1 - Lambda)_+ = claim (integral)", tv.subs(m_, mu), tv1(t, E))
    u = sp.Symbol("u", positive=True)
    g = sp.Symbol("g", positive=True)
    qq = sp.Rational(1, 2) + sp.I * u
    s.equal("F_1(1/2 + iu)^E = e^{-g(u^2+1/4)}, g = E t^2/2",
            sp.expand(sp.log(F1(qq, t)) * E), sp.expand(-(E * t**2 / 2) * (u**2 + sp.Rational(1, 4))))
    dI = sp.integrate(sp.exp(-g * (u**2 + sp.Rational(1, 4))), (u, 0, sp.oo), conds="none") / sp.pi
    claim_g = tv1(sp.sqrt(2 * g / E), E)          # t written through g = E t^2/2
    s.equal("formula (14): I'(g) = d/dg claim", sp.diff(claim_g, g), dI)
    s.equal("formula (14): I(0) = 0 = claim at g = 0", sp.limit(claim_g, g, 0, "+"), 0)
    return s
