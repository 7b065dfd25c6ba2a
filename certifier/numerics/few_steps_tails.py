"""One epoch of a few steps in the far tail: a direct convolution, with one big step in closed form.

With Y_j = e^{t X_j - t^2/2} (t = 1/sigma, X_j iid N(0, 1) under P), M L_M = S = Y_1 + ... + Y_M and a = e^eps,

    M delta_{Q||P}(eps) = E (S - M a)_+,        M delta_{P||Q}(eps) = a E (M/a - S)_+.

Every Y is split at a level c: the steps below it lie on the cells [k h, (k + 1) h) (each cell's exact mass, upper
cells by the survival function, placed at its centre), convolved directly (every product and sum is positive, so a
far tail keeps its relative digits: an FFT's round-off is absolute, about 1e-16 of the peak, and at delta = 1e-12
that is the whole estimate). By the number N of steps above c:

  * N = 0: E[(S - Ma)_+; N = 0] is a sum over the M-fold lattice;
  * N = 1: M E[T(Ma - S')] over the (M - 1)-fold lattice S', with T(b) = E[(Y - b)_+; Y > c] in closed form:
    C(max(b, c)) + (c - b)_+ Pr(Y > c), C(b) = E(Y - b)_+ the lognormal call (certifier.numerics.two_steps_tails);
  * N >= 2: at most C(M, 2) (2 E[Y; Y > c] Pr(Y > c) + (M - 2) Pr(Y > c)^2), bounded, not computed (E S 1{N >= 2}).

c is set where the N >= 2 bound is below TWO_BIG (absolute: delta >= 1e-12 in the target domain), and the sums
stop where a Chernoff bound on what lies beyond is below it too. delta_{P||Q} needs only S < M/a, where every step
lies below M/a: the lattice alone, no split. The lattice's error is O(h^2): the call closes the kink of (S - Ma)_+
for the big step, and Euler-Maclaurin's term is added for the kink between two lattice points (without it the
lattice converged irregularly, as the kink's place in its cell moved with h). The value is the h/2 one with
Richardson's step; its estimate is the whole change from h (three times the h/2 error at second order), plus the
two bounds and the sums' round-off. Independent of the moment lines and of the FFT densities (no transform).
Serves one epoch of 3 <= M steps where the lattice has at most MAX_POINTS points (M = 2 has its one integral; the
primary route asks it below 30 steps, certifier.numerics.big_step_tails). Floating point with an a-posteriori
estimate, not a certificate.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

from certifier.errors import NumericsUnreliableError
from certifier.numerics.one_jump import mills
from certifier.numerics.two_steps_tails import LOG_PHI0, MILLS_FROM

PER_T = 12            # lattice cells per unit of t (the spread of Y in its bulk): h = min(t, 1) / PER_T
TWO_BIG = 1e-18       # the bound on the N >= 2 part of delta_{Q||P} (absolute)
MAX_POINTS = 1 << 17  # the fine lattice's points at most (a direct convolution costs their square)
REFINE = 1e-4        # the lattice is halved while h and h/2 differ by more than this share (and it fits)
REFINE_POINTS = 1 << 15   # ... and the finer lattice of the next pair would have at most this many points
ROUNDOFF = 1e-13      # relative round-off of positive sums (n u with n <= 2^17 terms, and the calls' digits)


def _sf(z):
    return ndtr(-np.asarray(z, dtype=float))


def _masses(t: float, h: float, cells: int) -> np.ndarray:
    """Pr(Y in [k h, (k + 1) h)), k = 0 .. cells - 1, each placed at the cell's centre (k + 1/2) h."""
    z = (np.log(np.maximum(h * np.arange(cells + 1), 1e-300)) + 0.5 * t * t) / t
    z[0] = -np.inf
    low = ndtr(z[1:]) - ndtr(z[:-1])           # below the median: differences of the CDF
    high = _sf(z[:-1]) - _sf(z[1:])            # above: of the survival function (no cancellation in the tail)
    return np.where(z[:-1] < 0.0, low, high)


def _power(base: np.ndarray, count: int, length: int) -> np.ndarray:
    """The count-fold convolution of base, cut to `length` points, by binary powering (direct sums)."""
    out, e = None, count
    while e:
        if e & 1:
            out = base if out is None else np.convolve(out, base)[:length]
        e >>= 1
        if e:
            base = np.convolve(base, base)[:length]
    return out


def _call(b: np.ndarray, t: float) -> np.ndarray:
    """C(b) = E(Y - b)_+, b > 0: two_steps_tails.call over arrays (its Mills form out of the money, its plain form in
    the money, where nothing cancels)."""
    xb = (np.log(b) + 0.5 * t * t) / t
    out_money = b * np.exp(LOG_PHI0 - 0.5 * xb * xb) * (mills(xb - t) - mills(xb))
    in_money = ndtr(t - xb) - b * ndtr(-xb)
    return np.where(xb - t < MILLS_FROM, in_money, out_money)


def _two_big(steps: int, t: float, z: float) -> float:
    """The N >= 2 part's bound divided by M (delta's units): C(M,2)/M (2 E[Y; X > z] Pr(X > z) + (M-2) Pr(X > z)^2)."""
    p, ey = math.exp(float(log_ndtr(-z))), math.exp(float(log_ndtr(t - z)))
    return 0.5 * (steps - 1) * (2.0 * ey * p + (steps - 2) * p * p)


def split_level(steps: int, t: float) -> float:
    """The least z (on a 1/16 grid) with the N >= 2 bound below TWO_BIG; c = e^{t z - t^2/2}."""
    z = 0.0
    while _two_big(steps, t, z) > TWO_BIG:
        z += 1.0 / 16.0
    return z


def _spacing(t: float) -> float:
    return min(t, 1.0) / PER_T


def _mgfs(base: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """theta on a grid, ln E[e^{theta Y}] and ln E[Y e^{theta Y}] there, over the lattice steps (Y below the split, at
    the cells' centres)."""
    y = h * (np.arange(base.size) + 0.5)
    thetas = np.geomspace(1e-3, 600.0, 80) / y[-1]
    w = base[None, :] * np.exp(thetas[:, None] * (y[None, :] - y[-1]))
    return thetas, thetas * y[-1] + np.log(w.sum(axis=1)), thetas * y[-1] + np.log(w @ y)


def _beyond(steps: int, mgfs, x: float, big_mean: float, big_p: float) -> float:
    """A Chernoff bound, in delta's units, on what the lattice cut at S = x leaves out: E[S; S > x] of the M lattice
    steps (N = 0) and M (E[Y; Y > c] Pr(S' > x) + Pr(Y > c) E[S'; S' > x]) of the M - 1 others (N = 1, with
    (Y + S' - Ma)_+ <= Y + S'), each as e^{-theta x} E[e^{theta S}] or e^{-theta x} E[S e^{theta S}]; the least over
    the grid of theta."""
    thetas, m0, m1 = mgfs
    lx = -thetas * x
    zero = np.exp(np.minimum(math.log(steps) + m1 + (steps - 1) * m0 + lx, 700.0))
    tail_p = np.exp(np.minimum((steps - 1) * m0 + lx, 700.0))
    tail_s = np.exp(np.minimum(math.log(steps - 1) + m1 + (steps - 2) * m0 + lx, 700.0))
    return float((zero + steps * (big_mean * tail_p + big_p * tail_s)).min()) / steps


def _plan(steps: int, t: float, a: float, h: float) -> tuple[int, int, float]:
    """(the steps' lattice cells below the split c = cells h, the sums' lattice length, the cut's bound) at the
    coarse spacing h: the length stops at the first level beyond M a (in steps of a tenth of it) where `_beyond`
    is below TWO_BIG, or at M cells (nothing cut)."""
    cells = int(math.exp(t * split_level(steps, t) - 0.5 * t * t) / h)
    if cells < 1:
        raise NumericsUnreliableError("the few-steps lattice's split lies below its first cell")
    c = cells * h
    zc = (math.log(c) + 0.5 * t * t) / t
    big_mean, big_p = math.exp(float(log_ndtr(t - zc))), math.exp(float(log_ndtr(-zc)))
    mgfs = _mgfs(_masses(t, h, cells), h)
    level, full = steps * a, steps * cells
    for k in range(1, 200):
        x = level * (1.0 + 0.1 * k)
        if x >= full * h:
            break
        bound = _beyond(steps, mgfs, x, big_mean, big_p)
        if bound <= TWO_BIG:
            return cells, int(x / h) + 1, bound
    return cells, full, 0.0


def points(steps: int, sigma: float, eps: float, side: str = "qp") -> int:
    """The fine lattice's points (a cost predictor)."""
    t, a = 1.0 / sigma, math.exp(eps)
    h = _spacing(t)
    if side == "pq":
        return 2 * (int(steps / a / _pq_spacing(steps, a, h)) + 2)
    return 2 * _plan(steps, t, a, h)[1]


def _pq_spacing(steps: int, a: float, h: float) -> float:
    """delta_{P||Q}'s spacing: h, or 1/32 of M/a where that is smaller (the lattice must resolve S < M/a)."""
    return min(h, steps / a / 32.0)


def _kink(masses: np.ndarray, s0: float, h: float, level: float) -> float:
    """Euler-Maclaurin's term for a slope that jumps by 1 at `level` = s_j + theta h on the lattice s_k = s0 + k h of
    these masses: f(level) h^2 B2(theta) / 2 with f = masses / h, B2(x) = x^2 - x + 1/6 (a sum's error from where
    the kink falls between two points; it changes with h, and without it the lattice converged irregularly)."""
    x = (level - s0) / h
    j = int(math.floor(x))
    if not 0 <= j < masses.size - 1:
        return 0.0
    theta = x - j
    f = ((1.0 - theta) * masses[j] + theta * masses[j + 1]) / h
    return f * h * h * (theta * theta - theta + 1.0 / 6.0) / 2.0


def _qp_at(steps: int, t: float, a: float, h: float, cells: int, length: int) -> float:
    """delta_{Q||P} on the lattice h: steps below c = cells h, sums cut at `length` points."""
    base = _masses(t, h, cells)
    others = _power(base, steps - 1, length)                   # S' = M - 1 steps, all below c
    every = np.convolve(others, base)[:length]   # S = M steps, all below c
    level = steps * a
    s_every = h * (np.arange(every.size) + 0.5 * steps)        # cell centres: n steps sit n h/2 up
    s_others = h * (np.arange(others.size) + 0.5 * (steps - 1))
    zero = float(every @ np.maximum(s_every - level, 0.0)) + _kink(every, s_every[0], h, level)
    c = cells * h
    b = level - s_others
    zc = (math.log(c) + 0.5 * t * t) / t
    big = _call(np.maximum(b, c), t) + np.maximum(c - b, 0.0) * float(_sf(zc))
    return (zero + steps * float(others @ big)) / steps


def _pq_at(steps: int, t: float, a: float, h: float) -> float:
    b = steps / a
    cells = int(b / h) + 1
    every = _power(_masses(t, h, cells), steps, cells)
    s = h * (np.arange(cells) + 0.5 * steps)
    return a / steps * (float(every @ np.maximum(b - s, 0.0)) + _kink(every, s[0], h, b))


def _refined(at, fine_points: int) -> tuple[float, float]:
    """(at(k), at(2k)) for the least k in 1, 2, 4, ... where they agree within REFINE of the latter (or TWO_BIG), or
    the finest pair whose finer lattice has at most REFINE_POINTS points (at(k): the value on the lattice h / k; the
    first pair has fine_points)."""
    k, coarse, fine = 1, at(1), at(2)
    while abs(fine - coarse) > max(REFINE * abs(fine), TWO_BIG) and 2 * k * fine_points <= REFINE_POINTS:
        k *= 2
        coarse, fine = fine, at(2 * k)
    return coarse, fine


def _richardson(coarse: float, fine: float) -> float:
    """The h/2 value with Richardson's step: its error is O(h^2) (the kink's term taken out), so
    fine + (fine - coarse)/3 is O(h^4) off; the estimate stays the whole change from h to h/2."""
    return fine + (fine - coarse) / 3.0


def delta(steps: int, sigma: float, eps: float, side: str) -> tuple[float, float]:
    """(delta_{Q||P}(eps) (side "qp") or delta_{P||Q}(eps) ("pq"), error estimate) at E = 1 and M >= 3 steps.
    Raises NumericsUnreliableError where the lattice would exceed MAX_POINTS."""
    if steps < 3:
        raise NumericsUnreliableError("the few-steps lattice serves M >= 3 (M = 2 has its one integral)")
    t, a = 1.0 / sigma, math.exp(eps)
    h = _spacing(t)
    if side == "pq":
        h, fine_points = _pq_spacing(steps, a, h), points(steps, sigma, eps, "pq")
        if fine_points > MAX_POINTS:
            raise NumericsUnreliableError(f"the few-steps lattice at M={steps}, sigma={sigma:g} exceeds {MAX_POINTS}")
        coarse, fine = _refined(lambda k: _pq_at(steps, t, a, h / k), fine_points)
        return _richardson(coarse, fine), abs(fine - coarse) + ROUNDOFF * fine
    if 2.2 * steps * a / h > MAX_POINTS:   # the sums reach M a at least
        raise NumericsUnreliableError(f"the few-steps lattice at M={steps}, sigma={sigma:g}, eps={eps:g} would exceed "
                                      f"{MAX_POINTS} points")
    cells, length, cut = _plan(steps, t, a, h)
    if 2 * length > MAX_POINTS:
        raise NumericsUnreliableError(f"the few-steps lattice at M={steps}, sigma={sigma:g}, eps={eps:g} would have "
                                      f"{2 * length} points (at most {MAX_POINTS})")
    coarse, fine = _refined(lambda k: _qp_at(steps, t, a, h / k, k * cells, k * length), 2 * length)
    zc = (math.log(cells * h) + 0.5 * t * t) / t
    return _richardson(coarse, fine), abs(fine - coarse) + ROUNDOFF * fine + _two_big(steps, t, zc) + cut
