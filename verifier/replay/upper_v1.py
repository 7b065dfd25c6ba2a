"""Independent replay of method `lemma-c5-rounding` v1 (docs/certificate.md §4).

Every mass is a non-negative integer in units of 2^-F (F = our own fixed-point
scale), always rounded *down*; deleting mass is always allowed.  By Lemma C.5
(mean-preserving two-point rounding lowers E min{1, Λ}) and because deleting mass
lowers it too, the O computed here is a rigorous lower bound on E min{1, Λ},
so 1 - O is a rigorous upper bound on TV.  Arithmetic (see docs/verifier.md):
  (i)   masses from second differences of the convex stop-loss transform
        G(y) = E(y - Y)_+ (put form below 1, call form above), in arb;
  (ii)  exact fmpz_poly products, floor back to 2^-F, own trimming (<= trim/2 per end);
  (iii) exact integer prefix sums and integer (dyadic) bounds on the cell edges;
  (iv)  fmpz_poly powers again; O from one arb polynomial evaluation.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from flint import arb, ctx, fmpq, fmpz_poly

from ..format.strict import working_prec
from .arith import EXTRA_BITS, FixedPoly, Losses, dyadic, poly_sum, units


def pair(claim: dict) -> tuple[int, int, fmpq]:
    """(M, epochs in step (iv), t^2) of the certified pair (method-v2.md §3): random allocation
    (P_M^E, Q_M^E) at t^2 = 1/sigma^2; fixed bins (P_M, Q_M) at t^2 = E/sigma^2, exactly."""
    M, E, s = claim["steps"], claim["epochs"], claim["sigma"]
    if claim.get("scheme", "random-allocation") == "fixed-bins":
        return M, 1, fmpq(E) / (s * s)
    return M, E, 1 / (s * s)


def pair_sigma(t2: fmpq) -> arb:
    """The pair's noise multiplier 1/sqrt(t^2), a 400-bit ball (sigma/sqrt(E) is irrational in general)."""
    with working_prec(400):
        return 1 / arb(t2).sqrt()


def negligible_ends(points: list[int], F: int, z) -> tuple[int, int]:
    """(lo, hi): every point k < lo or hi <= k < last carries a step-(i) mass below 2^-F, so its
    mass in units 2^-F is 0 however it is computed (a ball containing it has a lower end < 1 unit).
    z(u) = (ln(u h) + t^2/2)/(t sqrt 2), so 2 F0(u h) = erfc(-z) and 2 (1 - F0(u h)) = erfc(z).
    The mass put at y_k is at most F0(y_{k+1}) (the cells on either side send it at most their mass)
    and at most 1 - F0(y_{k-1}); F0 is increasing, so one rigorous test at lo (F0(y_lo) < 2^-F) and
    at hi - 1 (1 - F0(y_{hi-1}) < 2^-F) covers every point beyond. Found by bisection (any valid
    pair would do: the skipped masses are 0 either way, so the replay's numbers do not change)."""
    n, small = len(points), arb(2) ** (1 - F)
    left = lambda i: points[i] == 0 or bool((-z(points[i])).erfc() < small)  # noqa: E731
    right = lambda i: points[i] > 0 and bool(z(points[i]).erfc() < small)  # noqa: E731
    a, b = 0, n - 1                    # largest lo with left(lo): F0(y_lo) < 2^-F, so p_k = 0 for k < lo
    if not left(0):
        lo = 0
    else:
        while b - a > 1:
            m = (a + b) // 2
            a, b = (m, b) if left(m) else (a, m)
        lo = b if left(b) else a
    a, b = lo, n - 2                   # smallest r with right(r): p_k = 0 for r + 1 <= k <= n - 2
    if n < 3 or b <= a or not right(b):
        return lo, n - 1
    while b - a > 1:
        m = (a + b) // 2
        a, b = (a, m) if right(m) else (m, b)
    r = a if right(a) else b
    return lo, max(r + 1, lo)


def grid_masses(sigma: fmpq, h: fmpq, points: list[int], F: int, moved: bool = False, band: bool = False):
    """The masses p_k of step (i) at the grid points u*h.  G(y) = E(y-Y)_+ = y F0(y) - F1(y) is convex with G' = F0,
    and the mass that the two-point rounding of Y onto the grid puts at a grid point
    is the jump of the slope of the piecewise-linear interpolant of G there:
        p_k = slope(y_k, y_{k+1}) - slope(y_{k-1}, y_k),  slope(-, 0) = 0,  slope(cap, +) = F0(cap).
    (Summing the cell formulas of the spec for the two cells next to y_k gives this.)
    Above y = 1 we use the call form C(y) = E(Y-y)_+ = G(y) - y + 1 (same differences),
    so the far tail keeps relative precision.  With `moved` (method key "above_cap": "moved") Y
    above the cap is first moved down to the cap, so the slope beyond the cap is 1 (all mass).
    With `band` (method key "band_low", method-v2.md §8) the grid starts at y_0 = band_low > 0 and
    Y < y_0 is deleted: the slope left of y_0 is taken as F0(y_0), so p_0 is what the cell (y_0, y_1]
    sends down, and the deleted mass F0(y_0) is returned as well.
    With s = sigma, ln-argument x = ln y:
    F0 = Phi(s x + 1/(2s)), F1 = Phi(s x - 1/(2s)), 2 Phi(-u) = erfc(u / sqrt 2)."""
    r2 = arb(2).sqrt()
    a, c = arb(sigma) / r2, 1 / (2 * arb(sigma) * r2)
    ah, lnh, hp, hq = arb(h), arb(h).log(), int(h.p), int(h.q)

    def two_v(u: int, call: bool):  # 2 G(u h) (put form) or 2 C(u h) (call form)
        if u == 0:
            return arb(2) if call else arb(0)
        y, x = ah * u, a * (arb(u).log() + lnh)
        if call:
            return (x - c).erfc() - y * (x + c).erfc()
        return y * (-(x + c)).erfc() - (-(x - c)).erfc()

    n = len(points)
    call = [points[k + 1] * hp > hq for k in range(n - 1)]  # cell k = (y_k, y_{k+1}]
    inv = {}  # 1 / (cell width), one ball per distinct width

    done = {}  # the last value of two_v: a cell's right end is the next cell's left end (same form)

    def slope(k: int):  # of 2G (or 2C) on cell k: the same balls whichever cells are computed
        w = points[k + 1] - points[k]
        if w not in inv:
            inv[w] = 1 / (ah * w)
        left = done.get((k, call[k]))
        left = two_v(points[k], call[k]) if left is None else left
        right = two_v(points[k + 1], call[k])
        done.clear()
        done[(k + 1, call[k])] = right
        return (right - left) * inv[w]

    lo, hi = negligible_ends(points, F, lambda u: ((arb(u).log() + lnh) * a + c))
    ycap = (arb(points[-1]).log() + lnh) * a + c
    tail = ycap.erfc()  # 2 (1 - F0(cap)): mass deleted (or moved to the cap) above the cap
    if moved:  # 2 G' = 2 beyond the cap (0 in the call form): the tail lands on the cap
        last = arb(0) if call[-1] else arb(2)
    else:
        last = -tail if call[-1] else 2 - tail  # 2 F0(cap) (minus 2 in the call form)
    first, below = arb(0), arb(0)
    if band:  # 2 F0(y_0) = erfc(-(x_0 + c)), in the put form (the slope left of y_0 is G'(y_0) = F0(y_0))
        first = (-((arb(points[0]).log() + lnh) * a + c)).erfc()
        below = first / 2
        if call[0]:
            first -= 2
    ends = {-1: (first, call[0] if band else False), n - 1: (last, call[-1])}

    def ext(k: int):  # (the slope of 2G or 2C on cell k, its form): one cell at a time, none kept
        return ends[k] if k in ends else (slope(k), call[k])
    q, left = [0] * n, None  # left: (k - 1, ext(k - 1)) from the point before
    for k in [*range(lo, hi), n - 1] if hi < n - 1 else range(lo, n):  # p_k = (jump of the slope of 2G) / 2
        (s0, k0) = left[1] if left is not None and left[0] == k - 1 else ext(k - 1)
        s1, k1 = here = ext(k)
        q[k] = units(((s1 - s0) + (2 if k1 and not k0 else 0)) / 2, F)  # 2G' = 2C' + 2
        left = (k, here)
    return (q, tail / 2, below) if band else (q, tail / 2)


@dataclass
class ReplayResult:
    O: arb
    bound: fmpq  # exact: 1 - (rigorous lower end of O)
    enclosures: dict
    seconds: dict
    b: tuple = None  # (offset, fmpz_poly): the b_k of step (iv) in units 2^-F (format v2 rows)
    F: int = 0


def replay(claim: dict, method: dict) -> ReplayResult:
    """Lemma C.5 (i)-(iv) from `claim` and `method` alone (docs/certificate.md §4)."""
    M, E, t2 = pair(claim)  # fixed bins (format v4): the one-epoch pair at t^2 = E/sigma^2
    m = method
    P = FixedPoly(m["fixed_point_bits"] + EXTRA_BITS, m["trim"], Losses())
    moved = m.get("above_cap") == "moved"  # format v3's optional key (checked there)
    K = lambda g: int((m["truncation"] / (m["h"] * g)).floor())  # largest lattice index <= truncation
    t = [time.perf_counter()]
    with working_prec(m["prec"]):
        sigma = pair_sigma(t2) if claim.get("scheme") == "fixed-bins" else claim["sigma"]
        p, cap_del, mass_i = step_i(sigma, m, K(1), P, moved)
        t.append(time.perf_counter())
        if "tail_factor" in m:  # method-v2.md §9: two-scale partial sums (format v3's optional keys)
            S, g = step_ii_two_scale(p, M, m["lattice_schedule"], K, P, m["tail_factor"], m["tail_splits"])
        else:
            S, g = step_ii(p, M, m["lattice_schedule"], K, P)
        mass_ii = fmpq(int(S[1](1)), P.one)
        t.append(time.perf_counter())
        R = step_iii(S, fmpq(M) / (m["h"] * g), m, P)
        t.append(time.perf_counter())
        b, O, O_lo = step_iv(R, E, m["eta"], P)
        t.append(time.perf_counter())
    L = P.L
    enc = {"O": O, "mass": {"step_i": mass_i, "step_ii": mass_ii, "step_iii": fmpq(int(R[1](1)), P.one),
                            "step_iv": fmpq(int(b[1](1)), P.one)},
           "deleted": {"cap": cap_del, "truncation": L.truncation, "trim": L.trim,
                       "log_grid": L.log_grid, "fixed_point": L.fixed_point}}
    if moved:
        enc["moved"] = {"cap": enc["deleted"].pop("cap")}
    if "band_low" in m:  # method-v2.md §8: Y below the band deleted
        enc["deleted"]["band"] = P.band
    secs = dict(zip(("step_i", "step_ii", "step_iii", "step_iv"), (t1 - t0 for t0, t1 in zip(t, t[1:]))))
    return ReplayResult(O=O, bound=1 - O_lo, enclosures=enc, seconds={**secs, "total": t[-1] - t[0]}, b=b, F=P.F)


def step_i(sigma: fmpq, m: dict, K1: int, P: FixedPoly, moved: bool = False):
    """(i) One step: the masses p_k on the grid G = {0, h, ..., tail_start} U {tail_start +
    i tail_step}, in units 2^-F; the mass above the cap is deleted (moved to the cap with `moved`).  Grid points above
    `truncation` (lattice index > K1) are cut at once (they would be cut after step (ii)'s
    first product anyway), so the polynomial never has more than K1 + 1 coefficients.
    Returns ((offset, polynomial), deleted cap mass, total mass)."""
    h = m["h"]
    n0, ncap = int((m["tail_start"] / h).floor()), int((m["cap"] / h).floor())
    nlo = int((m["band_low"] / h).floor()) if "band_low" in m else 0  # method-v2.md §8: the band's start
    stp = int((m["tail_step"] / h).floor()) if ncap > n0 else 1
    points = list(range(nlo, n0 + 1)) + list(range(n0 + stp, ncap + 1, stp))
    if nlo:
        q, cap_del, below = grid_masses(sigma, h, points, P.F, moved, band=True)
    else:
        (q, cap_del), below = grid_masses(sigma, h, points, P.F, moved), arb(0)
    P.band = below
    if K1 < nlo:
        raise ArithmeticError("band_low lies above the truncation")
    coeffs, above = [0] * (min(ncap, K1) + 1 - nlo), 0
    for u, x in zip(points, q):
        if u <= K1:
            coeffs[u - nlo] = x
        else:
            above += x
    mass = fmpq(sum(q), P.one)
    kept = (arb(1) if moved else 1 - cap_del) - below
    P.L.fixed_point += fmpq(dyadic(kept, True, 2 * P.F), P.one ** 2) - mass
    P.L.truncation += fmpq(above, P.one)
    return P.trim(nlo, fmpz_poly(coeffs), True), cap_del, mass


def step_ii(B, M: int, sched: list, K, P: FixedPoly):
    """(ii) One epoch: the sum of M steps by binary powering along the bits of M.  B_i = B_{i-1}^2
    (blocks of 2^i steps), re-rounded onto multiples of g_i h when g_i > g_{i-1}; at each set bit i
    the accumulator A, re-rounded onto g_i h, becomes A * B_i.  Sums above `truncation` (index
    > K(g)) are never formed.  Returns ((offset, polynomial) on the lattice g h, g)."""
    gB, A, gA = 1, None, 1
    for i in range(len(sched)):
        if i:
            B = P.mul(B, B, K(gB))
            if sched[i] > gB:
                B, gB = P.cut(*P.reround(B, sched[i] // gB), K(sched[i])), sched[i]
        if (M >> i) & 1:
            if A is None:
                A, gA = B, gB
            else:
                if gA < gB:
                    A, gA = P.cut(*P.reround(A, gB // gA), K(gB)), gB
                A = P.mul(A, B, K(gB))
    return A, gA


def _round_for(X, R: int, P: FixedPoly, weight=None):
    """X two-point rounded onto a lattice R times coarser (a value u = v R + r sends (R - r)/R of its
    mass to v R, r/R to (v + 1) R; one floor per coefficient), by the tent kernel and a deflation.  With
    `weight` (the other summand's tail mass, units 2^-F) the rounding serves only the paths whose other
    summand is in the tail, so the floors lose (X's loss) x weight."""
    off, p = X
    sh = off % R
    c = p.left_shift(sh) if sh else p
    conv = (c * fmpz_poly([R - abs(e - (R - 1)) for e in range(2 * R - 1)])).right_shift(R - 1)
    q = (conv.deflate(R) if conv.length() > 1 else conv) // R
    lost = int(p(1) - q(1))
    P.L.fixed_point += fmpq(lost, P.one) if weight is None else fmpq(lost * int(weight), P.one ** 2)
    return (off - sh) // R, q


def _plus(X, Y, R: int, K: int, P: FixedPoly):
    """X + Y for two-scale laws (body on g h, tail on R g h; None: empty part): body + body on g h
    (indices > K cut), every sum with a tail summand on R g h after rounding the body summand there."""
    (xb, xt), (yb, yt) = X, Y
    nz = lambda Z: Z is not None and not Z[1].is_zero()  # noqa: E731
    body = P.mul(xb, yb, K) if nz(xb) and nz(yb) else None
    tail = None
    if X is Y and nz(xt) and nz(xb):  # two copies: both cross terms at once
        tail = P.mul(_round_for(xb, R, P, 2 * xt[1](1)), (xt[0], 2 * xt[1]), K // R)
    elif X is not Y:
        if nz(yt) and nz(xb):
            tail = poly_sum(tail, P.mul(_round_for(xb, R, P, yt[1](1)), yt, K // R), P)
        if nz(xt) and nz(yb):
            tail = poly_sum(tail, P.mul(xt, _round_for(yb, R, P, xt[1](1)), K // R), P)
    if nz(xt) and nz(yt):
        tail = poly_sum(tail, P.mul(xt, yt, K // R), P)
    return body, tail


def _split_at(X, s: int, g: int, R: int, P: FixedPoly):
    """The body's values >= s h (index >= ceil(s/g)) two-point rounded onto R g h, into the tail;
    s = 0: nothing moves."""
    body, tail = X
    if s == 0 or body is None or body[1].is_zero():
        return X
    off, p = body
    n = min(max(-(-s // g) - off, 0), p.length())
    if n >= p.length():
        return X
    high = _round_for((off + n, p.right_shift(n)), R, P)
    return (off, p.truncate(n)), poly_sum(tail, high, P)


def step_ii_two_scale(B, M: int, sched: list, K, P: FixedPoly, R: int, splits: list):
    """(ii) with two-scale partial sums (method-v2.md §9): as step_ii, each partial sum a body on g h
    and a tail on R g h; after B_i is formed its body's values >= splits[2i] move to the tail, after
    A <- A * B_i (not the last product) A's >= splits[2i + 1].  The tail is merged into the body at
    the end (tail index j = body index R j).  Returns ((offset, polynomial) on g h, g)."""
    gB, A, gA = 1, None, 1
    n_last = M.bit_length() - 1
    re2 = lambda X, f, g: tuple(None if Z is None else P.cut(*_round_for(Z, f, P), K(g) // (R if t else 1))  # noqa: E731
                                for t, Z in enumerate(X))
    Bs = _split_at((B, None), splits[0], 1, R, P)
    for i in range(len(sched)):
        if i:
            Bs = _plus(Bs, Bs, R, K(gB), P)
            if sched[i] > gB:
                Bs, gB = re2(Bs, sched[i] // gB, sched[i]), sched[i]
            Bs = _split_at(Bs, splits[2 * i], gB, R, P)
        if (M >> i) & 1:
            if A is None:
                A, gA = Bs, gB
            else:
                if gA < gB:
                    A, gA = re2(A, gB // gA, gB), gB
                A = _plus(A, Bs, R, K(gB), P)
                if i < n_last:
                    A = _split_at(A, splits[2 * i + 1], gA, R, P)
    body, tail = A
    if tail is not None and not tail[1].is_zero():
        body = poly_sum(body, (tail[0] * R, tail[1].inflate(R)), P)
    return P.cut(*body, K(gA)), gA


def step_iii(S, C0: fmpq, m: dict, P: FixedPoly):
    """(iii) The epoch value L = j g h / M two-point rounded onto the grid e^{k eta}, k_minus <= k
    <= k_plus; L = 0 and values outside the grid are deleted.  Cell k holds j in [c_k, c_{k+1}),
    c_k = ceil(beta_k), beta_k = C0 e^{k eta}, C0 = M/(g h); the mass sent up from cell k is
    sum_j s_j (j - beta_k)/(beta_{k+1} - beta_k), from the exact sums of s_j and j s_j over the cell,
    with each beta replaced by the end of its integer interval that makes the mass smaller.
    The cells are read in order, each coefficient once, with the edges made as they are reached:
    no list of the coefficients, of their prefix sums or of the edges is kept (peak memory).
    Returns (k_lo, polynomial sum_k r_k z^(k - k_lo))."""
    off, poly = S[0], S[1]
    n, total, eta = poly.length(), int(poly(1)), m["eta"]
    jlo, jhi = max(off, 1), off + n - 1
    r, W = {}, ctx.prec + 64  # W: scale of the integer edge bounds
    kept = 0
    if jhi >= jlo:  # some mass at L > 0
        est = lambda j: (math.log(j) - math.log(C0.p) + math.log(C0.q)) / max(float(eta), 1e-300)
        ka = min(max(m["k_minus"], math.floor(est(jlo)) - 2), m["k_plus"])
        kb = max(min(m["k_plus"], math.ceil(est(jhi)) + 2), ka)
        clip = lambda j: min(max(j - off, 0), n)
        at, a0, a1 = 0, 0, 0  # sum s_i and sum i s_i over i < at (the cells' c_k increase with k)

        def upto(i: int) -> tuple[int, int]:
            nonlocal at, a0, a1
            for x in range(at, i):
                v = int(poly[x])
                a0, a1 = a0 + v, a1 + x * v
            at = max(at, i)
            return a0, a1
        edges = _cell_edges(C0, eta, ka, kb, W)
        k, (lo0, hi0, c0) = next(edges)
        first = c0
        lost, s0, s1 = 0, *upto(clip(c0))
        start = s0
        for k1, (lo1, hi1, c1) in edges:
            t0, t1 = upto(clip(c1))
            mk = t0 - s0
            if mk:
                mj = (t1 - s1) + off * mk  # sum of j s_j over the cell, exact
                den = hi1 - lo0
                up = max(mj * (1 << W) - hi0 * mk, 0) // den  # lower bound, never rounded up
                dn = max(lo1 * mk - mj * (1 << W), 0) // den
                r[k] = r.get(k, 0) + dn
                r[k1] = r.get(k1, 0) + up
                lost += mk - up - dn
            k, lo0, hi0, c0, s0, s1 = k1, lo1, hi1, c1, t0, t1
        if ka > m["k_minus"] and first > jlo or kb < m["k_plus"] and c0 <= jhi:
            raise ArithmeticError("log-grid range estimate missed the support")
        # kept: j in [max(c_ka, 1), c_kb) (L = 0 is deleted whichever cell would hold it)
        kept = s0 - start - sum(int(poly[i]) for i in range(clip(first), clip(1)))
        P.L.fixed_point += fmpq(lost, P.one)
    P.L.log_grid += fmpq(total - kept, P.one)
    k_lo = min(r) if r else 0
    return k_lo, fmpz_poly([r.get(k, 0) for k in range(k_lo, max(r) + 1)] if r else [])


def _cell_edges(C0: fmpq, eta: fmpq, ka: int, kb: int, W: int):
    """(k, (lo, hi, c)) for k = ka ... kb in order: beta_k = C0 e^{k eta} lies in [lo, hi] 2^-W and
    c = ceil(beta_k), from the recurrence beta_{k+1} = beta_k e^eta with outward rounding; an edge whose
    interval holds an integer is recomputed at doubled precision (beta_k is irrational for k != 0)."""
    e = arb(eta).exp()
    elo, ehi = dyadic(e, False, W), dyadic(e, True, W)
    b0 = arb(C0) * arb(eta * ka).exp()
    lo, hi = dyadic(b0, False, W), dyadic(b0, True, W)
    for k in range(ka, kb + 1):
        cc = -((-lo) >> W)  # ceil(beta_k) if the interval decides it
        if k == 0:  # beta_0 = C0 exactly
            lo, hi, cc = int((C0 * 2**W).floor()), int((C0 * 2**W).ceil()), int(C0.ceil())
        elif cc != -((-hi) >> W):
            p2, top = ctx.prec, (1 << 16) + 4 * max(0, int(1.45 * k * float(eta)) + C0.p.bit_length())
            while True:
                p2 *= 2
                if p2 > top:  # top: the bits of beta_k plus 2^16
                    raise ArithmeticError("cannot place a log-grid cell edge")
                with working_prec(p2):
                    beta = arb(C0) * (arb(eta) * k).exp()
                    if dyadic(beta, True, 0) - dyadic(beta, False, 0) == 1:
                        cc = dyadic(beta, True, 0)
                        break
            lo, hi = dyadic(beta, False, W), dyadic(beta, True, W)
        yield k, (lo, hi, cc)
        lo, hi = (lo * elo) >> W, -((-(hi * ehi)) >> W)


def step_iv(R, E: int, eta: fmpq, P: FixedPoly):
    """(iv) E epochs: exponents add, b = (sum_k r_k z^k)^E by binary powering;
    O = sum_k b_k min{1, e^{k eta}} = sum_{k >= 0} b_k + e^{k_0 eta} B(e^eta), the second term
    one arb evaluation of the polynomial B of the coefficients with k < 0.
    Returns ((offset, polynomial) of the b_k, O as a ball, exact lower bound on O)."""
    X = P.power(P.trim(*R, True), E)
    ob, b = X
    nneg = min(max(-ob, 0), b.length())
    pos = int(b.right_shift(nneg)(1))  # sum of b_k, k >= 0 (weight min{1, e^{k eta}} = 1)
    neg = (arb(eta) * ob).exp() * b.truncate(nneg)(arb(eta).exp()) if nneg else arb(0)
    return X, (pos + neg) / arb(P.one), fmpq(pos + units(neg, 0), P.one)
