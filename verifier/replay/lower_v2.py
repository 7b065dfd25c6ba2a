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
    B, BQ = place([u >> (n - nb[0]) for u in points], nb[0], T, p, q)  # G lies on level 0's lattice
    t1 = time.perf_counter()
    # (b) the epoch: P side A, Q side AQ = average over the position of the shifted coordinate;
    # level i on its own lattice (§10), one Lattice a level for both sides: B enters two sums
    A = AQ = B0 = BQ0 = A0 = AQ0 = None  # the X0: operands just replaced (released with the rest below)
    done, at, lats = 0, nb[0], {}  # steps already in A, A's level bits, a Lattice per level bits
    for i in range(M.bit_length()):
        for other in lats.values():  # operands refined onto this level are new objects: free the others' memos
            if other.n != nb[i]:
                other.memo = []
        lat = lats.setdefault(nb[i], Lattice(nb[i], T, F, False, budget, Tally()))
        if i:
            B0, BQ0 = refine(B, nb[i] - nb[i - 1]), refine(BQ, nb[i] - nb[i - 1])
            BQ, B = lat.oplus(BQ0, B0), lat.oplus(B0, B0)
            lat.forget(B0, BQ0)  # replaced: their carries would only keep them alive
        if M >> i & 1:
            if A is None:
                A, AQ, done = B, BQ, 1 << i
            else:
                A0, AQ0 = refine(A, nb[i] - at), refine(AQ, nb[i] - at)
                AQ = mix(lat.oplus(AQ0, B), done, lat.oplus(A0, BQ), 1 << i)
                A, done = lat.oplus(A0, B), done + (1 << i)
                lat.forget(A0, AQ0)
            at = nb[i]
    t2_ = time.perf_counter()
    # (c) each epoch value to its log-grid cell
    cells = LogCells(M, m["h"], m["eta"], m["prec"])
    u = buckets(A, n, cells, m["k_minus"], m["k_plus"])
    w = buckets(AQ, n, cells, m["k_minus"], m["k_plus"])
    # the epoch sums, operands, memo, the cell edges and the masses as Python integers: not alive while (d) runs
    lines = [(min(d, default=0), fmpz_poly([d.get(j, 0) for j in range(min(d, default=0), max(d, default=-1) + 1)]))
             for d in (u, w)]
    del A, AQ, B, BQ, B0, BQ0, A0, AQ0, lats, cells, u, w
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
