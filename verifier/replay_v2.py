"""Independent replay of method `lemma-c5-rounding` v2 (docs/method-v2.md §2).

Every mass is a non-negative integer in units 2^-F (F = fixed_point_bits + 4, finer than the
certifier's), always rounded down; our own trimming deletes less than the spec allows.  Every
operation is one of the three of the generalised Lemma C.5 (§1) -- a mean-preserving two-point
rounding, a move down, a deletion -- or a floor of a mass, so the O computed here is a rigorous
lower bound on E min{1, Λ} and 1 - O a rigorous upper bound on TV:
  (i)   Y moved down to min(Y, cap), two-point rounded onto the grid G (masses from the
        stop-loss transform, as in the v1 replay), the mass above the cap put at the cap;
  (ii)  the epoch sum by binary powering with ⊕ on the multiscale lattice (multiscale.py);
  (iii) L = S/M two-point rounded onto e^{j eta} with exact integer cell edges (loggrid.py),
        L >= e^{k_plus eta} moved down to it, L < e^{k_minus eta} deleted;
  (iv)  (sum_j r_j z^j)^E by binary powering (LSB first, as in (ii)), exponents above k_top
        moved down to k_top after every product, weighted trimming of the lowest exponents.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from itertools import accumulate

from flint import arb, fmpq, fmpz_poly

from .loggrid import LogCells, dyadic
from .multiscale import Lattice, Tally
from .replay import EXTRA_BITS, ReplayResult, step_i
from .strict import working_prec


def pair(claim: dict) -> tuple[int, int, fmpq]:
    """(M, epochs in step (iv), t^2) of the certified pair (method-v2.md §3): random allocation
    (P_M^E, Q_M^E) at t^2 = 1/sigma^2; fixed bins (P_M, Q_M) at t^2 = E/sigma^2, exactly."""
    M, E, s = claim["steps"], claim["epochs"], claim["sigma"]
    if claim.get("scheme", "random-allocation") == "fixed-bins":
        return M, 1, fmpq(E) / (s * s)
    return M, E, 1 / (s * s)


def sigma_of(t2: fmpq) -> arb:
    """1/t = 1/sqrt(t^2) as a ball (the noise multiplier of the one-step pair)."""
    return 1 / arb(t2).sqrt()


def grid_points(n: int, ybits: list[int]) -> list[int]:
    """The grid G of §2 (i) in units of h: octave 0 j = i 2^{n-b_0} (0 <= i < 2^{b_0+1}),
    octave k >= 1 2^k (N + i 2^{n-b_k}) (0 <= i < 2^{b_k}), then cap = 2^{K+1} N."""
    N, K = 1 << n, len(ybits) - 1
    pts = [i << (n - ybits[0]) for i in range(1 << (ybits[0] + 1))]
    for k in range(1, K + 1):
        pts += [(N + (i << (n - ybits[k]))) << k for i in range(1 << ybits[k])]
    return pts + [N << (K + 1)]


def place(points: list[int], n: int, T: int, *masses: list[int]) -> list:
    """Masses at grid points (units of h) as distributions on ML (multiscale.py layout), one per
    list of masses."""
    N = 1 << n
    where = []
    for u in points:
        k = max(u.bit_length() - n - 1, 0)
        where.append((k, u if k == 0 else (u >> k) - N))
    out = []
    for ms in masses:
        octs = [None] * (T + 1)
        for (k, i), m in zip(where, ms):
            if m:
                if octs[k] is None:
                    octs[k] = [0] * (2 * N if k == 0 else N)
                octs[k][i] += m
        out.append([None if o is None else fmpz_poly(o) for o in octs])
    return out


def cell_sums(cs: list[int], base: int, edges: list, zeroth: int, moment: bool = True):
    """For masses cs at the indices base + i and cell edges [(j, c_j)]: the mass below the first
    edge, [(j, sum s_m, sum m s_m)] for each non-empty cell [c_j, c_{j+1}), the mass from the last
    edge on (`zeroth` = the mass at the value 0, if any; moment=False: sum m s_m not needed)."""
    L = len(cs)
    p0 = list(accumulate(cs, initial=0))  # prefix sums of s_i and of i s_i
    p1 = list(accumulate(map(int.__mul__, range(L), cs), initial=0)) if moment else None
    cut = [min(max(c - base, 0), L) for _, c in edges]
    cells = []
    for t in range(len(edges) - 1):
        i0, i1 = cut[t], cut[t + 1]
        if i1 > i0 and p0[i1] != p0[i0]:
            m = p0[i1] - p0[i0]
            cells.append((edges[t][0], m, p1[i1] - p1[i0] + base * m if moment else 0))
    return zeroth + p0[cut[0]], cells, p0[L] - p0[cut[-1]]


def octave_masses(p, k: int, N: int) -> tuple[list[int], int, int]:
    """(masses as ints, real index of the first, mass at the value 0)."""
    cs = [int(x) for x in p.coeffs()]
    if k == 0:
        return cs[1:], 1, cs[0]
    return cs, N, 0


@dataclass
class LogTally:
    log_grid: int = 0  # deleted below e^{k_minus eta} and at L = 0 (units 2^-F)
    k_plus: int = 0  # moved down to e^{k_plus eta}
    fixed_point: int = 0
    r: dict = field(default_factory=dict)


def epoch(step: list, M: int, lat: Lattice) -> list:
    """Step (ii): the sum of M independent steps by binary powering along the bits of M, least
    significant first: B_0 = the step, A <- A ⊕ B_i at a set bit i, B_{i+1} = B_i ⊕ B_i."""
    B, A = step, None
    for i in range(M.bit_length()):
        if M >> i & 1:
            A = B if A is None else lat.oplus(A, B)
        if i + 1 < M.bit_length():
            B = lat.oplus(B, B)
    return A


def to_log_grid(D: list, n: int, cells: LogCells, kmin: int, kplus: int) -> LogTally:
    """Step (iii): each value 2^k h m, L = 2^k h m / M, two-point rounded onto e^{j eta}; a cell
    [c_j, c_{j+1}) needs only sum s_m and sum m s_m; its masses are lower bounds computed with
    the interval ends of beta_j, beta_{j+1} that make each smaller (never rounded up)."""
    N, out = 1 << n, LogTally()
    r = out.r
    for k, p in enumerate(D):
        if p is None:
            continue
        cs, base, zero = octave_masses(p, k, N)
        E = cells.octave(k, N, kmin, kplus)
        below, sums, above = cell_sums(cs, base, E, zero)
        out.log_grid += below  # L = 0 and L < e^{k_minus eta}: deleted
        sh = cells.W + k  # beta_j at octave k lies in [lo, hi] * 2^-sh
        for j, m, mj in sums:
            (lo0, hi0), (lo1, hi1) = cells.interval(j), cells.interval(j + 1)
            den, mj = hi1 - lo0, mj << sh
            up = max(mj - hi0 * m, 0) // den
            dn = max(lo1 * m - mj, 0) // den
            r[j] = r.get(j, 0) + dn
            r[j + 1] = r.get(j + 1, 0) + up
            out.fixed_point += m - up - dn
        if above:  # at or above e^{k_plus eta}: moved down to it
            r[kplus] = r.get(kplus, 0) + above
            out.k_plus += above
    return out


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
        return off, p.truncate(n) + fmpz_poly([hi]).left_shift(n - 1)

    def _weight(self, j: int) -> float:
        if self.shift is None:
            return 1.0
        return math.exp(min(0.0, j * self.eta + self.shift)) * (1 + 1e-9)

    def trim_low(self, off: int, p):
        """Delete the lowest n coefficients, n the largest with w_{off+n-1} * (their mass) <=
        budget (an upper bound on their weighted mass: w is increasing)."""
        L = p.length()
        ok = lambda n: n == 0 or self._weight(off + n - 1) * float(int(p.truncate(n)(1))) <= self.budget
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
        (ox, px), (oy, py) = X, Y
        q = px * py  # exact, units 2^-2F
        f = q // 2**self.F  # floor
        self.fixed_point += fmpq(int(q(1) - f(1) * 2**self.F), 2 ** (2 * self.F))
        return self.trim_low(*self.clamp(ox + oy, f))

    def power(self, X, e: int):
        """X^e by binary powering along the bits of e, least significant first (as in (ii))."""
        out = None
        while e:
            if e & 1:
                out = X if out is None else self.mul(out, X)
            e >>= 1
            if e:
                X = self.mul(X, X)
        return out


@dataclass
class ReplayResultV2(ReplayResult):
    allowance: fmpq = field(default_factory=fmpq)  # see Epochs.allowance


# mass.step_iv, deleted.trim and moved.k_top are raw masses after the weighted trimming of (iv)
LOOSE = (("mass", "step_iv"), ("deleted", "trim"), ("moved", "k_top"))


def slack(claim: dict, m: dict, rp: ReplayResultV2) -> tuple[fmpq, fmpq]:
    """Tolerances (tol, loose) for the recorded enclosures (method-v2.md §2, "Fixed point,
    enclosures"): two correct implementations differ by their optional deletions -- at most
    trim/2 per ⊕ and trim per product of (iv) -- and their floors (under 2^-F per coefficient),
    a mass deleted in a block of steps entering the epoch sum at most M times and O at most E
    times; plus 1e-12.  The three LOOSE quantities are raw masses after the *weighted* trimming
    of (iv), which may delete up to trim / w_j of raw mass per product: their tolerance adds our
    own raw deletions and that allowance."""
    M, E, _ = pair(claim)
    nops = 2 * (M.bit_length() + E.bit_length())
    width = 2 ** (m["mantissa_bits"] + 1) * (m["top_octave"] + 1) + (m["k_plus"] - m["k_minus"]) * E
    tol = fmpq(1, 10**12) + 2 * M * E * nops * (m["trim"] + width / fmpq(2) ** m["fixed_point_bits"])
    return tol, tol + rp.enclosures["deleted"]["trim"] + rp.allowance


def step_i_v2(t2: fmpq, h: fmpq, points: list[int], F: int) -> tuple[list[int], arb]:
    """Masses on G (units 2^-F, rounded down) for Y moved down to min(Y, cap), and Pr(Y > cap).
    The cells below the cap are those of the v1 step (i) (the v1 replay's stop-loss form); the
    mass 1 - F0(cap) that v1 deletes is added at the cap."""
    q, tail = step_i(sigma_of(t2), h, points, F)
    q[-1] += dyadic(tail, False, F) if tail.lower() > 0 else 0
    return q, tail


def replay_v2(claim: dict, m: dict) -> ReplayResult:
    t0 = time.perf_counter()
    M, E, t2 = pair(claim)
    n, T, F = m["mantissa_bits"], m["top_octave"], m["fixed_point_bits"] + EXTRA_BITS
    one = 2**F
    tally = Tally()
    with working_prec(m["prec"]):
        # ---- (i) one step on G, the mass above the cap moved to the cap ---------------------
        points = grid_points(n, m["y_mantissa_bits"])
        q, tail = step_i_v2(t2, m["h"], points, F)
        step = place(points, n, T, q)[0]
        mass_i = fmpq(sum(q), one)
        tally.fixed_point += 1 - mass_i
        t1 = time.perf_counter()
        # ---- (ii) the epoch sum: binary powering along the bits of M with ⊕ ---------------
        A = epoch(step, M, Lattice(n, T, F, True, int(m["trim"] * one / 4), tally))  # spec: trim/2 per ⊕
        mass_ii = fmpq(sum(int(p(1)) for p in A if p is not None), one)
        t2_ = time.perf_counter()
        # ---- (iii) L = S/M onto the log grid -------------------------------------------------
        cells = LogCells(M, m["h"], m["eta"], m["prec"])
        lg = to_log_grid(A, n, cells, m["k_minus"], m["k_plus"])
        r = lg.r
        lo = min(r) if r else 0
        R = (lo, fmpz_poly([r.get(j, 0) for j in range(lo, max(r) + 1)] if r else []))
        mass_iii = fmpq(sum(r.values()), one)
        t3 = time.perf_counter()
        # ---- (iv) E epochs ---------------------------------------------------------------------
        ep = Epochs(F, m["eta"], m["k_top"], int(m["trim"] * one / 2), m["trim_shift"])
        b = ep.power(ep.clamp(*R), E)
        ob, bp = b
        nneg = min(max(-ob, 0), bp.length())
        pos = int(bp.right_shift(nneg)(1))  # exponents >= 0: weight min{1, e^{j eta}} = 1
        neg = (arb(m["eta"]) * ob).exp() * bp.truncate(nneg)(arb(m["eta"]).exp()) if nneg else arb(0)
        O = (pos + neg) / arb(one)
        O_lo = fmpq(pos + max(dyadic(neg, False, 0), 0), one)
        mass_iv = fmpq(int(bp(1)), one)
        t4 = time.perf_counter()
    enc = {"O": O, "mass": {"step_i": mass_i, "step_ii": mass_ii, "step_iii": mass_iii, "step_iv": mass_iv},
           "deleted": {"trim": tally.trim + fmpq(ep.trim, one), "log_grid": fmpq(lg.log_grid, one),
                       "fixed_point": tally.fixed_point + fmpq(lg.fixed_point, one) + ep.fixed_point},
           "moved": {"cap": tail, "top_octave": tally.top_octave, "k_plus": fmpq(lg.k_plus, one),
                     "k_top": fmpq(ep.moved, one)}}
    secs = {"step_i": t1 - t0, "step_ii": t2_ - t1, "step_iii": t3 - t2_, "step_iv": t4 - t3, "total": t4 - t0}
    return ReplayResultV2(O=O, bound=1 - O_lo, enclosures=enc, seconds=secs, b=b, F=F,
                          allowance=fmpq(*ep.allowance.as_integer_ratio()))
