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

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np
from flint import arb, fmpq, fmpz_poly
from scipy.special import ndtri

from certifier.bounds import two_scale as ts2
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
    tail_factor: int = 0         # > 0: two-scale partial sums (floors) in (a)-(b), two-sided.md §1, method-v2.md §9
    tail_splits: tuple = ()      # as in lemma-c5-rounding v1; the first is also (a)'s last fine cell
    tail_tau: fmpq | None = field(default=None, compare=False)  # certifier only: choose the splits (P-mass above)

    def as_v1(self) -> UpperV1:
        """The upper-v1 method with the same grid (used for its validation rules and truncation)."""
        km, kp = UpperV1.default_k(self.eta)
        return UpperV1(h=self.h, tail_start=self.cap, tail_step=self.h, cap=self.cap,
                      lattice_schedule=tuple(self.lattice_schedule), eta=self.eta, k_minus=km, k_plus=kp,
                      prec=self.prec, fixed_point_bits=self.fixed_point_bits, trim=self.trim,
                      band_low=self.band_low, tail_factor=self.tail_factor, tail_splits=tuple(self.tail_splits))

    def validate(self, steps: int) -> None:
        """Raise ParameterError unless the grid is one docs/two-sided.md allows."""
        self.as_v1().validate(steps)
        if self.b_min > self.b_max:
            raise ParameterError("b_min must be <= b_max")
        if (self.b_max - self.b_min) > 4 * 10**6:
            raise ParameterError("bucket range b_max - b_min too large (> 4e6)")
        R = self.tail_factor
        if self.tail_splits and (self.tail_splits[0] % R or self.tail_splits[0] > int(self.cap / self.h) // R * R):
            raise ParameterError("tail_splits[0] (the last fine cell of (a)) must be a multiple of tail_factor "
                                 "and at most floor(cap/(h tail_factor)) tail_factor")

    @classmethod
    def from_v1(cls, m: UpperV1, cap: fmpq | None = None) -> "LowerV1":
        """The v1 grid's h, eta, lattice (cap: a multiple of h, default the v1 cap); b_min, b_max
        are set by the computation."""
        return cls(h=m.h, cap=m.cap if cap is None else cap,
                   lattice_schedule=tuple(m.lattice_schedule), eta=m.eta, prec=m.prec,
                   fixed_point_bits=m.fixed_point_bits, trim=m.trim, band_low=m.band_low)

    def to_json(self, steps: int) -> dict:
        """The `lower.method` object (exact decimal strings and integers)."""
        out = {"name": METHOD_NAME, "version": METHOD_VERSION,
               "h": decimal_str(self.h), "cap": decimal_str(self.cap),
               "lattice_schedule": [int(x) for x in self.lattice_schedule],
               "eta": decimal_str(self.eta), "b_min": int(self.b_min), "b_max": int(self.b_max),
               "prec": self.prec, "fixed_point_bits": self.fixed_point_bits, "trim": decimal_str(self.trim)}
        if self.band_low is not None:  # optional (format v3): the band, method-v2.md §8
            out["band_low"] = decimal_str(self.band_low)
        if self.tail_factor:      # optional (format v3): two-scale partial sums
            out["tail_factor"] = int(self.tail_factor)
            out["tail_splits"] = [int(x) for x in self.tail_splits]
        return out

    @classmethod
    def from_json(cls, obj: dict) -> "LowerV1":
        """Inverse of to_json (exact decimals parsed to fmpq)."""
        if obj.get("name") != METHOD_NAME or obj.get("version") != METHOD_VERSION:
            raise ParameterError("unsupported lower method (want data-processing-lower v1)")
        p = lambda k: parse_decimal(k, obj[k])  # noqa: E731
        if ("tail_factor" in obj) != ("tail_splits" in obj):
            raise ParameterError("tail_factor and tail_splits go together")
        return cls(h=p("h"), cap=p("cap"),
                   lattice_schedule=tuple(int(x) for x in obj["lattice_schedule"]), eta=p("eta"),
                   b_min=int(obj["b_min"]), b_max=int(obj["b_max"]), prec=int(obj["prec"]),
                   fixed_point_bits=int(obj["fixed_point_bits"]), trim=p("trim"),
                   band_low=p("band_low") if "band_low" in obj else None,
                   tail_factor=int(obj.get("tail_factor", 0)),
                   tail_splits=tuple(int(x) for x in obj.get("tail_splits", ())))


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


def first_split(sigma: fmpq, m: LowerV1, t2: fmpq | None = None) -> int:
    """The last fine cell of (a) (units of h, a multiple of R): the least one above which Pr_P(Y) is about
    m.tail_tau (floats only choose it; it is recorded)."""
    R, t = m.tail_factor, math.sqrt(float(1 / (sigma * sigma) if t2 is None else t2))
    y = math.exp(-float(ndtri(float(m.tail_tau))) * t - t * t / 2)    # Pr(Y > y) = tau
    K = int(m.cap / m.h)
    return min(-(-math.ceil(y / float(m.h)) // R) * R, (K // R) * R)


def step_a_two_scale(sigma: fmpq, m: LowerV1, J0: int, t2: fmpq | None = None):
    """(a) with the far cells merged R at a time (a fixed map: k -> floor(k/R) above J0 = tail_splits[0]):
    fine cells [kh, (k+1)h), k < J0, then [c R h, (c + 1) R h) for J0/R <= c < K_c = floor(K/R), and the
    top cell [K_c R h, inf) at tail index K_c. Returns (P, Q) as TwoScale laws (lower bounds, units 2^-F)."""
    F, R = m.fixed_point_bits, m.tail_factor
    Kc = int(m.cap / m.h) // R
    pts = list(range(J0 + 1)) + list(range(J0 + R, Kc * R + 1, R))
    e0, e1 = doubled_tails(1 / (sigma * sigma) if t2 is None else t2, pts, m.h, m.prec)
    out = []
    with working_prec(m.prec):
        for e in (e0, e1):
            c = [floor_fixed(x, F - 1) for x in floor_cell_masses(e)]
            out.append(ts2.TwoScale(strip(Poly(0, fmpz_poly(c[:J0]))), strip(Poly(J0 // R, fmpz_poly(c[J0:])))))
    return out[0], out[1]


def _mix2(a, wa: int, b, wb: int):
    """_mix part by part (the part a value is in is a function of the value: a state of the map)."""
    def part(x, y):                                      # an empty part has no mass: its weight gives 0
        if not x.poly.length():
            return strip(Poly(y.off, (y.poly * wb) // (wa + wb))) if y.poly.length() else y
        if not y.poly.length():
            return strip(Poly(x.off, (x.poly * wa) // (wa + wb)))
        return _mix(x, wa, y, wb)
    return ts2.TwoScale(part(a.body, b.body), part(a.tail, b.tail))


def step_b_two_scale(P, Q, steps: int, m: LowerV1, progress=None):
    """(b) with two-scale partial sums (floors; method-v2.md §9): as step_b, each block's law a body on g h
    and a tail on R g h, the splits m.tail_splits (or chosen from the P side's m.tail_tau), the same on
    both sides. Returns (AP, AQ, g, led, the splits used), AP and AQ TwoScale laws (the part is a state)."""
    v1 = m.as_v1()
    F, R = m.fixed_point_bits, m.tail_factor
    led = Ledger(F)
    T = v1.truncation_units(steps)
    trim_units = int((m.trim * (1 << F)).floor())
    tau_units = int((m.tail_tau * (1 << F)).floor()) if m.tail_tau is not None else 0
    g = list(m.lattice_schedule)
    n = len(g) - 1
    given = list(m.tail_splits) if len(m.tail_splits) == 2 * (n + 1) else None   # else: (J0,), choose the rest
    used = [0] * (2 * (n + 1))
    used[0] = m.tail_splits[0] if m.tail_splits else 0

    def cut(X, Xq, gx, at, last=False):                  # one split for both sides, chosen on P
        if last or (given is not None and given[at] == 0):
            return X, Xq
        X, used[at] = ts2.split(X, gx, R, None if given is None else given[at], tau_units, led, floor=True)
        if used[at]:
            Xq, _ = ts2.split(Xq, gx, R, used[at], 0, led, floor=True)
        return X, Xq

    tr = lambda X: ts2.TwoScale(truncate_index(X.body, T, led), truncate_index(X.tail, T // R, led))  # noqa: E731
    B, Bq, gB = tr(P), tr(Q), 1
    A = Aq = None
    gA, mA = 1, 0
    total, done = n + bin(steps).count("1"), 0
    prod = lambda x, y, lim: ts2.trim_ends(ts2.plus(x, y, R, lim, led, floor=True), trim_units, led)  # noqa: E731
    for i in range(n + 1):
        if (steps >> i) & 1:
            if A is None:
                A, Aq, gA, mA = B, Bq, gB, 1 << i
            else:
                r = g[i] // gA
                A, Aq = (ts2.coarsen(X, r, T // g[i], R, led, floor=True) for X in (A, Aq))
                gA = g[i]
                lim = T // gA
                w = 1 << i
                Aq = _mix2(prod(Aq, B, lim), mA, prod(A, Bq, lim), w)   # the shifted step in A or in B_i
                A = prod(A, B, lim)
                mA += w
                A, Aq = cut(A, Aq, gA, 2 * i + 1, last=(steps >> (i + 1)) == 0)
            done += 1
            if progress:
                progress(done / total)
        if i < n:
            lim = T // gB
            Bq = prod(Bq, B, lim)                        # one half shifted (either half: same law)
            B = prod(B, B, lim)
            if g[i + 1] > gB:
                r = g[i + 1] // gB
                B, Bq = (ts2.coarsen(X, r, T // g[i + 1], R, led, floor=True) for X in (B, Bq))
                gB = g[i + 1]
            B, Bq = cut(B, Bq, gB, 2 * (i + 1))
            done += 1
            if progress:
                progress(done / total)
    lim = T // gA
    tr = lambda X: ts2.TwoScale(truncate_index(X.body, lim, led), truncate_index(X.tail, lim // R, led))  # noqa: E731
    return tr(A), tr(Aq), gA, led, tuple(used)


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


def free_bucket_map(ap: list[int], aq: list[int], eta: float) -> tuple[np.ndarray, int, int]:
    """beta = floor(ln(aq/ap)/eta) per index, not made monotone (the two-scale tail: its lowest values carry
    tiny, noisy ratios that a running max would spread over the whole part); -inf where only ap > 0, +inf
    where only aq > 0 (the caller sends them to b_min, b_max). Any fixed function of the index is valid."""
    p = np.array([float(x) for x in ap])
    q = np.array([float(x) for x in aq])
    both = (p > 0) & (q > 0)
    if not both.any():
        raise NumericsUnreliableError("the two epoch pmfs share no support; refine the grid")
    beta = np.where(q > 0, np.inf, -np.inf)
    with np.errstate(divide="ignore"):
        beta[both] = np.floor(np.log(q[both] / p[both]) / eta)
    return beta, int(beta[both].min()), int(beta[both].max())


def _bucket_sums_any(vals: list[int], beta: np.ndarray, b_min: int, b_max: int) -> list[int]:
    """Exact integer sums of vals over each bucket, beta in any order."""
    out = [0] * (b_max - b_min + 1)
    for v, b in zip(vals, beta.tolist()):
        if v:
            out[b - b_min] += v
    return out


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

def replay_slack(steps: int, epochs: int, m: LowerV1) -> fmpq:
    """How far below our W_A - U_A - deleted_p another correct replay may land (docs/verifier.md, "What is
    accepted exactly"): it floors and trims by its own rule, at most trim + width 2^-F a product, carried at
    most 2 M E times; the recorded bound is ours minus this, so every such replay reaches it."""
    width = 8 * steps / m.h + m.cap / m.h + (m.b_max - m.b_min) * epochs
    products = 5 * steps.bit_length() + 4 * epochs.bit_length()
    return 2 * steps * epochs * products * (m.trim + width / fmpq(2) ** m.fixed_point_bits)


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
    if method.tail_factor:                               # two-scale (a)-(b): the splits used are recorded
        J0 = method.tail_splits[0] if method.tail_splits else first_split(sigma, method, t2)
        method = dataclasses.replace(method, tail_splits=(J0,) + tuple(method.tail_splits[1:]))
        P, Q = step_a_two_scale(sigma, method, J0, t2)
        tm["step_a"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        AP, AQ, g, led, used = step_b_two_scale(P, Q, steps, method, lambda f: prog("lower (b)", f))
        method = dataclasses.replace(method, tail_splits=used, tail_tau=None)
    else:
        P, Q = step_a(sigma, method, t2)
        tm["step_a"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        AP, AQ, g, led = step_b(P, Q, steps, method, lambda f: prog("lower (b)", f))
    tm["step_b"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    prog("lower (c)", 0.0)
    # two-scale: the body and the tail are two states of the map, bucketed each by its own ratios
    parts = [(AP.body, AQ.body), (AP.tail, AQ.tail)] if method.tail_factor else [(AP, AQ)]
    maps, n = [], 0
    for XP, XQ in parts:
        if not (XP.poly.length() or XQ.poly.length()):
            continue
        lo = min(x.off for x in (XP, XQ) if x.poly.length())
        hi = max(x.off + x.poly.length() for x in (XP, XQ) if x.poly.length())
        ap, aq = dense(XP, lo, hi - lo), dense(XQ, lo, hi - lo)
        tail_part = bool(method.tail_factor) and XP is AP.tail
        maps.append((ap, aq, *(free_bucket_map if tail_part else bucket_map)(ap, aq, float(method.eta))))
        n += hi - lo
    b_min, b_max = min(x[3] for x in maps), max(x[4] for x in maps)
    if fixed_buckets:
        b_min, b_max = method.b_min, method.b_max
    else:
        method = LowerV1(**{**method.__dict__, "b_min": b_min, "b_max": b_max})
        method.validate(steps)
    u, w = [0] * (b_max - b_min + 1), [0] * (b_max - b_min + 1)
    for ap, aq, beta, _, _ in maps:
        beta = np.clip(np.where(beta == -np.inf, b_min, np.where(beta == np.inf, b_max, beta)), b_min, b_max)
        beta = beta.astype(np.int64)
        sums = _bucket_sums if np.all(np.diff(beta) >= 0) else _bucket_sums_any
        u = [x + y for x, y in zip(u, sums(ap, beta, b_min, b_max))]
        w = [x + y for x, y in zip(w, sums(aq, beta, b_min, b_max))]
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
    slack = replay_slack(steps, epochs, method)
    exact = fmpq(W_A - U_A - deleted_p, 1 << F) - slack
    tm["step_d"] = time.perf_counter() - t3
    tm["total"] = time.perf_counter() - t0
    prog("lower (d)", 1.0)
    enc = {"W_A": exact_str(W_A, F), "U_A": exact_str(U_A, F), "deleted_p": exact_str(deleted_p, F)}
    stats = {"epoch_length": n, "lattice": g, "buckets": b_max - b_min + 1, "final_length": n2,
             "products": led.products, "max_length": led.max_length}
    return LowerResult(round_down_sig(exact, 10), exact, enc, {k: round(v, 3) for k, v in tm.items()}, stats, method,
                       ([int(x) for x in uu], [int(x) for x in ww], F), slack=slack)
