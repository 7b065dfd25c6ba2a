"""The exact arithmetic every replay shares: dyadic bounds of balls, masses in units of 2^-F,
exact fixed-point polynomial products that record what they delete, and binary powering."""
from __future__ import annotations

import ctypes
import glob
import os
from dataclasses import dataclass, field

import flint
from flint import arb, fmpq, fmpz, fmpz_poly

EXTRA_BITS = 4  # our scale is 2^-(fixed_point_bits + 4): finer than the certifier's


def dyadic(x: arb, up: bool, w: int) -> int:
    """floor(2^w * lower(x)) or ceil(2^w * upper(x)) as a Python int (exact)."""
    man, exp = (x.upper() if up else x.lower()).mid().man_exp()
    man, exp = int(man), int(exp) + w
    if exp >= 0:
        return man << exp
    return -((-man) >> -exp) if up else man >> -exp


def _libs() -> list:
    """FLINT (python-flint's bundled library, else the system's) and the C library, by ctypes; [] where absent."""

    here = os.path.dirname(os.path.dirname(flint.__file__))
    found = []
    for pattern, fn in ((os.path.join(here, "python_flint.libs", "libflint*.so*"), "flint_cleanup"),
                        (None, "malloc_trim")):
        try:
            paths = glob.glob(pattern) if pattern else [None]
            lib = ctypes.CDLL(paths[0]) if paths else None
            found.append(getattr(lib, fn)) if lib is not None else None
        except (OSError, AttributeError):
            pass
    return found


_RELEASE: list | None = None


def release() -> None:
    """Give the memory of dropped intermediates back to the system: FLINT keeps freed integers in a cache of
    its own (flint_cleanup empties it; live integers are untouched) and the heap keeps free pages scattered
    between live blocks (glibc's malloc_trim returns them). Called between steps once a step's large
    intermediates are dropped, so the next step's products reuse memory instead of mapping more; does
    nothing where either library is absent."""
    global _RELEASE
    if _RELEASE is None:
        _RELEASE = _libs()
    for fn in _RELEASE:
        fn(0) if fn.__name__ == "malloc_trim" else fn()


def binary_power(X, e: int, mul):
    """X^e (e >= 1) by binary powering along the bits of e, least significant first, with the
    product `mul` (which may round, trim and record what it deletes)."""
    out = None
    while e:
        if e & 1:
            out = X if out is None else mul(out, X)
        e >>= 1
        if e:
            X = mul(X, X)
    return out


def units(x: arb, w: int) -> int:
    """A mass rounded down to units of 2^-w, never negative, never rounded up."""
    return max(dyadic(x, False, w), 0) if x.is_finite() else 0


@dataclass
class Losses:  # absolute masses, as exact rationals
    truncation: fmpq = field(default_factory=fmpq)
    trim: fmpq = field(default_factory=fmpq)
    log_grid: fmpq = field(default_factory=fmpq)
    fixed_point: fmpq = field(default_factory=fmpq)


class FixedPoly:
    """Products of distributions (off, p): mass p[i] * 2^-F at lattice index off + i."""

    def __init__(self, F: int, trim: fmpq, losses: Losses):
        self.F, self.one, self.L = F, fmpz(2) ** F, losses
        # own trimming rule: at most trim/2 from each end, so at most `trim` per product
        self.budget = int((trim * self.one / 2).floor())

    @staticmethod
    def _edge(p, budget: int, top: bool) -> tuple[int, int]:
        """Largest k such that the k lowest (or highest) coefficients sum to <= budget,
        by exponential then binary search on C-speed partial sums; returns (k, sum)."""
        n = p.length()
        part = (lambda k: int(p.right_shift(n - k)(1))) if top else (lambda k: int(p.truncate(k)(1)))
        lo, hi = 0, 1
        while hi <= n and part(hi) <= budget:
            lo, hi = hi, 2 * hi
        hi = min(hi, n + 1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if part(mid) <= budget else (lo, mid)
        return lo, part(lo)

    def trim(self, off, p, zeros_only=False):
        budget = 0 if zeros_only else self.budget
        lo, a = self._edge(p, budget, False)
        p = p.right_shift(lo)
        hi, b = self._edge(p, budget, True)
        self.L.trim += fmpq(a + b, self.one)
        return off + lo, p.truncate(p.length() - hi)

    def cut(self, off, p, K):
        """Delete values with lattice index > K (partial sums above `truncation`)."""
        n = K - off + 1 if K is not None else p.length()
        if n >= p.length():
            return off, p
        q = p.truncate(max(n, 0))
        self.L.truncation += fmpq(int(p(1) - q(1)), self.one)
        return off, q

    def mul(self, X, Y, K=None):
        (ox, px), (oy, py) = X, Y
        off = ox + oy
        n = px.length() + py.length() - 1 if K is None else min(K - off + 1, px.length() + py.length() - 1)
        if n <= 0 or px.is_zero() or py.is_zero():
            self.L.truncation += fmpq(int(px(1) * py(1)), self.one ** 2)
            return off, fmpz_poly()
        q = px.mul_low(py, n)  # exact integers, units 2^-2F; values above K never formed
        kept = q(1)
        self.L.truncation += fmpq(int(px(1) * py(1) - kept), self.one ** 2)
        q = q // self.one  # floor: every mass rounded down
        self.L.fixed_point += fmpq(int(kept - q(1) * self.one), self.one ** 2)
        return self.trim(off, q)

    def power(self, X, e: int):
        """X^e by binary powering (e >= 1)."""
        return binary_power(X, e, self.mul)

    def reround(self, X, q: int):
        """Two-point rounding of values (off+i)*g*h onto multiples of q*g*h: a value u*g*h
        with u = v*q + r sends c*(q-r)/q to v*q*g*h and c*r/q to (v+1)*q*g*h (floored)."""
        off, p = X
        base, cs, out = off // q, p.coeffs(), fmpz_poly()
        for r in range(q):  # one residue class of u = off + i at a time, vectorised
            i0 = (r - off) % q
            part = fmpz_poly(cs[i0::q])
            sh = (off + i0) // q - base
            out += ((part * (q - r)) // q).left_shift(sh)
            if r:
                out += ((part * r) // q).left_shift(sh + 1)
        self.L.fixed_point += fmpq(int(p(1) - out(1)), self.one)
        return self.trim(base, out)


def poly_sum(X, Y, P=None):
    """Coefficient-wise sum of two (offset, polynomial) on one lattice (exact); None is empty.
    P (the callers' fixed-point context) is not used: the sum is exact."""
    if X is None or X[1].is_zero():
        return Y
    if Y is None or Y[1].is_zero():
        return X
    o = min(X[0], Y[0])
    return o, X[1].left_shift(X[0] - o) + Y[1].left_shift(Y[0] - o)
