"""Step (iv) of method v2 and step (d) of the lower method v2 (docs/method-v2.md): products of
distributions on the exponents j of the log grid (Λ = e^{j eta}), by binary powering."""
from __future__ import annotations

import math
from fractions import Fraction

from flint import fmpq, fmpz_poly

from .arith import binary_power, release


def _weighted_at_most(w: float, mass: int, budget: int) -> bool:
    """w * mass <= budget; exactly once the mass is beyond a float (units 2^-F, F up to 1028)."""
    try:
        return w * float(mass) <= budget
    except OverflowError:
        return Fraction(w) * mass <= budget


class Epochs:
    """Products of distributions (off, poly) on exponents j (Λ = e^{j eta}), units 2^-F:
    floored products, exponents above k_top moved down to k_top, and our own trimming of the
    lowest exponents (weighted by w_j = min{1, e^{j eta + shift}}, the rule of §2 (iv); or
    unweighted, shift = None) and, with top > 0, of the highest (the lower method, §4).
    Trimming decisions may use floats: deleting mass is always allowed, the rule only keeps our
    result close to the certifier's."""

    def __init__(self, F: int, eta: fmpq, k_top: int, budget: int, shift: fmpq | None, top: int = 0):
        self.F, self.eta, self.k_top, self.budget, self.top = F, float(eta), k_top, budget, top
        self.shift = None if shift is None else float(shift)
        self.trim, self.fixed_point, self.moved = 0, fmpq(), 0
        # what a rule with the full budget and exact weights may delete beyond ours: at most
        # trim / w_j of raw mass per product, j our lowest kept exponent (for the enclosure slack)
        self.allowance = 0.0

    def clamp(self, off: int, p):
        n = self.k_top - off + 1  # coefficients kept below and at k_top
        if p.length() <= n:
            return off, p
        hi = int(p.right_shift(max(n, 0))(1))
        self.moved += hi
        if n <= 0:
            return self.k_top, fmpz_poly([hi])
        p = p.truncate(n)
        p[n - 1] += hi  # in place: no second copy of the product
        return off, p

    def _weight(self, j: int) -> float:
        if self.shift is None:
            return 1.0
        return math.exp(min(0.0, j * self.eta + self.shift)) * (1 + 1e-9)

    def trim_low(self, off: int, p):
        """Delete the lowest n coefficients, n the largest with w_{off+n-1} * (their mass) <=
        budget (an upper bound on their weighted mass: w is increasing)."""
        L = p.length()
        ok = lambda n: n == 0 or _weighted_at_most(self._weight(off + n - 1), int(p.truncate(n)(1)), self.budget)
        lo, hi = 0, 1
        while hi <= L and ok(hi):
            lo, hi = hi, 2 * hi
        hi = min(hi, L + 1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        if self.shift is not None:
            self.allowance += min(1.0, 2 * self.budget / 2**self.F / self._weight(off + lo))
        if lo:
            self.trim += int(p.truncate(lo)(1))
            off, p = off + lo, p.right_shift(lo)
        return off, self.trim_top(p)

    def trim_top(self, p):
        """Delete the highest coefficients while their mass is <= top (0: nothing)."""
        L, n = p.length(), 0
        ok = lambda n: int(p.right_shift(L - n)(1)) <= self.top
        step = 1
        while n + step <= L and ok(n + step):
            n, step = n + step, 2 * step
        while step > 1:
            step //= 2
            if n + step <= L and ok(n + step):
                n += step
        if n:
            self.trim += int(p.right_shift(L - n)(1))
            p = p.truncate(L - n)
        return p

    def mul(self, X, Y):
        """The floored product, exponents above k_top moved down to k_top, then trimmed. Coefficients
        above k_top are never formed (mul_low): their exact mass, px(1) py(1) minus the kept part's, is
        floored as a whole and added at k_top (a floor of a sum is at least the sum of the floors: less
        is deleted, and the move stays a move down). Each intermediate is released before the next is
        made: the peak is the operands, the kept product and one floored copy."""
        (ox, px), (oy, py) = X, Y
        off, one = ox + oy, 2**self.F
        n = min(self.k_top - off + 1, px.length() + py.length() - 1)  # coefficients kept below and at k_top
        total = int(px(1)) * int(py(1))  # exact, units 2^-2F
        if n <= 0:
            hi = total // one
            self.moved += hi
            self.fixed_point += fmpq(total - hi * one, one * one)
            return self.k_top, self.trim_top(fmpz_poly([hi]))
        q = px.mul_low(py, n)  # exact, units 2^-2F; exponents above k_top never formed
        kept = int(q(1))
        f = q // one  # floor
        del q
        release()  # the exact product's memory back before the next copies (peak memory)
        hi = (total - kept) // one  # the mass above k_top, moved down to it (floored as a whole)
        if hi:
            self.moved += hi
            f[n - 1] += hi
        self.fixed_point += fmpq(total - int(f(1)) * one, one * one)
        return self.trim_low(off, f)

    def power(self, X, e: int):
        """X^e by binary powering along the bits of e, least significant first (as in (ii))."""
        return binary_power(X, e, self.mul)
