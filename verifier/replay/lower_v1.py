"""Format v2 (docs/two-sided.md): the lower bound replayed independently
(method `data-processing-lower` v1) and the privacy / TPR rows recomputed from
the b_k of the upper-side replay.

Lower side.  Every mass is an integer in units of 2^-F, always rounded *down*,
on both sides.  The P-image of the fixed map is a probability distribution, so
U(A) <= 1 - U_lo(A^c) and, for A = {k : W_k > U_k},
    TV >= sum_k max(W_k - U_k, 0) - (1 - sum_k U_k):
every floor, trim and cut of P-side mass is paid for by the deficit
1 - sum_k U_k (an upper bound on all deleted P mass), and deleting Q-side
mass only lowers W.  The bucket map beta(s) is computed once, from our own
approximations of P_S(s), Q_S(s), and applied to both sides.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from flint import arb, fmpq, fmpz_poly

from ..format.strict import working_prec
from .arith import EXTRA_BITS, FixedPoly, Losses, poly_sum, release, units


def _tails(sigma: fmpq, h: fmpq):
    """u -> balls containing (2(1 - F0(uh)), 2(1 - F1(uh))): with x = sigma ln y,
    2(1 - F0(y)) = erfc((x + 1/(2 sigma))/sqrt 2), 2(1 - F1(y)) = erfc((x - 1/(2 sigma))/sqrt 2)."""
    s, r2, lnh = arb(sigma), arb(2).sqrt(), arb(h).log()
    c = 1 / (2 * s)

    def tails(u):
        if u == 0:
            return arb(2), arb(2)
        x = s * (arb(u).log() + lnh)
        return ((x + c) / r2).erfc(), ((x - c) / r2).erfc()
    return tails


def _masses(sigma: fmpq, h: fmpq, K: int, F: int, k0: int = 0):
    """Cell masses p_k = Pr(kh <= Y < (k+1)h), q_k = E[Y 1{...}] (k0 <= k < K), p_K, q_K the
    tails above Kh, from the upper tails 2(1 - F0), 2(1 - F1) (erfc form, no cancellation
    against 1): with x = sigma ln y, 2(1 - F0(y)) = erfc((x + 1/(2 sigma))/sqrt 2).  With a band
    (k0 = band_low/h > 0, method-v2.md §8) the first cell, index k0, is [0, (k0 + 1) h)."""
    tails = _tails(sigma, h)
    s, r2, lnh = arb(sigma), arb(2).sqrt(), arb(h).log()
    c = 1 / (2 * s)

    # cells [uh, (u+1)h) with u < lo or hi <= u < K have P and Q masses below 2^-F (0 in units 2^-F
    # however computed): at most F0((u+1)h) on the left (F1 <= F0 below 1), at most 1 - F1(uh) on the
    # right (1 - F0 <= 1 - F1); F0, F1 increase, so one rigorous test at each end
    small = arb(2) ** (1 - F)
    x0 = lambda u: s * (arb(u).log() + lnh)  # noqa: E731
    left = lambda u: u == 0 or bool((-(x0(u) + c) / r2).erfc() < small)  # noqa: E731   2 F0(uh) < 2^(1-F)
    right = lambda u: u > 0 and bool(((x0(u) - c) / r2).erfc() < small)  # noqa: E731  2(1 - F1(uh)) < 2^(1-F)
    lo, hi = 0, K
    if K > 2:
        i, j = 0, K
        while j - i > 1:
            m = (i + j) // 2
            i, j = (m, j) if left(m) else (i, m)
        lo = j if left(j) else i
    lo = max(lo, k0)  # with a band, [0, (k0 + 1) h) is one cell: below lo it is 0 units as well
    if K > 2 and lo < K - 1 and right(K - 1):
        i, j = lo, K - 1
        while j - i > 1:
            m = (i + j) // 2
            i, j = (i, m) if right(m) else (m, j)
        hi = max(i if right(i) else j, lo)
    p, q, prev = [0] * (K - k0), [0] * (K - k0), tails(0 if lo == k0 else lo)
    for u in range(lo + 1, hi + 1):
        cur = tails(u)
        p[u - 1 - k0] = units((prev[0] - cur[0]) / 2, F)
        q[u - 1 - k0] = units((prev[1] - cur[1]) / 2, F)
        prev = cur
    if hi < K:
        prev = tails(K)
    p.append(units(prev[0] / 2, F))
    q.append(units(prev[1] / 2, F))
    return p, q


def _masses_two_scale(sigma: fmpq, h: fmpq, K: int, F: int, R: int, J0: int):
    """Cell masses with the far cells merged R at a time (method-v2.md §9): fine cells k < J0 as in
    _masses, then [c R h, (c + 1) R h) for J0/R <= c < K_c = floor(K/R), the top cell [K_c R h, inf)
    last.  Returns (p, q) as [fine masses, coarse masses (first at index J0/R)]."""
    tails = _tails(sigma, h)

    Kc = K // R
    edges = list(range(1, J0 + 1)) + list(range(J0 + R, Kc * R + 1, R))
    p, q, prev = [], [], tails(0)
    for u in edges:
        cur = tails(u)
        p.append(units((prev[0] - cur[0]) / 2, F))
        q.append(units((prev[1] - cur[1]) / 2, F))
        prev = cur
    p.append(units(prev[0] / 2, F))
    q.append(units(prev[1] / 2, F))
    return (p[:J0], p[J0:]), (q[:J0], q[J0:])


def _floor_sum(X, R: int):
    """The map u -> floor(u / R) of one part (exact: masses move whole); None stays None."""
    return None if X is None or X[1].is_zero() else _floor(X, R)


def _plus2(X, Y, R: int, K: int, P: FixedPoly):
    """X + Y for two-scale laws under the lower map (floors): body + body on g h; a sum with a tail
    summand on R g h, the body summand floored there first.  Parts are (offset, polynomial) or None."""
    (xb, xt), (yb, yt) = X, Y
    nz = lambda Z: Z is not None and not Z[1].is_zero()  # noqa: E731
    body = P.mul(xb, yb, K) if nz(xb) and nz(yb) else None
    tail = None
    if nz(yt) and nz(xb):
        tail = poly_sum(tail, P.mul(_floor(xb, R), yt, K // R), P)
    if nz(xt) and nz(yb):
        tail = poly_sum(tail, P.mul(xt, _floor(yb, R), K // R), P)
    if nz(xt) and nz(yt):
        tail = poly_sum(tail, P.mul(xt, yt, K // R), P)
    return body, tail


def _split2(X, s: int, g: int, R: int):
    """The body's values >= s h (index >= ceil(s/g)) floored onto R g h, into the tail; s = 0: none."""
    body, tail = X
    if s == 0 or body is None or body[1].is_zero():
        return X
    off, p = body
    n = min(max(-(-s // g) - off, 0), p.length())
    if n >= p.length():
        return X
    return (off, p.truncate(n)), poly_sum(tail, _floor((off + n, p.right_shift(n)), R), None)


def _mix2(X, a: int, Y, b: int):
    """_mix part by part (None: an empty part)."""
    nz = lambda Z: Z is not None and not Z[1].is_zero()  # noqa: E731
    out = []
    for x, y in zip(X, Y):
        out.append(_mix(x, a, y, b) if nz(x) and nz(y) else
                   (x[0], x[1] * a // (a + b)) if nz(x) else (y[0], y[1] * b // (a + b)) if nz(y) else None)
    return tuple(out)


def _epoch_two_scale(p, q, M: int, sched: list, K, P: FixedPoly, R: int, splits: list):
    """(b) with two-scale partial sums under the lower map (method-v2.md §9), both sides the same map:
    the splits of B_i (splits[2i], i >= 1; splits[0] is (a)'s last fine cell) and of A after bit i
    (splits[2i + 1], not after the last product).  Returns ([(body of A, of AQ) on g h, (tail of A, of
    AQ) on R g h], g)."""
    J0 = splits[0]
    part = lambda v, o: P.trim(o, fmpz_poly(v), True) if any(v) else None  # noqa: E731
    B, BQ = (part(p[0], 0), part(p[1], J0 // R)), (part(q[0], 0), part(q[1], J0 // R))
    cutp = lambda X, g: tuple(None if Z is None else P.cut(*Z, K(g) // (R if t else 1)) for t, Z in enumerate(X))  # noqa: E731
    B, BQ, gB = cutp(B, 1), cutp(BQ, 1), 1
    A = AQ = None
    n = gA = 0
    last = M.bit_length() - 1
    fl = lambda X, f: tuple(_floor_sum(Z, f) for Z in X)  # noqa: E731
    for i in range(len(sched)):
        if i:
            BQ, B = _plus2(BQ, B, R, K(gB), P), _plus2(B, B, R, K(gB), P)
            if sched[i] > gB:
                B, BQ, gB = cutp(fl(B, sched[i] // gB), sched[i]), cutp(fl(BQ, sched[i] // gB), sched[i]), sched[i]
            B, BQ = _split2(B, splits[2 * i], gB, R), _split2(BQ, splits[2 * i], gB, R)
        if (M >> i) & 1:
            if A is None:
                A, AQ, gA, n = B, BQ, gB, 1 << i
                continue
            if gA < gB:
                A, AQ, gA = fl(A, gB // gA), fl(AQ, gB // gA), gB
            AQ = _mix2(_plus2(AQ, B, R, K(gB), P), n, _plus2(A, BQ, R, K(gB), P), 1 << i)
            A, n = _plus2(A, B, R, K(gB), P), n + (1 << i)
            if i < last:
                A, AQ = _split2(A, splits[2 * i + 1], gA, R), _split2(AQ, splits[2 * i + 1], gA, R)
    empty = (0, fmpz_poly())  # body and tail stay two states of the map: bucketed each on its own
    parts = [tuple(empty if Z is None else P.cut(*Z, K(gA) // (R if t else 1)) for Z in (X[t], XQ[t]))
             for t, (X, XQ) in enumerate(((A, AQ), (A, AQ)))]
    return parts, gA


def _floor(X, f: int):
    """The map index u -> floor(u / f) (block sum onto the coarser lattice): masses move
    whole, so this is exact."""
    off, p = X
    if f == 1 or p.is_zero():
        return X
    base, cs, out = off // f, p.coeffs(), fmpz_poly()
    for r in range(f):
        i0 = (r - off) % f
        out += fmpz_poly(cs[i0::f]).left_shift((off + i0) // f - base)
    return base, out


def _mix(X, a: int, Y, b: int):
    """floor((a X + b Y) / (a + b)) coefficient-wise (the Q-side mixture, §1(b))."""
    (ox, px), (oy, py) = X, Y
    o = min(ox, oy)
    return o, (px.left_shift(ox - o) * a + py.left_shift(oy - o) * b) // (a + b)


@dataclass
class LowerResult:  # exact rationals; U_A = kept P mass in A, so U(A) <= U_A + deficit
    bound: fmpq  # W_A - U_A - deficit
    W_A: fmpq
    U_A: fmpq
    deficit: fmpq
    seconds: dict
    pmfs: tuple | None = None  # (U, W, F): the image's integer pmfs, lower bounds in units 2^-F (the kinds)
    other: object = None  # () -> the same replay under the index-by-index map (a certificate it alone reaches)


def replay_lower(M: int, E: int, sigma_low: fmpq, m: dict) -> LowerResult:
    t0 = time.perf_counter()
    h, sched = m["h"], m["lattice_schedule"]
    F = m["fixed_point_bits"] + EXTRA_BITS
    P = FixedPoly(F, m["trim"], Losses())  # our own trimming rule; losses not needed (deficit)
    if "tail_factor" in m:  # method-v2.md §9: far cells merged, two-scale epoch sums (format v3)
        R, sp = m["tail_factor"], m["tail_splits"]
        with working_prec(m["prec"]):
            p, q = _masses_two_scale(sigma_low, h, int(m["cap"] / h), F, R, sp[0])
        t1 = time.perf_counter()
        K = lambda g: int((8 * M / h).ceil()) // g  # noqa: E731
        parts, gA = _epoch_two_scale(p, q, M, sched, K, P, R, sp)
        return _finish(M, E, m, P, F, parts, t0, t1)
    with working_prec(m["prec"]):
        k0 = int((m["band_low"] / h).floor()) if "band_low" in m else 0
        p, q = _masses(sigma_low, h, int(m["cap"] / h), F, k0)
    t1 = time.perf_counter()
    # (b) epoch sum, P side A and Q side AQ (the average over the shifted coordinate's block);
    # our own cut: partial sums above h ceil(8M/h) are deleted (any deletion is allowed, see above; the
    # certifier's cut, docs/certificate.md §4 (ii): at (4, 3, sigma 1.80139) a cut at floor(8M/h) deleted
    # 7e-15 more P mass than it recorded, beyond the slack of the comparison)
    K = lambda g: int((8 * M / h).ceil()) // g
    B, BQ = P.trim(k0, fmpz_poly(p), True), P.trim(k0, fmpz_poly(q), True)
    del p, q
    return _finish(M, E, m, P, F, [_epoch(B, BQ, M, sched, K, P)], t0, t1)


def _epoch(B, BQ, M: int, sched: list, K, P: FixedPoly):
    """(b) The P side A and the Q side AQ of M steps from one step's B, BQ, by binary powering along the bits of M:
    the sums of the loop written as BQ, B = BQ B, B B; AQ = mix(AQ B, A BQ); A = A B, in that order, with each
    operand dropped as soon as no later product reads it and the memory given back between products (the
    epoch's products are the replay's peak; release)."""
    A = AQ = None
    n = gA = gB = 1
    last = len(sched) - 1        # the loop's last pass (the format asks floor(log2 M) + 1 entries)
    for i in range(len(sched)):
        if i:
            BQ = P.mul(BQ, B, K(gB))
            B = P.mul(B, B, K(gB))
            if sched[i] > gB:
                B = _floor(B, sched[i] // gB)
                BQ, gB = _floor(BQ, sched[i] // gB), sched[i]
            release()
        if (M >> i) & 1:
            if A is None:
                A, AQ, gA, n = B, BQ, gB, 1 << i
                continue
            if gA < gB:
                A, AQ, gA = _floor(A, gB // gA), _floor(AQ, gB // gA), gB
            X = P.mul(AQ, B, K(gB))
            AQ = None
            Y = P.mul(A, BQ, K(gB))
            if i == last:  # BQ is read by no later pass
                BQ = None
            AQ = _mix(X, n, Y, 1 << i)
            del X, Y
            A, n = P.mul(A, B, K(gB)), n + (1 << i)
            release()
    return A, AQ


RELIABLE_BITS = 40  # the reference map (two-sided.md §1 (c)): masses >= 2^(40 - fixed_point_bits) set it


def _beta_pointwise(pa: list, qa: list, oa: int, oq: int, bmin: int, bmax: int, inv: float) -> dict:
    """s -> floor(ln(Q_S(s)/P_S(s))/eta) clamped, from our own integer masses, index by index."""
    beta = {}
    for s in range(min(oa, oq), max(oa + len(pa), oq + len(qa))):
        ps = pa[s - oa] if 0 <= s - oa < len(pa) else 0
        qs = qa[s - oq] if 0 <= s - oq < len(qa) else 0
        if ps or qs:
            beta[s] = bmax if ps == 0 else bmin if qs == 0 else \
                min(max(math.floor((math.log(qs) - math.log(ps)) * inv), bmin), bmax)
    return beta


def _beta_monotone(pa: list, qa: list, oa: int, oq: int, bmin: int, bmax: int, eta: float, reliable: int) -> dict:
    """The reference map: floor(ln(q/p)/eta) where both masses are at least `reliable` units (where any are;
    else where both are > 0), made non-decreasing in s by a running max, the least of them before the first
    (this part's range: b_min but for a two-scale body, as the certifier's map clamps each part), clamped.
    A far end's floors leave a few units (17 and 17: ratio 1), which a running max would carry over the
    epoch pmf; masses of 2^40 units have ln(q/p) to about 10^-10."""
    lo, hi = min(oa, oq), max(oa + len(pa), oq + len(qa))
    ps = [0] * (oa - lo) + pa + [0] * (hi - oa - len(pa))   # aligned on s = lo .. hi - 1
    qs = [0] * (oq - lo) + qa + [0] * (hi - oq - len(qa))
    floor = reliable if any(x >= reliable and y >= reliable for x, y in zip(ps, qs)) else 1
    at = [_ratio_bucket(x, y, eta) if x >= floor and y >= floor else None for x, y in zip(ps, qs)]
    rel = [b for b in at if b is not None]
    first = min(max(min(rel), bmin), bmax) if rel else bmin   # this part's least bucket (a two-scale body's
    beta, run = {}, -math.inf                                  # may lie above the tail's, i.e. b_min)
    for k, (x, y) in enumerate(zip(ps, qs)):
        if at[k] is not None:
            run = max(run, at[k])
        if x or y:
            beta[lo + k] = first if run == -math.inf else min(max(run, bmin), bmax)
    return beta


def _ratio_bucket(x: int, y: int, eta: float) -> int:
    """floor(ln(y/x)/eta) in float64, as the certifier's map computes it."""
    r = math.log(float(y) / float(x)) if max(x, y) < 1 << 1000 else math.log(y) - math.log(x)
    return math.floor(r / eta)


def _finish(M: int, E: int, m: dict, P: FixedPoly, F: int, parts: list, t0: float, t1: float,
            monotone: bool = True) -> LowerResult:
    """(c)-(e) from the epoch-sum pmfs: parts [(A, AQ), ...], P side and Q side of each state of the map
    (one lattice per state; two-scale: the body and the tail).  monotone: the reference map on the first
    part (the two-scale tail is mapped index by index, as the certifier does); else index by index
    throughout.  Any fixed map gives a valid bound (two-sided.md §1 (c)); the other map is kept in
    `other` for a certificate whose recorded number only it reaches."""
    eta = m["eta"]
    t2 = time.perf_counter()
    # (c) bucket each epoch sum s by beta(s) ~ floor(ln(Q_S(s)/P_S(s))/eta), clamped
    bmin, bmax, inv = m["b_min"], m["b_max"], 1 / max(float(eta), 1e-300)  # any fixed map is valid
    reliable = 1 << (F - m["fixed_point_bits"] + RELIABLE_BITS)
    u, w = {}, {}
    for i, ((oa, pa), (oq, qa)) in enumerate(parts):
        pa, qa = [int(x) for x in pa.coeffs()], [int(x) for x in qa.coeffs()]
        beta = _beta_monotone(pa, qa, oa, oq, bmin, bmax, float(eta), reliable) if monotone and i == 0 else \
            _beta_pointwise(pa, qa, oa, oq, bmin, bmax, inv)
        for s, b in beta.items():
            ps = pa[s - oa] if 0 <= s - oa < len(pa) else 0
            qs = qa[s - oq] if 0 <= s - oq < len(qa) else 0
            u[b], w[b] = u.get(b, 0) + ps, w.get(b, 0) + qs
    t3 = time.perf_counter()
    # (d) E epochs: exponents add; (e) A = {k : W_k > U_k}
    lo, hi = (min(u), max(u)) if u else (0, 0)  # no mass left: U = W = 0, deficit 1
    (ou, Up), (ow, Wp) = (P.power(P.trim(lo, fmpz_poly([d.get(k, 0) for k in range(lo, hi + 1)]), True), E)
                          for d in (u, w))
    o = min(ou, ow)
    uc = [0] * (ou - o) + [int(x) for x in Up.coeffs()]
    wc = [0] * (ow - o) + [int(x) for x in Wp.coeffs()]
    uc += [0] * (len(wc) - len(uc))
    wc += [0] * (len(uc) - len(wc))
    wa = ua = 0
    for i, x in enumerate(wc):
        if x > uc[i]:
            wa, ua = wa + x, ua + uc[i]
    one = 1 << F
    deficit = fmpq(one - sum(uc), one)
    t4 = time.perf_counter()
    secs = {"masses": t1 - t0, "epoch": t2 - t1, "buckets": t3 - t2, "epochs": t4 - t3, "total": t4 - t0}
    res = LowerResult(bound=fmpq(wa - ua, one) - deficit, W_A=fmpq(wa, one), U_A=fmpq(ua, one),
                      deficit=deficit, seconds=secs, pmfs=(uc, wc, F))
    if monotone:
        res.other = lambda: _finish(M, E, m, P, F, parts, t0, t1, monotone=False)
    return res


# ---- §2-3: hockey-stick divergences and TPR from the upper side's b_k ----------------
def _split(b, eta: fmpq, k0: int):
    """(sum_{k <= k0} b_k e^{k eta} as a ball, sum_{k > k0} b_k exactly), units 2^-F."""
    ob, poly = b
    n = min(max(k0 - ob + 1, 0), poly.length())
    low = (arb(eta) * ob).exp() * poly.truncate(n)(arb(eta).exp()) if n else arb(0)
    return low, int(poly.right_shift(n)(1))


def deltas(b, F: int, eta: fmpq, eps: fmpq):
    """Upper bounds (balls whose upper ends are certified) on delta_{Q||P}(eps) and
    delta_{P||Q}(eps): 1 - sum_k b_k min{e^{k eta}, e^eps} and 1 - sum_k b_k min{1, e^{eps + k eta}}
    (Lemma C.5: both minima are concave in each epoch factor; our b_k are lower bounds)."""
    one, e = arb(2) ** F, arb(eps).exp()
    low, high = _split(b, eta, int((eps / eta).floor()))
    dqp = 1 - (low + e * high) / one
    low, high = _split(b, eta, int((-eps / eta).floor()))
    dpq = 1 - (e * low + high) / one
    return dqp, dpq
