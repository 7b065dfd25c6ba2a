"""The log grid e^{j eta} seen from the multiscale lattice (docs/method-v2.md §2 (iii), §4 (c)).

The value 2^k h m of octave k has epoch value L = 2^k h m / M, and e^{j eta} <= L < e^{(j+1) eta}
iff beta_j <= m < beta_{j+1} with beta_j = M e^{j eta} / (2^k h).  beta_0 = M/(2^k h) is exact;
for j != 0 beta_j is irrational (e^x is irrational for rational x != 0, Lindemann), so the cell
of every integer m is decided exactly by c_j = ceil(beta_j): an interval for beta_j that contains
no integer gives it, and one that does is recomputed at doubled precision.  No floating point
enters a decision; floats only guess where to start, and the guess is checked exactly.
"""
from __future__ import annotations

import math
from itertools import accumulate

from flint import arb, fmpq

from ..format.strict import working_prec
from .arith import dyadic  # floor(2^w lower(x)) or ceil(2^w upper(x)), exactly


class LogCells:
    """Exact cell edges c_j = ceil(beta_j) at any octave, with integer intervals
    [lo_j, hi_j] * 2^-(W + k) around beta_j = C0 e^{j eta} / 2^k (C0 = M/h, W = prec + 64)."""

    CHUNK = 1024  # a direct evaluation every CHUNK steps of the recurrence beta_{j+1} = beta_j e^eta

    def __init__(self, M: int, h: fmpq, eta: fmpq, prec: int):
        self.C0, self.eta, self.prec, self.W = fmpq(M) / h, eta, prec, prec + 64
        self.lnC0, self.feta = math.log(M) - math.log(float(h)), float(eta)
        with working_prec(prec):
            e = arb(eta).exp()
            self.elo, self.ehi = dyadic(e, False, self.W), dyadic(e, True, self.W)
        self.memo = {}  # edge lists

    def interval(self, j: int) -> tuple[int, int]:
        """[lo, hi] * 2^-W around C0 e^{j eta}, directly (exact at j = 0)."""
        if j == 0:
            return int((self.C0 * 2**self.W).floor()), int((self.C0 * 2**self.W).ceil())
        with working_prec(self.prec):
            b = arb(self.C0) * (arb(self.eta) * j).exp()
        return dyadic(b, False, self.W), dyadic(b, True, self.W)

    def edge(self, j: int, k: int, lo: int | None = None, hi: int | None = None) -> int:
        """c_j = ceil(C0 e^{j eta} / 2^k), exact (from [lo, hi] * 2^-W if given)."""
        if j == 0:
            return int((self.C0 / 2**k).ceil())
        if lo is None:
            lo, hi = self.interval(j)
        s = self.W + k
        c = -((-lo) >> s)
        if c == -((-hi) >> s):
            return c
        p = self.prec
        while True:  # an integer may lie in the interval: beta_j is irrational, refine it
            p *= 2
            if p > 1 << 16:
                raise ArithmeticError("cannot place a log-grid cell edge")
            with working_prec(p):
                b = arb(self.C0) * (arb(self.eta) * j).exp() / 2**k
            if dyadic(b, True, 0) - dyadic(b, False, 0) == 1:
                return dyadic(b, True, 0)

    def guess(self, k: int, m: int) -> int:
        """A float guess of the cell j of index m >= 1 of octave k (checked by the caller)."""
        return math.floor((k * math.log(2) + math.log(m) - self.lnC0) / self.feta)

    def edges(self, k: int, m_lo: int, m_hi: int, jmin: int, jmax: int,
              keep: bool = True) -> list[tuple[int, int, int, int]]:
        """[(j, c_j, lo_j, hi_j)] for j = ja..jb, jmin <= ja <= jb <= jmax, such that every index
        in [m_lo, m_hi] (m_lo >= 1) lies in [c_ja, c_jb) unless below c_jmin (then ja = jmin) or
        at or above c_jmax (then jb = jmax).  Cached per (k, m_lo, m_hi, jmin, jmax) when `keep` (a caller
        that reads each octave once passes False: at a small eta the lists of every octave hold millions
        of large integers)."""
        key = (k, m_lo, m_hi, jmin, jmax)
        if key not in self.memo:
            ja = min(max(self.guess(k, m_lo) - 2, jmin), jmax)
            while ja > jmin and self.edge(ja, k) > m_lo:
                ja -= 1
            jb = min(max(self.guess(k, m_hi) + 3, ja), jmax)
            while jb < jmax and self.edge(jb, k) <= m_hi:
                jb += 1
            out, W, elo, ehi = [], self.W, self.elo, self.ehi
            for j in range(ja, jb + 1):  # the recurrence with outward rounding, restarted directly
                if j == ja or j == 0 or (j - ja) % self.CHUNK == 0:
                    lo, hi = self.interval(j)
                out.append((j, self.edge(j, k, lo, hi), lo, hi))
                lo, hi = (lo * elo) >> W, -((-(hi * ehi)) >> W)
            if not keep:
                return out
            self.memo[key] = out
        return self.memo[key]

    def octave(self, k: int, N: int, jmin: int, jmax: int, keep: bool = True) -> list[tuple[int, int, int, int]]:
        """The edges for every index of octave k of ML (1 <= m < 2N at k = 0, N <= m < 2N)."""
        return self.edges(k, 1 if k == 0 else N, 2 * N - 1, jmin, jmax, keep)


def cell_sums(cs: list[int], base: int, edges: list, zeroth: int, moment: bool = True):
    """For masses cs at the indices base + i and cell edges [(j, c_j, ...)]: the mass below the
    first edge, [(t, sum s_m, sum m s_m)] for each non-empty cell [c_j, c_{j+1}) of edges[t], the
    mass from the last edge on (`zeroth` = the mass at the value 0, if any; moment=False: sum m s_m
    not needed)."""
    L = len(cs)
    p0 = list(accumulate(cs, initial=0))  # prefix sums of s_i and of i s_i
    p1 = list(accumulate(map(int.__mul__, range(L), cs), initial=0)) if moment else None
    cut = [min(max(e[1] - base, 0), L) for e in edges]
    cells = []
    for t in range(len(edges) - 1):
        i0, i1 = cut[t], cut[t + 1]
        if i1 > i0 and p0[i1] != p0[i0]:
            m = p0[i1] - p0[i0]
            cells.append((t, m, p1[i1] - p1[i0] + base * m if moment else 0))
    return zeroth + p0[cut[0]], cells, p0[L] - p0[cut[-1]]
