"""Method v2's upper bound for a run in stages: step (iv) multiplies the stages' log-grid polynomials.

For stages s = 1..S, (M_s, E_s, t_s^2), the epoch factors are independent, so Lambda = prod_s prod_e L_{s,e}
and Lemma C.5 (generalised, docs/method-v2.md §1) applies factor by factor: steps (i)-(iii) of
certifier.bounds.upper_v2 run once per distinct (M_s, t_s^2) on ONE method (one eta grid, one
fixed-point unit), each giving its log-grid masses R_s; step (iv) forms prod_s R_s^{E_s}, each power
by binary powering and the product with the same clamp to k_top and trim after every product
(recorded in the ledger). Every operation is a mean-preserving rounding, a move down or a deletion,
so O = sum_k b_k min{1, e^{k eta}} <= E min{1, Lambda} and 1 - O >= the stages' TV.
Nothing assumes a shared sigma: each stage's line is computed at its own t_s^2 on the one grid (whose
h, cap and top octave the planner makes cover every line, certifier.methods.v2.stages.merge), so a sigma
per stage is the same computation (docs/compose.md §3).
"""
from __future__ import annotations

import time
from dataclasses import replace

from flint import arb, fmpq

from certifier.bounds.fixedpoint import Ledger, arb_str, product, round_up_sig, working_prec
from certifier.bounds.result import UpperResult, require_positive
from certifier.bounds.upper_v1 import o_ball
from certifier.bounds.upper_v2 import UpperV2, clamp_index, step_i, step_ii, step_iii, step_iv, trim_q
from certifier.errors import ParameterError
from certifier.params import at_least_one_stage


def product_runs(stages) -> list[tuple[int, int, fmpq]]:
    """The stages (M_s, E_s, t_s^2) of a product bound, checked (ParameterError): at least one, M_s and E_s integers
    >= 1, each t_s^2 a positive exact rational."""
    out = list(stages)
    at_least_one_stage(len(out))
    for m, e, t2 in out:
        require_positive(t2, "t^2")
        if not (isinstance(m, int) and isinstance(e, int) and m >= 1 and e >= 1):
            raise ParameterError("stage steps and epochs must be integers >= 1")
    return out


def rounding_bound_v2_product(stages, method: UpperV2) -> UpperResult:
    """1 - O >= TV of the product of (P_{M_s}^{E_s}, Q_{M_s}^{E_s}); stages are (M_s, E_s, t_s^2) with t^2 exact."""
    method = replace(method, level_bits=None)     # a run in stages: one lattice at every level (no §10)
    method.validate()
    stages = product_runs(stages)
    F = method.fixed_point_bits
    t0 = time.perf_counter()
    with working_prec(method.prec):
        led = Ledger(F)
        lines = {}
        for m, _, t2 in stages:  # steps (i)-(iii) once per distinct one-epoch factor
            if (m, t2) not in lines:
                P, _, _ = step_i(t2, method)
                lines[m, t2] = step_iii(step_ii(P, m, method, led), m, method, led)
        units = int((method.trim * (1 << F)).floor())
        b = None
        for m, e, t2 in stages:  # step (iv): each stage's power, then the product, tidied alike
            bs = step_iv(lines[m, t2], e, method, led)
            b = bs if b is None else trim_q(clamp_index(product(b, bs, None, led), method.k_top, led),
                                            method.eta, method.trim_shift, units, led)
        O = o_ball(b, method)
        one_minus_O = arb(1) - O
        stats = {"stages": len(stages), "lines": len(lines), "final_length": b.poly.length(),
                 "products": led.products}
        timings = {**dict.fromkeys(("step_i", "step_ii", "step_iii", "step_iv"), 0.0),
                   "total": round(time.perf_counter() - t0, 3)}
        return UpperResult(round_up_sig(one_minus_O, 10), one_minus_O, {"O": arb_str(O)}, timings, stats, b, O)


def t2_of(sigma: fmpq) -> fmpq:
    """t^2 = 1/sigma^2, exact."""
    return 1 / (sigma * sigma)
