"""Exact fixed-point probability polynomials, shared by the upper (Lemma C.5) and lower bounds.

A `Poly` holds masses as integers: coefficient j of `poly` is n_j, standing for
the mass n_j 2^-F at index off + j. Products are exact integer products
(`fmpz_poly`, `mul_low` when truncated) shifted right by F with a floor, so a
polynomial of lower bounds stays a polynomial of lower bounds; every mass lost
to a floor, a truncation or a trim is recorded exactly in a `Ledger`.
Balls (`arb`) enter only through `floor_fixed` and leave through `arb_str` /
`round_up_sig`, and each function says what its integer or ball contains.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, ctx, fmpq, fmpz_poly

from certifier.errors import NumericsUnreliableError
from certifier.params import decimal_str
from certifier.powering import binary_power


@contextlib.contextmanager
def working_prec(bits: int):
    """Run a block at `bits` of arb working precision, restoring the previous precision after."""
    old = ctx.prec
    ctx.prec = bits
    try:
        yield
    finally:
        ctx.prec = old


def floor_fixed(x: arb, bits: int) -> int:
    """floor(2^bits * lower end of x), clamped at 0: an integer n with n 2^-bits <= every point of x (if x >= 0)."""
    lo = x.lower()
    if not lo.is_finite():
        raise NumericsUnreliableError("non-finite ball in step (i); raise prec")
    man, exp = lo.man_exp()
    man, e = int(man), int(exp) + bits
    n = man << e if e >= 0 else man >> (-e)  # >> floors for negative numbers too
    return max(n, 0)


def arb_exact(q) -> arb:
    """An exact ball for an integer or a dyadic/decimal rational (enough precision assumed)."""
    return arb(q) if not isinstance(q, fmpq) else arb(q.p) / arb(q.q)


def round_up_sig(x: arb, digits: int = 10) -> str:
    """The upper end of x rounded UP to `digits` significant decimal digits (exact, via integers)."""
    man, exp = x.upper().man_exp()
    v = Fraction(int(man)) * (Fraction(2) ** int(exp))
    if v <= 0:
        return "0"
    e10 = len(str(v.numerator // v.denominator)) - 1 if v >= 1 else -len(str(v.denominator // v.numerator))
    while Fraction(10) ** e10 > v:
        e10 -= 1
    while Fraction(10) ** (e10 + 1) <= v:
        e10 += 1
    scale = Fraction(10) ** (digits - 1 - e10)  # v*scale in [10^(d-1), 10^d)
    n = -((-v * scale.numerator) // scale.denominator)  # ceil(v*scale)
    r = Fraction(n) / scale
    return decimal_str(fmpq(r.numerator, r.denominator))


TINY = arb(2) ** -3000      # balls inside [-TINY, TINY] are written as [+/- TINY]: readers refuse huge exponents


def arb_str(x: arb) -> str:
    """A '[mid +/- rad]' string whose ball contains x (FLINT's printing guarantees it); a ball of
    magnitude below 2^-3000 (e.g. a lognormal tail mass of 1e-462661) is widened to [+/- 2^-3000]."""
    if x.is_finite() and not x.is_zero() and bool(abs(x).upper() < TINY):
        return arb(0, TINY).str(20, radius=True)
    return x.str(20, radius=True)


def exact_str(n: int, F: int) -> str:
    """An arb string of the exact value n 2^-F (a ball of radius 0 up to printing, containing it)."""
    with working_prec(max(128, n.bit_length() + 8)):
        return (arb(n) / arb(2) ** F).str(20, radius=True)


@dataclass
class Poly:
    """Fixed-point masses: coefficient j of `poly` is n_j, the mass n_j 2^-F at index off + j."""
    off: int
    poly: fmpz_poly

    def mass(self) -> int:
        """Exact integer sum of the coefficients (units 2^-F)."""
        return int(self.poly(1)) if self.poly.length() else 0


@dataclass
class Ledger:
    """Exact integer (units 2^-F or 2^-2F as noted) and ball records of every deleted mass."""
    F: int
    truncation: int = 0          # units 2^-2F
    trim: int = 0                # units 2^-F
    fixed_point: int = 0         # units 2^-2F (floors after products, re-rounding, step iii)
    log_grid: int = 0            # units 2^-F
    moved_top: int = 0           # units 2^-F: mass moved down to a top point (method v2)
    products: int = 0
    max_length: int = 0

    def ball(self, name: str) -> arb:
        """A ball containing the recorded deleted mass `name` (exact integer over 2^F or 2^2F)."""
        v = getattr(self, name)
        bits = 2 * self.F if name in ("truncation", "fixed_point") else self.F
        return arb(v) / arb(2) ** bits


def product(a: Poly, b: Poly, limit: int | None, led: Ledger) -> Poly:
    """Exact product of two fixed-point polys, floor-shifted by F; indices > limit deleted.

    The result's coefficients are lower bounds (units 2^-F) on the masses of the
    sum of the two independent variables; deleted and floored masses go to `led`.
    """
    F = led.F
    off = a.off + b.off
    full_mass = a.mass() * b.mass()                      # units 2^-2F, exact
    if limit is not None and limit - off + 1 < a.poly.length() + b.poly.length() - 1:
        n = max(limit - off + 1, 0)
        p = a.poly.mul_low(b.poly, n) if n > 0 else fmpz_poly([])
    else:
        p = a.poly * b.poly if a.poly is not b.poly else a.poly * a.poly
    low_mass = int(p(1)) if p.length() else 0
    led.truncation += full_mass - low_mass               # partial sums above the truncation
    q = p // (1 << F) if p.length() else p               # floor: still a lower bound
    led.fixed_point += low_mass - (int(q(1)) << F if q.length() else 0)
    led.products += 1
    led.max_length = max(led.max_length, q.length())
    return Poly(off, q)


def trim(p: Poly, trim_units: int, led: Ledger) -> Poly:
    """Delete coefficients at both ends with combined mass <= trim (half per end); record it."""
    n = p.poly.length()
    if n == 0 or trim_units <= 0:
        return strip(p)
    budget = trim_units // 2
    # low end: look at growing prefixes until the budget is exceeded
    lo_cut, removed_lo = 0, 0
    k = 64
    while True:
        k = min(k, n)
        cs = [int(x) for x in p.poly.truncate(k).coeffs()]
        acc = 0
        j = 0
        while j < len(cs) and acc + cs[j] <= budget:
            acc += cs[j]
            j += 1
        if j < len(cs) or k == n:
            lo_cut, removed_lo = j, acc
            break
        k *= 8
    q = p.poly.right_shift(lo_cut) if lo_cut else p.poly
    n2 = q.length()
    hi_cut, removed_hi = 0, 0
    k = 64
    while n2 > 0:
        k = min(k, n2)
        cs = [int(x) for x in q.right_shift(n2 - k).coeffs()]
        cs = cs + [0] * (k - len(cs))
        acc = 0
        j = 0
        while j < k and acc + cs[k - 1 - j] <= budget:
            acc += cs[k - 1 - j]
            j += 1
        if j < k or k == n2:
            hi_cut, removed_hi = j, acc
            break
        k *= 8
    if hi_cut:
        q = q.truncate(n2 - hi_cut)
    led.trim += removed_lo + removed_hi
    return strip(Poly(p.off + lo_cut, q))


def strip(p: Poly) -> Poly:
    """Drop exact-zero low coefficients (no mass change)."""
    n = p.poly.length()
    if n == 0:
        return p
    k = 0
    while k < n and p.poly[k] == 0:
        k += 1
    return Poly(p.off + k, p.poly.right_shift(k)) if k else p


def truncate_index(p: Poly, limit: int, led: Ledger) -> Poly:
    """Delete coefficients at indices > limit (partial sums above the truncation)."""
    n = limit - p.off + 1
    if n >= p.poly.length():
        return p
    keep = p.poly.truncate(max(n, 0)) if n > 0 else fmpz_poly([])
    led.truncation += (p.mass() - (int(keep(1)) if keep.length() else 0)) << led.F
    return Poly(p.off, keep)


def dense(p: Poly, off: int, n: int) -> list[int]:
    """Coefficients of p at indices off .. off + n - 1 as Python ints (zeros outside)."""
    out = [0] * n
    base = p.off - off
    for j, v in enumerate(p.poly.coeffs()):
        out[base + j] = int(v)
    return out


def power(base: Poly, n: int, trim_units: int, led: Ledger, progress=None) -> Poly:
    """base^n by binary powering: each product floored and trimmed, so the result's
    coefficients are lower bounds (units 2^-F) on the masses of a sum of n copies."""
    return binary_power(base, n, lambda a, b: trim(product(a, b, None, led), trim_units, led), progress)


def coarsen_two_point(p: Poly, r: int, led: Ledger) -> Poly:
    """Two-point (mean-preserving) re-rounding of every value onto a lattice r times coarser.

    Index i -> floor(i/r) with weight (r - i mod r)/r and floor(i/r) + 1 with weight (i mod r)/r:
    the tent kernel K, then every r-th coefficient, then floor(/r). The result's coefficients are
    lower bounds (units 2^-F); the floors' loss is recorded in led.fixed_point (units 2^-2F).
    """
    if r == 1 or p.poly.length() == 0:
        return p
    shift = p.off % r
    base = p.off - shift
    c = p.poly.left_shift(shift) if shift else p.poly
    kernel = fmpz_poly([r - abs(e - (r - 1)) for e in range(2 * r - 1)])
    conv = (c * kernel).right_shift(r - 1)
    d = conv.deflate(r) if conv.length() > 1 else conv
    q = d // r
    before = p.mass()
    after = int(q(1)) if q.length() else 0
    led.fixed_point += (before - after) << led.F
    return strip(Poly(base // r, q))


def coarsen_floor(p: Poly, r: int) -> Poly:
    """The image of the map i -> floor(i / r): groups of r coefficients are added (exact, no loss)."""
    if r == 1 or p.poly.length() == 0:
        return p
    shift = p.off % r
    base = p.off - shift
    c = p.poly.left_shift(shift) if shift else p.poly
    conv = (c * fmpz_poly([1] * r)).right_shift(r - 1)
    d = conv.deflate(r) if conv.length() > 1 else conv
    return strip(Poly(base // r, d))


def round_down_sig(q: fmpq, digits: int = 10) -> str:
    """q rounded DOWN to `digits` significant decimal digits (exact integer arithmetic)."""
    if q <= 0:
        return decimal_str(-((-q * 10**12).ceil()) / fmpq(10**12)) if q < 0 else "0"
    p, d = int(q.p), int(q.q)
    e10 = len(str(p // d)) - 1 if p >= d else -len(str(d // p))
    while fmpq(10) ** e10 > q:
        e10 -= 1
    while fmpq(10) ** (e10 + 1) <= q:
        e10 += 1
    k = digits - 1 - e10
    scale = fmpq(10) ** k if k >= 0 else fmpq(1) / fmpq(10) ** (-k)
    n = (q * scale).floor()
    return decimal_str(fmpq(int(n)) / scale)
