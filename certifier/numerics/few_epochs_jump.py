"""Several epochs of many steps at small sigma, in the far tail: one big step in any epoch.

With Lambda = L_1 ... L_E (Theorem 4.1) and the cut b of certifier.numerics.one_jump (N_e = #{i: Y_i > b} in epoch
e, Binomial(M, p), w_n = P(N = n)): given no big step, Lambda = A_1 ... A_E with A = A_M the small steps' mean
(light); given one, in the first epoch, Lambda = (X + Y'/M) R with X = A_{M-1} and R = A_2 ... A_E independent, so
that with E (Y' - y)_+ in closed form (one_jump.Cut.excess)

    delta_{Q||P}(eps) = w_0^E E (A_1 R - a)_+ + E w_0^{E-1} w_1 E_{X,R} [(R / M) E (Y' - M (a / R - X))_+] + ...,

the rest being the terms with two or more big steps. The sums run over the grids of one_jump.small_means at every
second point (their band ends at 20 / sd, the step is then sd / 8); the law of R for E >= 3 is the product of E - 1
A's by binary powering, each pair's mass split between the two nearest points of a step that grows with the
product's sd (mass and mean kept: a sum of a smooth function then errs by step^2 / 8 times its curvature; measured
7e-6 of the value at E = 10 against the one-at-a-time chain on the fine step). Each law's ends at its round-off are
left out, their mass and round-off counted as lost and weighed by the largest R-term. The sums stop at the R where
the big step's kink y = b would come within KINK_SDS sd of the mean of X (short of it X's density is below 1e-20 of
its peak there: the sum is smooth); beyond, E[Lambda; R >= r] is bounded whole by Chernoff, on the small steps'
first moment (upper_mean_bound: the small steps are bounded by b, their mean's upper tail is light) or on R's
(1 + l)-th moment (upper_product_bound), the smaller. The terms with two or more big steps weigh about E M p of
those kept (M p = 2.5e-4 on the value's cut, 1e-3 on the check's, both times 3 / E beyond three epochs), so the
estimate is the change between the two cuts, plus the densities' round-off (their largest negative sample, at least
1e-16 of the peak) times the integrand's absolute sum, plus those bounds. Where many epochs carry the tail together
(E in the hundreds at moderate eps) the bound beyond r_cut is the whole value and the estimate says so; that bound
needs only the cut, not the densities (most of a call's time), so a caller holding an estimate at or below it is
answered by a refusal before them. delta_{P||Q} lies in the lower tail, which big steps only lift:
certifier.numerics.negative_moments bounds it. Floating point, not a certificate.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, logsumexp

from certifier.errors import NumericsUnreliableError
from certifier.numerics import one_jump
from certifier.numerics.one_jump import TailEstimate

STRIDE = 2                  # every second point of the small steps' grids (sd / 8: their band ends at 20 / sd)
BLOCK = 256                 # R-points per block of the two-dimensional sums
EPOCHS = range(2, 10**4 + 1)   # the epochs served (the domain's)
KINK_SDS = 12.0             # the big step's kink y = b kept this many sd of X above its mean (the sum is smooth)
CUT_EPOCHS = 3              # beyond this many epochs one_jump's cuts are made E / CUT_EPOCHS times rarer
TRIM = 1e-30                # a law's ends below this share of its peak (or its round-off) are left out, as lost


class Law(NamedTuple):
    """A grid law: points x, masses f, each mass's round-off `noise`, and `lost`, the mass of the ends left out."""
    x: np.ndarray
    f: np.ndarray
    noise: float
    lost: float = 0.0


def _grid(mean: one_jump.SmallMean) -> Law:
    """Every STRIDE-th point of a small steps' mean, its trapezoid weights, and a weight's round-off."""
    step = mean.dx * STRIDE
    noise = max(-float(mean.f.min()), 1e-16 * float(mean.f.max()))
    return Law((mean.mean + mean.x())[::STRIDE], mean.f[::STRIDE] * step, noise * step)


def _trimmed(law: Law) -> Law:
    """The law without its ends at or below its round-off (or TRIM of its peak): a product's support is far wider
    than its mass. What they held, at most their masses plus the round-off of each, is counted as lost."""
    x, f, noise, lost = law
    keep = np.nonzero(f > max(TRIM * float(f.max()), noise))[0]
    if keep.size == 0:
        raise ValueError("a grid law below its own round-off")     # the route declines (big_step_tails)
    lo, hi = int(keep[0]), int(keep[-1]) + 1
    gone = float(np.abs(f[:lo]).sum() + np.abs(f[hi:]).sum()) + (f.size - hi + lo) * noise
    return Law(x[lo:hi], f[lo:hi], noise, lost + gone)


def _product(one: Law, other: Law, step: float) -> Law:
    """The law of the product of two independent grid laws on the uniform grid of `step` (linear binning), trimmed."""
    prod = (one.x[:, None] * other.x[None, :]).ravel()
    mass = (one.f[:, None] * other.f[None, :]).ravel()
    lo = float(prod.min())
    pos = (prod - lo) / step
    k = np.floor(pos).astype(np.int64)
    frac = pos - k
    n = int(k.max()) + 2
    f = np.bincount(k, mass * (1.0 - frac), n) + np.bincount(k + 1, mass * frac, n)
    size_one, size_other = float(np.abs(one.f).sum()), float(np.abs(other.f).sum())
    return _trimmed(Law(lo + step * np.arange(n), f, one.noise * size_other + other.noise * size_one,
                        one.lost * (size_other + other.lost) + other.lost * size_one))


def _power(law: Law, factors: int, step: float) -> Law:
    """The law of the product of `factors` independent copies of a grid law, by binary powering; a product of k
    copies is binned on the step step * max(1, sqrt(k) / 2) (16 points per sd of A times sqrt(k), as the first)."""
    out, k_out, k = None, 0, 1
    law = _trimmed(law)
    while factors:
        if factors & 1:
            k_out += k
            out = law if out is None else _product(out, law, step * max(1.0, math.sqrt(k_out) / 2.0))
        factors >>= 1
        if factors:
            k *= 2
            law = _product(law, law, step * max(1.0, math.sqrt(k) / 2.0))
    return out


def _log_transform(cut: one_jump.Cut):
    """K(l) = M ln E[e^{l Y / M} | Y <= b] and K'(l), the small steps' mean's cumulant transform, by Gauss-Legendre in z
    up to z_b (its integrand bounded: Y <= b), in logarithms."""
    steps, t = cut.steps, cut.t
    z, w = one_jump.gauss_legendre(min(-40.0, -40.0 / t), cut.z_b, 128)
    y = np.exp(t * z - 0.5 * t * t) / steps
    log_w = np.log(w) - 0.5 * z * z - float(log_ndtr(cut.z_b)) - 0.5 * math.log(2.0 * math.pi)

    def k(lam: float) -> tuple[float, float]:
        kk = steps * float(logsumexp(log_w + lam * y))
        return kk, steps * math.exp(float(logsumexp(log_w + lam * y + np.log(y))) - kk / steps)
    return k


def _least(log_bound, lo: float, hi: float) -> float:
    """min(1, e^{min of log_bound over ln l in [lo, hi]}) by Brent's bounded search."""
    best = minimize_scalar(log_bound, bounds=(lo, hi), method="bounded", options={"xatol": 1e-3})
    return min(math.exp(min(float(best.fun), 0.0)), 1.0)


def upper_mean_bound(cut: one_jump.Cut, x: float) -> float:
    """An upper bound on E[A_M; A_M >= x], A_M = (1/M) sum of M steps Y | Y <= b (Chernoff on the first moment):
    min over l >= 0 of e^{-l x} E[A e^{l A}] = e^{-l x} K'(l) e^{K(l)}."""
    k = _log_transform(cut)

    def log_bound(log_l: float) -> float:
        kk, slope = k(math.exp(log_l))
        return kk + math.log(slope) - math.exp(log_l) * x
    return _least(log_bound, math.log(1e-3 / x), math.log(1e4 * cut.steps / cut.b))


def upper_product_bound(cut: one_jump.Cut, factors: int, r: float) -> float:
    """An upper bound on E[R; R >= r], R the product of `factors` independent A_M (Chernoff on the (1 + l)-th
    moment): E[R (R / r)^l] = r^{-l} (E A^{1+l})^factors, and A^{1+l} <= e^{(1+l)(A - 1)} (ln A <= A - 1), so
    E A^{1+l} <= e^{K(1+l) - (1+l)}. Where many factors share the excess this is far below upper_mean_bound's
    union over one factor reaching r^{1/factors}."""
    k = _log_transform(cut)

    def log_bound(log_l: float) -> float:
        lam = math.exp(log_l)
        return factors * (k(1.0 + lam)[0] - (1.0 + lam)) - lam * math.log(r)
    return _least(log_bound, math.log(1e-3), math.log(1e4 * cut.steps / cut.b))


def _r_cut(cut: one_jump.Cut, a: float) -> tuple[float, float]:
    """r_cut, from where the big step's kink y = b would lie within KINK_SDS sd of the mean of X = A_{M-1} (the sum is
    not smooth there), and the mean of X, both in closed form (one_jump.small_means' mean and sd)."""
    steps = cut.steps
    mean, sd = (steps - 1) * cut.small_mean() / steps, math.sqrt(cut.small_var()) * math.sqrt(steps - 1) / steps
    return a / (mean + cut.b / steps + KINK_SDS * sd), mean


def _beyond(cut: one_jump.Cut, epochs: int, a: float) -> float:
    """The bound on E[Lambda; R >= r_cut], at most one big step, in closed form (no densities): E[L_1] E[R; R >= r_cut],
    the latter at most (E - 1) E[A; A >= r_cut^{1/(E-1)}] (some factor of R reaches that root) and at most the
    (1 + l)-th moment's bound: the smaller."""
    r_cut, mean = _r_cut(cut, a)
    w0, w1 = (one_jump.binomial(cut.steps, cut.p, n) for n in (0, 1))
    tail_r = min((epochs - 1) * upper_mean_bound(cut, r_cut ** (1.0 / (epochs - 1))),
                 upper_product_bound(cut, epochs - 1, r_cut))
    return (w0 ** epochs + epochs * w0 ** (epochs - 1) * w1) * (mean + cut.big_mean() / cut.steps) * tail_r


def _sums(tail: one_jump.OneEpochTail, epochs: int, a: float) -> tuple[float, float]:
    """delta_{Q||P}(ln a) of E epochs on one cut with at most one big step for R < r_cut, and its round-off terms
    (the ends R's powers left out included; the bound beyond r_cut is _beyond's)."""
    steps, cut = tail.cut.steps, tail.cut
    small = tail.means[steps - 1]
    x, fx, nx, _ = _grid(small)
    x0, fx0, nx0, _ = first = _grid(tail.means[steps])
    r, fr, nr, lost = _power(first, epochs - 1, small.dx * STRIDE)
    c0 = tail.weights[0] ** epochs
    c1 = epochs * tail.weights[0] ** (epochs - 1) * tail.weights[1]
    r_cut = _r_cut(cut, a)[0]          # the R left out from here on are bounded whole (_beyond)
    keep = r < r_cut
    r, fr = r[keep], fr[keep]

    def rows(rr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        none = c0 * np.maximum(rr * x0[None, :] - a, 0.0)                       # no big step
        one = c1 * (rr / steps) * cut.excess(steps * (a / rr - x[None, :]))     # one, in the first epoch
        return none, one, none @ fx0 + one @ fx
    # the ends R's powers left out: each R-term is at most the one at r_cut (a row grows with r)
    value, floor = 0.0, lost * abs(float(rows(np.array([[r_cut]]))[2][0]))
    for lo in range(0, r.size, BLOCK):
        rr, wr = r[lo:lo + BLOCK, None], fr[lo:lo + BLOCK]
        none, one, row = rows(rr)
        value += float(wr @ row)
        floor += float(np.abs(wr) @ (nx0 * none.sum(axis=1) + nx * np.abs(one).sum(axis=1))) \
            + nr * float(np.abs(row).sum())
    return value, floor


def _share(share: float, epochs: int) -> float:
    """A cut's share M p times min(1, CUT_EPOCHS / E): the terms with two big steps, which the sums leave to the
    estimate, weigh about E M p of the value."""
    return share if epochs <= CUT_EPOCHS else share * CUT_EPOCHS / epochs


@functools.lru_cache(maxsize=16)
def _cuts(steps: int, sigma: float, epochs: int) -> tuple:
    """one_jump's two cuts at the shares _share (their small steps' densities: most of a call's time)."""
    if epochs <= CUT_EPOCHS:
        return one_jump.cuts(steps, sigma)
    return tuple(one_jump.OneEpochTail(steps, sigma, _share(share, epochs)) for share in one_jump.CUTS)


def delta_qp(steps: int, sigma: float, epochs: int, eps: float, bar: float = math.inf) -> TailEstimate:
    """delta_{Q||P}(eps) of E in EPOCHS epochs, with the change between one_jump's two cuts (and the round-off and
    kink terms of the value's cut) as its estimate. The terms the sums leave out, two or more big steps, grow in
    proportion to the cut's share M p (one big step carries the tail, a second one is any step above b): the value
    is the value's cut's sum plus the change to the check's cut times s / (s' - s), s and s' the two shares
    (Richardson's step; without it the value lay 0.1 % of delta low at (10^6, 10, eps 1), a third of its estimate).

    bar: the estimate a caller already holds. The estimate is at least the bound beyond r_cut (_beyond, in closed
    form); where that bound reaches bar the densities and sums are not formed and NumericsUnreliableError is raised
    (the estimate could not be below bar: the caller keeps its own)."""
    if epochs not in EPOCHS:
        raise ValueError(f"the few-epochs route serves E in {EPOCHS}, got {epochs}")
    a = math.exp(eps)
    beyond = _beyond(one_jump.Cut.at(steps, 1.0 / sigma, _share(one_jump.CUTS[0], epochs)), epochs, a)
    if not beyond < bar:
        raise NumericsUnreliableError(f"the bound beyond r_cut, {beyond:.3g}, is not below the estimate to beat")
    (v, e), (w, _) = (_sums(t, epochs, a) for t in _cuts(steps, sigma, epochs))
    share, check = one_jump.CUTS
    return TailEstimate(v + (v - w) * share / (check - share), abs(v - w) + (e + beyond))
