"""Route "logconv" of the exact TV: the density of ln L_M by log-domain convolutions.

ln Y_j = tX_j - t^2/2 is Gaussian, and for independent A, B with densities p, q the
density of W = ln(e^A + e^B) is the one-dimensional integral

    f_W(w) = int_R p(w - sp(D)) q(w - sp(-D)) dD,   sp(D) = ln(1 + e^D),

(substitute D = B - A; the Jacobian of (A, B) -> (W, D) is 1). With D = kh on the lattice
s = nh of the densities, sp(kh) = kh + eps_k and sp(-kh) = eps_k, eps_k = ln(1 + e^{-kh}):
the k-th term needs p and q shifted by eps_k (Fourier interpolation, exact for these smooth,
band-limited samples), and for kh >= 40 (eps_k < 1e-17) it is a cumulative sum. Binary
powering builds ln S_M, S_M = Y_1 + ... + Y_M, from 2 log2 M such sums; ln L_M = ln S_M - ln M.
No characteristic function of L_M and no Laplace transform is used, so this route is
independent of certifier.numerics.tv_laplace; it shares only the last step, formula (14), whose
moments F_M(1/2 + iu) = int e^{(1/2 + iu)s} f(s) ds it sums on the lattice.
Floating point; its estimate compares the lattice h with 2h.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from certifier.numerics.one_epoch import bulk_sd
from certifier.numerics.tv_laplace import TAIL_LEVEL, formula14
from certifier.powering import binary_power

EPS_END = 40.0       # beyond D = 40, eps(D) < 1e-17: the shift is below round-off
FLOOR = 1e-16        # relative density level where a lattice density is trimmed (round-off)
BATCH = 64           # shifts computed per inverse FFT batch
MAX_WORK = 4e7       # affordable: (number of sums) x (shifts) x (lattice points) at most this (about 3 s)


@dataclass(frozen=True)
class LatticeDensity:
    """Density values f_n at s = (lo + n) h."""
    lo: int
    h: float
    f: np.ndarray

    @property
    def hi(self) -> int:
        return self.lo + self.f.size


def _trim(lo: int, h: float, f: np.ndarray) -> LatticeDensity:
    """Drop the ends below FLOOR times the peak: the round-off level of the Fourier shifts.

    What is dropped has P-mass below 1e-14; under Q (density e^s f) the far right tail can
    weigh more, so this density serves E_P (1 - Lambda)_+, not the privacy rows.
    """
    keep = np.nonzero(np.abs(f) > FLOOR * np.abs(f).max())[0]
    return LatticeDensity(lo + int(keep[0]), h, f[keep[0]:keep[-1] + 1].copy())


def gaussian(mean: float, sd: float, h: float) -> LatticeDensity:
    """N(mean, sd^2) on the lattice, over mean +- 9 sd (the density there is below 1e-17 of its peak)."""
    lo, hi = int(math.floor((mean - 9.0 * sd) / h)), int(math.ceil((mean + 9.0 * sd) / h))
    s = h * np.arange(lo, hi + 1)
    return LatticeDensity(lo, h, np.exp(-0.5 * ((s - mean) / sd) ** 2) / (sd * math.sqrt(2.0 * math.pi)))


def _shift_rows(f: np.ndarray, length: int, shifts: np.ndarray) -> np.ndarray:
    """Rows g(s - shift) of the band-limited interpolant of f, zero-padded to `length`."""
    spec = np.fft.rfft(f, length)
    omega = 2.0 * np.pi * np.fft.rfftfreq(length)  # per lattice step
    return np.fft.irfft(spec[None, :] * np.exp(-1j * np.outer(shifts, omega)), length)


def log_sum(p: LatticeDensity, q: LatticeDensity) -> LatticeDensity:
    """Density of ln(e^A + e^B) for independent A ~ p, B ~ q on the same lattice."""
    h = p.h
    lo = min(p.lo, q.lo)
    n = max(p.hi, q.hi) + int(math.ceil(math.log(2.0) / h)) + 2 - lo
    a, b = np.zeros(n), np.zeros(n)
    a[p.lo - lo:p.hi - lo], b[q.lo - lo:q.hi - lo] = p.f, q.f
    length = 1 << int(math.ceil(math.log2(n + 64)))
    k_end = min(int(math.ceil(EPS_END / h)), n)
    out = np.zeros(n)
    for k0 in range(0, k_end, BATCH):
        ks = np.arange(k0, min(k0 + BATCH, k_end))
        eps = np.log1p(np.exp(-h * ks))
        a_s, b_s = _shift_rows(a, length, eps / h)[:, :n], _shift_rows(b, length, eps / h)[:, :n]
        for row, k in enumerate(ks):
            out[k:] += a_s[row, :n - k] * b_s[row, k:]      # D = kh: A = w - kh - eps, B = w - eps
            if k:
                out[k:] += a_s[row, k:] * b_s[row, :n - k]  # D = -kh
    if k_end < n:  # D beyond EPS_END: no shift, the far variable's cumulative mass
        ca, cb = np.cumsum(a), np.cumsum(b)
        out[k_end:] += b[k_end:] * ca[:n - k_end] + a[k_end:] * cb[:n - k_end]
    return _trim(lo, h, out * h)


def sum_density(steps: int, sigma: float, h: float) -> LatticeDensity:
    """Density of ln S_M, S_M = sum of M lognormals Y = e^{tX - t^2/2}, by binary powering."""
    t = 1.0 / sigma
    return binary_power(gaussian(-0.5 * t * t, t, h), steps, log_sum)


def mean_density(steps: int, sigma: float, h: float) -> LatticeDensity:
    """Density of ln L_M = ln S_M - ln M, moved back onto the lattice by a Fourier shift."""
    d = sum_density(steps, sigma, h)
    whole = int(math.floor(math.log(steps) / h))
    frac = math.log(steps) / h - whole  # in lattice steps
    length = 1 << int(math.ceil(math.log2(d.f.size + 64)))
    moved = _shift_rows(d.f, length, np.array([-frac]))[0]
    return _trim(d.lo - whole, h, moved[:d.f.size])


def lattice_step(steps: int, sigma: float) -> float:
    """h = sd/4: the samples of a density of that width alias below e^{-(4 pi)^2/2} = 1e-34."""
    return min(0.25, bulk_sd(steps, sigma) / 4.0)


def _work(steps: int, sigma: float, h: float) -> float:
    t = 1.0 / sigma
    points = (22.0 * t + math.log(steps) + 1.0) / h
    return (2.0 * math.log2(steps) + 1.0) * min(EPS_END / h, points) * points


def logconv_affordable(steps: int, epochs: int, sigma: float) -> bool:
    """Whether the route fits its budget (it is a check, run with check=True only)."""
    return _work(steps, sigma, lattice_step(steps, sigma)) <= MAX_WORK


def moments(d: LatticeDensity, du: float, n_u: int) -> np.ndarray:
    """F(1/2 + i u_j) = sum_n h f_n e^{(1/2 + i u_j) s_n}, u_j = j du, by one FFT (du h = 2 pi / P)."""
    period = int(round(2.0 * math.pi / (du * d.h)))
    n = d.lo + np.arange(d.f.size)
    a = d.f * np.exp(0.5 * d.h * n) * d.h
    folded = np.zeros(period, dtype=complex)
    np.add.at(folded, n % period, a)
    return np.fft.ifft(folded)[:n_u] * period


def tv_logconv(steps: int, epochs: int, sigma: float) -> tuple[float, float]:
    """(14) from the lattice density of ln L_M; the estimate is the change from lattice 2h to h."""
    h = lattice_step(steps, sigma)
    values = []
    for step in (2.0 * h, h):
        d = mean_density(steps, sigma, step)
        du = 2.0 * math.pi / (step * round(2.0 * math.pi / (0.05 * step)))
        f = moments(d, du, int(round(2.0 * math.pi / (du * step))) // 2)
        mag = np.abs(f)
        loud = np.nonzero(mag ** epochs >= TAIL_LEVEL)[0]
        cut = int(loud[-1]) + 2 if loud.size else 2
        value = formula14(f[:cut], du, epochs)
        values.append((value.tv, value.tail + epochs * abs(1.0 - float(d.f.sum() * step))))
    (coarse, _), (fine, fine_err) = values
    return fine, abs(fine - coarse) + fine_err


def logconv_work(steps: int, sigma: float, h: float) -> float:
    """The route's cost model at lattice step h (compare with MAX_WORK)."""
    return _work(steps, sigma, h)
