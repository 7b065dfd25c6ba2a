"""One epoch of many steps at small sigma, in the far tail: the likelihood ratio by its number of big steps.

Under P, L_M = (1/M) sum_i Y_i with Y_i = e^{t Z_i - t^2/2}, t = 1/sigma (Section 3). Far in its upper tail L_M
is carried by one step whose Y_i is huge (a heavy-tailed sum: one big jump). With a cut b, N = #{i: Y_i > b} is
Binomial(M, p), p = P(Y > b) = Phi(-z_b); given N = n the other M - n steps are iid Y | Y <= b (bounded: their
mean A has a light density) and the n big ones iid Y' = Y | Y > b, whose laws are closed forms in Phi:

    P(Y' > y) = Phi(-z_y) / p,     E (Y' - y)_+ = y phi(z_y) (R(z_y - t) - R(z_y)) / p      (y >= b),

z_y = (ln y + t^2/2) / t and R the Mills ratio. So, with a = e^eps,

    delta_{Q||P}(eps) = E_P (L_M - a)_+ = sum_n P(N = n) E (A_{M-n} + S_n / M - a)_+,

summed for n <= 2 on the density of A (an inverse FFT of its characteristic function, the small steps' transform
on the contour Im z = pi/(2t) of certifier.numerics.one_epoch closed by a vertical segment at z_b) and, for n = 2,
a Gauss-Legendre sum over the first big step. The Neyman-Pearson test at FPR alpha rejects when L_M > tau:
FPR(tau) = P(L_M > tau) = alpha, TPR = E_P L_M 1{L_M > tau} = delta(ln tau) + tau alpha (the tails notes).
The terms n >= 3 weigh about (M p)^2 / 2 of the n = 1 term; the a-posteriori estimate is the change when the cut
is lowered fourfold (M p from 2.5e-4 to 1e-3), whose own remainder is 16 times that of the value's.
delta_{P||Q}(eps) = E_P (1 - a L_M)_+ lies in the lower tail, which big steps only lift: it is at most
P(A_M < 1/a), bounded by Chernoff on the small steps' Laplace transform. Floating point, not a certificate.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.special import erfcx, log_ndtr, ndtr, ndtri

from certifier.errors import NumericsUnreliableError
from certifier.numerics.series import exp_minus_one_plus, log1p_minus

CUTS = (2.5e-4, 1e-3)        # M p of the value's cut and of the check's
MAX_NODES = 4000             # the small steps' transform on more frequencies than this is refused (about 1 s)
KINK_SDS = 40.0              # the kink y = b of the big step's laws lies this many sd of A beyond its bulk
_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def gauss_legendre(lo: float, hi: float, panels: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite 16-point Gauss-Legendre nodes and weights on [lo, hi]."""
    edges = np.linspace(lo, hi, panels + 1)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[:-1] + edges[1:])
    return (mid[:, None] + half[:, None] * _GL_X).ravel(), (half[:, None] * _GL_W).ravel()


def mills(z):
    """R(z) = Phi(-z) / phi(z) (Mills' ratio), without underflow for z >= 0 (arrays or floats)."""
    return math.sqrt(math.pi / 2.0) * erfcx(z / math.sqrt(2.0))


@dataclass(frozen=True)
class Cut:
    """The split of a step's factor Y at b = e^{t z_b - t^2/2}, P(Y > b) = p."""
    steps: int
    t: float
    z_b: float

    @classmethod
    def at(cls, steps: int, t: float, share: float) -> Cut:
        return cls(steps, t, -float(ndtri(share / steps)))

    @property
    def p(self) -> float:
        return float(ndtr(-self.z_b))

    @property
    def b(self) -> float:
        return math.exp(self.t * self.z_b - 0.5 * self.t * self.t)

    def small_mean(self) -> float:
        """E[Y | Y <= b] = Phi(z_b - t) / Phi(z_b)."""
        return float(ndtr(self.z_b - self.t) / ndtr(self.z_b))

    def small_var(self) -> float:
        m2 = math.exp(self.t * self.t + float(log_ndtr(self.z_b - 2.0 * self.t) - log_ndtr(self.z_b)))
        return m2 - self.small_mean() ** 2

    def big_mean(self) -> float:
        """E Y' = Phi(t - z_b) / p."""
        return math.exp(float(log_ndtr(self.t - self.z_b) - log_ndtr(-self.z_b)))

    def z_of(self, y: np.ndarray) -> np.ndarray:
        return (np.log(np.maximum(y, 1e-300)) + 0.5 * self.t * self.t) / self.t

    def excess(self, y: np.ndarray) -> np.ndarray:
        """E (Y' - y)_+ for real y (below b: E Y' - y)."""
        y = np.asarray(y, dtype=float)
        out = self.big_mean() - y
        hi = y >= self.b
        if hi.any():
            z = self.z_of(y[hi])
            dens = np.exp(-0.5 * z * z - float(log_ndtr(-self.z_b))) / _SQRT_2PI
            out[hi] = y[hi] * dens * (mills(z - self.t) - mills(z))
        return out

    def survival(self, y: np.ndarray) -> np.ndarray:
        """P(Y' > y) (1 below b)."""
        y = np.asarray(y, dtype=float)
        out = np.ones_like(y)
        hi = y >= self.b
        if hi.any():
            out[hi] = np.exp(log_ndtr(-self.z_of(y[hi])) - log_ndtr(-self.z_b))
        return out

    def big_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """Y' at Gauss-Legendre nodes in z over [z_b, z_b + 12] and their weights phi(z) / p."""
        z, w = gauss_legendre(self.z_b, self.z_b + 12.0, 48)
        return np.exp(self.t * z - 0.5 * self.t * self.t), w * np.exp(-0.5 * z * z - float(log_ndtr(-self.z_b))) \
            / _SQRT_2PI

    def chi(self, s: np.ndarray) -> np.ndarray:
        """E[e^{is(X - mu)} - 1 - is(X - mu)], X = Y | Y <= b, mu = E X, for real s >= 0: the integrand over z is
        entire, so the real segment (-inf, z_b] becomes the line z + i theta (t theta = pi/2: e^{isY} decays
        there) closed by the vertical segment from z_b + i theta down to z_b."""
        t, mu, zb = self.t, self.small_mean(), self.z_b
        theta = 0.5 * math.pi / t
        s = np.asarray(s, dtype=float)
        x, w = gauss_legendre(-40.0 / min(t, 1.0) - 12.0, zb, 256)
        zeta = x + 1j * theta
        weight = w * np.exp(-0.5 * zeta * zeta) / _SQRT_2PI
        y = np.exp(t * zeta - 0.5 * t * t) - mu
        live = weight != 0.0        # a node whose weight underflows (|x| >= 38.6) adds exactly nothing: not evaluated
        total = np.empty(s.shape, dtype=complex)
        r, rw = gauss_legendre(0.0, 1.0, 32)
        r2, rw2 = gauss_legendre(0.0, 1.0, 4)
        for lo in range(0, s.size, 64):
            ss = s[lo:lo + 64, None]
            terms = np.zeros((ss.shape[0], y.size), dtype=complex)
            terms[:, live] = exp_minus_one_plus(-1j * ss * y[None, live])
            along = terms @ weight
            # the vertical segment: |e^{isY}| = e^{-s b sin(t eta)} oscillates up to s b sin(t eta) = 46 (fine
            # panels there), beyond it only the smooth -1 - is(Y - mu) is left (coarse panels)
            eta_max = np.minimum(theta, np.arcsin(np.minimum(1.0, 46.0 / np.maximum(ss * self.b, 1e-300))) / t)
            eta = np.concatenate([eta_max * r[None, :], eta_max + (theta - eta_max) * r2[None, :]], axis=1)
            weta = np.concatenate([eta_max * rw[None, :], (theta - eta_max) * rw2[None, :]], axis=1)
            zv = zb + 1j * eta
            yv = np.exp(t * zv - 0.5 * t * t) - mu
            g = exp_minus_one_plus(-1j * ss * yv) * np.exp(-0.5 * zv * zv) / _SQRT_2PI
            down = -1j * (g * weta).sum(axis=1)
            total[lo:lo + 64] = along + down
        return total / float(ndtr(zb))


@dataclass(frozen=True)
class SmallMean:
    """The density of D = A_m - E A_m, A_m = (1/M) sum of m small steps, on x0 + k dx (an inverse FFT)."""
    x0: float
    dx: float
    f: np.ndarray
    mean: float
    sd: float

    def x(self) -> np.ndarray:
        return self.x0 + self.dx * np.arange(self.f.size)


def small_means(cut: Cut, ms: tuple[int, ...]) -> dict[int, SmallMean]:
    """The densities of A_m for each m (one transform of the small step serves them all)."""
    steps = cut.steps
    sd1 = math.sqrt(cut.small_var())
    sd = sd1 * math.sqrt(max(ms)) / steps
    x0 = -14.0 * sd
    width = 14.0 * sd + max(100.0 * sd, 12.0 * cut.b / steps)
    top = 20.0 / sd                       # |phi| ~ 1e-20 at w = 15 / sd at sigma = 0.36 to 0.42 (measured)
    for _ in range(6):                    # a heavier skew decays later: the band doubles, the step halves
        dx = min(sd / 16.0, 2.0 / top)
        n = 1 << int(math.ceil(math.log2(width / dx)))
        period = n * dx
        dw = 2.0 * math.pi / period
        w = dw * np.arange(int(math.ceil(top / dw)) + 1)
        if w.size > MAX_NODES:
            raise NumericsUnreliableError(f"the small steps' transform needs {w.size} nodes (at most {MAX_NODES})")
        chi = cut.chi(w / steps)
        phis = {m: np.exp(m * (chi + log1p_minus(chi))) for m in ms}
        if max(abs(p[-1]) for p in phis.values()) < 1e-17:
            break
        top *= 2.0
    else:
        raise NumericsUnreliableError("the small steps' transform does not decay within its band")
    count = w.size
    out = {}
    for m in ms:
        phi = phis[m]
        coeff = np.zeros(n // 2 + 1, dtype=complex)
        coeff[:count] = phi * np.exp(-1j * w * x0)
        f = np.fft.irfft(np.conj(coeff), n) * (n / period)
        if max(abs(f[0]), abs(f[-1])) > 1e-13 * f.max():     # the ends at the FFT round-off (1e-16 of the peak)
            raise NumericsUnreliableError("the small steps' mean has mass at its grid's ends")
        out[m] = SmallMean(x0, dx, f, m * cut.small_mean() / steps, sd1 * math.sqrt(m) / steps)
    return out


def binomial(steps: int, p: float, n: int) -> float:
    """P(N = n), N ~ Binomial(M, p): the weight of n big steps."""
    return math.exp(math.lgamma(steps + 1) - math.lgamma(n + 1) - math.lgamma(steps - n + 1)
                    + n * math.log(p) + (steps - n) * math.log1p(-p))


class OneEpochTail:
    """delta_{Q||P}, FPR and TPR of one epoch in the far upper tail, on one cut (see the module docstring)."""

    def __init__(self, steps: int, sigma: float, share: float):
        self.cut = Cut.at(steps, 1.0 / sigma, share)
        self.means = small_means(self.cut, (steps, steps - 1, steps - 2))
        self.weights = [binomial(steps, self.cut.p, n) for n in range(3)]
        self.big_y, self.big_w = self.cut.big_nodes()

    def _check(self, level: float) -> None:
        """The big step's kink y = b must lie far beyond the bulk of A (the sums are smooth there)."""
        a1 = self.means[self.cut.steps - 1]
        if level - a1.mean - self.cut.b / self.cut.steps < KINK_SDS * a1.sd:
            raise NumericsUnreliableError(f"the one-big-step route needs a level beyond the bulk (got {level:g})")

    def _terms(self, level: float, one, fn_zero) -> float:
        """sum_n P(N = n) E g(A + S_n / M) for g given by its n = 0 form and its big-step form `one`."""
        steps = self.cut.steps
        a0, a1, a2 = (self.means[steps - n] for n in range(3))
        t0 = float(np.sum(a0.f * fn_zero(a0.mean + a0.x())) * a0.dx)
        t1 = float(np.sum(a1.f * one(steps * (level - a1.mean - a1.x()))) * a1.dx)
        room = steps * (level - a2.mean - a2.x())
        inner = one(room[:, None] - self.big_y[None, :]) @ self.big_w
        t2 = float(np.sum(a2.f * inner) * a2.dx)
        w = self.weights
        return w[0] * t0 + w[1] * t1 + w[2] * t2

    def delta(self, a: float) -> float:
        """E_P (L_M - a)_+."""
        self._check(a)
        steps = self.cut.steps
        return self._terms(a, lambda y: self.cut.excess(y) / steps, lambda x: np.maximum(x - a, 0.0))

    def fpr(self, tau: float) -> float:
        """P(L_M > tau)."""
        self._check(tau)
        return self._terms(tau, self.cut.survival, lambda x: (x > tau).astype(float))


@dataclass(frozen=True)
class TailEstimate:
    value: float
    error: float


def delta_pq_bound(steps: int, sigma: float, eps: float) -> float:
    """An upper bound on delta_{P||Q}(eps) = E_P (1 - a L_M)_+ <= P(L_M < 1/a) <= min over r > 0 of
    e^{r/a} (E e^{-r Y/M})^M (Chernoff; L_M = (1/M) sum Y_i, Y_i iid): the Laplace transform of Y by Gauss-Legendre
    in z over [-40, 40] (its integrand e^{-z^2/2} expm1(-s Y(z)) is smooth and bounded by 1), the minimum over
    ln r by Brent's bounded search. Floating point: a bound up to the quadrature's round-off (1e-15 relative)."""
    t = 1.0 / sigma
    a = math.exp(eps)
    z, w = gauss_legendre(-40.0, 40.0, 64)
    y = np.exp(t * z - 0.5 * t * t)
    dens = w * np.exp(-0.5 * z * z) / _SQRT_2PI

    def log_bound(log_r: float) -> float:
        r = math.exp(log_r)
        mean_minus_one = float(dens @ np.expm1(-(r / steps) * y))   # E e^{-rY/M} - 1, no cancellation
        if mean_minus_one > -0.5:
            return r / a + steps * math.log1p(mean_minus_one)
        return r / a + steps * math.log(max(float(dens @ np.exp(-(r / steps) * y)), 1e-300))

    best = minimize_scalar(log_bound, bounds=(math.log(1e-6), math.log(1e6 * a * max(1.0, steps))), method="bounded",
                           options={"maxiter": 80, "xatol": 1e-6})
    return min(1.0, math.exp(min(float(best.fun), 0.0)))


def beyond_bulk(steps: int, sigma: float, eps: float, sds: float = KINK_SDS) -> bool:
    """Whether the level e^eps clears OneEpochTail's kink check (sds sd of the small steps' mean beyond it and the
    kink) on the value's cut (its mean and sd in closed form: no transform is formed), so that delta_qp can serve
    it; certifier.numerics.few_epochs_jump asks with its own margin."""
    cut = Cut.at(steps, 1.0 / sigma, CUTS[0])
    m = steps - 1
    level = math.exp(eps) - m * cut.small_mean() / steps - cut.b / steps
    return level >= sds * math.sqrt(cut.small_var() * m) / steps


@functools.lru_cache(maxsize=4)
def cuts(steps: int, sigma: float):
    """The value's and the check's cuts at (M, sigma): their transforms serve every eps and tau (cached)."""
    return tuple(OneEpochTail(steps, sigma, share) for share in CUTS)


def delta_qp(steps: int, sigma: float, eps: float) -> TailEstimate:
    """delta_{Q||P}(eps) of one epoch, with the change between the two cuts as its estimate."""
    fine, coarse = cuts(steps, sigma)
    a = math.exp(eps)
    v = fine.delta(a)
    return TailEstimate(v, abs(v - coarse.delta(a)))


def tpr(steps: int, sigma: float, alpha: float) -> TailEstimate:
    """The largest TPR at FPR alpha of one epoch (the likelihood-ratio test's threshold tau solved on each cut)."""
    out = []
    for route in cuts(steps, sigma):
        a1 = route.means[steps - 1]
        lo = (a1.mean + route.cut.b / steps + KINK_SDS * a1.sd) * (1.0 + 1e-12)
        if route.fpr(lo) < alpha:
            raise NumericsUnreliableError(f"FPR {alpha:g} lies in the bulk of L_M (the one-big-step route is for "
                                          "its far tail)")
        hi = 2.0 * lo
        while route.fpr(hi) > alpha:
            hi *= 2.0
        tau = brentq(lambda x, r=route: math.log(r.fpr(x) / alpha), lo, hi, xtol=1e-14 * hi, rtol=1e-15)
        out.append(route.delta(tau) + tau * alpha)
    return TailEstimate(out[0], abs(out[0] - out[1]))
