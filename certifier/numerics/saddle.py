"""The privacy profile in the tails, to a relative error: the inversion on a tilted line per eps.

With G(z) = E_P Lambda^z = prod_s F_{M_s}(z)^{E_s} (Theorem 4.1; a run in stages is the product) and a = e^eps,

    delta_{Q||P}(eps) = E_P (Lambda - a)_+  = (1/pi) int_0^inf Re[G(z) a^{1-z} / (z(z-1))] du,  z = c + iu, c > 1,
    delta_{P||Q}(eps) = E_P (1 - a Lambda)_+ = (1/pi) int_0^inf Re[G(z) a^{z} / (z(z-1))] du,    z = c + iu, c < 0

(for one x > 0 the line integral of x^z a^{1-z}/(z(z-1)) is (x - a)_+: shifted left past the poles z = 1, 0
it picks x - a when x > a, shifted right it vanishes when x < a; the second likewise). Both hold for every
admissible c; on the line 1/2 of formula (14) the answer is 1 - G(e^eps), a difference that loses every
digit once delta is below the line's absolute error. Here c is placed near the saddle point of

    phi(c) = ln G(c) - (c - 1) eps - ln(c(c - 1))      (Q||P;  ln G(c) + c eps - ln(c(c - 1)) for P||Q),

where the integrand is largest on the real axis and its size is delta itself, so every absolute error
of the line is an error relative to delta (Alghamdi et al., ICML 2023). c is chosen on the GDP model of
ln F (the parabola through ln F(0) = ln F(1) = 0, ln F(2) = ln(1 + v^2)) and kept in [1.03, 2.9]
(Q||P: certifier.numerics.tilted_moments computes F there, c = 2 excepted) or [-C_MAX, -0.3] (P||Q). The integrand
is analytic in |Im u| < d (d the distance from c to the poles 0 and 1), so the trapezoid in u with
step du <= d/10 errs by about e^{-2 pi 9}; its estimate is the change to step 2 du. Off the saddle
point the integrand turns like e^{i u phi'(c)}, so du <= 0.6/|phi'(c)| as well.

Error estimate (relative to delta by construction): the line's own coarse r- and x-sums and the coarse
u-sum (a-posteriori), its cut r-tails and round-off (E |F|^{E-1} x floor), the u-tail beyond the last node.
Floating point, not a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from certifier.errors import NumericsUnreliableError
from certifier.numerics import density_moments, two_steps_tails
from certifier.numerics.laplace_moments import FINE, FIRST, SECOND, Discretization
from certifier.numerics.tilted_moments import log_moment, tilted_line

Q_RANGE = (1.03, 2.9)
C_MAX = 4.0                  # the P||Q line is kept at c >= -C_MAX: (T1) loses e^{2.8|c|} to cancellation
P_RANGE = (-C_MAX, -0.3)
D_MAX = 1e6                  # the density line (certifier.numerics.density_moments) has no range of its own:
                             # its c is kept where the tilted density closes inside its grid
LOG_TAIL = math.log(1e-16)   # the u-sum stops where the integrand is below this share of its peak
MAX_TRIES = 5
FALLBACK = 1e-6              # a density line's estimate above this share of delta: the T-line is tried too
MAX_U_NODES = 1 << 17       # a line needing more u-nodes than this is refused before it is formed
DIRECT_ENOUGH = 1e-3        # one epoch: the direct sum is kept within this share (the line's u-range is long)
REFINE = 1e-3               # a line whose u-step estimate carries more than this share of delta: du halved once


@dataclass(frozen=True)
class Factor:
    """One block of the pair: E epochs of M steps at noise sigma (M = 1: the Gaussian closed form)."""
    steps: int
    epochs: int
    sigma: float

    @property
    def kappa2(self) -> float:
        """ln F(2) = ln(1 + v^2) = ln(1 + (e^{t^2} - 1)/M)."""
        t2 = 1.0 / (self.sigma * self.sigma)
        if t2 > 700:
            return t2 - math.log(self.steps)
        return math.log1p(math.expm1(t2) / self.steps)


@dataclass(frozen=True)
class TailValue:
    value: float
    error: float
    c: float
    parts: dict


def c_range(factors, side: str, wide: bool = True) -> tuple[float, float]:
    """The c a line may take: the T-lines' range, widened (wide=True) to where every factor's tilted
    density closes when each factor has one (M = 1 factors are exact at any c)."""
    lo, hi = Q_RANGE if side == "qp" else P_RANGE
    if not wide:
        return lo, hi
    limits = [_density_limit(f, side) for f in factors if f.steps > 1]
    if any(x is None for x in limits):
        return lo, hi
    if side == "qp":
        return lo, max(hi, min(limits, default=D_MAX))
    return min(lo, max(limits, default=-D_MAX)), hi


_LIMITS: dict = {}


def _density_limit(f, side: str) -> float | None:
    """The largest |c| (sign of the side) at which the factor's tilted density closes (None: no density)."""
    key = (f.steps, f.sigma, side)
    if key not in _LIMITS:
        if len(_LIMITS) > 64:
            _LIMITS.clear()
        sign = 1.0 if side == "qp" else -1.0
        base = Q_RANGE[1] if side == "qp" else -P_RANGE[0]
        if not (density_moments.available(f.steps, f.sigma)
                and density_moments.closes(f.steps, f.sigma, sign * base)):
            _LIMITS[key] = None
        else:
            lo, hi = base, base
            while hi < D_MAX and density_moments.closes(f.steps, f.sigma, sign * hi * 2.0):
                hi *= 2.0
            lo, hi = hi, min(2.0 * hi, D_MAX)
            for _ in range(6):
                mid = math.sqrt(lo * hi)
                lo, hi = (mid, hi) if density_moments.closes(f.steps, f.sigma, sign * mid) else (lo, mid)
            _LIMITS[key] = sign * lo
    return _LIMITS[key]


def choose_c(factors, eps: float, side: str) -> float:
    """The saddle point of phi on the GDP model of ln G (ln G(c) ~ c(c - 1) sum E kappa2 / 2), in range."""
    k2 = sum(f.epochs * f.kappa2 for f in factors)
    lo, hi = c_range(factors, side)
    if side == "qp":
        phi = lambda c: 0.5 * c * (c - 1.0) * k2 - (c - 1.0) * eps - math.log(c * (c - 1.0))  # noqa: E731
        # the model's saddle point: phi' = 0 is a cubic; its root near 1/2 + eps/k2 seeds the bracket
    else:
        phi = lambda c: 0.5 * c * (c - 1.0) * k2 + c * eps - math.log(c * (c - 1.0))  # noqa: E731
    if hi - lo > 10.0:   # a wide range: minimise in ln|c| (the saddle point may sit anywhere in it)
        sgn = 1.0 if side == "qp" else -1.0
        a, b = sorted((math.log(abs(lo)), math.log(abs(hi))))
        r = minimize_scalar(lambda y: phi(sgn * math.exp(y)), bounds=(a, b), method="bounded",
                            options={"xatol": 1e-5})
        c = sgn * math.exp(float(r.x))
    else:
        r = minimize_scalar(phi, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
        c = float(r.x)
    return 2.0 + math.copysign(0.01, c - 2.0) if abs(c - 2.0) < 0.01 else c   # (T2) avoids c = 2 itself


def _slope(factors, eps: float, side: str, c: float) -> float:
    """phi'(c) on the model: the integrand's phase turns at this rate in u (du must follow it)."""
    k2 = sum(f.epochs * f.kappa2 for f in factors)
    lin = -eps if side == "qp" else eps
    return (c - 0.5) * k2 + lin - (2.0 * c - 1.0) / (c * (c - 1.0))


def _in_t_range(c: float) -> bool:
    return (Q_RANGE[0] <= c <= Q_RANGE[1] or P_RANGE[0] <= c <= P_RANGE[1]) and abs(c - 2.0) >= 1e-3


def _factor_line(f, c: float, du: float, u_max: float, disc: Discretization, n: int, second: bool):
    """(log F, coarse variant, other coarse variant), floor of one block M > 1 on the line c.

    The primary takes the density line (certifier.numerics.density_moments) where the factor's tilted
    density closes, else (T1)/(T2); the second route takes (T1)/(T2) wherever c is in their range, so that
    at moderate c the two routes share no quadrature (the density line alone serves c beyond the range)."""
    use_density = (not (second and _in_t_range(c))) and density_moments.available(f.steps, f.sigma) \
        and density_moments.closes(f.steps, f.sigma, c)
    if use_density:
        try:
            line = density_moments.density_line(f.steps, f.sigma, c, du, u_max)
            return (line.log_f[:n], line.log_f_coarse_r[:n], line.log_f_coarse_x[:n]), line.floor[:n]
        except NumericsUnreliableError:
            if not _in_t_range(c):
                raise
    if not _in_t_range(c):
        raise NumericsUnreliableError(f"no moment line at c = {c:g} for M={f.steps}, sigma={f.sigma:g}")
    if c < 0.0 and disc is FIRST:
        # (T1) at large |c|: every second r-node over-states the error by orders (the integrand grows
        # off the ray as e^{|c| r}); the check is the line on 9 nodes per strip against 7
        line = tilted_line(f.steps, f.sigma, c, du, u_max, FINE)
        coarse = tilted_line(f.steps, f.sigma, c, du, u_max, FIRST)
        return (line.log_f[:n], coarse.log_f[:n], line.log_f_coarse_x[:n]), line.floor[:n]
    line = tilted_line(f.steps, f.sigma, c, du, u_max, disc)
    return (line.log_f[:n], line.log_f_coarse_r[:n], line.log_f_coarse_x[:n]), line.floor[:n]


def _log_g(factors, c: float, du: float, u_max: float, disc: Discretization, second: bool = False):
    """ln G(c + i u_j) and its variants (coarse r, coarse x), and the floor of G / G(c) per node."""
    n = int(math.ceil(u_max / du)) + 1
    if n > MAX_U_NODES:   # a step this fine means a phase rate no saddle-point line has: its slope is off
        raise NumericsUnreliableError(f"the tilted line at c = {c:g} would need {n} u-nodes (du = {du:.2g})")
    u = du * np.arange(n)
    z = c + 1j * u
    total = [np.zeros(n, dtype=complex) for _ in range(3)]
    floor = np.zeros(n)
    for f in factors:
        if f.steps == 1:
            lf = z * (z - 1.0) / (2.0 * f.sigma * f.sigma)
            parts, fl = (lf, lf, lf), np.full(n, 1e-15)
        else:
            parts, fl = _factor_line(f, c, du, u_max, disc, n, second)
        for i in range(3):
            total[i] += f.epochs * parts[i]
        # |d ln G| = E |dF/F| <= E floor F(c)/|F|: relative to G(c) the error of G is E |F/F(c)|^{E-1} floor
        rel = np.exp(parts[0].real - parts[0][0].real)
        floor += f.epochs * np.maximum(rel, 1e-300) ** (f.epochs - 1) * fl * np.exp(
            total[0].real - total[0][0].real - f.epochs * (parts[0].real - parts[0][0].real))
    return u, total, floor


def _log_moment(f, c: float) -> float:
    """ln F_M(c) at real c: the tilted density's sum where it closes, else (T1)/(T2); at -C_MAX <= c < 0
    (T1) first (the density's round-off is weighted by L^c there, largest where L is small and the density
    is below its round-off: its sum came out negative at M = 10, sigma = 4.47, c = -3.9)."""
    t_holds = (c < 0.0 or 1.0 < c < 3.0) and abs(c - 2.0) >= 1e-3   # (T1)/(T2) hold for c < 0 and 1 < c < 3
    dens = density_moments.available(f.steps, f.sigma)
    if P_RANGE[0] <= c < 0.0 or not dens:
        return log_moment(f.steps, f.sigma, c)
    if density_moments.closes(f.steps, f.sigma, c) or not t_holds:
        try:
            return density_moments.log_moment(f.steps, f.sigma, c)
        except NumericsUnreliableError:
            if not t_holds:
                raise
    return log_moment(f.steps, f.sigma, c)


def _measured_slope(factors, eps: float, side: str, c: float) -> float:
    """phi'(c) of the true ln G, by a central difference of the real moments ln F(c +- h) (the model's
    slope is off where the tails are heavy)."""
    h = 1e-4 if abs(c - 2.0) > 2e-4 else 1e-5
    d = 0.0
    for f in factors:
        if f.steps == 1:
            d += f.epochs * (c - 0.5) / (f.sigma * f.sigma)
        else:
            d += f.epochs * (_log_moment(f, c + h) - _log_moment(f, c - h)) / (2.0 * h)
    return d + (-eps if side == "qp" else eps) - (2.0 * c - 1.0) / (c * (c - 1.0))


def refine_c(factors, eps: float, side: str) -> tuple[float, float | None]:
    """(c, phi''): the saddle point of the true phi, from the model's by two secant steps on the measured
    phi' (kept within 0.75 of the model's point and inside the range), and the secant's phi'' (None at
    M = 1, where the model is exact)."""
    c0 = choose_c(factors, eps, side)
    if all(f.steps == 1 for f in factors):
        return c0, None
    lo, hi = c_range(factors, side)
    wide = hi - lo > 10.0
    reach = max(0.75, 0.5 * abs(c0)) if wide else 0.75
    lo, hi = max(lo, c0 - reach), min(hi, c0 + reach)
    k2 = sum(f.epochs * f.kappa2 for f in factors)
    g0 = _measured_slope(factors, eps, side, c0)
    c1 = _avoid_two(min(max(c0 - g0 / (k2 + 1.0 / c0 ** 2 + 1.0 / (c0 - 1.0) ** 2), lo), hi))
    if c1 == c0:
        step = 0.02 * max(1.0, abs(c0)) if wide else 0.02
        c1 = _avoid_two(c0 - step if c0 - step > lo else c0 + step)
    g1 = _measured_slope(factors, eps, side, c1)
    curv = None
    # secant steps on the measured phi' (two where a slope costs (T1)/(T2) lines; more on the density)
    for _ in range(6 if wide else 1):
        if g1 == g0:
            return c1, curv
        curv = (g1 - g0) / (c1 - c0)
        if not curv > 0:
            return c1, None
        c2 = _avoid_two(min(max(c1 - g1 / curv, lo), hi))
        if not math.isfinite(c2) or abs(c2 - c1) <= 1e-3 * max(1.0, abs(c1)) or not wide:
            return (c2 if math.isfinite(c2) else c1), curv
        c0, g0, c1 = c1, g1, c2
        g1 = _measured_slope(factors, eps, side, c1)
    return c1, curv


def decided(value: float, error: float, target: float) -> bool:
    """The side of `target` a value lies on is known: it lies beyond 3 times its error estimate from it (the
    searches' rule: a better estimate decides the same side)."""
    return abs(value - target) > 3.0 * error


def _try(fn):
    try:
        return fn()
    except (NumericsUnreliableError, ValueError, OverflowError, FloatingPointError):
        return None


def _density_used(factors, c: float) -> bool:
    """Whether the primary line at c sums some factor on its density (else it is (T1)/(T2) already)."""
    return any(f.steps > 1 and density_moments.available(f.steps, f.sigma)
               and density_moments.closes(f.steps, f.sigma, c) for f in factors)


def _avoid_two(c: float) -> float:
    return 2.0 + math.copysign(0.01, c - 2.0) if abs(c - 2.0) < 0.01 else c


def _refined(factors, eps: float, side: str, disc: Discretization, c: float, u_hint, second: bool,
             curv: float | None = None) -> TailValue | None:
    """The line at c (None where it is not formed), formed once more at du / 2 where its u-step part carries
    more than REFINE of the value and most of its estimate: the trapezoid's estimate is the change to step
    2 du, while on an analytic integrand it errs like e^{-2 pi d / du}, so the change from du to du / 2 (the
    finer line's estimate) is far smaller."""
    v = _try(lambda: tail_delta(factors, eps, side, disc, c, u_hint, second, curv))
    if v is not None and v.error > REFINE * v.value and v.parts["u_step"] >= 0.5 * v.error:
        w = _try(lambda: tail_delta(factors, eps, side, disc, c, u_hint, second, curv, du_scale=0.5))
        v = w if w is not None and w.error < v.error else v
    return v


def tail_delta(factors, eps: float, side: str, disc: Discretization = FIRST, c: float | None = None,
               u_hint: float | None = None, second: bool = False, curv: float | None = None,
               decide: float | None = None, du_scale: float = 1.0) -> TailValue:
    """delta_{Q||P}(eps) (side "qp") or delta_{P||Q}(eps) (side "pq") on the tilted line, with an
    a-posteriori error estimate relative to the value. One epoch of two steps is one integral
    (certifier.numerics.two_steps_tails). One epoch of one block (E = 1) is first summed
    directly on its density where it has one (density_moments.direct_delta: no u-integral, whose range
    is long for one epoch); the line is tried only where that sum's estimate exceeds DIRECT_ENOUGH of it.
    decide: a search's target; the fallback to (T1)/(T2) is then not tried where the first line's value lies
    beyond 3 times its estimate from it (a better estimate would decide the same side)."""
    direct = None
    if len(factors) == 1 and factors[0].epochs == 1 and factors[0].steps == 2 and not second and c is None:
        value, err = two_steps_tails.delta(factors[0].sigma, eps, side)   # one integral, no line
        return TailValue(value, err, math.nan, {"m2 integral": err})
    if len(factors) == 1 and factors[0].epochs == 1 and factors[0].steps > 1 and not second and c is None \
            and density_moments.available(factors[0].steps, factors[0].sigma):
        try:
            value, err = density_moments.direct_delta(factors[0].steps, factors[0].sigma, eps, side)
            direct = TailValue(max(value, 0.0), err + max(0.0, -value), math.nan, {"direct": err})
            if direct.error <= DIRECT_ENOUGH * direct.value:
                return direct
        except NumericsUnreliableError:
            direct = None
    if direct is not None:
        try:
            line = tail_delta(factors, eps, side, disc, refine_c(factors, eps, side)[0], u_hint, second)
        except (NumericsUnreliableError, ValueError, OverflowError, FloatingPointError):
            return direct
        return line if line.error < direct.error else direct
    if c is None:
        c, curv = refine_c(factors, eps, side)
        v = _refined(factors, eps, side, disc, c, u_hint, second, curv)
        lo, hi = Q_RANGE if side == "qp" else P_RANGE
        known = v is not None and decide is not None and decided(v.value, v.error, decide)
        if (v is None or v.error > FALLBACK * v.value) and not known and \
                (not lo <= c <= hi or _density_used(factors, c)):
            # the density line's round-off (times E, and weighted by L^c: at c < 0 it is amplified where L is
            # small) may exceed what the T-line loses, at c itself inside (T1)/(T2)'s range or at its end
            # beyond it: the better of the two. Where the T-line does not close there (its ray needs too many
            # nodes at c = -4), half a unit and a unit further in (exact for every c; it loses e^{phi(c) - phi(c*)})
            c_end = min(max(c, lo), hi)
            inward = 1.0 if c_end < 0.5 * (lo + hi) else -1.0
            # (a line that closed at the range's end is the best of them: further in it loses more; and Q||P's
            # (T2) line closes or not alike further in: its u-range, not its ray, decides)
            for step in (0.0, 0.5, 1.0) if side == "pq" else (0.0,):
                c_try = _avoid_two(min(max(c_end + inward * step, lo), hi))
                w = _refined(factors, eps, side, disc, c_try, u_hint, True)
                if w is not None and (v is None or w.error < v.error):
                    v = w
                if w is not None or v is not None and v.error <= FALLBACK * v.value:
                    break
        if v is None:
            raise NumericsUnreliableError(f"no tilted line at eps = {eps:g}")
        return v
    k2 = sum(f.epochs * f.kappa2 for f in factors)
    d = (c - 1.0) if side == "qp" else min(-c, 1.0 - c)
    width = 1.0 / math.sqrt(curv or (k2 + 1.0 / c ** 2 + 1.0 / (c - 1.0) ** 2))
    slope = _slope(factors, eps, side, c) if all(f.steps == 1 for f in factors) else \
        _measured_slope(factors, eps, side, c)
    du = min(0.1 * d, width / 3.0, 0.6 / (abs(slope) + 1e-9)) * du_scale
    u_top = max(9.5 * width, u_hint or 0.0)   # u_hint: where the pair's 1/2-line decayed (a light bulk)
    for attempt in range(MAX_TRIES):
        u, (lg, lg_r, lg_x), floor = _log_g(factors, c, du, u_top, disc, second)
        z = c + 1j * u
        lk = (1.0 - z) * eps if side == "qp" else z * eps
        extra = lk - np.log(z * (z - 1.0))
        log_terms = lg + extra
        peak = float(log_terms[0].real)
        rel = log_terms.real - peak
        with np.errstate(divide="ignore"):
            noise = np.log(3.0 * np.maximum(floor, 1e-300)) - np.real(extra - extra[0])
        loud = np.nonzero((rel > LOG_TAIL) & (rel > noise))[0]   # decayed, or at the line's round-off
        cut = int(loud[-1]) + 1 if loud.size else 1
        if cut < 0.9 * u.size or attempt == MAX_TRIES - 1:
            break   # decayed (or the last try: what is left is the u_cut estimate)
        # extrapolate the decay seen so far (rel ~ -u^2 / (2 w^2)) to LOG_TAIL, 20 % to spare
        j = u.size - 1
        w2 = u[j] ** 2 / max(-2.0 * float(rel[j]), 1e-9)
        u_top = min(max(1.2 * math.sqrt(2.0 * -LOG_TAIL * w2), 1.3 * u_top), 8.0 * u_top)
    n = min(u.size, cut + 2)
    w = np.full(n, du / math.pi)
    w[0] *= 0.5

    def total(lgv, step=1):
        # |G(c + iu)| <= G(c): a variant's round-off above it (raised to the power E) is clipped there
        lgv = np.minimum(lgv.real, lg[0].real) + 1j * lgv.imag
        terms = np.real(np.exp(lgv[:n] + extra[:n] - peak))
        if step == 1:
            return float(w @ terms)
        idx = np.arange(0, n, step)
        ww = np.full(idx.size, step * du / math.pi)
        ww[0] *= 0.5
        return float(ww @ terms[idx])

    v = total(lg)
    if peak > 700.0:   # the integrand's size is e^{hundreds} against a delta <= 1: nothing is left of it
        raise NumericsUnreliableError(f"the tilted line at c = {c:g} cancels from e^{peak:.0f}")
    scale = math.exp(peak)
    mag = np.exp(rel[:n])
    parts = {
        "r_step": abs(total(lg_r) - v),
        "x_step": abs(total(lg_x) - v),
        "u_step": abs(total(lg, 2) - v),
        "floor": float(w @ (floor[:n] * np.exp(-np.real(extra[:n]) + np.real(extra[0])) * mag)),
        "u_cut": float(mag[n - 1]) * float(u[n - 1]) / math.pi,
    }
    err = sum(parts.values())
    value = v * scale
    if not (math.isfinite(value) and value > 0.0):
        if math.isfinite(value) and abs(value) <= err * scale:
            return TailValue(0.0, err * scale, c, {k: x * scale for k, x in parts.items()})
        raise NumericsUnreliableError(f"the tilted inversion at eps = {eps:g} gave {value!r}")
    return TailValue(value, err * scale, c, {k: x * scale for k, x in parts.items()})


def tail_delta_second(factors, eps: float, side: str) -> TailValue:
    """The check: another line (c moved a third of the way to its range's far end, or by a fifth of
    itself where the range is the density's) on the second discretization, with (T1)/(T2) wherever c is
    in their range (so that it shares no quadrature with a primary on the density line)."""
    c0 = refine_c(factors, eps, side)[0]
    t_lo, t_hi = Q_RANGE if side == "qp" else (max(P_RANGE[0], c0 - 1.0), P_RANGE[1])
    if t_lo <= c0 <= t_hi:
        lo, hi = t_lo, t_hi
        c = c0 + (hi - c0) / 3.0 if hi - c0 > c0 - lo else c0 - (c0 - lo) / 3.0
    else:
        lo, hi = c_range(factors, side)
        c = min(max(c0 * 0.8, lo), hi) if side == "qp" else min(max(c0 * 0.8, lo), hi)
    return tail_delta(factors, eps, side, SECOND, _avoid_two(c), second=True)
