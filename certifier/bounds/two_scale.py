"""Two-scale partial sums for step (ii) of method v1 (docs/method-v2.md §9, optional "tail_factor").

A partial sum's law is kept as two fixed-point polynomials: the body on the lattice g h and the tail
on the lattice R g h (R = tail_factor). After each sum the body's values at or above the recorded
split (units of h) are two-point rounded onto R g h and join the tail; a sum with one summand in the
tail first rounds the other summand's body onto R g h. Each rounding is the mean-preserving two-point
rounding of one partial sum (a sum over a block of independent steps), given the other summand, so
Lemma C.5 holds as for every other re-rounding of step (ii): O can only go down.

With floor=True (the lower method's step (b), docs/two-sided.md §1) every rounding is the floor onto
R g h instead: a fixed map of the partial sums (which part a value is in is itself a function of the
values), so data processing keeps the lower bound valid.
"""
from __future__ import annotations

from dataclasses import dataclass

from flint import fmpz_poly

from certifier.bounds.fixedpoint import Ledger, Poly, coarsen_floor, coarsen_two_point, product, strip, truncate_index
from certifier.bounds.lattice import edge_count

TAIL_FACTOR = 32        # R: the tail lattice is R times coarser than the body's
MIN_STEPS = 16          # below this the body is the whole law anyway


@dataclass
class TwoScale:
    """A partial sum: body (lattice g h) and tail (lattice R g h), both Polys of lower bounds (units 2^-F)."""
    body: Poly
    tail: Poly

    def mass(self) -> int:
        return self.body.mass() + self.tail.mass()


def empty() -> Poly:
    return Poly(0, fmpz_poly([]))


def _nonempty(p: Poly | None) -> bool:
    return p is not None and p.poly.length() > 0


def add(a: Poly, b: Poly) -> Poly:
    """Coefficientwise sum of two Polys on one lattice (exact)."""
    if not _nonempty(a):
        return b
    if not _nonempty(b):
        return a
    off = min(a.off, b.off)
    pa = a.poly.left_shift(a.off - off) if a.off > off else a.poly
    pb = b.poly.left_shift(b.off - off) if b.off > off else b.poly
    return Poly(off, pa + pb)


def top_index_for(p: Poly, budget: int) -> int:
    """The smallest index J such that the coefficients at indices >= J sum to <= budget."""
    return p.off + p.poly.length() - edge_count(p.poly, budget, True)[0]


def _onto(p: Poly, r: int, led: Ledger, floor: bool) -> Poly:
    """p onto a lattice r times coarser: the two-point rounding (recorded in led) or the floor (exact)."""
    return coarsen_floor(p, r) if floor else coarsen_two_point(p, r, led)


def split(X: TwoScale, g: int, R: int, split_units: int | None, tau_units: int, led: Ledger,
          floor: bool = False) -> tuple[TwoScale, int]:
    """Move the body's values >= split (units of h; J = ceil(split/g) on the body's lattice) to the tail,
    two-point rounded onto R g h. split_units None: chosen as the least multiple of R g whose body mass
    at or above it is <= tau_units. A split of 0 moves nothing. Returns (the new partial sum, the split used)."""
    b = X.body
    if split_units is None:
        if not _nonempty(b):
            return X, 0
        J = top_index_for(b, tau_units)
        J = -(-J // R) * R                               # on the tail lattice: fewer values move
        split_units = J * g
    if split_units == 0:                                 # 0: no split, nothing moves
        return X, 0
    J = -(-split_units // g)
    n_low = max(0, min(J - b.off, b.poly.length()))
    if n_low >= b.poly.length():
        return X, split_units
    low = Poly(b.off, b.poly.truncate(n_low))
    high = strip(Poly(b.off + n_low, b.poly.right_shift(n_low)))
    moved = _onto(high, R, led, floor)                   # Lemma C.5 (or a fixed map: floor)
    return TwoScale(strip(low) if low.poly.length() else empty(), add(X.tail, moved)), split_units


def _coarse_body(b: Poly, R: int, other_mass: int, led: Ledger, floor: bool = False) -> Poly:
    """The body two-point rounded (floor: floored) onto R g h, for the paths whose other summand is in the
    tail; the fixed-point floors lose (mass lost) x (the tail's mass), recorded in units 2^-2F."""
    if floor:
        return coarsen_floor(b, R)
    tmp = Ledger(led.F)
    c = coarsen_two_point(b, R, tmp)
    led.fixed_point += (tmp.fixed_point >> led.F) * other_mass
    return c


def plus(X: TwoScale, Y: TwoScale, R: int, limit: int, led: Ledger, floor: bool = False) -> TwoScale:
    """The law of X + Y (independent; Y is X: two independent copies), indices of the body above
    `limit` (tail: above limit // R) deleted as truncation. Body + body stays on g h; a sum with a
    tail summand is formed on R g h after rounding the body summand there."""
    same = X is Y
    body = product(X.body, X.body if same else Y.body, limit, led) if _nonempty(X.body) and _nonempty(Y.body) \
        else empty()
    lim_c = limit // R
    tail = empty()
    if same:
        if _nonempty(X.tail):
            if _nonempty(X.body):
                xb = _coarse_body(X.body, R, 2 * X.tail.mass(), led, floor)
                tail = add(tail, product(xb, Poly(X.tail.off, 2 * X.tail.poly), lim_c, led))
            tail = add(tail, product(X.tail, X.tail, lim_c, led))
    else:
        if _nonempty(Y.tail) and _nonempty(X.body):
            tail = add(tail, product(_coarse_body(X.body, R, Y.tail.mass(), led, floor), Y.tail, lim_c, led))
        if _nonempty(X.tail) and _nonempty(Y.body):
            tail = add(tail, product(X.tail, _coarse_body(Y.body, R, X.tail.mass(), led, floor), lim_c, led))
        if _nonempty(X.tail) and _nonempty(Y.tail):
            tail = add(tail, product(X.tail, Y.tail, lim_c, led))
    return TwoScale(strip(body), strip(tail))


def trim_ends(X: TwoScale, trim_units: int, led: Ledger) -> TwoScale:
    """Delete at most trim/2 at the lowest values (the body's low end) and at the highest (the tail's
    top, or the body's when the tail is empty); recorded in led.trim."""
    if trim_units <= 0:
        return X
    budget = trim_units // 2
    body, tail = X.body, X.tail
    if _nonempty(body):
        body = _cut_end(body, budget, False, led)
    if _nonempty(tail):
        tail = _cut_end(tail, budget, True, led)
    elif _nonempty(body):
        body = _cut_end(body, budget, True, led)
    return TwoScale(body, tail)


def _cut_end(p: Poly, budget: int, top: bool, led: Ledger) -> Poly:
    n = p.poly.length()
    lo, mass = edge_count(p.poly, budget, top)
    if lo == 0:
        return p
    led.trim += mass
    q = p.poly.truncate(n - lo) if top else p.poly.right_shift(lo)
    return strip(Poly(p.off if top else p.off + lo, q))


def coarsen(X: TwoScale, r: int, limit: int, R: int, led: Ledger, floor: bool = False) -> TwoScale:
    """Both parts onto a lattice r times coarser (Lemma C.5, or the floor), then indices above the
    truncation deleted."""
    if r == 1:
        return X
    body = truncate_index(_onto(X.body, r, led, floor), limit, led) if _nonempty(X.body) else X.body
    tail = truncate_index(_onto(X.tail, r, led, floor), limit // R, led) if _nonempty(X.tail) else X.tail
    return TwoScale(body, tail)


def merged(X: TwoScale, R: int) -> Poly:
    """One Poly on the body's lattice: tail index j is body index R j (exact, no mass moves)."""
    if not _nonempty(X.tail):
        return X.body
    t = Poly(X.tail.off * R, X.tail.poly.inflate(R))
    return add(X.body, t)
