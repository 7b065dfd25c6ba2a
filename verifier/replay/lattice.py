"""The multiscale lattice ML(h, n) and its sum ⊕ (docs/method-v2.md §2 (ii), §4 (b)).

A distribution on ML is a list of T + 1 integer polynomials, masses in units 2^-F
(None for an empty octave; T = `top_octave`, N = 2^n):

    octave 0:       coefficient j at the value j h,             0 <= j < 2N  ("real" index j)
    octave k >= 1:  coefficient i at the value 2^k h (N + i),   0 <= i < N   (index m = N + i)

X ⊕ Y octave by octave (§2 (ii), "equivalently"): with x̂_k the part of X below octave k
carried to the lattice 2^k h (x̂_0 = 0, x̂_{k+1} = c(x̂_k + x_k)),

    Z_k = x_k (y_k + ŷ_k) + x̂_k y_k     (for X ⊕ X: x_k (x_k + 2 x̂_k)),

exact products of integer polynomials; Z_k's indices below 2N stay in octave k, the rest are
carried by c onto the lattice 2^{k+1} h (octave k + 1), and what octave T would carry beyond
itself is moved down to its largest point 2^T h (2N - 1).  The carry c is `half` (m even ->
m/2; m odd -> half of the mass to each of (m -/+ 1)/2: the upper method's two-point rounding) or
the floor m -> floor(m/2) (the lower method's fixed map).  Every stored mass is rounded down
(floors after products and halvings): with non-negative masses every result is a
coefficient-wise lower bound of the exact one.

With `level_bits` (§10) level i of step (ii) works on ML(2^(n - n_i) h, n_i): the same octaves with
2^(n - n_i) times the spacing, so a distribution there is read on a finer level's lattice by
index m -> m 2^d in every octave (`refine`; octave k >= 1 in this layout: i = m - N -> i 2^d).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from flint import fmpq, fmpz_poly


@dataclass
class Tally:
    """Masses lost or moved, each measured when it happens (exact rationals; `fixed_point` is
    an upper bound on the mass lost to floors)."""
    trim: fmpq = field(default_factory=fmpq)
    fixed_point: fmpq = field(default_factory=fmpq)
    top_octave: fmpq = field(default_factory=fmpq)


def _add(a, b):
    return b if a is None else a if b is None else a + b


def _low_zeros(p) -> int:
    """The number of zero coefficients below p's lowest non-zero one (p non-zero), by exponential
    and binary search on C-speed truncations."""
    if p[0] != 0:
        return 0
    lo, hi = 1, 2  # truncate(lo) is zero
    while hi < p.length() and p.truncate(hi).is_zero():
        lo, hi = hi, 2 * hi
    hi = min(hi, p.length())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if p.truncate(mid).is_zero() else (lo, mid)
    return lo


def _mul(a, b):
    """a * b exactly, the operands' low zero coefficients shifted out first: FLINT multiplies them
    too, and an octave's support can sit far above its lowest index (a narrow Y at large sigma)."""
    va = _low_zeros(a)
    if a is b:
        q = a.right_shift(va) if va else a
        return (q * q).left_shift(2 * va) if va else q * q
    vb = _low_zeros(b)
    if not va and not vb:
        return a * b
    return (a.right_shift(va) * b.right_shift(vb)).left_shift(va + vb)


class Lattice:
    """ML(h, n) up to octave T, masses in units 2^-F; `two_point` selects `half` or the floor.

    `budget`: our own trimming after each ⊕ -- the lowest octaves are deleted while their total
    mass stays <= budget (units 2^-F). `memo`: how many recent operands keep their carries (each entry
    keeps its operand alive too: the fewest the caller's order of sums reuses)."""

    def __init__(self, n: int, T: int, F: int, two_point: bool, budget: int, tally: Tally, memo: int = 4):
        self.n, self.N, self.T, self.F = n, 1 << n, T, F
        self.two_point, self.budget, self.tally = two_point, budget, tally
        self.d = 2 if two_point else 1  # carries are exact in units 2^-F / d
        self.memo, self.memo_size = [], memo  # (X, upto, hats) of recent operands: B enters two sums per bit

    def carry(self, p):
        """d times the image of p (index m on a lattice g) on the lattice 2g, exactly: `half`
        (d = 2) sends m even to m/2 and half of an odd m's mass to each of (m -/+ 1)/2; the
        floor (d = 1) sends m to floor(m/2)."""
        ev, od = p.deflate(2), p.right_shift(1).deflate(2)
        if self.two_point:
            return 2 * ev + od + od.left_shift(1)
        return ev + od

    def hats(self, X: list, upto: int) -> list:
        for Y, u, H in self.memo:
            if Y is X and u >= upto:
                return H
        H = self._hats(X, upto)
        self.memo = [(X, upto, H)] + self.memo[:self.memo_size - 1]
        return H

    def forget(self, *Xs: list) -> None:
        """Drop the memo's entries of operands the caller no longer uses (each entry keeps its operand alive)."""
        self.memo = [e for e in self.memo if not any(e[0] is X for X in Xs)]

    def _hats(self, X: list, upto: int) -> list:
        """[x̂_0, ..., x̂_upto]: the part of X below octave k on the lattice 2^k h (real indices
        0..N), carried octave by octave; `half` is floored to units 2^-F (each floor loses less
        than half a unit per coefficient, counted as such)."""
        out, h = [None], None
        for k in range(upto):
            s = _add(h, X[k] if k == 0 or X[k] is None else X[k].left_shift(self.N))
            h = None
            if s is not None and not s.is_zero():
                h = self.carry(s)
                if self.two_point:
                    self.tally.fixed_point += fmpq(h.length(), 2 ** (self.F + 1))
                    h = h // 2
            out.append(h)
        return out

    def oplus(self, X: list, Y: list) -> list:
        """X ⊕ Y (X is Y: the sum of two independent copies), then our own low-end trimming.
        (The floor map keeps no fixed-point tally: the lower bound pays for every loss at once.)"""
        N, T, F, d, same = self.N, self.T, self.F, self.d, X is Y
        lx = [k for k, p in enumerate(X) if p is not None]
        ly = lx if same else [k for k, p in enumerate(Y) if p is not None]
        if not lx or not ly:
            return [None] * (T + 1)
        k0, k1 = max(lx[0], ly[0]), min(T, max(lx[-1], ly[-1]) + 1)
        xh = self.hats(X, max(ly[-1], k0))
        yh = xh if same else self.hats(Y, max(lx[-1], k0))
        get = lambda L, k: L[k] if k < len(L) else None
        out, car, scale = [None] * (T + 1), None, d * 2**F
        for k in range(k0, k1 + 1):
            z = self._z(k, X[k], get(xh, k), Y[k], get(yh, k), same)
            tot, car = car, None  # units 2^-2F / d
            if z is not None and not z.is_zero():
                lim = 2 * N if k == 0 else N
                tot = _add(tot, d * z.truncate(lim) if self.two_point else z.truncate(lim))
                hi = z.right_shift(lim)
                if not hi.is_zero():
                    car = self.carry(hi)
            if k == T and car is not None:  # octave T + 1: moved down to 2^T h (2N - 1)
                moved = car(1)
                self.tally.top_octave += fmpq(int(moved), scale * 2**F)
                tot = _add(tot, fmpz_poly([moved]).left_shift(N - 1))
                car = None
            if tot is None or tot.is_zero():
                continue
            out[k] = tot // scale  # floor: units 2^-2F / d -> 2^-F
            if self.two_point:
                self.tally.fixed_point += fmpq(tot.length(), 2**F)  # each floor loses < 1 unit
        return self.trim(out)

    def _z(self, k, xk, xh, yk, yh, same):
        """Z_k exactly (units 2^-2F): octave 0 in real indices, octave k >= 1 relative to N
        (x_k = z^N x_k^o, so Z_k = z^N (x_k^o (z^N y_k^o + ŷ_k) + x̂_k y_k^o))."""
        nz = lambda p: p is not None and not p.is_zero()
        if k == 0:
            return _mul(xk, yk) if nz(xk) and nz(yk) else None
        N = self.N
        if same:
            if not nz(xk):
                return None
            sq = _mul(xk, xk).left_shift(N)
            return sq if not nz(xh) else sq + 2 * _mul(xk, xh)
        z = None
        if nz(xk):
            other = _add(None if yk is None else yk.left_shift(N), yh)
            z = None if not nz(other) else _mul(xk, other)
        if nz(xh) and nz(yk):
            z = _add(z, _mul(xh, yk))
        return z

    def trim(self, D: list) -> list:
        """Delete the lowest octaves while their total mass is <= budget (deleted.trim)."""
        spent = 0
        for k, p in enumerate(D):
            if p is None:
                continue
            m = int(p(1))
            if spent + m > self.budget:
                break
            spent += m
            D[k] = None
        self.tally.trim += fmpq(spent, 2**self.F)
        return D


def refine(D: list, d: int) -> list:
    """D on ML(2^d g, n - d) read on ML(g, n): every index times 2^d (the same values; exact)."""
    return D if d == 0 else [None if p is None else p.inflate(1 << d) for p in D]


def levels(m: dict, M: int) -> list[int]:
    """The mantissa bits of the lattice of each level 0..floor(log2 M) of step (ii) (§10)."""
    return list(m.get("level_bits") or [m["mantissa_bits"]] * M.bit_length())


def grid_points(n: int, ybits: list[int]) -> list[int]:
    """The grid G of §2 (i) in units of h: octave 0 j = i 2^{n-b_0} (0 <= i < 2^{b_0+1}),
    octave k >= 1 2^k (N + i 2^{n-b_k}) (0 <= i < 2^{b_k}), then cap = 2^{K+1} N."""
    N, K = 1 << n, len(ybits) - 1
    pts = [i << (n - ybits[0]) for i in range(1 << (ybits[0] + 1))]
    for k in range(1, K + 1):
        pts += [(N + (i << (n - ybits[k]))) << k for i in range(1 << ybits[k])]
    return pts + [N << (K + 1)]


def place(points, n: int, T: int, *masses: list[int]) -> list:
    """Masses at grid points (units of h) as distributions on ML (this module's layout), one per
    list of masses; `points` is read once per list (one list: any iterable), each point's place made as it is
    read."""
    N = 1 << n
    out = []
    for ms in masses:
        octs, k_now, row = [None] * (T + 1), None, None
        for u, m in zip(points, ms):
            if m:
                k = max(u.bit_length() - n - 1, 0)
                if k != k_now:
                    _close(octs, k_now, row)
                    k_now, row = k, [0] * (2 * N if k == 0 else N)
                row[u if k == 0 else (u >> k) - N] += m
        _close(octs, k_now, row)
        out.append(octs)
    return out


def _close(octs: list, k: int | None, row: list[int] | None) -> None:
    """An octave's masses made a polynomial once its points are read (they come in increasing order)."""
    if row is not None:
        octs[k] = fmpz_poly(row) if octs[k] is None else octs[k] + fmpz_poly(row)


def octave_masses(p, k: int, N: int) -> tuple[list[int], int, int]:
    """(masses as ints, real index of the first, mass at the value 0)."""
    cs = [int(x) for x in p.coeffs()]
    if k == 0:
        return cs[1:], 1, cs[0]
    return cs, N, 0
