"""The multiscale lattice of method v2: exact fixed-point distributions on a floating-point grid.

A heavy-tailed epoch sum (small sigma: Y = exp(tX - t^2/2) is lognormal) spans many orders of
magnitude, which no uniform lattice covers. The multiscale lattice ML(h, n), N = 2^n, has

    octave 0:       points j h,         0 <= j < 2N     covering [0, 2Nh)
    octave k >= 1:  points 2^k h m,     N <= m < 2N     covering [2^k N h, 2^{k+1} N h)

so above N h every point has relative spacing between 1/(2N) and 1/N. An `LatticeDist` maps the
octave k to a `Poly` on the lattice 2^k h (coefficient at index m: the mass at 2^k h m, a lower
bound in units of 2^-F).

The sum of two independent variables, `oplus`, is defined pairwise by octave (docs/method-v2.md):
for X in octave i and Y in octave j <= i, Y is first rounded onto the lattice 2^i h of X's octave
(successively halving, octave by octave), the exact sum X + Y' then lies on 2^i h in octaves i and
i + 1, and its part in octave i + 1 is rounded onto 2^{i+1} h. In mode "round" (upper bound) every
rounding is the two-point mean-preserving rounding of Lemma C.5; in mode "floor" (lower bound)
every rounding is the floor, a fixed map (data processing). Values above the top octave are moved
down to its largest point (a move-down in "round" mode, a fixed clamp in "floor" mode).

A level of step (ii) may use a coarser lattice ML(2^d h, n - d) (docs/method-v2.md §10): the same
octaves, 2^d times the spacing, so its points are points of ML(h, n). `refine` reads a distribution
on it as one on the finer lattice (index m -> m 2^d: the same values, exact); `onto_coarser` is the
inverse for a distribution that lies on the coarser points already (step (i)'s grid at level 0).
"""
from __future__ import annotations

from dataclasses import dataclass

from flint import fmpz_poly

from certifier.bounds.fixedpoint import Ledger, Poly, coarsen_floor, coarsen_two_point, strip
from certifier.errors import ParameterError

ROUND, FLOOR = "round", "floor"


@dataclass(frozen=True)
class Lattice:
    """ML(h, n) with octaves 0..top (values above octave `top` are moved to its largest point)."""
    n: int
    top: int

    @property
    def N(self) -> int:
        return 1 << self.n

    def lowest(self, k: int) -> int:
        """The smallest index m of octave k."""
        return 0 if k == 0 else self.N

    def top_index(self) -> int:
        """Index (on lattice 2^top h) of the largest point of the top octave."""
        return 2 * self.N - 1


LatticeDist = dict  # octave -> Poly (lattice 2^octave h)


def packed(items) -> LatticeDist:
    """The LatticeDist of ((octave k, index j), count) items, each octave's in a run of increasing j (as a step-(i)
    grid lists them); an octave is made a Poly as soon as its run ends, octaves without mass are left out."""
    out: LatticeDist = {}
    k_now, lo, coeffs = None, 0, []

    def close():
        if k_now is not None:
            p = strip(Poly(lo, fmpz_poly(coeffs)))
            if p.poly.length():
                out[k_now] = p
    for (k, j), c in items:
        if k != k_now:
            close()
            k_now, lo, coeffs = k, j, []
        coeffs.extend([0] * (j - lo - len(coeffs)))     # the lattice points between grid points
        coeffs.append(c)
    close()
    return out


def lattice_mass(X: LatticeDist) -> int:
    """Exact total mass (units 2^-F)."""
    return sum(p.mass() for p in X.values())


def refine(X: LatticeDist, d: int) -> LatticeDist:
    """X on ML(2^d g, n - d) read on ML(g, n): index m -> m 2^d in every octave (the same values; exact)."""
    if d == 0:
        return X
    f = 1 << d
    return {k: Poly(p.off * f, p.poly.inflate(f)) for k, p in X.items()}


def onto_coarser(X: LatticeDist, d: int) -> LatticeDist:
    """X on ML(g, n) read on ML(2^d g, n - d) (index m -> m / 2^d, exact); every occupied index must be a
    multiple of 2^d (a ParameterError otherwise: that would be a rounding, not a reading)."""
    if d == 0:
        return X
    f, out = 1 << d, {}
    for k, p in X.items():
        long = p.poly.length() > 1
        if p.off % f or (long and p.poly.deflation()[1] % f):
            raise ParameterError(f"octave {k} has points off the lattice 2^{d} times coarser")
        out[k] = Poly(p.off // f, p.poly.deflate(f) if long else p.poly)
    return out


def add(a: Poly | None, b: Poly | None) -> Poly | None:
    """Coefficientwise sum of two Polys on the same lattice (exact)."""
    if a is None or a.poly.length() == 0:
        return b
    if b is None or b.poly.length() == 0:
        return a
    off = min(a.off, b.off)
    pa = a.poly.left_shift(a.off - off) if a.off > off else a.poly
    pb = b.poly.left_shift(b.off - off) if b.off > off else b.poly
    return Poly(off, pa + pb)


def _halve(p: Poly | None, mode: str, led: Ledger) -> Poly | None:
    """Values 2^k h m onto the lattice 2^{k+1} h: two-point (ROUND) or floor (FLOOR)."""
    if p is None or p.poly.length() == 0:
        return None
    return coarsen_two_point(p, 2, led) if mode == ROUND else coarsen_floor(p, 2)


def _split(z: Poly, at: int) -> tuple[Poly | None, Poly | None]:
    """(indices < at, indices >= at) of z."""
    n_low = max(0, min(at - z.off, z.poly.length()))
    low = Poly(z.off, z.poly.truncate(n_low)) if n_low else None
    if n_low >= z.poly.length():
        return low, None
    high = strip(Poly(z.off + n_low, z.poly.right_shift(n_low)))
    return (strip(low) if low else None), high


def _floor_shift(terms: list[tuple[Poly, Poly]], led: Ledger) -> Poly | None:
    """Sum of the exact products a*b of the pairs (units 2^-2F), floored back to units 2^-F."""
    terms = [(a, b) for a, b in terms if a is not None and b is not None and a.poly.length() and b.poly.length()]
    if not terms:
        return None
    off = min(a.off + b.off for a, b in terms)
    acc = fmpz_poly([])
    exact = 0
    for a, b in terms:
        prod = a.poly * b.poly if a.poly is not b.poly else a.poly * a.poly
        o = a.off + b.off
        acc += prod.left_shift(o - off) if o > off else prod
        exact += a.mass() * b.mass()                      # sum of a product's coefficients
    q = acc // (1 << led.F)
    led.fixed_point += exact - (int(q(1)) << led.F if q.length() else 0)
    led.products += 1
    led.max_length = max(led.max_length, q.length())
    return strip(Poly(off, q))


def _clamp_top(out: LatticeDist, lat: Lattice, k: int, z: Poly | None, led: Ledger) -> None:
    """Add z (octave k, k > top) to the largest point of the top octave (a move-down)."""
    if z is None or z.poly.length() == 0:
        return
    m = z.mass()
    led.moved_top += m
    out[lat.top] = add(out.get(lat.top), Poly(lat.top_index(), fmpz_poly([m])))


def oplus(X: LatticeDist, Y: LatticeDist, lat: Lattice, led: Ledger, mode: str, square: bool = False) -> LatticeDist:
    """The distribution of X (+) Y for independent X, Y (see the module docstring), floored to 2^-F.

    square=True computes X (+) X for two independent copies of X (Y is ignored).
    """
    if square:
        Y = X
    keys = set(X) | set(Y)
    if not keys:
        return {}
    out: LatticeDist = {}
    xh = yh = None                      # X_{<k}, Y_{<k} rounded onto the lattice 2^k h
    N2 = 2 * lat.N
    for k in range(min(keys), max(keys) + 1):
        x, y = X.get(k), Y.get(k)
        if square:      # Z_k = x (x + 2 xh): both copies in octave k, or one below it
            twice = Poly(xh.off, 2 * xh.poly) if xh is not None else None
            terms = [(x, add(x, twice))] if x is not None else []
        else:           # Z_k = x (y + yh) + xh y
            terms = [(x, add(y, yh)), (xh, y)]
        z = _floor_shift(terms, led)
        if z is not None:
            low, high = _split(z, N2)
            if low is not None:
                out[k] = add(out.get(k), low)
            up = _halve(high, mode, led)
            if up is not None:
                if k + 1 > lat.top:
                    _clamp_top(out, lat, k + 1, up, led)
                else:
                    out[k + 1] = add(out.get(k + 1), up)
        xh = _halve(add(xh, x), mode, led)
        if not square:
            yh = _halve(add(yh, y), mode, led)
    return {k: strip(p) for k, p in out.items() if p is not None and p.poly.length()}


def edge_count(p: fmpz_poly, budget: int, top: bool) -> tuple[int, int]:
    """Largest k such that the k lowest (top=False) or highest coefficients sum to <= budget."""
    n = p.length()
    part = (lambda k: int(p.right_shift(n - k)(1)) if k else 0) if top else \
        (lambda k: int(p.truncate(k)(1)) if k else 0)
    lo, hi = 0, 1
    while hi <= n and part(hi) <= budget:
        lo, hi = hi, 2 * hi
    hi = min(hi, n + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if part(mid) <= budget else (lo, mid)
    return lo, part(lo)


def trim_lattice(X: LatticeDist, units: int, led: Ledger, ends: tuple = (False,)) -> LatticeDist:
    """Delete coefficients of mass <= units/2 per end at the lowest (and with ends=(False, True) also the
    highest) values (recorded). By default only the low end: the top carries the Q-mass."""
    if units <= 0 or not X:
        return X
    X = dict(X)
    for top in ends:
        budget = units // 2
        for k in sorted(X, reverse=top):
            p = X[k]
            m = p.mass()
            if m <= budget:
                budget -= m
                led.trim += m
                del X[k]
                continue
            cut, removed = edge_count(p.poly, budget, top)
            if cut:
                led.trim += removed
                q = p.poly.truncate(p.poly.length() - cut) if top else p.poly.right_shift(cut)
                X[k] = strip(Poly(p.off if top else p.off + cut, q))
            break
    return X


def trim_octaves(X: LatticeDist, budget: int, led: Ledger) -> LatticeDist:
    """Delete the lowest octaves while their total mass is <= budget (recorded): the replay's own rule
    (verifier/replay/lattice.py Lattice.trim), whole octaves only."""
    spent, out = 0, dict(X)
    for k in sorted(X):
        m = X[k].mass()
        if spent + m > budget:
            break
        spent += m
        del out[k]
    led.trim += spent
    return out


def clamp_octaves(X: LatticeDist, lat: Lattice, led: Ledger) -> LatticeDist:
    """Move the mass of octaves above lat.top to the largest point of the top octave."""
    out = {k: p for k, p in X.items() if k <= lat.top}
    for k in sorted(k for k in X if k > lat.top):
        _clamp_top(out, lat, k, X[k], led)
    return out
