"""Independent replay of method `lemma-c5-rounding` v2 (docs/method-v2.md §2).

Every mass is a non-negative integer in units 2^-F (F = fixed_point_bits + 4, finer than the
certifier's), always rounded down; our own trimming deletes less than the spec allows.  Every
operation is one of the three of the generalised Lemma C.5 (§1) -- a mean-preserving two-point
rounding, a move down, a deletion -- or a floor of a mass, so the O computed here is a rigorous
lower bound on E min{1, Λ} and 1 - O a rigorous upper bound on TV:
  (i)   Y moved down to min(Y, cap), two-point rounded onto the grid G (masses from the
        stop-loss transform, as in the v1 replay), the mass above the cap put at the cap;
  (ii)  the epoch sum by binary powering with ⊕ on the multiscale lattice (lattice.py);
  (iii) L = S/M two-point rounded onto e^{j eta} with exact integer cell edges (loggrid.py),
        L >= e^{k_plus eta} moved down to it, L < e^{k_minus eta} deleted;
  (iv)  (sum_j r_j z^j)^E by binary powering (LSB first, as in (ii)), exponents above k_top
        moved down to k_top after every product, weighted trimming of the lowest exponents.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from flint import arb, fmpq, fmpz_poly

from ..format.strict import working_prec
from .arith import EXTRA_BITS, dyadic, release
from .epochs import Epochs
from .lattice import Lattice, Tally, grid_points, levels, octave_masses, place, refine
from .loggrid import LogCells, cell_sums
from .upper_v1 import ReplayResult, grid_masses, pair


def sigma_of(t2: fmpq) -> arb:
    """1/t = 1/sqrt(t^2) as a ball (the noise multiplier of the one-step pair)."""
    return 1 / arb(t2).sqrt()


@dataclass
class LogTally:
    log_grid: int = 0  # deleted below e^{k_minus eta} and at L = 0 (units 2^-F)
    k_plus: int = 0  # moved down to e^{k_plus eta}
    fixed_point: int = 0
    r: dict = field(default_factory=dict)


def epoch(step: list, M: int, lattice, nb: list[int]) -> list:
    """Step (ii): the sum of M independent steps by binary powering along the bits of M, least
    significant first: B_0 = the step, B_i = B_{i-1} ⊕ B_{i-1}, A <- A ⊕ B_i at a set bit i, every
    ⊕ of level i on lattice(nb[i]) (§10; operands of lower levels read on it first)."""
    B, A, at = step, None, nb[0]
    for i in range(M.bit_length()):
        lat = lattice(nb[i])
        if i:
            B = refine(B, nb[i] - nb[i - 1])
            B = lat.oplus(B, B)
        if M >> i & 1:
            A = B if A is None else lat.oplus(refine(A, nb[i] - at), B)
            at = nb[i]
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
        E = cells.octave(k, N, kmin, kplus, keep=False)  # each octave is read once here
        below, sums, above = cell_sums(cs, base, E, zero)
        out.log_grid += below  # L = 0 and L < e^{k_minus eta}: deleted
        sh = cells.W + k  # beta_j at octave k lies in [lo, hi] * 2^-sh
        for t, m, mj in sums:
            (j, _, lo0, hi0), (_, _, lo1, hi1) = E[t], E[t + 1]
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
    times.  The three LOOSE quantities are raw masses after the *weighted* trimming
    of (iv), which may delete up to trim / w_j of raw mass per product: their tolerance adds our
    own raw deletions and that allowance."""
    M, E, _ = pair(claim)
    nops = 2 * (M.bit_length() + E.bit_length())
    width = 2 ** (m["mantissa_bits"] + 1) * (m["top_octave"] + 1) + (m["k_plus"] - m["k_minus"]) * E
    tol = 2 * M * E * nops * (m["trim"] + width / fmpq(2) ** m["fixed_point_bits"])
    return tol, tol + rp.enclosures["deleted"]["trim"] + rp.allowance


def step_i_v2(t2: fmpq, h: fmpq, points: list[int], F: int) -> tuple[list[int], arb]:
    """Masses on G (units 2^-F, rounded down) for Y moved down to min(Y, cap), and Pr(Y > cap).
    The cells below the cap are those of the v1 step (i) (the v1 replay's stop-loss form); the
    mass 1 - F0(cap) that v1 deletes is added at the cap."""
    q, tail = grid_masses(sigma_of(t2), h, points, F)
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
        nb = levels(m, M)
        step = place((u >> (n - nb[0]) for u in points), nb[0], T, q)[0]  # G lies on level 0's lattice
        mass_i = fmpq(sum(q), one)
        del points, q  # not read again: not alive in step (ii), their pages given back before it
        release()
        tally.fixed_point += 1 - mass_i
        t1 = time.perf_counter()
        # ---- (ii) the epoch sum: binary powering along the bits of M with ⊕ ---------------
        budget = int(m["trim"] * one / 4)  # spec: trim/2 per ⊕
        lats = {}  # one Lattice per level bits: it keeps the last operand's carries (B enters two ⊕)

        def lattice(b: int) -> Lattice:  # a level's operands are refined onto the next lattice (new objects):
            for other in lats.values():   # the other lattices' memos can only keep dead operands alive
                if other.n != b:
                    other.memo = []
            return lats.setdefault(b, Lattice(b, T, F, True, budget, tally, memo=1))
        A = epoch(step, M, lattice, nb)
        mass_ii = fmpq(sum(int(p(1)) for p in A if p is not None), one)
        t2_ = time.perf_counter()
        # ---- (iii) L = S/M onto the log grid -------------------------------------------------
        cells = LogCells(M, m["h"], m["eta"], m["prec"])
        lg = to_log_grid(A, n, cells, m["k_minus"], m["k_plus"])
        del A
        lats.clear()
        release()  # the epoch sum and the lattices' memo: not alive while (iv) runs (peak memory)
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
