"""Method v2 of the upper bound: Lemma C.5 on the multiscale lattice, with moves instead of deletions.

The generalised Lemma C.5 (docs/method-v2.md §1): with the rest of the computation exact, the
expected payoff min{1, Lambda} (and min{Lambda, e^eps}, min{1, e^eps Lambda}) is concave and
non-decreasing in every intermediate variable. So each of these operations can only lower the
payoff's expectation O: a mean-preserving random rounding of a variable (also one chosen
conditionally on other variables), moving a variable down, and deleting mass. Steps:

 (i)   Y -> min(Y, cap), then two-point rounding onto the step-(i) grid (a coarsening of the
       multiscale lattice, `y_mantissa_bits` per octave); cap = 2^{K+1} N h, K = len - 1.
 (ii)  the epoch sum by binary powering along the bits of M with the multiscale sum
       (certifier.bounds.lattice.oplus, mode "round"); values above the top octave moved down.
       With `level_bits` each level of the powering has its own, coarser lattice (§10).
 (iii) L = S/M two-point rounded onto e^{j eta}, k_minus <= j <= k_plus; L > e^{k_plus eta}
       moved down to e^{k_plus eta}; L < e^{k_minus eta} deleted.
 (iv)  b = (sum_j r_j z^j)^E by binary powering; exponents above k_top moved down to k_top.
Optional deletions (trim) remove at most `trim` of mass per sum or product.
The certified bound is the upper end of the ball of 1 - O, O = sum_k b_k min{1, e^{k eta}}.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from flint import arb, fmpq, fmpz_poly

from certifier.bounds.fixedpoint import (
    Ledger,
    Poly,
    arb_str,
    floor_fixed,
    product,
    round_up_sig,
    strip,
    working_prec,
)
from certifier.bounds.lattice import (
    ROUND,
    Lattice,
    LatticeDist,
    lattice_mass,
    onto_coarser,
    oplus,
    packed,
    refine,
    trim_lattice,
)
from certifier.bounds.lognormal import masses_along, tails_along
from certifier.bounds.result import UpperResult, require_positive
from certifier.bounds.upper_v1 import B_FRACTION_BITS, b_enclosures, o_ball
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.params import decimal_str, parse_decimal
from certifier.powering import binary_power

METHOD_NAME = "lemma-c5-rounding"
METHOD_VERSION = 2


@dataclass(frozen=True)
class UpperV2:
    """All parameters of method v2 (the `method` object of a v3 predicate; docs/method-v2.md §2)."""
    h: fmpq
    mantissa_bits: int
    y_mantissa_bits: tuple
    top_octave: int
    eta: fmpq
    k_minus: int
    k_plus: int
    k_top: int
    prec: int = 100
    fixed_point_bits: int = 80
    trim: fmpq = fmpq(1, 10**20)
    trim_shift: fmpq = fmpq(0)       # step (iv) deletions are weighted by min{1, e^{k eta + trim_shift}}
    level_bits: tuple | None = None  # mantissa bits of the lattice of each level of step (ii) (§10); None: all n

    @property
    def lattice(self) -> Lattice:
        return Lattice(self.mantissa_bits, self.top_octave)

    @property
    def cap(self) -> fmpq:
        """cap = 2^{K+1} N h, the first point of the octave above the step-(i) grid."""
        return self.h * (1 << (len(self.y_mantissa_bits) + self.mantissa_bits))

    def validate(self) -> None:
        """Raise ParameterError unless the parameters are ones docs/method-v2.md allows."""
        n, ys = self.mantissa_bits, self.y_mantissa_bits
        if self.h <= 0 or self.eta <= 0:
            raise ParameterError("h and eta must be > 0")
        if not 1 <= n <= 24 or not ys or any(not 0 <= b <= n for b in ys):
            raise ParameterError("need 1 <= mantissa_bits <= 24 and 0 <= y_mantissa_bits[k] <= mantissa_bits")
        if not len(ys) <= self.top_octave <= 200:
            raise ParameterError("need len(y_mantissa_bits) <= top_octave <= 200 (the cap lies on the lattice)")
        if not self.k_minus < 0 <= self.k_top and self.k_minus < self.k_plus:
            raise ParameterError("need k_minus < 0 <= k_top and k_minus < k_plus")
        if not (32 <= self.prec <= 4096 and 32 <= self.fixed_point_bits <= 1024):
            raise ParameterError("prec and fixed_point_bits must lie in [32, 4096] and [32, 1024]")
        if not 0 <= self.trim <= fmpq(1, 1000):
            raise ParameterError("trim must lie in [0, 0.001]")
        if not 0 <= self.trim_shift <= 100:
            raise ParameterError("trim_shift must lie in [0, 100]")
        lb = self.level_bits
        if lb is not None and not (lb and max(ys) <= lb[0] and all(a <= b for a, b in zip(lb, lb[1:]))
                                   and lb[-1] == n):
            raise ParameterError("need max(y_mantissa_bits) <= level_bits[0] <= ... <= level_bits[-1] = "
                                 "mantissa_bits")

    def levels(self, steps: int) -> tuple:
        """(n_0, ..., n_L), L = floor(log2 M): the mantissa bits of each level's lattice (§10)."""
        L = steps.bit_length() - 1
        if self.level_bits is None:
            return (self.mantissa_bits,) * (L + 1)
        if len(self.level_bits) != L + 1:
            raise ParameterError(f"level_bits must have floor(log2 M) + 1 = {L + 1} entries")
        return tuple(self.level_bits)

    def to_json(self) -> dict:
        return {"name": METHOD_NAME, "version": METHOD_VERSION, "h": decimal_str(self.h),
                "mantissa_bits": self.mantissa_bits, "y_mantissa_bits": list(self.y_mantissa_bits),
                "top_octave": self.top_octave, "cap": decimal_str(self.cap), "eta": decimal_str(self.eta),
                "k_minus": self.k_minus, "k_plus": self.k_plus, "k_top": self.k_top, "prec": self.prec,
                "fixed_point_bits": self.fixed_point_bits, "trim": decimal_str(self.trim),
                "trim_shift": decimal_str(self.trim_shift),
                **({} if self.level_bits is None else {"level_bits": list(self.level_bits)})}

    @classmethod
    def from_json(cls, obj: dict) -> "UpperV2":
        if obj.get("name") != METHOD_NAME or obj.get("version") != METHOD_VERSION:
            raise ParameterError("unsupported method (want lemma-c5-rounding v2)")
        p = lambda k: parse_decimal(k, obj[k])
        m = cls(h=p("h"), mantissa_bits=int(obj["mantissa_bits"]),
                y_mantissa_bits=tuple(int(x) for x in obj["y_mantissa_bits"]), top_octave=int(obj["top_octave"]),
                eta=p("eta"), k_minus=int(obj["k_minus"]), k_plus=int(obj["k_plus"]), k_top=int(obj["k_top"]),
                prec=int(obj["prec"]), fixed_point_bits=int(obj["fixed_point_bits"]), trim=p("trim"),
                trim_shift=p("trim_shift"),
                level_bits=tuple(int(x) for x in obj["level_bits"]) if "level_bits" in obj else None)
        m.validate()
        return m


# ----------------------------------------------------------------------------- step (i)

def y_points(m: UpperV2):
    """The step-(i) grid as (octave, index m) pairs in increasing value, ending with the cap, one at a time."""
    N, n = 1 << m.mantissa_bits, m.mantissa_bits
    for k, b in enumerate(m.y_mantissa_bits):
        yield from ((k, j) for j in range(0 if k == 0 else N, 2 * N, 1 << (n - b)))
    yield len(m.y_mantissa_bits), N              # the cap


def y_grid(m: UpperV2) -> list[tuple[int, int]]:
    """The step-(i) grid as (octave, index m) pairs in increasing value, ending with the cap."""
    return list(y_points(m))


def grid_size(m: UpperV2) -> int:
    """The number of step-(i) grid points (octave 0 from 0, the others from N, and the cap)."""
    return sum((2 if k == 0 else 1) << b for k, b in enumerate(m.y_mantissa_bits)) + 1


def step_i(t2: fmpq, m: UpperV2) -> tuple[LatticeDist, arb, arb]:
    """Step (i): the masses of min(Y, cap) two-point rounded onto the step-(i) grid.

    Returns (P, moved_cap, loss): P maps octave -> Poly of lower bounds (units 2^-F); moved_cap is
    a ball containing Pr(Y > cap) (moved down to the cap); loss a ball containing the mass lost to
    the fixed-point floors (1 minus the kept mass). One point at a time: no list of the grid's balls is kept.
    """
    F, last = m.fixed_point_bits, grid_size(m) - 1
    kept, moved_cap = 0, None

    def counts():
        nonlocal kept, moved_cap
        tails = tails_along(t2, (j << k for k, j in y_points(m)), m.h, m.prec)
        for i, ((k, j), (x, e0)) in enumerate(zip(y_points(m), masses_along(tails, m.h))):
            if i == last:
                x += e0                              # Y > cap moved down to the cap
                moved_cap = e0 / 2
            c = floor_fixed(x, F - 1)                # the balls hold doubled masses
            kept += c
            yield (k, j), c
    with working_prec(m.prec):
        P = packed(counts())
        loss = arb(1) - arb(kept) / arb(2) ** F
    return P, moved_cap, loss


# ----------------------------------------------------------------------------- step (ii)

def step_ii(P: LatticeDist, steps: int, m: UpperV2, led: Ledger, progress=None) -> LatticeDist:
    """Step (ii): the epoch sum S of M rounded steps by binary powering with the multiscale sum, each
    level i on its lattice ML(2^(n - n_i) h, n_i) (§10; n_i = n without level_bits)."""
    units, nb = int((m.trim * (1 << led.F)).floor()), m.levels(steps)
    B, A, at = onto_coarser(P, m.mantissa_bits - nb[0]), None, nb[0]     # at: A's level bits
    for i in range(steps.bit_length()):
        lat = Lattice(nb[i], m.top_octave)
        if i:                                   # B_i = B_{i-1} (+) B_{i-1}, formed on level i's lattice
            B = refine(B, nb[i] - nb[i - 1])
            B = trim_lattice(oplus(B, B, lat, led, ROUND, square=True), units, led)
        if (steps >> i) & 1:
            A = B if A is None else trim_lattice(oplus(refine(A, nb[i] - at), B, lat, led, ROUND), units, led)
            at = nb[i]
        if progress:
            progress((i + 1) / steps.bit_length())
    return A


# ----------------------------------------------------------------------------- step (iii)

@dataclass
class LogEdges:
    """Integer enclosures of 2^Q B_j, B_j = (M/h) e^{j eta}, for j in [j0, j1] (step iii cell edges)."""
    j0: int
    lo: list
    hi: list

    @classmethod
    def build(cls, steps: int, m: UpperV2, j0: int, j1: int) -> "LogEdges":
        lo, hi = b_enclosures(j0, j1, fmpq(steps) / m.h, m.eta, m.prec)
        return cls(j0, lo, hi)

    def edge(self, j: int, k: int) -> tuple[int, int, int]:
        """(lo, hi, c): 2^Q B_j / 2^k enclosed in [lo, hi] and c = ceil(B_j / 2^k) (octave k)."""
        Q = B_FRACTION_BITS
        lo, hi = self.lo[j - self.j0] >> k, -((-self.hi[j - self.j0]) >> k)
        ca, cb = -((-lo) >> Q), -((-hi) >> Q)
        if ca != cb:
            raise NumericsUnreliableError("a log-grid cell edge is not resolved; raise B_FRACTION_BITS")
        return lo, hi, ca


def log_round(p: Poly, k: int, steps: int, m: UpperV2, edges: LogEdges, led: Ledger) -> Poly:
    """Step (iii) for one octave k: L = 2^k h idx / M onto e^{j eta} (moves above k_plus, deletes below k_minus).

    Returns a Poly over log-grid indices j of lower bounds (units 2^-F).
    """
    Q = B_FRACTION_BITS
    s = [int(x) for x in p.poly.coeffs()]
    J0, n = p.off, len(s)
    if J0 == 0 and s and s[0]:                   # L = 0: deleted
        led.log_grid += s[0]
        s[0] = 0
    P0 = [0]
    P1 = [0]
    for i, v in enumerate(s):
        P0.append(P0[-1] + v)
        P1.append(P1[-1] + (J0 + i) * v)
    pref = lambda arr, J: arr[min(max(J - J0, 0), n)]
    first = next((i for i, v in enumerate(s) if v), None)
    if first is None:
        return Poly(0, fmpz_poly([]))
    unit = float(m.h) * 2.0 ** k / steps         # L per unit of the index J
    ja = max(m.k_minus, min(m.k_plus, math.floor(math.log((J0 + first) * unit) / float(m.eta)) - 2))
    jb = min(m.k_plus, max(ja, math.ceil(math.log((J0 + n) * unit) / float(m.eta)) + 2))
    bnd = [edges.edge(j, k) for j in range(ja, jb + 1)]
    if (ja > m.k_minus and bnd[0][2] > J0 + first) or (jb < m.k_plus and bnd[-1][2] <= J0 + n - 1):
        raise NumericsUnreliableError("log-grid range estimate missed the support")
    r = [0] * (jb - ja + 1)
    below = pref(P0, bnd[0][2])                  # L < e^{k_minus eta} (only when ja == k_minus)
    led.log_grid += below
    lost = 0
    for i in range(jb - ja):
        (lo0, hi0, c0), (lo1, hi1, c1) = bnd[i], bnd[i + 1]
        T0 = pref(P0, c1) - pref(P0, c0)
        if T0 == 0:
            continue
        T1 = pref(P1, c1) - pref(P1, c0)
        den = hi1 - lo0                          # >= B_{j+1} - B_j, so both shares are lower bounds
        up = max((T1 << Q) - hi0 * T0, 0) // den
        dn = max(lo1 * T0 - (T1 << Q), 0) // den
        r[i] += dn
        r[i + 1] += up
        lost += T0 - up - dn
    above = P0[-1] - pref(P0, bnd[-1][2])        # L >= e^{k_plus eta}: moved down to it
    r[-1] += above
    led.moved_top += above
    led.fixed_point += lost << led.F
    return strip(Poly(ja, fmpz_poly(r)))


def step_iii(A: LatticeDist, steps: int, m: UpperV2, led: Ledger) -> Poly:
    """Step (iii): every octave of the epoch sum onto the log grid; returns R (lower bounds, units 2^-F)."""
    if not A:
        return Poly(0, fmpz_poly([]))
    lo_k, hi_k = min(A), max(A)
    lo_val = max(A[lo_k].off, 1) * 2.0 ** lo_k * float(m.h) / steps
    hi_val = (A[hi_k].off + A[hi_k].poly.length()) * 2.0 ** hi_k * float(m.h) / steps
    j0 = max(m.k_minus, min(m.k_plus, math.floor(math.log(lo_val) / float(m.eta)) - 4))
    j1 = min(m.k_plus, max(j0, math.ceil(math.log(hi_val) / float(m.eta)) + 4))
    edges = LogEdges.build(steps, m, j0, j1)
    R = None
    for k in sorted(A):
        part = log_round(A[k], k, steps, m, edges, led)
        if part.poly.length():
            R = part if R is None else _add_poly(R, part)
    return R if R is not None else Poly(0, fmpz_poly([]))


def _add_poly(a: Poly, b: Poly) -> Poly:
    off = min(a.off, b.off)
    return Poly(off, a.poly.left_shift(a.off - off) + b.poly.left_shift(b.off - off))


# ----------------------------------------------------------------------------- step (iv)

def clamp_index(p: Poly, top: int, led: Ledger) -> Poly:
    """Move the mass at indices above `top` down to `top` (recorded in led.moved_top)."""
    n = top - p.off + 1
    if n >= p.poly.length():
        return p
    if n <= 0:
        m = p.mass()
        led.moved_top += m
        return Poly(top, fmpz_poly([m]))
    keep = p.poly.truncate(n)
    moved = p.mass() - int(keep(1))
    led.moved_top += moved
    return Poly(p.off, keep + fmpz_poly([0] * (n - 1) + [moved]))


def trim_q(p: Poly, eta: fmpq, shift: fmpq, budget: int, led: Ledger) -> Poly:
    """Delete the lowest coefficients whose weight sum_k b_k min{1, e^{k eta + shift}} is <= `budget` (2^-F).

    Deleting mass is always allowed. The weight bounds what it costs: min{1, Lambda} and, up to
    eps = shift, min{1, e^eps Lambda} and min{Lambda, e^eps} are at most min{1, e^shift Lambda}, and
    E_P Lambda_rest <= 1 for the epochs still to come. Floats only choose how many to delete.
    """
    n = p.poly.length()
    if n == 0 or budget <= 0:
        return p
    k = min(n, 4096)
    while True:
        cs = np.array([float(x) for x in p.poly.truncate(k).coeffs()], dtype=float)
        cs = np.concatenate([cs, np.zeros(k - cs.size)])
        w = np.cumsum(cs * np.exp(np.minimum((p.off + np.arange(k)) * float(eta) + float(shift), 0.0)))
        cut = int(np.searchsorted(w, budget * (1 - 1e-6), side="right"))
        if cut < k or k == n:
            break
        k = min(n, 8 * k)
    if cut == 0:
        return p
    removed = int(p.poly.truncate(cut)(1))
    led.trim += removed
    return strip(Poly(p.off + cut, p.poly.right_shift(cut)))


def step_iv(R: Poly, epochs: int, m: UpperV2, led: Ledger, progress=None) -> Poly:
    """Step (iv): b = R^E by binary powering; after every product exponents above k_top are moved
    down to k_top and low coefficients of weight (trim_q) at most `trim` are deleted. Nothing is
    deleted at the top: there the Q-mass, which the privacy rows need, is large."""
    units = int((m.trim * (1 << led.F)).floor())
    tidy = lambda p: trim_q(clamp_index(p, m.k_top, led), m.eta, m.trim_shift, units, led)
    return binary_power(clamp_index(R, m.k_top, led), epochs, lambda a, b: tidy(product(a, b, None, led)), progress)


# ----------------------------------------------------------------------------- driver

# The driver runs the four timed steps as upper_v1.rounding_bound does: a deliberate parallel (each
# method's steps are its own; docs/method-v2.md §2), the one pair `duplicates` reports in bounds/.
def rounding_bound_v2(steps: int, epochs: int, t2: fmpq, method: UpperV2, progress=None) -> UpperResult:
    """The rigorous method-v2 bound 1 - O >= TV(P_M^E, Q_M^E) at t^2 = 1/sigma^2 (docs/method-v2.md).

    `bound` is >= the upper end of a ball containing 1 - O; O <= E min{1, Lambda} by the generalised
    Lemma C.5 (every operation is a mean-preserving rounding, a move down, or a deletion).
    """
    method.validate()
    require_positive(t2, "t^2")
    prog = progress or (lambda stage, frac: None)
    F = method.fixed_point_bits
    tm = {}
    with working_prec(method.prec):
        led = Ledger(F)
        t0 = time.perf_counter()
        prog("step_i", 0.0)
        P, moved_cap, loss_i = step_i(t2, method)
        mass_i = arb(lattice_mass(P)) / arb(2) ** F
        tm["step_i"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        A = step_ii(P, steps, method, led, lambda f: prog("step_ii", f))
        mass_ii = arb(lattice_mass(A)) / arb(2) ** F
        moved_top_ii = led.moved_top
        tm["step_ii"] = time.perf_counter() - t1
        t2_ = time.perf_counter()
        prog("step_iii", 0.0)
        R = step_iii(A, steps, method, led)
        mass_iii = arb(R.mass()) / arb(2) ** F
        moved_log = led.moved_top - moved_top_ii
        tm["step_iii"] = time.perf_counter() - t2_
        t3 = time.perf_counter()
        b = step_iv(R, epochs, method, led, lambda f: prog("step_iv", f))
        mass_iv = arb(b.mass()) / arb(2) ** F
        O = o_ball(b, method)
        tm["step_iv"] = time.perf_counter() - t3
        tm["total"] = time.perf_counter() - t0
        prog("step_iv", 1.0)
        one_minus_O = arb(1) - O
        unit = arb(2) ** F
        enclosures = {
            "O": arb_str(O),
            "mass": {"step_i": arb_str(mass_i), "step_ii": arb_str(mass_ii), "step_iii": arb_str(mass_iii),
                     "step_iv": arb_str(mass_iv)},
            "deleted": {"trim": arb_str(led.ball("trim")), "log_grid": arb_str(led.ball("log_grid")),
                        "fixed_point": arb_str(loss_i + led.ball("fixed_point"))},
            "moved": {"cap": arb_str(moved_cap), "top_octave": arb_str(arb(moved_top_ii) / unit),
                      "k_plus": arb_str(arb(moved_log) / unit),
                      "k_top": arb_str(arb(led.moved_top - moved_top_ii - moved_log) / unit)},
        }
        stats = {"grid_points": grid_size(method), "octaves": sorted(A), "log_cells": R.poly.length(),
                 "final_length": b.poly.length(), "products": led.products, "max_length": led.max_length}
        return UpperResult(round_up_sig(one_minus_O, 10), one_minus_O, enclosures,
                           {k: round(v, 3) for k, v in tm.items()}, stats, b, O)
