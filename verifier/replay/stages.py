"""Independent replay of a run in stages (format v5): methods lemma-c5-rounding v2 and
data-processing-lower v2 on one grid, the stages multiplied (docs/compose.md §3).

The pair of stages s = 1..S (M_s, E_s) at one sigma, or each at its own sigma_s, is the product of the
stages' pairs, so Lambda = prod_s prod_e L_{s,e}. Upper side: step (i) of replay/upper_v2.py once per
distinct sigma_s, (ii)-(iii) once per distinct (M_s, sigma_s), then (iv) prod_s R_s^{E_s} -- every
power and every product of the stages floored, clamped to k_top and trimmed as in (iv) (Epochs.mul)
-- and O = sum_k b_k min{1, e^{k eta}}; every operation is
one of the generalised Lemma C.5's, so 1 - O bounds the TV. Lower side: steps (a)-(c) of
replay/lower_v2.py once per distinct M_s, then (d) prod_s u_s^{E_s} and prod_s w_s^{E_s} with the
same clamps on both sides (one fixed map: the processed pair of a product is the product of the
processed pairs), (e) W(A) - U(A) - (1 - sum U) <= TV at sigma_low; the pmfs U, W also give the
dp / tpr kinds' lower values (kinds.py).
"""
from __future__ import annotations

import time

from flint import arb, fmpq, fmpz_poly

from ..format.strict import working_prec
from .arith import EXTRA_BITS, dyadic, release
from .epochs import Epochs
from .lattice import Lattice, Tally, grid_points, place
from .loggrid import LogCells
from .lower_v2 import LowerResult, aligned, buckets, epoch_lower, masses
from .upper_v2 import ReplayResultV2, epoch, step_i_v2, to_log_grid


def runs(claim: dict) -> list[tuple[int, int]]:
    return [(s["steps"], s["epochs"]) for s in claim["stages"]]


def _packed(r: dict) -> tuple:
    """A line's masses {j: mass} as (lo, count, width, bytes): each mass of j = lo .. lo + count - 1 in `width`
    bytes, little-endian. A line waits for step (iv) / (d) while the next line's epoch sum is formed; packed it
    weighs its bits (about 11 bytes for an 80-bit mass), as an fmpz_poly about 50."""
    lo, hi = min(r, default=0), max(r, default=-1)
    w = max((v.bit_length() for v in r.values()), default=0) // 8 + 1
    return lo, hi - lo + 1, w, b"".join(r.get(j, 0).to_bytes(w, "little", signed=True) for j in range(lo, hi + 1))


def _unpacked(line: tuple) -> tuple:
    """(lo, the fmpz_poly of the masses) of a _packed line."""
    lo, count, w, blob = line
    return lo, fmpz_poly([int.from_bytes(blob[i * w:(i + 1) * w], "little", signed=True) for i in range(count)])


def lines_of(claim: dict) -> list[tuple[int, int, fmpq]]:
    """(M_s, E_s, t_s^2 = 1/sigma_s^2) exactly: each stage's own sigma, or the claim's one sigma."""
    return [(s["steps"], s["epochs"], 1 / (x * x)) for s in claim["stages"]
            for x in [s.get("sigma", claim.get("sigma"))]]


def replay_product(claim: dict, m: dict) -> ReplayResultV2:
    t0 = time.perf_counter()
    n, T, F = m["mantissa_bits"], m["top_octave"], m["fixed_point_bits"] + EXTRA_BITS
    one = 2**F
    tally = Tally()
    lines, steps, log_grid, k_plus, fixed, tail = {}, {}, 0, 0, fmpq(0), arb(0)
    with working_prec(m["prec"]):
        points = grid_points(n, m["y_mantissa_bits"])
        for t2 in sorted({t2 for _, _, t2 in lines_of(claim)}):    # (i) once per distinct sigma
            q, moved = step_i_v2(t2, m["h"], points, F)
            steps[t2], tail = place(points, n, T, q)[0], tail + moved
            fixed += 1 - fmpq(sum(q), one)
        for M, t2 in sorted({(M, t2) for M, _, t2 in lines_of(claim)}):   # (ii)-(iii) once per distinct line
            lat = Lattice(n, T, F, True, int(m["trim"] * one / 4), tally, memo=1)  # one lattice, every level
            A = epoch(steps[t2], M, lambda b, lat=lat: lat, [n] * M.bit_length())
            lg = to_log_grid(A, n, LogCells(M, m["h"], m["eta"], m["prec"]), m["k_minus"], m["k_plus"])
            del A, lat  # the epoch sum and the lattice's memo: not alive while the next line runs
            release()
            lines[M, t2] = _packed(lg.r)
            log_grid, k_plus, fixed = log_grid + lg.log_grid, k_plus + lg.k_plus, fixed + fmpq(lg.fixed_point, one)
            del lg  # its masses as Python integers: packed above, not alive while the next line runs
            release()
        t1 = time.perf_counter()
        ep = Epochs(F, m["eta"], m["k_top"], int(m["trim"] * one / 2), m["trim_shift"])
        b = None
        for M, E, t2 in lines_of(claim):                       # (iv) each stage's power, then the product
            bs = ep.power(ep.clamp(*_unpacked(lines[M, t2])), E)
            b = bs if b is None else ep.mul(b, bs)
            del bs  # one stage's power alive at a time beside the running product
        ob, bp = b
        nneg = min(max(-ob, 0), bp.length())
        pos = int(bp.right_shift(nneg)(1))
        neg = (arb(m["eta"]) * ob).exp() * bp.truncate(nneg)(arb(m["eta"]).exp()) if nneg else arb(0)
        O = (pos + neg) / arb(one)
        O_lo = fmpq(pos + max(dyadic(neg, False, 0), 0), one)
        t2_ = time.perf_counter()
    enc = {"O": O, "mass": {"step_iv": fmpq(int(bp(1)), one)},
           "deleted": {"trim": tally.trim + fmpq(ep.trim, one), "log_grid": fmpq(log_grid, one),
                       "fixed_point": tally.fixed_point + fixed + ep.fixed_point},
           "moved": {"cap": tail, "top_octave": tally.top_octave, "k_plus": fmpq(k_plus, one),
                     "k_top": fmpq(ep.moved, one)}}
    secs = {"steps_i_iii": t1 - t0, "step_iv": t2_ - t1, "total": t2_ - t0}
    return ReplayResultV2(O=O, bound=1 - O_lo, enclosures=enc, seconds=secs, b=b, F=F,
                          allowance=fmpq(*ep.allowance.as_integer_ratio()))


def _epoch_lower(placed: list, M: int, lat: Lattice, consume: bool) -> tuple[list, list]:
    """Step (b) of one line: lower_v2.epoch_lower with every level on the one lattice `lat`, from placed = [(B, BQ)]
    (step (a)'s images, read by every line; `consume`: the list is emptied, so that the images are released at
    the first squaring -- the last line's)."""
    pair = list(placed[0])
    if consume:
        placed.clear()
    return epoch_lower(pair, M, lambda _: lat, [0] * M.bit_length())   # one level: nothing to refine


def replay_lower_product(claim: dict, sigma_low: fmpq, m: dict) -> LowerResult:
    t0 = time.perf_counter()
    t2 = 1 / (sigma_low * sigma_low)
    n, T, F = m["mantissa_bits"], m["top_octave"], m["fixed_point_bits"] + EXTRA_BITS
    one, budget = 2**F, int(m["trim"] * 2**F / 4)
    with working_prec(m["prec"]):
        points = grid_points(n, m["y_mantissa_bits"])
        p, q = masses(t2, m["h"], points, F)                    # (a) once: one sigma for every stage
    placed = [place(points, n, T, p, q)]                       # (B, BQ), read by every line
    del points, p, q  # the grid and its masses as Python integers: not alive while the lines run (peak memory)
    release()
    lines, Ms = {}, sorted({M for M, _ in runs(claim)})
    for i, M in enumerate(Ms):                                 # (b)-(c) once per distinct M
        A, AQ = _epoch_lower(placed, M, Lattice(n, T, F, False, budget, Tally()), consume=i + 1 == len(Ms))
        cells = LogCells(M, m["h"], m["eta"], m["prec"])
        lines[M] = tuple(_packed(buckets(X, n, cells, m["k_minus"], m["k_plus"])) for X in (A, AQ))
        del A, AQ, cells  # this line's epoch sums and cell edges: not alive while the next line's are formed
        release()
    del placed
    release()
    t1 = time.perf_counter()
    sides = []
    for side in (0, 1):                                        # (d) U = prod u_s^{E_s}, W = prod w_s^{E_s}
        ep, acc = Epochs(F, m["eta"], m["k_top"], budget, None, budget), None
        for M, E in runs(claim):
            x = ep.power(_unpacked(lines[M][side]), E)
            acc = x if acc is None else ep.mul(acc, x)
            del x  # one stage's power alive at a time beside the running product
        sides.append(acc)
    uc, wc = aligned(sides)  # each power read once and released (peak memory)
    wa = ua = 0
    for i, x in enumerate(wc):                                  # (e) A = {k : W_k > U_k}
        if x > uc[i]:
            wa, ua = wa + x, ua + uc[i]
    deficit = fmpq(one - sum(uc), one)
    t2_ = time.perf_counter()
    return LowerResult(bound=fmpq(wa - ua, one) - deficit, W_A=fmpq(wa, one), U_A=fmpq(ua, one),
                       deleted_p=deficit, seconds={"lines": t1 - t0, "epochs": t2_ - t1, "total": t2_ - t0},
                       pmfs=(uc, wc, F))


def _sizes(claim: dict, m: dict) -> tuple[int, int, int]:
    M = max(s["steps"] for s in claim["stages"])
    E = sum(s["epochs"] for s in claim["stages"])
    nops = 2 * M.bit_length() + sum(2 * s["epochs"].bit_length() + 2 for s in claim["stages"])
    return M, E, nops


def slack_upper(claim: dict, m: dict) -> fmpq:
    """Tolerance for the recorded O (as replay/upper_v2.slack with the largest M, the total E and one
    more product per stage): two correct replays differ by their optional deletions and floors."""
    M, E, nops = _sizes(claim, m)
    width = 2 ** (m["mantissa_bits"] + 1) * (m["top_octave"] + 1) + (m["k_plus"] - m["k_minus"]) * E
    return 2 * M * E * nops * (m["trim"] + width / fmpq(2) ** m["fixed_point_bits"])


def slack_lower(claim: dict, m: dict) -> fmpq:
    """Tolerance for W_A, U_A, deleted_p (replay/lower_v2.slack_lower with the largest M, the total E)."""
    M, E, nops = _sizes(claim, m)
    width = 2 ** (m["mantissa_bits"] + 1) * (m["top_octave"] + 1) + (m["k_plus"] - m["k_minus"]) * E
    return 2 * M * E * (3 * nops) * (m["trim"] + width / fmpq(2) ** m["fixed_point_bits"])
