"""Method v2's lower bound for a run in stages: data processing with one map per stage (docs/compose.md §3).

The pair of a run in stages is the product of the stages' pairs, and the processed pair of a product
under a product map is the product of the processed pairs. So steps (a)-(c) of
certifier.bounds.lower_v2 run once per distinct (M_s, t_s^2) on ONE grid, giving the bucket pmfs
(u_s, w_s); step (d) forms U = prod_s u_s^{E_s} and W = prod_s w_s^{E_s} on one bucket grid, each
power by binary powering and the product with the same clamp to k_top after every product (the same
fixed map on both sides). P-side floors and trims are paid by deleted_p = 1 - sum_k U_k (recorded); a
Q-side floor or trim only lowers W. For A = {k : W_k > U_k}, W(A) - U(A) - deleted_p <= TV at sigma_low;
the final pmfs (U, W) give the dp and tpr kinds' lower bounds (certifier.bounds.lower_kinds). Each stage
may have its own t_s^2 (the map is fixed per stage all the same).
"""
from __future__ import annotations

import time
from dataclasses import replace

from flint import fmpq

from certifier.bounds.fixedpoint import Ledger, dense, exact_str, product, round_down_sig, trim, working_prec
from certifier.bounds.lower_v2 import product_trim_units, step_a, step_b, step_c, step_d
from certifier.bounds.result import LowerResult
from certifier.bounds.stages_v2 import product_runs
from certifier.bounds.upper_v2 import UpperV2, clamp_index
from certifier.errors import NumericsUnreliableError


def lower_bound_v2_product(stages, method: UpperV2, replay_trims: bool = False) -> LowerResult:
    """A rigorous lower bound on the TV of the product of (P_{M_s}^{E_s}, Q_{M_s}^{E_s}); stages (M_s, E_s, t_s^2).
    replay_trims: the replay's trim rule (certifier.bounds.lower_v2.lower_bound_v2), for the kinds."""
    method = replace(method, level_bits=None)     # a run in stages: one lattice at every level (no §10)
    method.validate()
    stages = product_runs(stages)
    F = method.fixed_point_bits
    t0 = time.perf_counter()
    with working_prec(method.prec):
        led, led_q = Ledger(F), Ledger(F)
        lines = {}
        for m, _, t2 in stages:                   # (a)-(c) once per distinct one-epoch factor
            if (m, t2) not in lines:
                P, Q = step_a(t2, method)
                AP, AQ = step_b(P, Q, m, method, led, None, replay_trims)
                lines[m, t2] = step_c(AP, AQ, m, method)
        units = product_trim_units(method, F, replay_trims)
        U = W = None
        for m, e, t2 in stages:                   # (d): each stage's power, then the product, alike on both sides
            u, w = lines[m, t2]
            Us, Ws = step_d(u, e, method, led, replay_trims), step_d(w, e, method, led_q, replay_trims)
            if U is None:
                U, W = Us, Ws
            else:
                U = trim(clamp_index(product(U, Us, None, led), method.k_top, led), units, led)
                W = trim(clamp_index(product(W, Ws, None, led_q), method.k_top, led_q), units, led_q)
        lo = min(U.off, W.off)
        n = max(U.off + U.poly.length(), W.off + W.poly.length()) - lo
        uu, ww = dense(U, lo, n), dense(W, lo, n)
        W_A = sum(b for a, b in zip(uu, ww) if b > a)           # (e) A = {k : W_k > U_k}
        U_A = sum(a for a, b in zip(uu, ww) if b > a)
        deleted_p = (1 << F) - sum(uu)
        if deleted_p < 0:
            raise NumericsUnreliableError("P-side mass above 1: internal error")
        exact = fmpq(W_A - U_A - deleted_p, 1 << F)
    enc = {"W_A": exact_str(W_A, F), "U_A": exact_str(U_A, F), "deleted_p": exact_str(deleted_p, F)}
    stats = {"stages": len(stages), "lines": len(lines), "final_length": n, "products": led.products}
    return LowerResult(round_down_sig(exact, 10), exact, enc, {"total": round(time.perf_counter() - t0, 3)}, stats,
                       pmfs=(list(uu), list(ww), F))
