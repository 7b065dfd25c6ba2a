"""Independent replay of method `data-processing-lower` v2 (docs/method-v2.md §4).

By data processing TV(T#P, T#Q) <= TV(P, Q) for the fixed map T of §4 (a)-(d): each step to
the largest point of the grid G below it, the epoch sum on the multiscale lattice with the
floor carry and the top clamp (lattice.py, two_point=False), the epoch value to its log-grid
cell (loggrid.py), the E cells added with partial sums clamped at k_top.  Every mass on both
sides is an integer in units 2^-F rounded down; the P image is a probability distribution, so
for A = {k : W_k > U_k}
    TV >= W(A) - U(A) >= sum_k max(W_k - U_k, 0) - (1 - sum_k U_k),
an exact rational: the deficit 1 - sum_k U_k pays for every floor and trim on the P side, and a
Q-side floor or trim only lowers W.  (As in lower_v1.py for method v1.)
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from flint import arb, fmpq, fmpz_poly

from ..format.strict import working_prec
from .arith import EXTRA_BITS, dyadic, release
from .epochs import Epochs
from .lattice import Lattice, Tally, grid_points, levels, octave_masses, place, refine
from .loggrid import LogCells, cell_sums
from .upper_v2 import pair, sigma_of


def masses(t2: fmpq, h: fmpq, points: list[int], F: int) -> tuple[list[int], list[int]]:
    """Step (a): P and Q masses of the cells [g_i, g_{i+1}) and [cap, inf), rounded down, from
    the upper tails 2(1 - F0(y)) = erfc((s ln y + 1/(2s))/sqrt 2), 2(1 - F1(y)) likewise with
    - 1/(2s) (s = 1/t; no cancellation against 1 in the far tail)."""
    r2 = arb(2).sqrt()
    a = sigma_of(t2) / r2  # 2(1 - F0(u h)) = erfc(a ln u + b0 + c), 2(1 - F1(u h)) = erfc(... - c)
    b0, c = a * arb(h).log(), 1 / (4 * a)  # c = 1/(2 sigma sqrt 2)

    def tails(u):
        if u == 0:
            return arb(2), arb(2)
        x = a * arb(u).log() + b0
        return (x + c).erfc(), (x - c).erfc()

    down = lambda x: max(dyadic(x, False, F - 1), 0) if x.is_finite() else 0  # x/2 in units 2^-F
    n, small = len(points), arb(2) ** (1 - F)
    # cells [u_i, u_{i+1}) with i < lo or hi <= i < n - 1 have P and Q masses below 2^-F (0 in units
    # 2^-F however computed): both are at most F0(u_{i+1}) on the left (F1 <= F0 below 1) and at
    # most 1 - F1(u_i) on the right (1 - F0 <= 1 - F1); F0, F1 increase, so one rigorous test each
    x0 = lambda u: a * arb(u).log() + b0  # noqa: E731
    left = lambda i: points[i] == 0 or bool((-(x0(points[i]) + c)).erfc() < small)  # noqa: E731  2 F0 < 2^(1-F)
    right = lambda i: points[i] > 0 and bool((x0(points[i]) - c).erfc() < small)  # noqa: E731  2(1 - F1) < 2^(1-F)
    lo, hi = 0, n - 1
    if n > 2 and left(0):
        i, j = 0, n - 1
        while j - i > 1:
            m = (i + j) // 2
            i, j = (m, j) if left(m) else (i, m)
        lo = j if left(j) else i
    if n > 2 and lo < n - 2 and right(n - 2):
        i, j = lo, n - 2
        while j - i > 1:
            m = (i + j) // 2
            i, j = (i, m) if right(m) else (m, j)
        hi = max(i if right(i) else j, lo)
    p, q = [0] * (n - 1), [0] * (n - 1)
    prev = tails(points[lo])
    for k in range(lo, hi):
        cur = tails(points[k + 1])
        p[k], q[k] = down(prev[0] - cur[0]), down(prev[1] - cur[1])
        prev = cur
    if hi < n - 1:
        prev = tails(points[-1])
    return p + [down(prev[0])], q + [down(prev[1])]


def mix(X: list, a: int, Y: list, b: int) -> list:
    """floor((a X + b Y)/(a + b)) octave by octave (the Q side's average, §4 (b))."""
    out = []
    for x, y in zip(X, Y):
        s = (None if x is None else a * x, None if y is None else b * y)
        s = s[0] if s[1] is None else s[1] if s[0] is None else s[0] + s[1]
        out.append(None if s is None else s // (a + b))
    return out


def buckets(D: list, n: int, cells: LogCells, kmin: int, kplus: int) -> dict:
    """Step (c): the value 2^k h m to the cell j of its epoch value, clamped to
    [k_minus, k_plus] (the value 0 to k_minus); returns {j: mass}."""
    N, u = 1 << n, {}
    for k, p in enumerate(D):
        if p is None:
            continue
        cs, base, zero = octave_masses(p, k, N)
        E = cells.octave(k, N, kmin, kplus)
        below, sums, above = cell_sums(cs, base, E, zero, moment=False)
        for j, m in [(kmin, below), (kplus, above)] + [(E[t][0], m) for t, m, _ in sums]:
            u[j] = u.get(j, 0) + m
    return {j: v for j, v in u.items() if v}


def mix_consuming(X: list, a: int, Y: list, b: int) -> list:
    """mix(X, a, Y, b), each octave of X and Y dropped once read (X and Y are emptied to None): the two sums
    and the average are never all alive at once."""
    out = []
    for k in range(len(X)):
        out.append(mix([X[k]], a, [Y[k]], b)[0])
        X[k] = Y[k] = None
    return out


def epoch_lower(placed: list, M: int, lattice, nb: list[int]) -> tuple[list, list]:
    """Step (b): the P side A and the Q side AQ of M steps, binary powering along the bits of M from
    placed = [B, BQ] (step (a)'s images; the list is emptied, so that they are released at the first
    squaring): B_i = B_{i-1} ⊕ B_{i-1}, BQ_i = BQ_{i-1} ⊕ B_{i-1}; at a set bit i (not the first)
    AQ <- mix(AQ ⊕ B_i, A ⊕ BQ_i) with weights (done, 2^i), then A <- A ⊕ B_i.  Level i's sums on
    lattice(nb[i]) (§10), operands of lower levels refined onto it first.  The sums are those of the loop
    it replaces, in the same order; only lifetimes differ: each operand is dropped (and leaves its lattice's
    memo, whose carries would keep it alive) as soon as no later sum reads it, BQ_i before the last sum of
    the last bit, and the Q side's average consumes its two sums octave by octave."""
    B, BQ = placed
    placed.clear()
    A = AQ = None
    done, at, last = 0, nb[0], M.bit_length() - 1
    for i in range(last + 1):
        lat = lattice(nb[i])
        if i:
            B, BQ = refine(B, nb[i] - nb[i - 1]), refine(BQ, nb[i] - nb[i - 1])
            X = lat.oplus(BQ, B)
            lat.forget(BQ)
            BQ = X
            B0, B = B, None
            B = lat.oplus(B0, B0)
            lat.forget(B0)
            del B0, X
            release()
        if M >> i & 1:
            if A is None:
                A, AQ, done = B, BQ, 1 << i
            else:
                A, AQ = refine(A, nb[i] - at), refine(AQ, nb[i] - at)
                X = lat.oplus(AQ, B)
                lat.forget(AQ)
                AQ = None
                Y = lat.oplus(A, BQ)
                if i == last:  # BQ is read by no later sum
                    lat.forget(BQ)
                    BQ = None
                X = mix_consuming(X, done, Y, 1 << i)
                del Y
                A0, A = A, None
                A, AQ, done = lat.oplus(A0, B), X, done + (1 << i)
                lat.forget(A0)
                del A0, X
                release()
            at = nb[i]
    return A, AQ


def aligned(sides: list) -> tuple[list, list]:
    """The two E-fold powers [(offset, poly), (offset, poly)] as integer lists on one index range, each
    polynomial read coefficient by coefficient and released once read (`sides` is emptied): the peak holds
    one polynomial and the lists, not both polynomials, a list of their coefficient objects and the lists."""
    o, out = min(off for off, _ in sides), []
    while sides:
        off, p = sides.pop(0)
        out.append([0] * (off - o) + [int(p[i]) for i in range(p.length())])
        del p
    uc, wc = out
    uc += [0] * (len(wc) - len(uc))
    wc += [0] * (len(uc) - len(wc))
    return uc, wc


@dataclass
class LowerResult:  # exact rationals: bound = W_A - U_A - deleted_p
    bound: fmpq
    W_A: fmpq
    U_A: fmpq
    deleted_p: fmpq
    seconds: dict
    pmfs: tuple | None = None  # (U, W, F): the image's integer pmfs, lower bounds in units 2^-F (the kinds)


def replay_lower_v2(claim: dict, sigma_low: fmpq, m: dict) -> LowerResult:
    t0 = time.perf_counter()
    M, E, _ = pair(claim)
    t2 = pair(dict(claim, sigma=sigma_low))[2]
    n, T, F = m["mantissa_bits"], m["top_octave"], m["fixed_point_bits"] + EXTRA_BITS
    one, budget = 2**F, int(m["trim"] * 2**F / 4)  # spec: trim per sum or product
    with working_prec(m["prec"]):
        points = grid_points(n, m["y_mantissa_bits"])
        p, q = masses(t2, m["h"], points, F)
    nb = levels(m, M)
    placed = place([u >> (n - nb[0]) for u in points], nb[0], T, p, q)  # G lies on level 0's lattice
    del points, p, q  # the grid and its masses as Python integers: not alive while (b) runs (peak memory)
    release()
    t1 = time.perf_counter()
    # (b) the epoch: P side A, Q side AQ = average over the position of the shifted coordinate;
    # level i on its own lattice (§10), one Lattice a level for both sides: B enters two sums
    lats = {}  # a Lattice per level bits

    def lattice(b: int) -> Lattice:  # operands refined onto this level are new objects: free the others' memos
        for other in lats.values():
            if other.n != b:
                other.memo = []
        return lats.setdefault(b, Lattice(b, T, F, False, budget, Tally()))
    A, AQ = epoch_lower(placed, M, lattice, nb)
    t2_ = time.perf_counter()
    # (c) each epoch value to its log-grid cell
    cells = LogCells(M, m["h"], m["eta"], m["prec"])
    u = buckets(A, n, cells, m["k_minus"], m["k_plus"])
    w = buckets(AQ, n, cells, m["k_minus"], m["k_plus"])
    # the epoch sums, operands, memo, the cell edges and the masses as Python integers: not alive while (d) runs
    lines = [(min(d, default=0), fmpz_poly([d.get(j, 0) for j in range(min(d, default=0), max(d, default=-1) + 1)]))
             for d in (u, w)]
    del A, AQ, cells, u, w
    lats.clear()  # the lattices and their memos
    release()
    t3 = time.perf_counter()
    # (d) E epochs: cells added, partial sums above k_top clamped (our trim: raw mass, low end)
    sides = []
    while lines:
        ep = Epochs(F, m["eta"], m["k_top"], budget, None, budget)
        sides.append(ep.power(lines.pop(0), E))   # each line released once its power is formed
    uc, wc = aligned(sides)
    wa = ua = 0
    for i, x in enumerate(wc):  # (e) A = {k : W_k > U_k}
        if x > uc[i]:
            wa, ua = wa + x, ua + uc[i]
    deficit = fmpq(one - sum(uc), one)
    t4 = time.perf_counter()
    secs = {"masses": t1 - t0, "epoch": t2_ - t1, "buckets": t3 - t2_, "epochs": t4 - t3, "total": t4 - t0}
    return LowerResult(bound=fmpq(wa - ua, one) - deficit, W_A=fmpq(wa, one), U_A=fmpq(ua, one),
                       deleted_p=deficit, seconds=secs, pmfs=(uc, wc, F))


def slack_lower(claim: dict, m: dict) -> fmpq:
    """Tolerance for the recorded W_A, U_A, deleted_p: two correct implementations of the same
    fixed map differ by their deletions (at most trim per sum or product, on either side) and
    floors (under 2^-F per coefficient), amplified at most M E times."""
    M, E, _ = pair(claim)
    nops = 6 * M.bit_length() + 4 * E.bit_length()  # P and Q sides
    width = 2 ** (m["mantissa_bits"] + 1) * (m["top_octave"] + 1) + (m["k_plus"] - m["k_minus"]) * E
    return 2 * M * E * nops * (m["trim"] + width / fmpq(2) ** m["fixed_point_bits"])
