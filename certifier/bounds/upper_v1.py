"""The rigorous bound of Appendix C.5 (Lemma C.5, steps (i)-(iv)), method `lemma-c5-rounding` v1.

Implements section 4 of docs/certificate.md. Every number that enters the
bound is either an exact integer or a FLINT ball (`arb`) that contains the true
value. Masses are stored in fixed point: the integer `n` stands for the mass
`n * 2^-F` and is always the floor of 2^F times the lower end of a ball that
contains the true mass of the construction, so every stored mass is a lower
bound (Lemma C.5 allows deleting mass: it only lowers O). Polynomials are
`fmpz_poly` with an integer offset: coefficient j of `(off, poly)` is the mass
at the value `(off + j) * g * h` (step ii) or at `e^{(off + j) eta}` (steps iii, iv).

The certified bound is the upper end of the ball of 1 - O, where
O <= E min{1, Lambda} by Lemma C.5, so 1 - O >= TV.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from itertools import accumulate

from flint import arb, arb_poly, fmpq, fmpz_poly

from certifier.bounds import two_scale as ts2
from certifier.bounds.fixedpoint import (
    Ledger,
    Poly,
    arb_exact,
    arb_str,
    coarsen_two_point,
    floor_fixed,
    power,
    product,
    round_up_sig,
    strip,
    trim,
    truncate_index,
    working_prec,
)
from certifier.bounds.lognormal import doubled_tails, two_point_masses
from certifier.bounds.result import UpperResult, require_positive
from certifier.errors import NumericsUnreliableError
from certifier.params import ParameterError, decimal_str, parse_decimal

METHOD_NAME = "lemma-c5-rounding"
METHOD_VERSION = 1
B_FRACTION_BITS = 128  # fractional bits of the integer enclosures of B_k in step (iii)
ABOVE_CAP_MOVED = "moved"   # the optional "above_cap" value: Y > cap moved down to the cap (a move, §1 of method-v2)
BAND_POINTS = 10**7         # a band's (tail_start - band_low)/h, like tail_start/h without one
CAP_POINTS = 3 * 10**7      # (cap - band_low)/h: the length, in units h, of step (ii)'s first products


# ----------------------------------------------------------------------------- parameters

def _is_multiple(x: fmpq, unit: fmpq) -> bool:
    """True iff x/unit is an integer (exact rational arithmetic)."""
    q = x / unit
    return q.q == 1


@dataclass(frozen=True)
class UpperV1:
    """All parameters of the computation (the `method` object of the predicate).

    Rationals are exact `fmpq`; `k_minus`/`k_plus` default to floor(-1/eta), ceil(2/eta).
    """
    h: fmpq
    tail_start: fmpq
    tail_step: fmpq
    cap: fmpq
    lattice_schedule: tuple
    eta: fmpq
    k_minus: int
    k_plus: int
    prec: int = 100
    fixed_point_bits: int = 80
    trim: fmpq = fmpq(1, 10**20)
    cap_moved: bool = False      # Y > cap moved down to the cap (recorded "above_cap": "moved"), not deleted
    band_low: fmpq | None = None  # step (i)'s grid starts here, Y < band_low deleted (docs/method-v2.md §8)
    tail_factor: int = 0         # > 0: two-scale partial sums in step (ii) (method-v2.md §9), the tail R times coarser
    tail_splits: tuple = ()      # the splits of B_i and of A after bit i (units of h; 0: none), 2(n + 1) ints
    tail_tau: fmpq | None = field(default=None, compare=False)  # certifier only: choose the splits (mass above)

    @staticmethod
    def default_k(eta: fmpq) -> tuple[int, int]:
        """(floor(-1/eta), ceil(2/eta)) computed exactly from the rational eta."""
        inv = fmpq(1) / eta
        return int((-inv).floor()), int((2 * inv).ceil())

    def truncation_units(self, steps: int) -> int:
        """ceil(8M/h): the truncation h*ceil(8M/h) in units of h (exact integer)."""
        return int((fmpq(8 * steps) / self.h).ceil())

    def validate(self, steps: int) -> None:
        """Raise ParameterError unless the grid is one that docs/certificate.md allows."""
        h, ts, d, cap = self.h, self.tail_start, self.tail_step, self.cap
        if h <= 0 or d <= 0 or self.eta <= 0:
            raise ParameterError("h, tail_step and eta must be > 0")
        if not (_is_multiple(cap, h) and _is_multiple(ts, h) and _is_multiple(d, h)):
            raise ParameterError("cap, tail_start and tail_step must be multiples of h")
        if not (0 < ts <= cap):
            raise ParameterError("tail_start must satisfy 0 < tail_start <= cap")
        lo = fmpq(0) if self.band_low is None else self.band_low
        if self.band_low is not None and not (0 < lo < ts and _is_multiple(lo, h)):
            raise ParameterError("band_low must be a multiple of h with 0 < band_low < tail_start")
        if not _is_multiple(cap - ts, d):
            raise ParameterError("cap - tail_start must be a multiple of tail_step")
        n = steps.bit_length() - 1
        g = list(self.lattice_schedule)
        if len(g) != n + 1 or g[0] != 1 or any(int(x) < 1 for x in g):
            raise ParameterError(f"lattice_schedule must have {n + 1} entries starting with 1")
        if any(g[i] % g[i - 1] for i in range(1, len(g))):
            raise ParameterError("each lattice_schedule entry must be a multiple of the previous one")
        if not (32 <= self.prec <= 4096) or not (32 <= self.fixed_point_bits <= 1024):
            raise ParameterError("prec and fixed_point_bits must lie in [32, 4096] and [32, 1024]")
        if self.tail_factor and self.band_low is not None:
            raise ParameterError("band_low and tail_factor do not go together (method-v2.md §9, §9)")
        if self.tail_factor and not (2 <= self.tail_factor <= 1024):
            raise ParameterError("tail_factor must lie in [2, 1024]")
        if self.tail_splits and (not self.tail_factor or len(self.tail_splits) != 2 * (n + 1)
                                 or any(int(x) < 0 or int(x) > 10**12 for x in self.tail_splits)):
            raise ParameterError(f"tail_splits must be {2 * (n + 1)} integers in [0, 1e12] (with tail_factor)")
        if self.trim < 0 or self.trim > fmpq(1, 1000):
            raise ParameterError("trim must lie in [0, 0.001]")
        if not self.k_minus < 0 < self.k_plus:
            raise ParameterError("k_minus < 0 < k_plus required")
        if ((cap - lo) / h) > CAP_POINTS or ((ts - lo) / h) > BAND_POINTS:
            raise ParameterError("grid too fine: (cap - band_low)/h must be <= 3e7 and (tail_start - band_low)/h "
                                 "<= 1e7 (band_low = 0 without a band)")

    def to_json(self, steps: int) -> dict:
        """The `method` object of docs/certificate.md section 3 (decimal strings, ints); with cap_moved
        also "above_cap": "moved" (format v3 only, docs/method-v2.md §7)."""
        out = {
            "name": METHOD_NAME, "version": METHOD_VERSION,
            "h": decimal_str(self.h), "tail_start": decimal_str(self.tail_start),
            "tail_step": decimal_str(self.tail_step), "cap": decimal_str(self.cap),
            "truncation": decimal_str(self.h * self.truncation_units(steps)),
            "lattice_schedule": [int(x) for x in self.lattice_schedule],
            "eta": decimal_str(self.eta), "k_minus": self.k_minus, "k_plus": self.k_plus,
            "prec": self.prec, "fixed_point_bits": self.fixed_point_bits,
            "trim": decimal_str(self.trim),
        }
        if self.cap_moved:
            out["above_cap"] = ABOVE_CAP_MOVED
        if self.band_low is not None:
            out["band_low"] = decimal_str(self.band_low)
        if self.tail_factor:
            out["tail_factor"] = int(self.tail_factor)
            out["tail_splits"] = [int(x) for x in self.tail_splits]
        return out

    @classmethod
    def from_json(cls, obj: dict) -> "UpperV1":
        """Inverse of to_json (exact decimals parsed to fmpq, never float)."""
        if obj.get("name") != METHOD_NAME or obj.get("version") != METHOD_VERSION:
            raise ParameterError("unsupported method (want lemma-c5-rounding v1)")
        p = lambda k: parse_decimal(k, obj[k])  # noqa: E731
        above = obj.get("above_cap")
        if ("tail_factor" in obj) != ("tail_splits" in obj):
            raise ParameterError("tail_factor and tail_splits go together")
        if above not in (None, ABOVE_CAP_MOVED):
            raise ParameterError(f"above_cap must be {ABOVE_CAP_MOVED!r} when present, got {above!r}")
        return cls(h=p("h"), tail_start=p("tail_start"), tail_step=p("tail_step"), cap=p("cap"),
                   lattice_schedule=tuple(int(x) for x in obj["lattice_schedule"]), eta=p("eta"),
                   k_minus=int(obj["k_minus"]), k_plus=int(obj["k_plus"]), prec=int(obj["prec"]),
                   fixed_point_bits=int(obj["fixed_point_bits"]), trim=p("trim"), cap_moved=above is not None,
                   band_low=p("band_low") if "band_low" in obj else None,
                   tail_factor=int(obj.get("tail_factor", 0)),
                   tail_splits=tuple(int(x) for x in obj.get("tail_splits", ())))


def make_method(steps: int, *, h, eta, cap, tail_start=None, tail_step=None, lattice_schedule=None,
                prec: int = 100, fixed_point_bits: int = 80, trim="1e-20",
                k_minus=None, k_plus=None, cap_moved: bool = False, band_low=None) -> UpperV1:
    """A validated UpperV1 from decimal strings (or fmpq); defaults: one uniform grid, all g_i = 1."""
    q = lambda name, v: v if isinstance(v, fmpq) else parse_decimal(name, v)  # noqa: E731
    h, eta, cap = q("h", h), q("eta", eta), q("cap", cap)
    ts = cap if tail_start is None else q("tail_start", tail_start)
    d = h if tail_step is None else q("tail_step", tail_step)
    km, kp = UpperV1.default_k(eta)
    n = steps.bit_length() - 1
    m = UpperV1(h=h, tail_start=ts, tail_step=d, cap=cap,
               lattice_schedule=tuple(lattice_schedule) if lattice_schedule else (1,) * (n + 1),
               eta=eta, k_minus=km if k_minus is None else int(k_minus),
               k_plus=kp if k_plus is None else int(k_plus), prec=int(prec),
               fixed_point_bits=int(fixed_point_bits), trim=q("trim", trim), cap_moved=bool(cap_moved),
               band_low=None if band_low is None else q("band_low", band_low))
    m.validate(steps)
    return m


# ----------------------------------------------------------------------------- step (i)

def step_i(sigma: fmpq, m: UpperV1, t2: fmpq | None = None):
    """Lemma C.5 step (i): the grid masses p of one rounded step Y (ln Y ~ N(-t^2/2, t^2); t^2 = 1/sigma^2
    unless given, an exact rational).

    Returns (P, G0cap, loss) where P is a Poly on lattice h (off = band_low/h, 0 without a band) whose
    coefficient k is floor(2^F * lower end of a ball containing the mass the
    two-point rounding puts at k*h); G0cap is a ball containing 1 - F0(cap),
    the mass above the cap: deleted, or with m.cap_moved moved down to the cap (added
    at the cap point: Y -> min(Y, cap) lowers Y, docs/method-v2.md §1); loss is a ball
    containing the mass lost to the floors (true step-(i) mass minus the kept mass).
    With a band (m.band_low) the grid starts at band_low and Y < band_low is deleted: its mass
    F0(band_low) is band_mass(t2, m).
    """
    with working_prec(m.prec):  # the recorded working precision
        return _step_i(1 / (sigma * sigma) if t2 is None else t2, m)


def _step_i(t2: fmpq, m: UpperV1):
    """step_i at the current working precision (see step_i for what the result contains)."""
    F = m.fixed_point_bits
    ts_units, step_units, cap_units = int(m.tail_start / m.h), int(m.tail_step / m.h), int(m.cap / m.h)
    lo_units = 0 if m.band_low is None else int(m.band_low / m.h)
    # grid points in units of h: lo, lo + 1, ..., ts, ts + d, ..., cap (spec section 4 (i); lo = 0 without a band)
    pts = list(range(lo_units, ts_units + 1)) + list(range(ts_units + step_units, cap_units + 1, step_units))
    e0, e1 = doubled_tails(t2, pts, m.h, m.prec)
    coeffs = [0] * (cap_units + 1 - lo_units)
    masses = two_point_masses(e0, e1, pts, m.h)      # cells (y_k, y_k+1]: Y < band_low gets nothing
    if m.cap_moved:
        masses[-1] += e0[-1]                             # Y > cap moved down to the cap
    for p, x in zip(pts, masses):
        coeffs[p - lo_units] = floor_fixed(x, F - 1)     # the balls hold doubled masses
    g0cap = e0[-1] / 2                                   # 1 - F0(cap): deleted (or moved) above the cap
    kept_true = arb(1) if m.cap_moved else arb(1) - g0cap
    if m.band_low is not None:
        kept_true -= 1 - e0[0] / 2                       # F0(band_low): deleted below the band
    loss = kept_true - arb(sum(coeffs)) / arb(2) ** F    # true mass of the rounded Y minus kept
    return Poly(lo_units, fmpz_poly(coeffs)), g0cap, loss


def band_mass(t2: fmpq, m: UpperV1) -> arb:
    """A ball containing F0(band_low) = Pr(Y < band_low), the mass the band deletes (0 without a band)."""
    if m.band_low is None:
        return arb(0)
    with working_prec(m.prec):
        e0, _ = doubled_tails(t2, [int(m.band_low / m.h)], m.h, m.prec)
        return 1 - e0[0] / 2


# ----------------------------------------------------------------------------- step (ii)

def step_ii(P: Poly, steps: int, m: UpperV1, led: Ledger, progress=None) -> tuple[Poly, int]:
    """Lemma C.5 step (ii): the epoch sum S = sum of M rounded steps, binary powering.

    Returns (A, g): coefficient j of A.poly is a lower bound (units 2^-F) on the
    mass of the construction's epoch sum at the value (A.off + j) g h; every
    deleted or floored mass is in `led`.
    """
    if m.tail_factor:
        A, g, _ = step_ii_two_scale(P, steps, m, led, progress)
        return A, g
    T = m.truncation_units(steps)                        # truncation h*ceil(8M/h), in units of h
    trim_units = int((m.trim * (1 << led.F)).floor())
    g = list(m.lattice_schedule)
    n = len(g) - 1
    B, gB = truncate_index(P, T, led), 1                # B_0 = P on lattice h
    A, gA = None, 1
    total = n + bin(steps).count("1")
    done = 0
    for i in range(n + 1):
        if (steps >> i) & 1:
            if A is None:
                A, gA = B, gB
            else:
                A = coarsen_two_point(A, g[i] // gA, led)         # A onto multiples of g_i h (Lemma C.5)
                gA = g[i]
                A = trim(product(A, B, T // gA, led), trim_units, led)  # A <- A * B_i
            done += 1
            if progress:
                progress(done / total)
        if i < n:
            B = trim(product(B, B, T // gB, led), trim_units, led)  # B_{i+1} = B_i^2
            if g[i + 1] > gB:
                B = coarsen_two_point(B, g[i + 1] // gB, led)     # re-round the block sum (Lemma C.5)
                gB = g[i + 1]
                B = truncate_index(B, T // gB, led)
            done += 1
            if progress:
                progress(done / total)
    A = truncate_index(A, T // gA, led)
    return A, gA


def step_ii_two_scale(P: Poly, steps: int, m: UpperV1, led: Ledger, progress=None) -> tuple[Poly, int, tuple]:
    """Step (ii) with two-scale partial sums (method-v2.md §9): as step_ii, each partial sum kept as a
    body on g_i h and a tail on R g_i h. The splits are m.tail_splits (B_i's at 2i, A's after bit i at
    2i + 1), or chosen here from m.tail_tau. Returns (A on the lattice g h, g, the splits used)."""
    R, F = m.tail_factor, led.F
    T = m.truncation_units(steps)
    trim_units = int((m.trim * (1 << F)).floor())
    tau_units = int((m.tail_tau * (1 << F)).floor()) if m.tail_tau is not None else 0
    given = list(m.tail_splits) if m.tail_splits else None
    g = list(m.lattice_schedule)
    n = len(g) - 1
    used = [0] * (2 * (n + 1))

    def cut(X, gx, at, last=False):                       # the split of slot `at` (none for the final A)
        if last or (given is not None and given[at] == 0):
            return X
        X, used[at] = ts2.split(X, gx, R, None if given is None else given[at], tau_units, led)
        return X

    B, gB = cut(ts2.TwoScale(truncate_index(P, T, led), ts2.empty()), 1, 0), 1
    A, gA = None, 1
    total, done = n + bin(steps).count("1"), 0
    for i in range(n + 1):
        if (steps >> i) & 1:
            if A is None:
                A, gA = B, gB
            else:
                A = ts2.coarsen(A, g[i] // gA, T // g[i], R, led)
                gA = g[i]
                A = ts2.trim_ends(ts2.plus(A, B, R, T // gA, led), trim_units, led)
                A = cut(A, gA, 2 * i + 1, last=(steps >> (i + 1)) == 0)
            done += 1
            if progress:
                progress(done / total)
        if i < n:
            B = ts2.trim_ends(ts2.plus(B, B, R, T // gB, led), trim_units, led)
            if g[i + 1] > gB:
                B = ts2.coarsen(B, g[i + 1] // gB, T // g[i + 1], R, led)
                gB = g[i + 1]
            B = cut(B, gB, 2 * (i + 1))
            done += 1
            if progress:
                progress(done / total)
    return truncate_index(ts2.merged(A, R), T // gA, led), gA, tuple(used)


# ----------------------------------------------------------------------------- step (iii)

def b_enclosures(k0: int, k1: int, scale: fmpq, eta: fmpq, prec: int):
    """Integer enclosures lo_k <= 2^Q B_k <= hi_k for k in [k0, k1], B_k = scale * e^{k eta}.

    Computed by the exact integer recurrence B_{k+1} = B_k e^{eta} from k = 0 (where
    B_0 = scale is rational), with e^{+-eta} enclosed by arb balls; every step rounds
    lo down and hi up, so the enclosure is rigorous.
    """
    Q = B_FRACTION_BITS
    one = 1 << Q
    with working_prec(max(prec, Q + 64)):
        e_up = arb_exact(eta).exp()
        e_dn = (-arb_exact(eta)).exp()
        qu_lo, qu_hi = floor_fixed(e_up, Q), floor_fixed(e_up.upper(), Q) + 1
        qd_lo, qd_hi = floor_fixed(e_dn, Q), floor_fixed(e_dn.upper(), Q) + 1
    b0n = scale.p * one
    lo0 = int(b0n // scale.q)
    hi0 = -((-int(b0n)) // int(scale.q))
    los, his = {}, {}
    lo, hi = lo0, hi0
    if k0 <= 0 <= k1:
        los[0], his[0] = lo, hi
    for k in range(1, max(k1, 0) + 1):
        lo = (lo * qu_lo) >> Q
        hi = -((-(hi * qu_hi)) >> Q)
        if k >= k0:
            los[k], his[k] = lo, hi
    lo, hi = lo0, hi0
    for k in range(-1, min(k0, 0) - 1, -1):
        lo = (lo * qd_lo) >> Q
        hi = -((-(hi * qd_hi)) >> Q)
        if k <= k1:
            los[k], his[k] = lo, hi
    return [los[k] for k in range(k0, k1 + 1)], [his[k] for k in range(k0, k1 + 1)]


def _k_of(value: fmpq, eta: fmpq) -> int:
    """An estimate of the k with e^{k eta} <= value < e^{(k+1) eta} (float; callers check the range)."""
    return math.floor(math.log(float(value)) / float(eta))


def step_iii(A: Poly, g: int, steps: int, m: UpperV1, led: Ledger) -> Poly:
    """Lemma C.5 step (iii): round L = S/M onto the log grid e^{k eta}.

    Returns R with coefficient j a lower bound (units 2^-F) on the mass r_k at
    k = R.off + j; masses with L = 0, L < e^{k_minus eta} or L > e^{k_plus eta}
    are deleted (led.log_grid); floors and the width of the B_k enclosures go to
    led.fixed_point.
    """
    F, Q = led.F, B_FRACTION_BITS
    s = [int(x) for x in A.poly.coeffs()]
    J0 = A.off
    if J0 == 0 and s:                                    # L = 0 is deleted
        led.log_grid += s[0]
        s[0] = 0
    N = len(s)
    total = sum(s)
    scale = fmpq(steps) / (g * m.h)                      # B_k = M e^{k eta}/(g h) in units of the index J
    Jlo = J0 + next((j for j in range(N) if s[j]), N)
    Jhi = J0 + N - 1
    if Jlo > Jhi:
        return Poly(0, fmpz_poly([]))
    k_lo = max(m.k_minus, _k_of(fmpq(Jlo) / scale, m.eta) - 2)
    k_hi = min(m.k_plus, _k_of(fmpq(Jhi) / scale, m.eta) + 3)
    lo, hi = b_enclosures(k_lo, k_hi, scale, m.eta, m.prec)
    # c_k = ceil(B_k): the smallest index J in cell k (rigorous when both ends agree)
    cs = []
    for a, b in zip(lo, hi):
        ca, cb = -((-a) >> Q), -((-b) >> Q)
        if ca != cb:
            raise NumericsUnreliableError("log-grid cell edge not resolved; raise B_FRACTION_BITS")
        cs.append(ca)
    # the cells k_lo..k_hi-1 must cover [Jlo, Jhi] unless the log grid ends there
    if (k_lo > m.k_minus and cs[0] > Jlo) or (k_hi < m.k_plus and cs[-1] <= Jhi):
        raise NumericsUnreliableError("log-grid range estimate failed")
    P0 = [0] + list(accumulate(s))
    P1 = [0] + list(accumulate(j * v for j, v in zip(range(J0, J0 + N), s)))

    def pref(arr, J):                                    # sum over indices < J
        i = J - J0
        return arr[0] if i <= 0 else arr[min(i, N)]

    r = [0] * (k_hi - k_lo + 1)
    kept_in = 0
    for i in range(k_hi - k_lo):                         # cell k = k_lo + i: c_k <= J < c_{k+1}
        k = k_lo + i
        if k >= m.k_plus:
            break
        T0 = pref(P0, cs[i + 1]) - pref(P0, cs[i])
        if T0 == 0:
            continue
        T1 = pref(P1, cs[i + 1]) - pref(P1, cs[i])
        kept_in += T0
        num_lo = (T1 << Q) - hi[i] * T0                  # up = (T1 - B_k T0)/(B_{k+1} - B_k),
        up_lo = num_lo // (hi[i + 1] - lo[i])            #   decreasing in B_k and in B_{k+1}
        up_lo = max(up_lo, 0)
        num_hi = (T1 << Q) - lo[i] * T0
        den_hi = lo[i + 1] - hi[i]
        up_hi = -((-num_hi) // den_hi) if den_hi > 0 else T0
        up_hi = min(max(up_hi, up_lo), T0)
        r[i] += T0 - up_hi                               # mass to e^{k eta}  (lower bound)
        r[i + 1] += up_lo                                # mass to e^{(k+1) eta} (lower bound)
    # the grid point k_plus itself (L = e^{k_plus eta} exactly) is kept if present
    if k_lo <= m.k_plus <= k_hi:
        i = m.k_plus - k_lo
        exact_hit = pref(P0, cs[i] + 1) - pref(P0, cs[i]) if lo[i] == hi[i] and lo[i] == cs[i] << Q else 0
        r[i] += exact_hit
        kept_in += exact_hit
    led.log_grid += total - kept_in
    kept = sum(r)
    led.fixed_point += (kept_in - kept) << F
    return strip(Poly(k_lo, fmpz_poly(r)))


# ----------------------------------------------------------------------------- step (iv)

def step_iv(R: Poly, epochs: int, m: UpperV1, led: Ledger, progress=None) -> Poly:
    """Lemma C.5 step (iv): b = R^E (exponents add), with floors and trims recorded.

    Returns b: coefficient j a lower bound (units 2^-F) on the mass at Lambda = e^{(b.off + j) eta}.
    """
    trim_units = int((m.trim * (1 << led.F)).floor())
    return power(R, epochs, trim_units, led, progress)


def o_ball(b: Poly, m: UpperV1) -> arb:
    """A ball containing O = sum_k b_k min{1, e^{k eta}} for the fixed-point masses b (exact ints)."""
    F = m.fixed_point_bits
    n_neg = max(0, min(-b.off, b.poly.length()))         # indices with k < 0
    total = b.mass()
    neg_part = b.poly.truncate(n_neg) if n_neg else fmpz_poly([])
    neg_sum = int(neg_part(1)) if n_neg else 0
    pos = total - neg_sum                                 # k >= 0: min{1, e^{k eta}} = 1
    with working_prec(max(m.prec, 128)):
        eta = arb_exact(m.eta)
        if n_neg:
            # sum_{j < n_neg} c_j e^{(off + j) eta} = e^{off eta} * c(e^{eta})
            val = arb_poly(neg_part)(eta.exp()) * (eta * b.off).exp()
        else:
            val = arb(0)
        return (arb(pos) + val) / arb(2) ** F


# ----------------------------------------------------------------------------- driver

# Deliberately parallel to upper_v2.rounding_bound_v2 (the same four timed steps, each method its own).
def rounding_bound(steps: int, epochs: int, sigma: fmpq, method: UpperV1, progress=None,
                   t2: fmpq | None = None) -> UpperResult:
    """The rigorous Lemma C.5 bound: 1 - O >= TV(P_M^E, Q_M^E) at sigma.

    t2: the pair's t^2 when it is not 1/sigma^2 (fixed bins: the one-epoch pair at t^2 = E/sigma^2,
    called with epochs = 1; method-v2.md §3), an exact rational.

    `bound` (a decimal string) is >= the upper end of a ball containing 1 - O, and
    1 - O >= TV by Lemma C.5 (every step is a mean-preserving two-point rounding or a
    deletion of mass, which can only lower E min{1, Lambda}).
    `progress(stage, fraction)` is called as the computation advances.
    """
    method.validate(steps)
    require_positive(sigma, "sigma")
    t2 = 1 / (sigma * sigma) if t2 is None else t2
    require_positive(t2, "t2")
    t2_pair = t2
    F = method.fixed_point_bits
    prog = progress or (lambda stage, frac: None)
    timings = {}
    with working_prec(method.prec):
        led = Ledger(F)
        t0 = time.perf_counter()
        prog("step_i", 0.0)
        P, g0cap, loss_i = step_i(sigma, method, t2)
        mass_i = arb(P.mass()) / arb(2) ** F
        timings["step_i"] = time.perf_counter() - t0
        prog("step_i", 1.0)

        t1 = time.perf_counter()
        if method.tail_factor:                           # two-scale: the splits used are recorded
            A, g, used = step_ii_two_scale(P, steps, method, led, lambda f: prog("step_ii", f))
            method = dataclasses.replace(method, tail_splits=used, tail_tau=None)
        else:
            A, g = step_ii(P, steps, method, led, lambda f: prog("step_ii", f))
        mass_ii = arb(A.mass()) / arb(2) ** F
        timings["step_ii"] = time.perf_counter() - t1

        t2 = time.perf_counter()
        prog("step_iii", 0.0)
        R = step_iii(A, g, steps, method, led)
        mass_iii = arb(R.mass()) / arb(2) ** F
        timings["step_iii"] = time.perf_counter() - t2
        prog("step_iii", 1.0)

        t3 = time.perf_counter()
        b = step_iv(R, epochs, method, led, lambda f: prog("step_iv", f))
        mass_iv = arb(b.mass()) / arb(2) ** F
        O = o_ball(b, method)
        timings["step_iv"] = time.perf_counter() - t3
        timings["total"] = time.perf_counter() - t0
        prog("step_iv", 1.0)
        one_minus_O = arb(1) - O
        bound = round_up_sig(one_minus_O, 10)
        fixed_point = loss_i + led.ball("fixed_point")
        enclosures = {
            "O": arb_str(O),
            "mass": {"step_i": arb_str(mass_i), "step_ii": arb_str(mass_ii),
                     "step_iii": arb_str(mass_iii), "step_iv": arb_str(mass_iv)},
            "deleted": {"cap": arb_str(g0cap), "truncation": arb_str(led.ball("truncation")),
                        "trim": arb_str(led.ball("trim")), "log_grid": arb_str(led.ball("log_grid")),
                        "fixed_point": arb_str(fixed_point)},
        }
        if method.cap_moved:                             # the mass above the cap was moved, not deleted
            enclosures["moved"] = {"cap": enclosures["deleted"].pop("cap")}
        if method.band_low is not None:                  # Y < band_low deleted (docs/method-v2.md §8)
            enclosures["deleted"]["band"] = arb_str(band_mass(t2_pair, method))
        stats = {"grid_points": P.poly.length(), "epoch_length": A.poly.length(), "lattice": g,
                 "log_cells": R.poly.length(), "final_length": b.poly.length(),
                 "products": led.products, "max_length": led.max_length}
        return UpperResult(bound, one_minus_O, enclosures, {k: round(v, 3) for k, v in timings.items()}, stats, b, O,
                           method=method if method.tail_factor else None)

