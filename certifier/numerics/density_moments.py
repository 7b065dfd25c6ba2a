"""The one-epoch moments F_M(z) = E_P L_M^z at any real part, from the density of V = (L_M - 1)/v.

    F_M(c + iu) = int f_V(x) (1 + v x)^{c + iu} dx,          v^2 = Var L_M = (e^{t^2} - 1)/M,

summed by the trapezoid on a sub-grid of the density of certifier.numerics.one_epoch (an inverse FFT of the
characteristic function, eq. 15; no Laplace transform). The integrand is analytic and decays at both ends
of the grid, so the trapezoid errs like e^{-2 pi a / dx} (a its strip); the step is chosen from the
density's band (its cutoff frequency) plus the phase rate (|c| + u) v / (1 + v x), and the sums on the
two interleaved grids of twice the step are the a-posteriori estimates. The error floor is the density's
round-off level (its largest negative sample, at least 1e-17 of its peak) times 10 (sum_k (1 + v x_k)^{2c})^{1/2} dx
(independent round-off per sample), relative to F(c). Unlike (T1)/(T2) (certifier.numerics.tilted_moments) there is
no bound on c: this line serves the saddle points far from the 1/2-line (small eps with tiny delta:
c* ~ eps / mu^2 in the thousands) where the tilt per epoch is mild. Where the tilted integrand does not
close inside the density's grid (a heavy tail weighed by a large c) it refuses. Floating point, not a
certificate.
"""
from __future__ import annotations

import math

import numpy as np

from certifier.errors import NumericsUnreliableError
from certifier.numerics.one_epoch import PLAIN_POINTS, epoch_density, upper_range
from certifier.numerics.tilted_moments import TiltedLine

MAX_POINTS = 1 << 18       # a density grid beyond this is not formed here (heavy tail: the T-lines serve)
END_LEVEL = math.log(1e-17)  # the tilted integrand at the grid's ends, below this share of its sum
MAX_WORK = 3e7             # sub-grid points x u-nodes
ROUNDOFF_SHARE = 1e-9      # the samples' round-off weighed by (1 + vx)^c: at most this share of the tilted sum

_DENSITY: dict = {}
DENSITY_CACHE = 4


def density(steps: int, sigma: float):
    """The one-epoch V density (cached; None where its grid would be long or tilted)."""
    key = (steps, float(sigma))
    if key not in _DENSITY:
        if len(_DENSITY) >= DENSITY_CACHE:
            _DENSITY.pop(next(iter(_DENSITY)))
        t = 1.0 / sigma
        v = math.sqrt(math.expm1(t * t) / steps) if t * t < 700 else math.inf
        d = None
        if math.isfinite(v) and v > 0:
            width = upper_range(steps, t, v) - max(-1.0 / v, -40.0)
            if width * 512 <= min(MAX_POINTS, PLAIN_POINTS):
                try:
                    d = epoch_density(steps, sigma)
                except NumericsUnreliableError:
                    d = None
        _DENSITY[key] = d
    return _DENSITY[key]


def available(steps: int, sigma: float) -> bool:
    return steps >= 2 and density(steps, sigma) is not None


_SAMPLES: dict = {}


def _samples(steps: int, sigma: float):
    """(density, ln L at its nodes, f there, round-off level, |f|, |f| above 20 round-off levels), cached."""
    key = (steps, float(sigma))
    if key not in _SAMPLES:
        d = density(steps, sigma)
        if d is None:
            raise NumericsUnreliableError(f"no light one-epoch density at M={steps}, sigma={sigma:g}")
        if len(_SAMPLES) >= DENSITY_CACHE:
            _SAMPLES.pop(next(iter(_SAMPLES)))
        x = d.x()
        keep = 1.0 + d.v * x > 0.0
        s = np.log1p(d.v * x[keep])                       # ln L at the nodes
        f = d.f[keep]
        noise = max(float(-f.min()) if f.min() < 0 else 0.0, 1e-17 * float(f.max()))
        absf = np.abs(f)
        _SAMPLES[key] = (d, s, f, noise, absf, np.clip(absf - 20.0 * noise, 0.0, None))
    return _SAMPLES[key]


def _stride(d, s, above, c: float, u: float = 0.0) -> int:
    """Every k-th node still resolves f(x)(1 + vx)^{c + iu}: its band is the density's cutoff plus the phase
    rate (|c| + u) v / (1 + vx), taken where f first rises above its round-off; a step of a quarter of the
    Nyquist step (the trapezoid on a band-limited, decaying integrand is then exact to round-off)."""
    first = int(np.argmax(above > 0))
    rate = d.cutoff + (abs(c) + u) * d.v / float(np.exp(s[first]))
    return max(1, int(0.25 * math.pi / (rate * d.dx)))


def log_moment(steps: int, sigma: float, c: float) -> float:
    """ln F_M(c) at real c (the trapezoid on every k-th node, _stride)."""
    d, s, f, _, _, above = _samples(steps, sigma)
    k = _stride(d, s, above, c)
    mx = c * float(s[-1] if c > 0 else s[0])        # s increases: the largest c s is at an end
    total = float(np.dot(f[::k], np.exp(c * s[::k] - mx))) * d.dx * k
    if not total > 0.0:
        raise NumericsUnreliableError(f"the tilted density's moment at c = {c:g} is at its round-off (M={steps})")
    return mx + math.log(total)


_CLOSES: dict = {}


def closes(steps: int, sigma: float, c: float) -> bool:
    """Whether the tilted integrand f(x)(1 + vx)^c has fallen at both ends of the grid: the samples there
    above 20 times the round-off level weigh below END_LEVEL of the sum, and the mass beyond the grid
    (below 1e-17: one_epoch.upper_range) weighted by (1 + vx)^c at the ends stays below 1e-13 of it
    (at the lower end only where the grid stops above L = 0), and the samples' round-off weighed likewise
    (10 (sum w^2)^{1/2}, as density_line's floor) stays below ROUNDOFF_SHARE of it."""
    key = (steps, float(sigma), float(c))
    if key in _CLOSES:
        return _CLOSES[key]
    if len(_CLOSES) > 4096:
        _CLOSES.clear()
    try:
        d, s, f, noise, absf, above = _samples(steps, sigma)
    except NumericsUnreliableError:
        return False
    mx = c * float(s[-1] if c > 0 else s[0])
    k = _stride(d, s, above, c)
    w = np.exp(c * s[::k] - mx)
    total = float(np.dot(absf[::k], w)) * k
    ok = False
    # the samples' round-off is independent from node to node; weighed by (1 + vx)^c it can outgrow the sum
    # where c < 0 and L is small (at M = 10, sigma = 7.5, c = -3: 4.5e-5 of F off, the T-line exact)
    rounded = 10.0 * noise * math.sqrt(float(np.dot(w, w))) * k
    if total > 0 and rounded <= ROUNDOFF_SHARE * total:
        edge = max(1, s.size // 100)
        lo_w, hi_w = np.exp(c * s[:edge] - mx), np.exp(c * s[-edge:] - mx)
        loud = max(float((above[:edge] * lo_w).max()), float((above[-edge:] * hi_w).max())) \
            <= math.exp(END_LEVEL) * total
        bottom = float(lo_w[0]) if d.x0 > -1.0 / d.v + d.dx else 0.0    # the grid reaches L = 0: nothing below
        beyond = 1e-17 * max(bottom, float(hi_w[-1])) / d.dx <= 1e-13 * total
        ok = loud and beyond
    _CLOSES[key] = ok
    return ok


def density_line(steps: int, sigma: float, c: float, du: float, u_max: float) -> TiltedLine:
    """log F_M(c + i u_j), u_j = j du to >= u_max, with the interleaved coarse sums as variants."""
    d, s, f, noise = _samples(steps, sigma)[:4]
    if not closes(steps, sigma, c):
        raise NumericsUnreliableError(f"the tilted density at c = {c:g} does not close (M={steps}, sigma={sigma:g})")
    n_u = int(math.ceil(u_max / du)) + 1 if u_max > 0 else 1
    u = du * np.arange(n_u)
    lw = c * s
    mx = float(lw.max())
    weight = np.exp(lw - mx)
    tilted = f * weight
    sig = np.nonzero(np.abs(tilted) > math.exp(END_LEVEL - 5.0) * float(np.abs(tilted).max()))[0]
    lo, hi = int(sig[0]), int(sig[-1]) + 1
    # the integrand's band in x: the density's cutoff plus the phase rate of (1 + vx)^{c + iu}
    rate = d.cutoff + (abs(c) + float(u[-1])) * d.v / float(np.exp(s[lo]))
    stride = max(1, int(0.5 * math.pi / (rate * d.dx)) // 2)
    if (hi - lo) / stride * n_u > MAX_WORK:
        raise NumericsUnreliableError(f"the tilted density line needs {(hi - lo) // stride} x {n_u} terms")
    idx = np.arange(lo - (lo % stride), hi, stride)
    idx = idx[idx >= 0]
    ss, tt = s[idx], tilted[idx] * (stride * d.dx)
    mat = np.exp(1j * np.outer(u, ss))
    full = mat @ tt
    even = (idx // stride) % 2 == 0
    coarse_a = 2.0 * (mat[:, even] @ tt[even])
    coarse_b = 2.0 * (mat[:, ~even] @ tt[~even])
    f0 = float(full[0].real)
    if not f0 > 0:
        raise NumericsUnreliableError(f"the tilted density sum at c = {c:g} is not positive")
    # the samples' round-off is independent from node to node (an inverse FFT's output): its sum grows like
    # the root of the sum of squares, taken 10 times over
    floor = 10.0 * noise * math.sqrt(float(np.square(weight[lo:hi]).sum())) * d.dx / f0 \
        + 1e-16 * float(np.abs(tt).sum()) / f0
    with np.errstate(divide="ignore"):
        logs = [np.log(x) + mx for x in (full, coarse_a, coarse_b)]
    return TiltedLine(c, du, logs[0], logs[1], logs[2], np.full(n_u, floor))


def direct_delta(steps: int, sigma: float, eps: float, side: str) -> tuple[float, float]:
    """One epoch (E = 1): delta_{Q||P}(eps) = int (v x - (e^eps - 1))_+ f_V(x) dx, resp. delta_{P||Q}(eps) =
    int e^eps v (x_b - x)_+ f_V(x) dx with x_b = (e^{-eps} - 1)/v, on the density's own grid: the trapezoid
    with the kink's Euler-Maclaurin term J f(x0) dx^2 B2(theta)/2 (B2(y) = y^2 - y + 1/6, J the slope's jump;
    docs/exact.md). (value, error): the change to either half grid, 10 times the round-off level times
    (sum kernel^2)^{1/2} dx (independent round-off per sample),
    the kink term itself, and the kernel's weight at the grid's top (the mass beyond is below 1e-17)."""
    d, _, _, noise = _samples(steps, sigma)[:4]
    x, f = d.x(), d.f
    v = d.v
    if side == "qp":
        x0, slope = math.expm1(eps) / v, v
        kernel = np.clip(v * x - math.expm1(eps), 0.0, None)
    else:
        x0, slope = math.expm1(-eps) / v, math.exp(eps) * v     # 1 - e^eps (1 + vx) > 0 below x0
        kernel = np.clip(math.exp(eps) * v * (x0 - x), 0.0, None)
    j = (x0 - d.x0) / d.dx
    k = int(math.floor(j))
    if not 0 <= k < x.size - 1:
        raise NumericsUnreliableError(f"the kink of delta({eps:g}) lies outside the density's grid")
    theta = j - k
    fk = (1.0 - theta) * f[k] + theta * f[k + 1]
    kink = slope * fk * d.dx * d.dx * (theta * theta - theta + 1.0 / 6.0) / 2.0

    def total(step: int, offset: int) -> float:
        return float(np.dot(kernel[offset::step], f[offset::step])) * d.dx * step

    value = total(1, 0) + kink
    coarse = max(abs(total(2, 0) - total(1, 0)), abs(total(2, 1) - total(1, 0)))
    err = 0.5 * coarse + 10.0 * noise * math.sqrt(float(np.square(kernel).sum())) * d.dx + abs(kink) * 0.1 \
        + float(kernel[-1]) * 1e-16 + 1e-15 * abs(value)   # beyond the top: mass < 1e-17 (upper_range)
    return value, err
