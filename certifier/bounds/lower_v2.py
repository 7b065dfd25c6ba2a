"""Method v2 of the lower bound: data processing on the multiscale lattice (docs/method-v2.md §4).

For any fixed map T, TV(P, Q) >= TV(T#P, T#Q) >= T#Q(A) - T#P(A). The map, with the grid of the
upper method v2 (certifier.bounds.upper_v2.UpperV2, t^2 = 1/sigma_low^2):
 (a) each Y -> the largest step-(i) grid point <= Y (Y >= cap -> cap);
 (b) the M values of an epoch are added by binary powering along the bits of M with the
     multiscale sum in mode "floor" (every rounding a floor, values above the top octave clamped),
     each level on its own lattice with `level_bits` (method-v2.md §10);
     the map is symmetric in the two halves of every block, so under Q (one coordinate, uniformly
     placed, shifted) the image of a block of 2^i steps is the P-image of one half combined with
     the Q-image of the other, and the accumulator of n steps joined with a block of 2^i steps is
     the mixture with weights n/(n + 2^i), 2^i/(n + 2^i);
 (c) the epoch value s -> the bucket j = floor(ln(s/M)/eta) clamped to [k_minus, k_plus] (the
     cells of step (iii); ln(s/M) is the log likelihood ratio the bucket approximates);
 (d) the bucket indices of the E epochs are added (pmfs U = u^E, W = w^E), partial sums above
     k_top clamped to k_top;
 (e) A = {k : W_k > U_k}.
Every stored mass is a lower bound (floors); on the P side everything removed is counted in
deleted_p = 1 - sum_k U_k, so W(A) - U(A) - deleted_p <= TV at sigma_low, an exact rational.
"""
from __future__ import annotations

import math
import time

from flint import fmpq, fmpz_poly

from certifier.bounds.fixedpoint import (
    Ledger,
    Poly,
    dense,
    exact_str,
    floor_fixed,
    product,
    round_down_sig,
    strip,
    trim,
    working_prec,
)
from certifier.bounds.lattice import (
    FLOOR,
    Lattice,
    LatticeDist,
    add,
    onto_coarser,
    oplus,
    packed,
    refine,
    trim_lattice,
    trim_octaves,
)
from certifier.bounds.lognormal import tails_along
from certifier.bounds.result import LowerResult, require_positive
from certifier.bounds.upper_v2 import METHOD_NAME as UPPER_NAME
from certifier.bounds.upper_v2 import METHOD_VERSION as UPPER_VERSION
from certifier.bounds.upper_v2 import LogEdges, UpperV2, clamp_index, y_points
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.powering import binary_power

METHOD_NAME = "data-processing-lower"
METHOD_VERSION = 2


def method_json(m: UpperV2) -> dict:
    """The `lower.method` object: the v2 grid under this method's name, without trim_shift (§4)."""
    obj = {**m.to_json(), "name": METHOD_NAME, "version": METHOD_VERSION}
    obj.pop("trim_shift")
    return obj


def method_from_json(obj: dict) -> UpperV2:
    """Inverse of method_json (exact decimals parsed to fmpq)."""
    if obj.get("name") != METHOD_NAME or obj.get("version") != METHOD_VERSION:
        raise ParameterError("unsupported lower method (want data-processing-lower v2)")
    return UpperV2.from_json({**obj, "name": UPPER_NAME, "version": UPPER_VERSION, "trim_shift": "0"})


def step_a(t2: fmpq, m: UpperV2) -> tuple[LatticeDist, LatticeDist]:
    """(P, Q): masses of the floor map of (a) under P and under the shifted law (lower bounds, 2^-F), the doubled
    cell masses e(x_i) - e(x_{i+1}) (floor_cell_masses) formed one point at a time."""
    F = m.fixed_point_bits
    ps, qs, last = [], [], None
    with working_prec(m.prec):
        for _, e0, e1 in tails_along(t2, (j << k for k, j in y_points(m)), m.h, m.prec):
            if last is not None:
                ps.append(floor_fixed(last[0] - e0, F - 1))
                qs.append(floor_fixed(last[1] - e1, F - 1))
            last = (e0, e1)
        ps.append(floor_fixed(last[0], F - 1))
        qs.append(floor_fixed(last[1], F - 1))
    return packed(zip(y_points(m), ps)), packed(zip(y_points(m), qs))


def _mix(a: LatticeDist, wa: int, b: LatticeDist, wb: int) -> LatticeDist:
    """floor((wa a + wb b)/(wa + wb)) octave by octave: lower bounds on the mixture's masses."""
    out = {}
    for k in set(a) | set(b):
        pa, pb = a.get(k), b.get(k)
        sa = Poly(pa.off, pa.poly * wa) if pa is not None else None
        sb = Poly(pb.off, pb.poly * wb) if pb is not None else None
        s = add(sa, sb)
        out[k] = strip(Poly(s.off, s.poly // (wa + wb)))
    return {k: p for k, p in out.items() if p.poly.length()}


def replay_budget(m: UpperV2, F: int) -> int:
    """The replay's trim budget per end of each sum or product, trim/4, rounded UP to units 2^-F (the
    replay's own, at 2^-(F+4), is rounded down: ours is never smaller)."""
    return int((m.trim * (1 << F) / 4).ceil())


def step_b(P: LatticeDist, Q: LatticeDist, steps: int, m: UpperV2, led: Ledger,
           progress=None, replay_trims: bool = False) -> tuple[LatticeDist, LatticeDist]:
    """(AP, AQ): the epoch value's pmfs under P and Q (lower bounds, units 2^-F). Trims after each sum:
    coefficients of mass <= trim/2 at the low end, or (replay_trims) whole lowest octaves of mass <= the
    replay_budget (the replay's rule; see lower_bound_v2)."""
    units, nb = int((m.trim * (1 << led.F)).floor()), m.levels(steps)
    if replay_trims:
        budget = replay_budget(m, led.F)
        s = lambda x: trim_octaves(x, budget, led)
    else:
        s = lambda x: trim_lattice(x, units, led)
    d0 = m.mantissa_bits - nb[0]
    B, BQ, A, AQ, nA, at = onto_coarser(P, d0), onto_coarser(Q, d0), None, None, 0, nb[0]
    nbits = steps.bit_length()
    for i in range(nbits):
        lat = Lattice(nb[i], m.top_octave)      # level i's lattice (method-v2.md §10)
        if i:                                   # B_i, BQ_i formed on it from B_{i-1}, BQ_{i-1}
            B, BQ = refine(B, nb[i] - nb[i - 1]), refine(BQ, nb[i] - nb[i - 1])
            BQ = s(oplus(BQ, B, lat, led, FLOOR))
            B = s(oplus(B, B, lat, led, FLOOR, square=True))
        if (steps >> i) & 1:
            if A is None:
                A, AQ, nA = B, BQ, 1 << i
            else:
                w = 1 << i
                A, AQ = refine(A, nb[i] - at), refine(AQ, nb[i] - at)
                AQ = _mix(s(oplus(AQ, B, lat, led, FLOOR)), nA, s(oplus(A, BQ, lat, led, FLOOR)), w)
                A = s(oplus(A, B, lat, led, FLOOR))
                nA += w
            at = nb[i]
        if progress:
            progress((i + 1) / nbits)
    return A, AQ


def bucket_runs(J0: int, end: int, k: int, steps: int, m: UpperV2, edges: LogEdges) -> list[tuple[int, int, int]]:
    """Runs (j, a, b): the indices a <= J < b of octave k lie in bucket j (map (c), exact edges).

    Index J > 0 is in bucket floor(ln(J 2^k h / M)/eta) clamped to [k_minus, k_plus]; J = 0 is in k_minus.
    """
    runs, start = [], J0
    if J0 == 0:
        runs.append((m.k_minus, 0, 1))
        start = 1
    if start >= end:
        return runs
    unit = float(m.h) * 2.0 ** k / steps
    ja = max(m.k_minus, min(m.k_plus, math.floor(math.log(start * unit) / float(m.eta)) - 2))
    jb = min(m.k_plus, max(ja, math.ceil(math.log(end * unit) / float(m.eta)) + 2))
    c = {j: edges.edge(j, k)[2] for j in range(ja, min(jb + 1, m.k_plus) + 1)}
    if (ja > m.k_minus and c[ja] > start) or (jb < m.k_plus and c[jb + 1] < end):
        raise NumericsUnreliableError("bucket range estimate missed the support")
    for j in range(ja, jb + 1):
        a = start if j == ja else max(start, c[j])
        b = end if j == jb else min(end, c[j + 1])
        if b > a:
            runs.append((j, a, b))
    return runs


def step_c(AP: LatticeDist, AQ: LatticeDist, steps: int, m: UpperV2) -> tuple[Poly, Poly]:
    """(u, w): the bucket pmfs of (c) under P and Q (exact sums of the lower bounds)."""
    spans = {k: (min(X[k].off for X in (AP, AQ) if k in X), max(X[k].off + X[k].poly.length() for X in (AP, AQ)
                                                                 if k in X)) for k in set(AP) | set(AQ)}
    vals = [max(a, 1) * 2.0 ** k for k, (a, _) in spans.items()] + [b * 2.0 ** k for k, (_, b) in spans.items()]
    scale = float(m.h) / steps
    j0 = max(m.k_minus, min(m.k_plus, math.floor(math.log(min(vals) * scale) / float(m.eta)) - 4))
    j1 = min(m.k_plus, max(j0, math.ceil(math.log(max(vals) * scale) / float(m.eta)) + 4))
    edges = LogEdges.build(steps, m, j0, j1)
    u: dict[int, int] = {}
    w: dict[int, int] = {}
    for k, (off, end) in sorted(spans.items()):
        cp, cq = _prefix(AP.get(k), off, end), _prefix(AQ.get(k), off, end)
        for j, a, b in bucket_runs(off, end, k, steps, m, edges):
            u[j] = u.get(j, 0) + cp[b - off] - cp[a - off]
            w[j] = w.get(j, 0) + cq[b - off] - cq[a - off]
    j_lo, j_hi = min(u), max(u)
    return (strip(Poly(j_lo, fmpz_poly([u.get(j, 0) for j in range(j_lo, j_hi + 1)]))),
            strip(Poly(j_lo, fmpz_poly([w.get(j, 0) for j in range(j_lo, j_hi + 1)]))))


def _prefix(p: Poly | None, off: int, end: int) -> list[int]:
    """Prefix sums over indices off..end-1 of p's coefficients (zeros outside p)."""
    vals = [0] * (end - off)
    if p is not None:
        for j, v in enumerate(p.poly.coeffs()):
            vals[p.off - off + j] = int(v)
    out = [0]
    for v in vals:
        out.append(out[-1] + v)
    return out


def step_d(u: Poly, epochs: int, m: UpperV2, led: Ledger, replay_trims: bool = False) -> Poly:
    """(d): u^E by binary powering, partial sums above k_top clamped to k_top, trims recorded (trim/2 per
    end of each product, or with replay_trims the replay_budget per end, the replay's rule)."""
    units = product_trim_units(m, led.F, replay_trims)
    tidy = lambda p: trim(clamp_index(p, m.k_top, led), units, led)
    return binary_power(clamp_index(u, m.k_top, led), epochs, lambda a, b: tidy(product(a, b, None, led)))


def product_trim_units(m: UpperV2, F: int, replay_trims: bool) -> int:
    """fixedpoint.trim's units (it deletes up to half of them per end) after each product of step (d)."""
    return 2 * replay_budget(m, F) if replay_trims else int((m.trim * (1 << F)).floor())


def lower_bound_v2(steps: int, epochs: int, t2: fmpq, method: UpperV2, progress=None,
                   replay_trims: bool = False) -> LowerResult:
    """A rigorous lower bound on TV(P_M^E, Q_M^E) at t^2 = 1/sigma_low^2 (the map of this module).

    replay_trims=True deletes by the independent replay's own rule (verifier/replay/lower_v2.py: whole
    lowest octaves of mass <= trim/4 after each sum, <= trim/4 at each end after each epoch product)
    with budgets rounded up. Every step of the map is monotone in the masses and our floors (2^-F) lie
    below the replay's (2^-(F+4)), so our pmfs are then coefficientwise at most the replay's: the
    recorded kind value never exceeds the replayed one and is as tight as it up to those floors. The
    default rule (trim/2 per end, coefficient by coefficient) deletes about four times the mass, which a
    kind pays e^eps times (every P-side deletion enters deleted_p); TV keeps it (the same certificates)."""
    method.validate()
    require_positive(t2, "t^2")
    prog = progress or (lambda stage, frac: None)
    F = method.fixed_point_bits
    tm = {}
    t0 = time.perf_counter()
    with working_prec(method.prec):
        led = Ledger(F)
        P, Q = step_a(t2, method)
        tm["step_a"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        AP, AQ = step_b(P, Q, steps, method, led, lambda f: prog("lower (b)", f), replay_trims)
        tm["step_b"] = time.perf_counter() - t1
        t2_ = time.perf_counter()
        u, w = step_c(AP, AQ, steps, method)
        tm["step_c"] = time.perf_counter() - t2_
        t3 = time.perf_counter()
        U, W = step_d(u, epochs, method, led, replay_trims), step_d(w, epochs, method, Ledger(F), replay_trims)
        lo = min(U.off, W.off)
        n = max(U.off + U.poly.length(), W.off + W.poly.length()) - lo
        uu, ww = dense(U, lo, n), dense(W, lo, n)
        W_A = sum(b for a, b in zip(uu, ww) if b > a)
        U_A = sum(a for a, b in zip(uu, ww) if b > a)
        deleted_p = (1 << F) - sum(uu)
        if deleted_p < 0:
            raise NumericsUnreliableError("P-side mass above 1: internal error")
        exact = fmpq(W_A - U_A - deleted_p, 1 << F)
        tm["step_d"] = time.perf_counter() - t3
        tm["total"] = time.perf_counter() - t0
    enc = {"W_A": exact_str(W_A, F), "U_A": exact_str(U_A, F), "deleted_p": exact_str(deleted_p, F)}
    stats = {"octaves": sorted(AP), "buckets": u.poly.length(), "final_length": n, "products": led.products}
    return LowerResult(round_down_sig(exact, 10), exact, enc, {k: round(v, 3) for k, v in tm.items()}, stats,
                       pmfs=(list(uu), list(ww), F))
