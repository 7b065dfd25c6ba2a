"""A few epochs of many steps at small sigma, in the far tail: one big step in any epoch.

With Lambda = L_1 ... L_E (Theorem 4.1) and the cut b of certifier.numerics.one_jump (N_e = #{i: Y_i > b} in epoch
e, Binomial(M, p), w_n = P(N = n)): given no big step, Lambda = A_1 ... A_E with A = A_M the small steps' mean
(light); given one, in the first epoch, Lambda = (X + Y'/M) R with X = A_{M-1} and R = A_2 ... A_E independent, so
that with E (Y' - y)_+ in closed form (one_jump.Cut.excess)

    delta_{Q||P}(eps) = w_0^E E (A_1 R - a)_+ + E w_0^{E-1} w_1 E_{X,R} [(R / M) E (Y' - M (a / R - X))_+] + ...,

the rest being the terms with two or more big steps. The sums run over the grids of one_jump.small_means at every
second point (their band ends at 20 / sd, the step is then sd / 8); the law of R for E >= 3 is the product of the
A's, each pair's mass split between the two nearest points of that step (mass and mean kept: a sum of a smooth
function then errs by step^2 / 8 times its curvature). The sums stop at the R where the big step's kink y = b
would come within KINK_SDS sd of the mean of X (short of it X's density is below 1e-20 of its peak there: the sum
is smooth); beyond, E[Lambda; R >= r] is bounded whole by Chernoff on the small steps' first moment
(upper_mean_bound: the small steps are bounded by b, their mean's upper tail is light). The terms with two or more
big steps weigh about E M p of those kept (M p = 2.5e-4 on the value's cut, 1e-3 on the check's), so the estimate
is the change between the two cuts, plus the densities' round-off (their largest negative sample, at least 1e-16 of
the peak) times the integrand's absolute sum, plus that bound. delta_{P||Q} lies in the lower tail, which big steps
only lift: certifier.numerics.negative_moments bounds it. Floating point, not a certificate.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, logsumexp

from certifier.numerics import one_jump
from certifier.numerics.one_jump import TailEstimate

STRIDE = 2                  # every second point of the small steps' grids (sd / 8: their band ends at 20 / sd)
BLOCK = 256                 # R-points per block of the two-dimensional sums
EPOCHS = (2, 3)             # the epochs served
KINK_SDS = 12.0             # the big step's kink y = b kept this many sd of X above its mean (the sum is smooth)


def _grid(mean: one_jump.SmallMean) -> tuple[np.ndarray, np.ndarray, float]:
    """Every STRIDE-th point of a small steps' mean, its trapezoid weights, and a weight's round-off."""
    step = mean.dx * STRIDE
    noise = max(-float(mean.f.min()), 1e-16 * float(mean.f.max()))
    return (mean.mean + mean.x())[::STRIDE], mean.f[::STRIDE] * step, noise * step


def _product(one: tuple, other: tuple, step: float) -> tuple[np.ndarray, np.ndarray, float]:
    """The law of the product of two independent grid laws on the uniform grid of `step` (linear binning)."""
    (x, fx, nx), (y, fy, ny) = one, other
    prod = (x[:, None] * y[None, :]).ravel()
    mass = (fx[:, None] * fy[None, :]).ravel()
    lo = float(prod.min())
    pos = (prod - lo) / step
    k = np.floor(pos).astype(np.int64)
    frac = pos - k
    n = int(k.max()) + 2
    f = np.bincount(k, mass * (1.0 - frac), n) + np.bincount(k + 1, mass * frac, n)
    return lo + step * np.arange(n), f, nx * float(np.abs(fy).sum()) + ny * float(np.abs(fx).sum())


def upper_mean_bound(cut: one_jump.Cut, x: float) -> float:
    """An upper bound on E[A_M; A_M >= x], A_M = (1/M) sum of M steps Y | Y <= b (Chernoff on the first moment):
    min over l >= 0 of e^{-l x} E[A e^{l A}] = e^{-l x} K'(l) e^{K(l)}, K(l) = M ln E[e^{l Y / M} | Y <= b], the
    conditional transform by Gauss-Legendre in z up to z_b (its integrand bounded: Y <= b), in logarithms."""
    steps, t = cut.steps, cut.t
    z, w = one_jump.gauss_legendre(min(-40.0, -40.0 / t), cut.z_b, 128)
    y = np.exp(t * z - 0.5 * t * t) / steps
    log_w = np.log(w) - 0.5 * z * z - float(log_ndtr(cut.z_b)) - 0.5 * math.log(2.0 * math.pi)

    def log_bound(log_l: float) -> float:
        lam = math.exp(log_l)
        k = steps * float(logsumexp(log_w + lam * y))
        slope = steps * math.exp(float(logsumexp(log_w + lam * y + np.log(y))) - k / steps)   # K'(l)
        return k + math.log(slope) - lam * x

    best = minimize_scalar(log_bound, bounds=(math.log(1e-3 / x), math.log(1e4 * steps / cut.b)), method="bounded",
                           options={"xatol": 1e-3})
    return min(math.exp(min(float(best.fun), 0.0)), 1.0)


def _sums(tail: one_jump.OneEpochTail, epochs: int, a: float) -> tuple[float, float]:
    """delta_{Q||P}(ln a) of E epochs on one cut with at most one big step, and its round-off and cut-off terms."""
    steps, cut = tail.cut.steps, tail.cut
    small = tail.means[steps - 1]
    x, fx, nx = _grid(small)
    x0, fx0, nx0 = first = _grid(tail.means[steps])
    rest = first
    for _ in range(epochs - 2):
        rest = _product(rest, first, small.dx * STRIDE)
    r, fr, nr = rest
    c0 = tail.weights[0] ** epochs
    c1 = epochs * tail.weights[0] ** (epochs - 1) * tail.weights[1]
    # from r_cut on the big step's kink would lie within KINK_SDS sd of the mean of X (the sum is not smooth
    # there): those R are left out, their whole term bounded below
    r_cut = a / (small.mean + cut.b / steps + KINK_SDS * small.sd)
    keep = r < r_cut
    r, fr = r[keep], fr[keep]
    value = floor = 0.0
    for lo in range(0, r.size, BLOCK):
        rr, wr = r[lo:lo + BLOCK, None], fr[lo:lo + BLOCK]
        none = c0 * np.maximum(rr * x0[None, :] - a, 0.0)                       # no big step
        one = c1 * (rr / steps) * cut.excess(steps * (a / rr - x[None, :]))     # one, in the first epoch
        row = none @ fx0 + one @ fx
        value += float(wr @ row)
        floor += float(np.abs(wr) @ (nx0 * none.sum(axis=1) + nx * np.abs(one).sum(axis=1))) \
            + nr * float(np.abs(row).sum())
    # E[Lambda; R >= r_cut] <= E[L_1] (E - 1) E[A; A >= r_cut^{1/(E-1)}]: some factor of R reaches that root
    beyond = (c0 + c1) * (small.mean + cut.big_mean() / steps) * (epochs - 1) * \
        upper_mean_bound(cut, r_cut ** (1.0 / (epochs - 1)))
    return value, floor + beyond


def delta_qp(steps: int, sigma: float, epochs: int, eps: float) -> TailEstimate:
    """delta_{Q||P}(eps) of E in EPOCHS epochs, with the change between one_jump's two cuts (and the round-off and
    kink terms of the value's cut) as its estimate."""
    if epochs not in EPOCHS:
        raise ValueError(f"the few-epochs route serves E in {EPOCHS}, got {epochs}")
    a = math.exp(eps)
    (v, e), (w, _) = (_sums(t, epochs, a) for t in one_jump.cuts(steps, sigma))
    return TailEstimate(v, abs(v - w) + e)
