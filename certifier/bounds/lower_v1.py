"""A certified LOWER bound on TV by data processing (docs/two-sided.md §1, method `data-processing-lower` v1).

For any fixed map T, TV(T#P, T#Q) <= TV(P, Q), and for any set A of values of T,
TV(T#P, T#Q) >= T#Q(A) - T#P(A). The map (a)-(d) below is chosen so that the
pmfs of its image are computable exactly with the fixed-point polynomial
machinery of certifier/bounds/upper_v1.py:

(a) each step Y is replaced by k = min(floor(Y/h), K), K = cap/h (cells [kh, (k+1)h)
    and the top cell [cap, inf));
(b) the M values of an epoch are summed by binary powering along the bits of M;
    a block sum s on lattice g_{i-1} h is re-quantised to floor(s / r), r = g_i/g_{i-1}
    (a fixed map). Under Q exactly one step of the epoch (uniformly chosen) has
    the shifted law, so the Q-side pmf of a block of 2^i steps is the P-law of one
    half convolved with the Q-law of the other, and the accumulator of m steps
    joined with a block of 2^i steps is the mixture with weights m/(m + 2^i),
    2^i/(m + 2^i) (with all g_i = 1 this is (sum q_k z^k)(sum p_k z^k)^(M-1));
(c) the epoch value s is replaced by a bucket index beta(s), a non-decreasing
    function of s computed from floating-point log ratios of the two computed pmfs
    (any fixed function is valid; it only affects tightness), clamped to [b_min, b_max];
(d) the E bucket indices are added: pmfs (sum u_b z^b)^E and (sum w_b z^b)^E.

Fixed point (units 2^-F, F = fixed_point_bits): every stored integer is a LOWER
bound on the true mass of the map's image at its index, on both sides (floors of
ball lower ends, floors after products, deletions). On the Q side that is all we
need. On the P side every floor and every deletion removes mass that may lie in A;
the total P mass removed is exactly 1 - (kept total), an exact integer in units
2^-F, recorded as `deleted_p`. So with A = {k : W_k > U_k} (computed integers):

    TV >= W(A) - U(A) >= W_lo(A) - U_lo(A) - deleted_p,

all three exact integers over 2^F: the certified lower bound is an exact rational.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from flint import arb, fmpq, fmpz_poly

from certifier.bounds.fixedpoint import (
    Ledger,
    Poly,
    coarsen_floor,
    dense,
    exact_str,
    floor_fixed,
    power,
    product,
    round_down_sig,
    strip,
    trim,
    truncate_index,
    working_prec,
)
from certifier.bounds.lognormal import doubled_tails, floor_cell_masses
from certifier.bounds.result import LowerResult, require_positive
from certifier.bounds.upper_v1 import UpperV1
from certifier.errors import NumericsUnreliableError
from certifier.params import ParameterError, decimal_str, parse_decimal

METHOD_NAME = "data-processing-lower"
METHOD_VERSION = 1


@dataclass(frozen=True)
class LowerV1:
    """Parameters of the map and the arithmetic (the `lower.method` object).

    h, cap: the cells [kh, (k+1)h), k < K = cap/h, and [cap, inf) of (a); lattice_schedule:
    the re-quantisation of (b) (validity rules of lemma-c5-rounding v1); eta: the bucket width
    of (c); b_min, b_max: the clamp of (c).
    """
    h: fmpq
    cap: fmpq
    lattice_schedule: tuple
    eta: fmpq
    b_min: int = 0
    b_max: int = 0
    prec: int = 100
    fixed_point_bits: int = 80
    trim: fmpq = fmpq(1, 10**20)
    band_low: fmpq | None = None   # cells start here: [0, band_low + h) is the first (docs/method-v2.md §8)

    def as_v1(self) -> UpperV1:
        """The upper-v1 method with the same grid (used for its validation rules and truncation)."""
        km, kp = UpperV1.default_k(self.eta)
        return UpperV1(h=self.h, tail_start=self.cap, tail_step=self.h, cap=self.cap,
                      lattice_schedule=tuple(self.lattice_schedule), eta=self.eta, k_minus=km, k_plus=kp,
                      prec=self.prec, fixed_point_bits=self.fixed_point_bits, trim=self.trim,
                      band_low=self.band_low)

    def validate(self, steps: int) -> None:
        """Raise ParameterError unless the grid is one docs/two-sided.md allows."""
        self.as_v1().validate(steps)
        if self.b_min > self.b_max:
            raise ParameterError("b_min must be <= b_max")
        if (self.b_max - self.b_min) > 4 * 10**6:
            raise ParameterError("bucket range b_max - b_min too large (> 4e6)")

    @classmethod
    def from_v1(cls, m: UpperV1, cap: fmpq | None = None) -> "LowerV1":
        """The v1 grid's h, eta, lattice (cap: a multiple of h, default the v1 cap); b_min, b_max
        are set by the computation."""
        return cls(h=m.h, cap=m.cap if cap is None else cap,
                   lattice_schedule=tuple(m.lattice_schedule), eta=m.eta, prec=m.prec,
                   fixed_point_bits=m.fixed_point_bits, trim=m.trim, band_low=m.band_low)

    def to_json(self, steps: int) -> dict:
        """The `lower.method` object (exact decimal strings and integers)."""
        return {"name": METHOD_NAME, "version": METHOD_VERSION,
                "h": decimal_str(self.h), "cap": decimal_str(self.cap),
                "lattice_schedule": [int(x) for x in self.lattice_schedule],
                "eta": decimal_str(self.eta), "b_min": int(self.b_min), "b_max": int(self.b_max),
                "prec": self.prec, "fixed_point_bits": self.fixed_point_bits, "trim": decimal_str(self.trim),
                **({} if self.band_low is None else {"band_low": decimal_str(self.band_low)})}

    @classmethod
    def from_json(cls, obj: dict) -> "LowerV1":
        """Inverse of to_json (exact decimals parsed to fmpq)."""
        if obj.get("name") != METHOD_NAME or obj.get("version") != METHOD_VERSION:
            raise ParameterError("unsupported lower method (want data-processing-lower v1)")
        p = lambda k: parse_decimal(k, obj[k])  # noqa: E731
        return cls(h=p("h"), cap=p("cap"),
                   lattice_schedule=tuple(int(x) for x in obj["lattice_schedule"]), eta=p("eta"),
                   b_min=int(obj["b_min"]), b_max=int(obj["b_max"]), prec=int(obj["prec"]),
                   fixed_point_bits=int(obj["fixed_point_bits"]), trim=p("trim"),
                   band_low=p("band_low") if "band_low" in obj else None)


# ----------------------------------------------------------------------------- (a) cell masses

def step_a(sigma: fmpq, m: LowerV1, t2: fmpq | None = None) -> tuple[Poly, Poly]:
    """(P, Q): coefficient k of P.poly (resp. Q.poly) is floor(2^F x lower end of a ball containing
    Pr_P(Y in the cell whose left end is k h)) (resp. the same under the shifted law, E[Y 1{cell}]).

    Cells are [kh, (k+1)h) for k < K and [cap, inf) at index K = cap/h. Both are lower bounds on
    the true cell masses (total 1 on each side). With a band the cells start at k0 = band_low/h and
    the first, at index k0, is [0, band_low + h) (Y below the band merged into it: a fixed map).
    """
    F = m.fixed_point_bits
    k0 = 0 if m.band_low is None else int(m.band_low / m.h)
    pts = list(range(k0, int(m.cap / m.h) + 1))         # cells [kh, (k+1)h), k0 <= k < K, and [cap, inf)
    e0, e1 = doubled_tails(1 / (sigma * sigma) if t2 is None else t2, pts, m.h, m.prec)   # t^2
    e0[0] = e1[0] = arb(2)                               # the first cell starts at 0
    with working_prec(m.prec):
        pc = [floor_fixed(x, F - 1) for x in floor_cell_masses(e0)]   # doubled masses: one bit fewer
        qc = [floor_fixed(x, F - 1) for x in floor_cell_masses(e1)]
    return strip(Poly(k0, fmpz_poly(pc))), strip(Poly(k0, fmpz_poly(qc)))


# ----------------------------------------------------------------------------- (b) the epoch sum

def _mix(a: Poly, wa: int, b: Poly, wb: int) -> Poly:
    """floor((wa a + wb b) / (wa + wb)) coefficientwise: a lower bound on the mixture's masses."""
    off = min(a.off, b.off)
    pa = a.poly.left_shift(a.off - off) if a.poly.length() else a.poly
    pb = b.poly.left_shift(b.off - off) if b.poly.length() else b.poly
    return strip(Poly(off, (pa * wa + pb * wb) // (wa + wb)))


def step_b(P: Poly, Q: Poly, steps: int, m: LowerV1, progress=None):
    """The epoch-sum pmfs (AP, AQ, g): coefficient j is a lower bound (units 2^-F) on the mass of
    the map's epoch value j g h under P (AP) and under Q (AQ); partial sums above the truncation
    and trimmed ends are deleted on both sides.
    """
    v1 = m.as_v1()
    F = m.fixed_point_bits
    led = Ledger(F)
    T = v1.truncation_units(steps)
    trim_units = int((m.trim * (1 << F)).floor())
    g = list(m.lattice_schedule)
    n = len(g) - 1
    B, Bq, gB = truncate_index(P, T, led), truncate_index(Q, T, led), 1
    A = Aq = None
    gA, mA = 1, 0
    total, done = n + bin(steps).count("1"), 0
    prod = lambda x, y, lim: trim(product(x, y, lim, led), trim_units, led)  # noqa: E731
    for i in range(n + 1):
        if (steps >> i) & 1:
            if A is None:
                A, Aq, gA, mA = B, Bq, gB, 1 << i
            else:
                r = g[i] // gA
                A, Aq, gA = coarsen_floor(A, r), coarsen_floor(Aq, r), g[i]
                lim = T // gA
                w = 1 << i
                Aq = _mix(prod(Aq, B, lim), mA, prod(A, Bq, lim), w)   # the shifted step in A or in B_i
                A = prod(A, B, lim)
                mA += w
            done += 1
            if progress:
                progress(done / total)
        if i < n:
            lim = T // gB
            Bq = prod(Bq, B, lim)                        # one half shifted (either half: same law)
            B = prod(B, B, lim)
            if g[i + 1] > gB:
                r = g[i + 1] // gB
                B, Bq, gB = coarsen_floor(B, r), coarsen_floor(Bq, r), g[i + 1]
                B, Bq = truncate_index(B, T // gB, led), truncate_index(Bq, T // gB, led)
            done += 1
            if progress:
                progress(done / total)
    return truncate_index(A, T // gA, led), truncate_index(Aq, T // gA, led), gA, led


# ----------------------------------------------------------------------------- (c) buckets

RELIABLE_UNITS = float(1 << 40)   # a mass of this many units carries floors of ~1e2 units: ln q/p to 1e-10


def bucket_map(ap: list[int], aq: list[int], eta: float) -> tuple[np.ndarray, int, int]:
    """beta for each index: floor(ln(aq/ap)/eta) where both are > 0, made non-decreasing (running
    max) and clamped to [b_min, b_max] = the range over those indices. A fixed function of the index
    (floats only choose it). Only indices whose masses are both >= RELIABLE_UNITS move the running
    max and set the range (where any exist): at the far ends the floors leave a few units (e.g. 17
    and 17, ratio 1), and one such ratio near the bottom, carried up by the running max, put half
    of the P mass into one bucket at (10^4, 10^4, sigma 4.04): a lower bound of 0.0857 for TV 0.1."""
    p = np.array([float(x) for x in ap])
    q = np.array([float(x) for x in aq])
    both = (p > 0) & (q > 0)
    if not both.any():
        raise NumericsUnreliableError("the two epoch pmfs share no support; refine the grid")
    reliable = both & (np.minimum(p, q) >= RELIABLE_UNITS)
    if reliable.any():
        both = reliable
    beta = np.full(p.size, -np.inf)
    with np.errstate(divide="ignore"):
        beta[both] = np.floor(np.log(q[both] / p[both]) / eta)
    beta = np.maximum.accumulate(beta)
    b_min, b_max = int(beta[both].min()), int(beta[both].max())
    b_max = max(b_max, b_min + 1)                        # the format wants b_min < b_max
    beta = np.clip(np.where(np.isfinite(beta), beta, b_min), b_min, b_max).astype(np.int64)
    return beta, b_min, b_max


def _bucket_sums(vals: list[int], beta: np.ndarray, b_min: int, b_max: int) -> list[int]:
    """Exact integer sums of vals over each bucket (beta non-decreasing: runs are contiguous)."""
    out = [0] * (b_max - b_min + 1)
    cuts = np.flatnonzero(np.diff(beta)) + 1
    starts = [0] + cuts.tolist()
    ends = cuts.tolist() + [beta.size]
    for a, b in zip(starts, ends):
        out[int(beta[a]) - b_min] += sum(vals[a:b])
    return out


# ----------------------------------------------------------------------------- driver

def lower_bound(steps: int, epochs: int, sigma: fmpq, method: LowerV1, progress=None,
                fixed_buckets: bool = False, t2: fmpq | None = None) -> LowerResult:
    """A rigorous lower bound on TV(P_M^E, Q_M^E) at sigma (the data-processing map of this module).

    t2: the pair's t^2 when it is not 1/sigma^2 (fixed bins: t^2 = E/sigma^2 with epochs = 1), exact.

    With fixed_buckets the recorded [b_min, b_max] clamp is used as given (replay); otherwise
    the range is taken from the computation and recorded in the result's method.
    """
    method.validate(steps)
    require_positive(sigma, "sigma")
    t2 = 1 / (sigma * sigma) if t2 is None else t2
    require_positive(t2, "t2")
    prog = progress or (lambda stage, frac: None)
    F = method.fixed_point_bits
    tm = {}
    t0 = time.perf_counter()
    prog("lower (a)", 0.0)
    P, Q = step_a(sigma, method, t2)
    tm["step_a"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    AP, AQ, g, led = step_b(P, Q, steps, method, lambda f: prog("lower (b)", f))
    tm["step_b"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    prog("lower (c)", 0.0)
    lo = min(AP.off, AQ.off)
    n = max(AP.off + AP.poly.length(), AQ.off + AQ.poly.length()) - lo
    ap, aq = dense(AP, lo, n), dense(AQ, lo, n)
    beta, b_min, b_max = bucket_map(ap, aq, float(method.eta))
    if fixed_buckets:
        b_min, b_max = method.b_min, method.b_max
        beta = np.clip(beta, b_min, b_max)
    else:
        method = LowerV1(**{**method.__dict__, "b_min": b_min, "b_max": b_max})
        method.validate(steps)
    u = _bucket_sums(ap, beta, b_min, b_max)
    w = _bucket_sums(aq, beta, b_min, b_max)
    tm["step_c"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    prog("lower (d)", 0.0)
    trim_units = int((method.trim * (1 << F)).floor())
    U = power(strip(Poly(b_min, fmpz_poly(u))), epochs, trim_units, led)
    W = power(strip(Poly(b_min, fmpz_poly(w))), epochs, trim_units, led)
    lo2 = min(U.off, W.off)
    n2 = max(U.off + U.poly.length(), W.off + W.poly.length()) - lo2
    uu = np.array(dense(U, lo2, n2), dtype=object)
    ww = np.array(dense(W, lo2, n2), dtype=object)
    sel = ww > uu
    W_A, U_A = int(ww[sel].sum()), int(uu[sel].sum())
    u_total = int(uu.sum())
    deleted_p = (1 << F) - u_total                       # every P-side floor and deletion
    if deleted_p < 0:
        raise NumericsUnreliableError("P-side mass above 1: internal error")
    exact = fmpq(W_A - U_A - deleted_p, 1 << F)
    tm["step_d"] = time.perf_counter() - t3
    tm["total"] = time.perf_counter() - t0
    prog("lower (d)", 1.0)
    enc = {"W_A": exact_str(W_A, F), "U_A": exact_str(U_A, F), "deleted_p": exact_str(deleted_p, F)}
    stats = {"epoch_length": n, "lattice": g, "buckets": b_max - b_min + 1, "final_length": n2,
             "products": led.products, "max_length": led.max_length}
    return LowerResult(round_down_sig(exact, 10), exact, enc, {k: round(v, 3) for k, v in tm.items()}, stats, method,
                       ([int(x) for x in uu], [int(x) for x in ww], F))
