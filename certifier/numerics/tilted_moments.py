"""The one-epoch moments F_M(z) = E_P L_M^z off the line 1/2 + iu: z = c + iu with c < 0 or 1 < c < 3.

Negative real part (the P||Q tail). For Re z < 0 and x > 0, the Gamma integral on the ray
s = rho e^{i theta}, |theta| < pi/2 (Cauchy; the arcs vanish: rho^{-Re z} at 0, e^{-rho x cos theta} at
infinity), with rho = e^r and w = e^{r + i theta}:

    x^z = e^{-i z theta} / Gamma(-z) * int_R e^{-z r} exp(-w x) dr,
    F(z) = e^{-i z theta} / Gamma(-z) * int_R e^{-z r} psi_L(w) dr,      psi_L(w) = psi_Y(w/M)^M.      (T1)

Real part in (1, 3) (the Q||P tail). dQ_M/dP_M = L_M, so F(z) = E_Q L^{z-1}, and under Q_M one
coordinate is shifted by t, its Y being e^{t^2} Y: psi_Q(w) = E_Q e^{-w L} = psi_Y(w/M)^{M-1}
psi_Y(e^{t^2} w/M), m = E_Q L = E_P L^2 = 1 + v^2. With p = z - 1 the identity of
certifier.numerics.laplace_moments under Q, centred at m:

    F(z) = m^p + p e^{-i p theta} / Gamma(1 - p) * int_R e^{-p r} (e^{-w m} - psi_Q(w)) dr.           (T2)

(T2) holds beyond 0 < Re p < 1: pointwise x^p - m^p equals the integral for Re p < 1, and after E_Q the
linear term w(x - m) cancels (E_Q L = m), leaving |e^{-wm} - psi_Q(w)| <= |w|^2 Var_Q(L)/2; at r -> +inf
both transforms decay faster than any e^{-pr} grows; so both sides are analytic for Re p < 2 and agree:
1 < c < 3. At p = 1 the prefactor p/Gamma(1 - p) vanishes (F(2) = m); c = 2 itself is avoided. The left
tail decays only like e^{(2 - Re p) r}, so its quadratic part -w^2 Var_Q/2 is taken out as
-(Var_Q/2) w^2 e^{-lam w} (lam = max(1, Var_Q^{1/2}), so that it stays O(1)), whose integral
int e^{-pr} w^2 e^{-lam w} dr = e^{i p theta} Gamma(2 - p) lam^{p-2} is added in closed form; what is
summed is O(|w|^3 E_Q L^3) on the left.

Both are trapezoid sums on the rotated ray of certifier.numerics.laplace_moments (theta = -pi/2 +
kappa/u_max, psi_Y on the contour where oY is real), one FFT for every u; each sum is also formed on
every second r- and x-node (the a-posteriori estimates). Near the origin (|o| < 1) log psi_Y(o) + o is
summed without cancellation (series), so the differences keep their relative accuracy; at large |o| the
contour reaches below the X that carries psi_Y(o), so psi_Y keeps its relative accuracy too. The size of
(T1)'s integrand is kept in logs (F(c) can be e^{hundreds} for c << 0). Floating point, not a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.fft import next_fast_len
from scipy.special import loggamma

from certifier.errors import NumericsUnreliableError
from certifier.numerics.laplace_moments import FIRST, MAX_NODES, Discretization, contour, ray_grid, strided_dot
from certifier.numerics.series import exp_minus_one_plus, log1p_minus

_SQRT_2PI = math.sqrt(2.0 * math.pi)
LOG_TOL = math.log(1e-18)   # each cut r-tail below e^LOG_TOL of the integral's scale


@dataclass(frozen=True)
class TiltedLine:
    """log F_M(c + i u_j), u_j = j du, with the same on every second r- and x-node, and an absolute
    error floor of F per node (cut r-tails and round-off) in units of |F(c)|."""
    c: float
    du: float
    log_f: np.ndarray
    log_f_coarse_r: np.ndarray
    log_f_coarse_x: np.ndarray
    floor: np.ndarray            # |error of F| / F(c), per node

    @property
    def u(self) -> np.ndarray:
        return self.du * np.arange(self.log_f.size)


def _log_psi_y(g, steps: int, shift: float) -> tuple[list, np.ndarray, np.ndarray]:
    """Per ray node k, o_k = e^{r_k + i theta + shift}/M: (a for all x-nodes and for every second one,
    the near mask |o_k| < 1, o_k) with a = log psi_Y(o_k) + o_k on near rows (by the series
    E[e^{-oY} - 1 + oY], no cancellation) and a = log psi_Y(o_k) on far rows (adding a large o there
    would cost its digits)."""
    t = g.t
    zeta = -g.x_half + g.dx * np.arange(g.n_x) + 1j * g.c
    wt = np.exp(-0.5 * zeta * zeta) * (g.dx / _SQRT_2PI)
    wt2 = np.where(np.arange(g.n_x) % 2 == 0, 2.0 * wt, 0.0)
    span = g.m * (g.n_x - 1)
    log_mod = (g.k[0] + np.arange(g.k.size + span)) * g.dr - t * g.x_half - math.log(steps) - 0.5 * t * t + shift
    z = np.exp(log_mod + 1j * (g.theta + t * g.c))
    o = np.exp(g.k * g.dr + shift - math.log(steps) + 1j * g.theta)
    near = int(np.searchsorted(g.k * g.dr + shift, math.log(steps)))
    d_near, d_far = exp_minus_one_plus(z[:near + span]), np.exp(-z[near:])
    outs = []
    for weights in (wt, wt2):
        p = strided_dot(d_near, near, g.m, g.n_x, weights)
        a_near = p + log1p_minus(p - o[:near])             # log psi_Y(o) + o
        psi = strided_dot(d_far, g.k.size - near, g.m, g.n_x, weights)
        with np.errstate(divide="ignore", invalid="ignore"):
            a_far = np.log(psi)
        outs.append(np.concatenate([a_near, a_far]))
    mask = np.zeros(g.k.size, dtype=bool)
    mask[:near] = True
    return outs, mask, o


def _log_psi_real(steps: int, t: float, x: float, shift: float = 0.0, disc: Discretization = FIRST) -> float:
    """log psi_Y(e^shift x / M) at real x >= 0 (bounds the r-tails), by the trapezoid on R, in logs."""
    dx = min(0.9 * 0.5 * math.pi / t / disc.nodes, 0.2)
    xs = np.arange(-disc.x_half - 10.0, t + disc.x_half, dx)
    lw = -0.5 * xs * xs + math.log(dx / _SQRT_2PI)
    o = x * math.exp(shift) / steps
    if o < 1.0:
        a = float(exp_minus_one_plus((o * np.exp(t * xs - 0.5 * t * t)).astype(complex)).real @ np.exp(lw)) - o
        return math.log1p(a) if a > -1.0 else -math.inf
    e = lw - o * np.exp(t * xs - 0.5 * t * t)
    mx = float(e.max())
    return mx + math.log(float(np.exp(e - mx).sum()))


def _r_hi(log_bound, start: float = 0.0) -> float:
    """The first r >= start (steps of 1) where the decreasing pointwise bound log_bound(r) of the
    integrand is below LOG_TOL and has fallen for two steps (a-posteriori cut)."""
    r, prev, falls = start, math.inf, 0
    while r < 800.0:
        b = log_bound(r)
        falls = falls + 1 if b < prev else 0
        if b < LOG_TOL and falls >= 2:
            return r
        prev, r = b, r + 1.0
    raise NumericsUnreliableError("the tilted moment line's r-range does not close")


def tilted_line(steps: int, sigma: float, c: float, du: float, u_max: float,
                disc: Discretization = FIRST) -> TiltedLine:
    """F_M(c + iu) on u = 0, du, ..., >= u_max by (T1) (c < 0) or (T2) (1 < c < 3)."""
    if not (c < 0.0 or 1.0 < c < 3.0) or abs(c - 2.0) < 1e-3:
        raise ValueError("the tilted line needs c < 0 or 1 < c < 3 (c != 2)")
    t = 1.0 / sigma
    q_side = c > 1.0
    n_u = int(math.ceil(u_max / du)) + 1 if u_max > 0 else 1
    if n_u > MAX_NODES:
        raise NumericsUnreliableError(f"the tilted moment line to u = {u_max:.0f} is too long")
    u_top = max(du * (n_u - 1), 1e-300)
    delta = min(0.5 * math.pi, disc.kappa / u_top)   # u_max = 0: the real ray
    if c < 0.0:   # (T1)'s integrand grows by (1/cos theta)^{|c|} on the ray: balance it against e^{u delta}
        delta = min(0.5 * math.pi, max(delta, math.atan(-c / u_top)))
    theta = -0.5 * math.pi + delta
    u = du * np.arange(n_u)
    z = c + 1j * u
    t2 = t * t
    if q_side:
        p = z - 1.0
        cp = c - 1.0
        log_pref = np.log(p) - loggamma(1.0 - p) - 1j * p * theta
        v2 = math.expm1(t2) / steps if t2 < 700 else math.inf
        m = 1.0 + v2
        l3 = (math.exp(min(3.0 * t2, 700.0)) / steps ** 2 + 3.0 * (1.0 - 1.0 / steps) * math.exp(min(t2, 700.0)) / steps
              + (1.0 - 1.0 / steps) * (1.0 - 2.0 / steps))
        var_q = max(l3 - m * m, 0.0)
        # the quadratic term is integrated in closed form (subtracted below): what is summed is
        # O(|w|^3 E_Q L^3) on the left, E_Q L^3 = E_P L^4 <= e^{6t^2}/M^3 + (4e^{3t^2} + 3e^{2t^2})/M^2 + 6e^{t^2}/M + 1
        e = lambda x: math.exp(min(x, 700.0))  # noqa: E731
        lam = max(1.0, math.sqrt(var_q))   # the subtracted (var_q/2) w^2 e^{-lam w} stays O(1)
        l4 = e(6 * t2) / steps ** 3 + (4 * e(3 * t2) + 3 * e(2 * t2)) / steps ** 2 + 6 * e(t2) / steps + 1.0
        r_lo = min((LOG_TOL + math.log(3.0 - cp) - math.log(l4)) / (3.0 - cp), 0.0)
        cos_t = math.cos(theta)

        def bound(r):   # |gap| <= e^{-rho m cos} + psi_Q(rho cos), decreasing in rho; times e^{-cp r}/cp
            x = math.exp(r) * cos_t
            lq = (steps - 1) * _log_psi_real(steps, t, x, 0.0, disc) + _log_psi_real(steps, t, x, t2, disc)
            return -cp * r - math.log(cp) + math.log(math.exp(-x * m) + math.exp(lq))
        r_hi = _r_hi(bound, 0.0)
    else:
        log_pref = -loggamma(-z) - 1j * z * theta
        r_lo = (LOG_TOL + math.log(-c)) / (-c)     # |psi_L| <= 1: int e^{|c| r} dr
        cos_t = math.cos(theta)

        def bound(r):   # |e^{-zr} psi_L(w)| <= e^{-cr} psi_L(rho cos theta)
            return -c * r + steps * _log_psi_real(steps, t, math.exp(r) * cos_t, 0.0, disc)
        top = max(0.0, math.log(max(-c, 1e-3)) + math.log(steps) - math.log(max(cos_t, 1e-300)) - 5.0)
        r_hi = _r_hi(bound, top)
        # e^{|c| r} weighs psi_Y(o) at large o, carried by X near x* = (t^2/2 - ln|o|)/t: the contour
        # reaches 8 below it, so that psi_Y keeps its relative accuracy (not only its absolute one)
        x_star = (0.5 * t2 - r_hi + math.log(steps)) / t
        disc = replace(disc, x_half=max(disc.x_half, 12.0 - x_star))
    dr_max = min(delta, t * contour(t, theta, disc)[1]) / disc.nodes
    if n_u == 1:   # the real moment F(c) alone: no FFT, every r-node folds onto u = 0
        period, dr = 1, dr_max
    else:
        period = next_fast_len(max(int(math.ceil(2.0 * math.pi / (du * dr_max))), n_u))
        dr = 2.0 * math.pi / (du * period)
    grid = ray_grid(t, theta, dr, r_lo, r_hi, disc)
    if period > MAX_NODES or grid.k.size * grid.n_x > 64 * MAX_NODES:
        raise NumericsUnreliableError(f"the tilted moment line needs {grid.k.size} x {grid.n_x} nodes")
    r = grid.k * grid.dr
    w = np.exp(r + 1j * theta)
    a0, near0, _ = _log_psi_y(grid, steps, 0.0)
    if q_side:
        a1, near1, _ = _log_psi_y(grid, steps, t2)
        wm = w * m
        gaps = []
        o0, o1 = w / steps, w * math.exp(t2) / steps
        for x0, x1 in zip(a0, a1):
            with np.errstate(invalid="ignore"):
                s = (steps - 1) * x0 + x1                  # log psi_Q(w) + w m (near rows)
                lq = (steps - 1) * np.where(near0, x0 - o0, x0) + np.where(near1, x1 - o1, x1)  # log psi_Q
            both = near0 & near1 & (s.real <= 1.0)
            with np.errstate(over="ignore", invalid="ignore"):
                direct = np.exp(-wm) - np.exp(lq)
                series = -np.exp(-wm) * np.expm1(np.where(both, s, 0.0))
            g = np.where(both, series, direct) + 0.5 * var_q * w * w * np.exp(-lam * w)   # minus the quadratic term
            gaps.append(np.nan_to_num(g, nan=0.0, posinf=0.0, neginf=0.0))
        log_h = [None, None]
        vals = [gaps[0], gaps[1]]
        weight_log = -cp * r
        scale = 0.0
    else:
        vals, log_h = [], []
        for x0 in a0:
            with np.errstate(invalid="ignore"):
                lp = np.where(near0, steps * x0 - w, steps * x0)   # log psi_L(w)
            lp = np.where(np.isfinite(lp.real), lp, -np.inf + 0j)
            log_h.append(lp)
        weight_log = -c * r
        scale = float(np.max(weight_log + log_h[0].real))
        for lp in log_h:
            with np.errstate(under="ignore"):
                vals.append(np.exp(weight_log + lp - scale))
    k = grid.k
    damp_log = weight_log if q_side else np.zeros_like(r)

    def weighted(values: np.ndarray) -> np.ndarray:
        """values e^{damp_log}, formed in logs (far left, e^{-cp r} overflows while the gap underflows)."""
        if not q_side:
            return values
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            out = np.exp(np.log(values) + damp_log)
        return np.where(values != 0, out, 0.0)

    def transform(values: np.ndarray, even_only: bool = False) -> np.ndarray:
        a = weighted(values) * grid.dr
        if even_only:
            a = np.where(k % 2 == 0, 2.0 * a, 0.0)
        folded = np.zeros(period, dtype=complex)
        np.add.at(folded, k % period, a)
        return np.fft.fft(folded)[:n_u]

    # the FFT sums e^{-i u r_k} a_k; (T1)/(T2) need e^{-i u r}: u_j r_k = 2 pi j k / P
    sums = (transform(vals[0]), transform(vals[0], True), transform(vals[1]))
    abs_sum = float(np.abs(weighted(vals[0])).sum() * grid.dr)
    amp = np.exp(log_pref.real)
    if q_side:
        # m^p, and the quadratic term: int e^{-pr} w^2 e^{-lam w} dr = e^{i p theta} Gamma(2 - p) lam^{p - 2}
        base = np.exp(p * math.log(m)) - np.exp(log_pref + 1j * p * theta + loggamma(2.0 - p)
                                                + (p - 2.0) * math.log(lam)) * (0.5 * var_q)
        fs = [base + np.exp(log_pref) * s for s in sums]
        f0 = float(fs[0][0].real)
        ulp = np.finfo(float).eps
        err = amp * (50.0 * ulp * abs_sum + 2.0 * math.exp(LOG_TOL)) + 4.0 * ulp * abs(base)
        log_fs = [np.log(f) for f in fs]
        floor = err / f0
    else:
        log_fs = [log_pref + scale + np.log(s) for s in sums]
        f0_log = float(log_fs[0][0].real)
        err_rel = amp * (50.0 * np.finfo(float).eps * abs_sum + 2.0 * math.exp(LOG_TOL)) * math.exp(scale - f0_log)
        floor = err_rel
    return TiltedLine(c, du, log_fs[0], log_fs[1], log_fs[2], np.asarray(floor, dtype=float))


def log_moment(steps: int, sigma: float, c: float) -> float:
    """ln F_M(c) at a real c (c < 0 or 1 < c < 3): the line at u = 0 on the real ray."""
    return float(tilted_line(steps, sigma, c, 1.0, 0.0).log_f[0].real)


def log_moment_m1(c: complex, epochs_mu2: float) -> complex:
    """ln E Lambda^z at M = 1 for the Gaussian shift mu (mu^2 = E t^2): z(z - 1) mu^2 / 2."""
    return c * (c - 1.0) * epochs_mu2 / 2.0
