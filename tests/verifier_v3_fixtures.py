"""Format v3 test certificates built from docs/method-v2.md with the verifier's own replay
(no certifier code): random allocation, method v2, lower method v2, privacy and TPR rows."""
from __future__ import annotations

import copy
import hashlib
import json
from fractions import Fraction

from flint import arb, fmpq
from helpers import ball, dec
from verifier_fixtures import envelope, smallest_step

from verifier.core import round_up
from verifier.format.schema import typed as typed_as
from verifier.format.strict import working_prec
from verifier.format.v1 import STATEMENT
from verifier.format.v3 import CLAIM, CLAIM_FIXED_BINS, LEVELS, LOWER_METHOD_V2, STATEMENT_FB
from verifier.format.v3 import METHOD_V2 as METHOD_SCHEMA
from verifier.replay.lower_v1 import deltas
from verifier.replay.lower_v2 import replay_lower_v2
from verifier.replay.slack import upper_end as _upper
from verifier.replay.upper_v2 import replay_v2

CLAIM_RA = {"mechanism": "dp-sgd/random-allocation", "scheme": "random-allocation", "adjacency": "zero-out",
            "steps": 6, "epochs": 2, "sigma": "1.2", "target": "0.2", "statement": STATEMENT}
CLAIM_FB = {**CLAIM_RA, "mechanism": "dp-sgd/fixed-bins", "scheme": "fixed-bins", "iterations": 12,
            "statement": STATEMENT_FB}
# a small lattice: N = 64, grid octaves 0..10, cap = 2^11 * 64 * 0.001 (E_Q[Y - cap]_+ < 1e-7:
# the privacy rows at delta = 1e-6 are reachable)
METHOD_V2 = {"name": "lemma-c5-rounding", "version": 2, "h": "0.001", "mantissa_bits": 6,
             "y_mantissa_bits": [4, 5, 6, 6, 6, 5, 4, 3, 3, 2, 2], "top_octave": 13, "cap": "131.072",
             "eta": "0.005", "k_minus": -2000, "k_plus": 1100, "k_top": 2500, "prec": 100,
             "fixed_point_bits": 64, "trim": "0.000000000000001", "trim_shift": "4"}
LOWER_V2 = {**{k: v for k, v in METHOD_V2.items() if k != "trim_shift"}, "name": "data-processing-lower"}
SIGMA_LOW = "1"


def typed(claim: dict, method: dict, lower: bool = False) -> dict:
    """Claim and method (or lower method) with exact rationals, through the v3 schema."""
    cs = CLAIM_FIXED_BINS if claim["scheme"] == "fixed-bins" else CLAIM
    levels = LEVELS if "level_bits" in method else {}          # method-v2.md §10
    if lower:
        p = typed_as({"claim": claim, "m": method}, {"claim": cs, "m": {**LOWER_METHOD_V2, **levels}}, "p")
        return {"claim": p["claim"], "lower": {"method": p["m"]}}
    return typed_as({"claim": claim, "method": method}, {"claim": cs, "method": {**METHOD_SCHEMA, **levels}}, "p")


def predicate_v3(claim=CLAIM_RA, method=METHOD_V2, sigma_low=SIGMA_LOW, lower_method=LOWER_V2) -> dict:
    """A v3 predicate from the spec: the upper replay's enclosures and bound, a target between
    it and the lower bound at sigma_low, the lower side, the privacy and TPR rows."""
    p = typed(claim, method)
    r = replay_v2(p["claim"], p["method"])
    lp = typed(claim, lower_method, lower=True)
    lr = replay_lower_v2(lp["claim"], fmpq(Fraction(sigma_low).numerator, Fraction(sigma_low).denominator),
                         lp["lower"]["method"])
    assert lr.bound > r.bound + fmpq(1, 1000), "the test cell needs a gap between the bounds"
    target = dec(Fraction(round_up((r.bound + lr.bound) / 2, 3)))
    enc = {k: ({kk: ball(vv) for kk, vv in v.items()} if isinstance(v, dict) else ball(v))
           for k, v in r.enclosures.items()}
    pred = {"claim": dict(claim, target=target), "method": copy.deepcopy(method), "enclosures": enc,
            "bound": round_up(r.bound, 10),
            "numerics": {"tv_exact": "0.19", "tv_error": "1e-9", "closed_form_sigma": "1.3",
                         "search_resolution": "1e-6"},
            "software": {"sigmacert": "0.1.0", "python-flint": "0.9.0", "flint": "3.6.0"},
            "issued_at": "2026-12-01T12:00:00Z",
            "timings": {"step_i": 0.1, "step_ii": 0.1, "step_iii": 0.1, "step_iv": 0.1, "total": 0.4},
            "lower": {"sigma_low": sigma_low, "target": target, "method": copy.deepcopy(lower_method),
                      "tv_lower": round_up(lr.bound, 10, up=False),
                      "enclosures": {"W_A": ball(lr.W_A), "U_A": ball(lr.U_A), "deleted_p": ball(lr.deleted_p)}}}
    eta, g = p["method"]["eta"], fmpq(1, 10**4)
    with working_prec(200):
        worst = lambda eps: max(_upper(x) for x in deltas(r.b, r.F, eta, eps))
        rows = {}
        for d in ("1e-05", "1e-06"):
            delta = fmpq(1, Fraction(d).denominator)
            hi = smallest_step(lambda n, delta=delta: worst(n * g) <= delta, 2**20)
            dqp, dpq = deltas(r.b, r.F, eta, hi * g)
            rows[d] = {"epsilon": dec(hi * g), "delta_qp": ball(dqp), "delta_pq": ball(dpq)}
        pred["privacy"] = {"epsilon_grid": "0.0001", "epsilon_at_delta": rows}
        tpr = {}
        for a in ("0.1", "0.01", "0.001"):
            al = fmpq(1, Fraction(a).denominator)
            best = min((_upper(arb(fmpq(j, 20)).exp() * arb(al) + deltas(r.b, r.F, eta, fmpq(j, 20))[0]), j)
                       for j in range(0, 120))
            tpr[a] = {"tpr": round_up(best[0], 6), "epsilon": dec(fmpq(best[1], 20))}
        pred["tpr"] = tpr
    return pred


def sign_v3(pred: dict, key, ptype: str = "https://sigmacert.dev/tv-certificate/v3") -> bytes:
    canon = lambda o: json.dumps(o, sort_keys=True, separators=(",", ":")).encode()
    st = {"_type": "https://in-toto.io/Statement/v1",
          "subject": [{"name": "claim", "digest": {"sha256": hashlib.sha256(canon(pred["claim"])).hexdigest()}}],
          "predicateType": ptype, "predicate": pred}
    return json.dumps(envelope(canon(st), key)).encode()


def resign_v3(pred: dict, key, change=None, ptype: str = "https://sigmacert.dev/tv-certificate/v3"):
    """The verifier's verdict on a copy of `pred`, changed by change(p), signed again with `key`."""
    from verifier import verify_bytes
    p = copy.deepcopy(pred)
    if change:
        change(p)
    return verify_bytes(sign_v3(p, key, ptype), [key.public_key()])
