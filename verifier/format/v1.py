"""Format v1: the tv-certificate/v1 predicate, upper method lemma-c5-rounding v1 (docs/certificate.md §3)."""
from __future__ import annotations

from .schema import BALLS, B, D, I, N, S, is_int, typed
from .strict import Reject

PREDICATE_TYPE = "https://sigmacert.dev/tv-certificate/v1"
MECHANISM, ADJACENCY = "dp-sgd/random-allocation", "zero-out"
STATEMENT = ("TV(P_M^E, Q_M^E) <= target, so every membership-inference test "
             "has accuracy <= 1/2 + target/2")
SCHEMA = {
    "claim": {"mechanism": S, "adjacency": S, "steps": I, "epochs": I, "sigma": D,
              "target": D, "statement": S},
    "method": {"name": S, "version": I, "h": D, "tail_start": D, "tail_step": D, "cap": D,
               "truncation": D, "lattice_schedule": [I], "eta": D, "k_minus": I,
               "k_plus": I, "prec": I, "fixed_point_bits": I, "trim": D},
    "enclosures": {"O": B, "mass": BALLS("step_i", "step_ii", "step_iii", "step_iv"),
                   "deleted": BALLS("cap", "truncation", "trim", "log_grid", "fixed_point")},
    "bound": D,
    "numerics": {"tv_exact": S, "tv_error": S, "closed_form_sigma": S, "search_resolution": S},
    "software": {"sigmacert": S, "python-flint": S, "flint": S},
    "issued_at": S,
    "timings": {"step_i": N, "step_ii": N, "step_iii": N, "step_iv": N, "total": N},
}




def typed_v1(raw) -> dict:
    return typed(raw, SCHEMA, "predicate")


def schedule_checks(m, M):
    """Checks shared by the upper and the lower method: lattice schedule, precision, trim."""
    g, bad = m["lattice_schedule"], []
    if len(g) != M.bit_length() or g[0] != 1 or g[-1] > 2**20 or any(b < a or b % a for a, b in zip(g, g[1:])):
        bad.append("lattice_schedule needs floor(log2 M)+1 entries, g_0 = 1, each a multiple "
                   "of the previous, at most 2^20")
    if not (8 <= m["prec"] <= 4096 and 8 <= m["fixed_point_bits"] <= 1024 and m["trim"] < 1):
        bad.append("need 8 <= prec <= 4096, 8 <= fixed_point_bits <= 1024, trim < 1")
    return bad


def check_claim_and_method(p):
    c, m = p["claim"], p["method"]
    if c["mechanism"] != MECHANISM or c["adjacency"] != ADJACENCY:
        raise Reject("claim-mechanism", f"mechanism/adjacency {c['mechanism']!r}/{c['adjacency']!r} not supported")
    if c["statement"] != STATEMENT:
        raise Reject("claim-statement", "claim.statement is not the v1 statement text")
    if c["steps"] < 1 or c["epochs"] < 1 or c["sigma"] <= 0 or not 0 < c["target"] < 1:
        raise Reject("claim-invalid", "need steps >= 1, epochs >= 1, sigma > 0, 0 < target < 1")
    if m["name"] != "lemma-c5-rounding" or m["version"] != 1:
        raise Reject("method-unknown", f"method {m['name']!r} v{m['version']} is not lemma-c5-rounding v1")
    h, ts, st, cap = m["h"], m["tail_start"], m["tail_step"], m["cap"]
    bad = []
    if not (h > 0 and 0 < ts <= cap and is_int(ts / h) and is_int(cap / h)):
        bad.append("need h > 0, 0 < tail_start <= cap, both multiples of h")
    elif ts < cap and not (st > 0 and is_int(st / h) and is_int((cap - ts) / st)):
        bad.append("need tail_step > 0 a multiple of h dividing cap - tail_start")
    if not (m["truncation"] > 0 and m["eta"] > 0 and m["k_minus"] < m["k_plus"]):
        bad.append("need truncation > 0, eta > 0, k_minus < k_plus")
    bad += schedule_checks(m, c["steps"])
    if bad:
        raise Reject("method-invalid", "; ".join(bad))
    if p["bound"] > c["target"]:
        raise Reject("bound-above-target", f"recorded bound {p['bound']} > target {c['target']}")
