"""The one-epoch moments F_M(q) = E L_M^q on the line q = 1/2 + iu, from Laplace transforms.

For 0 < Re q < 1, x > 0 and |theta| < pi/2 (rotating the ray s = rho e^{i theta} by Cauchy),

    x^q = q e^{-i q theta} / Gamma(1 - q) * int_R e^{-q r} (1 - exp(-e^{r + i theta} x)) dr,

and subtracting the same identity at x = 1 and taking E under P_M:

    F_M(q) - 1 = q e^{-i q theta} / Gamma(1 - q) * int_R e^{-q r} (e^{-w} - psi_L(w)) dr,   w = e^{r + i theta},

with psi_L(w) = E e^{-w L_M} = psi_Y(w/M)^M (independent steps, Section 3) and
psi_Y(w) = E exp(-w Y), Y = exp(tX - t^2/2) lognormal. Nothing here needs the density of
L_M, so the heavy right tail of Y at small sigma costs nothing: the integrand is bounded
by min(2|w|, v^2 |w|^2 / 2) and by 2, times e^{-r/2} (docs/exact.md).

theta = -pi/2 + delta with delta = kappa / u_max keeps the prefactor's growth e^{u delta}
below e^kappa. psi_Y is a Gaussian integral on the shifted contour x + ic, tc = -theta
(the contour shift of C.4), where wY is real and positive, so exp(-wY) decays instead of
oscillating. Both integrals are trapezoid sums, exponentially accurate for these analytic
integrands; each is also summed on every second node, and those coarse sums give the
error estimates. Floating point with a-posteriori estimates, not a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.fft import next_fast_len
from scipy.special import loggamma

from certifier.errors import NumericsUnreliableError
from certifier.numerics.series import exp_minus_one_plus, log1p_minus

_SQRT_2PI = math.sqrt(2.0 * math.pi)
R_TOL = 1e-17        # each truncated r-tail is below R_TOL / |prefactor|
MAX_NODES = 1 << 22  # refuse a line that would need more r-nodes than this


@dataclass(frozen=True)
class Discretization:
    """The free parameters of the quadratures; a second set gives a second, independent grid."""
    kappa: float = 2.0   # prefactor growth e^{u delta} <= e^kappa on [0, u_max]
    nodes: int = 7       # nodes per half-width of a strip of analyticity (error ~ e^{-2 pi nodes})
    c_max: float = 2.5   # contour height cap: |phi(x + ic)| <= e^{c^2/2} phi(x)
    x_half: float = 10.0  # the contour runs over [-x_half, t + x_half]: Gaussian mass beyond < 1e-23


FIRST = Discretization()
SECOND = Discretization(kappa=1.2, nodes=9, c_max=1.5, x_half=11.0)
FINE = Discretization(nodes=9)   # FIRST with more nodes per strip, where FIRST's coarse-grid estimate is loud


@dataclass(frozen=True)
class RayGrid:
    """Nodes r_k = k dr of the ray w = e^{r + i theta} and x_j = -x_half + j dx of the contour x + ic.

    t dx = m dr, so o_k Y_j = (w_k / M) exp(t(x_j + ic) - t^2/2) depends on k + m j only: one
    1-D array of e^{-z} terms serves every (k, j), and each psi_Y is a strided dot product.
    """
    t: float
    theta: float
    c: float
    dr: float
    m: int
    k: np.ndarray       # r-node indices, consecutive
    n_x: int            # odd: every second x-node is the coarse grid
    x_half: float

    @property
    def dx(self) -> float:
        return self.m * self.dr / self.t


def contour(t: float, theta: float, disc: Discretization) -> tuple[float, float]:
    """Contour height c = -theta/t (capped) and the half-width of its strip of analyticity in x.

    On x + ic, arg(wY) = theta + tc =: alpha in (-pi/2, 0] (0 unless the cap binds); Re(wY) >= 0
    stays in |Im x| < (pi/2 - |alpha|)/t, used up to 90 %, and at most 1.5, where the Gaussian
    factor e^{(c + 1.5)^2/2} is still harmless.
    """
    c = min(-theta / t, disc.c_max)
    alpha = theta + t * c
    return c, min(0.9 * (0.5 * math.pi - abs(alpha)) / t, 1.5)


def ray_grid(t: float, theta: float, dr: float, r_lo: float, r_hi: float, disc: Discretization) -> RayGrid:
    """The nodes for a step dr <= t * half-width / nodes: the x-step m dr / t, m >= 1, stays inside the strip."""
    c, half_width = contour(t, theta, disc)
    m = int(t * half_width / disc.nodes / dr)
    if m < 1:
        raise ValueError("dr too large for the contour's strip")
    n_x = 2 * int(math.ceil((t + 2.0 * disc.x_half) / (2.0 * m * dr / t))) + 1
    k = np.arange(int(math.floor(r_lo / dr)), int(math.ceil(r_hi / dr)) + 1)
    return RayGrid(t, theta, c, dr, m, k, n_x, disc.x_half)


def strided_dot(a: np.ndarray, rows: int, step: int, cols: int, wt: np.ndarray) -> np.ndarray:
    """sum_j a[i + step j] wt[j] for i < rows, in row blocks of bounded memory."""
    out = np.empty(rows, dtype=complex)
    for lo in range(0, rows, 1024):
        n = min(1024, rows - lo)
        view = np.lib.stride_tricks.as_strided(a[lo:], shape=(n, cols),
                                               strides=(a.strides[0], step * a.strides[0]), writeable=False)
        out[lo:lo + n] = view @ wt
    return out


def laplace_gap(steps: int, g: RayGrid) -> tuple[np.ndarray, np.ndarray]:
    """e^{-w} - psi_L(w) at the ray nodes, psi_L(w) = psi_Y(w/M)^M; on all x-nodes and every second one.

    For |w/M| < 1, psi_Y(o) - 1 = E[e^{-oY} - 1 + oY] - o (o = w/M) is summed without cancellation
    and e^{-w} - psi_L = -e^{-w} expm1(M(log psi_Y(o) + o)); beyond, psi_Y(o) is summed directly.
    """
    t = g.t
    zeta = -g.x_half + g.dx * np.arange(g.n_x) + 1j * g.c
    wt = np.exp(-0.5 * zeta * zeta) * (g.dx / _SQRT_2PI)  # phi(zeta) dx
    wt2 = np.where(np.arange(g.n_x) % 2 == 0, 2.0 * wt, 0.0)
    span = g.m * (g.n_x - 1)
    log_mod = (g.k[0] + np.arange(g.k.size + span)) * g.dr - t * g.x_half - math.log(steps) - 0.5 * t * t
    z = np.exp(log_mod + 1j * (g.theta + t * g.c))  # z[k - k0 + m j] = o_k Y_j
    w = np.exp(g.k * g.dr + 1j * g.theta)
    near = int(np.searchsorted(g.k * g.dr, math.log(steps)))  # rows with |o| < 1 come first
    e_near, e_far = np.exp(-w[:near]), np.exp(-w[near:])
    d_near, d_far = exp_minus_one_plus(z[:near + span]), np.exp(-z[near:])
    outs = []
    for weights in (wt, wt2):
        p = strided_dot(d_near, near, g.m, g.n_x, weights)  # E[e^{-oY} - 1 + oY]
        s = steps * (p + log1p_minus(p - w[:near] / steps))  # M log psi_Y(o) + w
        # psi_L = e^{s - w} directly where it dominates (e^s alone may overflow while e^{-w} underflows)
        out_near = np.where(s.real > 1.0, e_near - np.exp(s - w[:near]),
                            -e_near * np.expm1(np.minimum(s.real, 1.0) + 1j * s.imag))
        psi = strided_dot(d_far, g.k.size - near, g.m, g.n_x, weights)
        with np.errstate(divide="ignore"):
            lp = np.log(psi)
        out_far = e_far - np.exp(steps * lp.real) * np.exp(1j * (steps * lp.imag))
        outs.append(np.concatenate([out_near, out_far]))
    return outs[0], outs[1]


@dataclass(frozen=True)
class MomentLine:
    """F_M(1/2 + i u_j), u_j = j du (j < n), and the same with every second r- and x-node."""
    du: float
    f: np.ndarray
    f_coarse_r: np.ndarray
    f_coarse_x: np.ndarray
    truncation: np.ndarray  # bound on |F - f| from the two cut r-tails, per u_j
    roundoff: np.ndarray    # estimate of the round-off in f, per u_j

    @property
    def u(self) -> np.ndarray:
        return self.du * np.arange(self.f.size)


def psi_l_real(steps: int, t: float, x: float, disc: Discretization = FIRST) -> float:
    """psi_L(x) = E e^{-x L_M} at real x >= 0 (bounds the upper r-tail), by the trapezoid on R."""
    dx = min(0.9 * 0.5 * math.pi / t / disc.nodes, 0.2)
    xs = np.arange(-disc.x_half, t + disc.x_half, dx)
    wt = np.exp(-0.5 * xs * xs) * (dx / _SQRT_2PI)
    z = (x / steps) * np.exp(t * xs - 0.5 * t * t)
    if x < steps:
        a = float(exp_minus_one_plus(z.astype(complex)).real @ wt) - x / steps  # psi_Y - 1
    else:
        a = float(np.exp(-z) @ wt) - 1.0
    return math.exp(steps * math.log1p(a)) if a > -1.0 else 0.0


def r_range(steps: int, t: float, theta: float, amp: float, disc: Discretization) -> tuple[float, float]:
    """Cut points of the r-integral with both tails below R_TOL / amp (bounds in docs/exact.md).

    Below: |e^{-w} - psi_L(w)| <= min(2|w|, |w|^2 v^2 / 2); above: it is <= 2 and at most
    e^{-rho cos theta} + psi_L(rho cos theta), which decrease in rho.
    """
    tol = R_TOL / amp
    v2 = math.expm1(t * t) / steps if t * t < 700 else math.inf
    lo_a = 2.0 * math.log(tol / 4.0)                            # int e^{r/2} 2 dr = 4 e^{r/2}
    lo_b = (2.0 / 3.0) * math.log(3.0 * tol / max(v2, 1e-300))  # int e^{3r/2} v^2/2 dr
    r_lo = max(lo_a, min(lo_b, 0.0))
    r_hi = -2.0 * math.log(tol / 4.0)                            # int e^{-r/2} 2 dr = 4 e^{-r/2}
    r = 2.0
    while r < r_hi:  # the decreasing bound reaches tol earlier for light tails
        x = math.exp(r) * math.cos(theta)
        if 2.0 * math.exp(-r / 2.0) * (math.exp(-x) + psi_l_real(steps, t, x, disc)) <= tol:
            return r_lo, r
        r += 2.0
    return r_lo, r_hi


def moment_line(steps: int, sigma: float, u_max: float, du: float, disc: Discretization = FIRST) -> MomentLine:
    """F_M(1/2 + iu) on u = 0, du, ..., >= u_max, by the Laplace-Mellin formula above."""
    t = 1.0 / sigma
    if u_max / du > MAX_NODES:
        raise NumericsUnreliableError(f"the moment line to u = {u_max:.0f} is too long")
    n_u = int(math.ceil(u_max / du)) + 1
    delta = min(0.5 * math.pi, disc.kappa / max(du * (n_u - 1), 1e-300))
    theta = -0.5 * math.pi + delta
    q = 0.5 + 1j * du * np.arange(n_u)
    log_pref = np.log(q) - loggamma(1.0 - q) - 1j * q * theta
    amp = np.exp(log_pref.real)
    r_lo, r_hi = r_range(steps, t, theta, float(amp.max()), disc)
    # r_k = k dr with dr du = 2 pi / P: e^{-i u_j r_k} = e^{-2 pi i jk/P}, one FFT of length P;
    # dr resolves the ray's strip (delta) and keeps the x-step t-times smaller inside the contour's
    dr_max = min(delta, t * contour(t, theta, disc)[1]) / disc.nodes
    # a 5-smooth FFT length (scipy.fft.next_fast_len): a finer dr than needed, never a coarser one
    period = next_fast_len(max(int(math.ceil(2.0 * math.pi / (du * dr_max))), n_u))
    grid = ray_grid(t, theta, 2.0 * math.pi / (du * period), r_lo, r_hi, disc)
    if period > MAX_NODES or grid.k.size * grid.n_x > 64 * MAX_NODES:
        raise NumericsUnreliableError(f"the moment line to u = {du * (n_u - 1):.0f} needs "
                                 f"{grid.k.size} x {grid.n_x} nodes")
    gap, gap_x = laplace_gap(steps, grid)
    k = grid.k
    damp = np.exp(-0.5 * k * grid.dr) * grid.dr

    def transform(values: np.ndarray, even_only: bool = False) -> np.ndarray:
        a = values * damp
        if even_only:
            a = np.where(k % 2 == 0, 2.0 * a, 0.0)
        folded = np.zeros(period, dtype=complex)
        np.add.at(folded, k % period, a)
        return np.fft.fft(folded)[:n_u]

    pref = np.exp(log_pref)
    truncation = amp * 2.0 * R_TOL / float(amp.max())
    # a sum of n terms carries about sqrt(n) eps of its absolute sum; 50 eps is generous
    roundoff = amp * 50.0 * np.finfo(float).eps * float(np.abs(gap * damp).sum())
    return MomentLine(du, 1.0 + pref * transform(gap), 1.0 + pref * transform(gap, True),
                      1.0 + pref * transform(gap_x), truncation, roundoff)
