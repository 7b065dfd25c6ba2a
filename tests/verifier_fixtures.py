"""Build signed test certificates straight from docs/certificate.md (no certifier code)."""
from __future__ import annotations

import base64
import copy
import hashlib
import json
from fractions import Fraction

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import arb, fmpq

from verifier.core import round_up
from verifier.format.envelope import PAYLOAD_TYPE, keyid, pae
from verifier.format.statement import SCHEMA, SCHEMA_V2, STATEMENT, _typed
from verifier.format.strict import working_prec
from verifier.replay.upper_v1 import replay

CLAIM = {"mechanism": "dp-sgd/random-allocation", "adjacency": "zero-out", "steps": 12,
         "epochs": 3, "sigma": "1.5", "target": "0.15", "statement": STATEMENT}
METHOD = {"name": "lemma-c5-rounding", "version": 1, "h": "0.01", "tail_start": "4",
          "tail_step": "0.1", "cap": "16", "truncation": "96", "lattice_schedule": [1, 1, 1, 1],
          "eta": "0.001", "k_minus": -1000, "k_plus": 2000, "prec": 100,
          "fixed_point_bits": 80, "trim": "1e-20"}


def canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def ball(x) -> str:
    with working_prec(400):
        x = x if isinstance(x, arb) else arb(x)
        return x.str(30, radius=True)


def predicate(claim=CLAIM, method=METHOD) -> dict:
    """The predicate of docs/certificate.md §3, enclosures computed from the spec (§4)."""
    typed = _typed({"claim": claim, "method": method}, {k: SCHEMA[k] for k in ("claim", "method")}, "p")
    r = replay(typed["claim"], typed["method"])
    enc = {k: ({kk: ball(vv) for kk, vv in v.items()} if isinstance(v, dict) else ball(v))
           for k, v in r.enclosures.items()}
    return {"claim": copy.deepcopy(claim), "method": copy.deepcopy(method), "enclosures": enc,
            "bound": round_up(r.bound, 10),
            "numerics": {"tv_exact": "0.14", "tv_error": "1e-9", "closed_form_sigma": "1.7",
                         "search_resolution": "1e-6"},
            "software": {"sigmacert": "0.1.0", "python-flint": "0.9.0", "flint": "3.6.0"},
            "issued_at": "2026-11-30T12:00:00Z",
            "timings": {"step_i": 0.1, "step_ii": 0.1, "step_iii": 0.1, "step_iv": 0.1, "total": 0.4}}


def statement(pred: dict) -> dict:
    """The Statement of a predicate: format v3 when the claim names its scheme (what
    `sigmacert certify` writes for method v1 with privacy rows and no lower side), else v1."""
    digest = hashlib.sha256(canonical(pred["claim"])).hexdigest()
    version = "v3" if "scheme" in pred["claim"] else "v1"
    return {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "claim", "digest": {"sha256": digest}}],
            "predicateType": f"https://sigmacert.dev/tv-certificate/{version}", "predicate": pred}


def smallest_step(fits, limit: int) -> int:
    """The smallest n >= 1 with fits(n), for fits false then true (doubling, then bisection):
    the epsilon of a privacy row is the smallest grid point whose delta fits."""
    lo, hi = 0, 1
    while not fits(hi):
        assert hi < limit, "delta not reachable"
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def envelope(payload: bytes, key: Ed25519PrivateKey, kid: str | None = None,
             ptype: str = PAYLOAD_TYPE) -> dict:
    sig = key.sign(pae(ptype, payload))
    return {"payloadType": ptype, "payload": base64.b64encode(payload).decode(),
            "signatures": [{"keyid": kid or keyid(key.public_key()),
                            "sig": base64.b64encode(sig).decode()}]}


def sign_statement(st: dict, key) -> bytes:
    return json.dumps(envelope(canonical(st), key)).encode()


def public_pem(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


# ---- format v2 (docs/two-sided.md) -------------------------------------------------
LOWER_METHOD = {"name": "data-processing-lower", "version": 1, "h": "0.01", "cap": "16",
                "eta": "0.001", "b_min": -4000, "b_max": 4000, "lattice_schedule": [1, 1, 2, 2],
                "prec": 100, "fixed_point_bits": 80, "trim": "1e-20"}


def round_down(q: fmpq, digits: int) -> str:
    return round_up(q, digits, up=False)


# deleted mass << 1e-6, so delta = 1e-6 is reachable
METHOD_V2 = dict(METHOD, cap="64", truncation="192", k_minus=-3000, k_plus=3000)


def predicate_v2(claim=CLAIM, method=METHOD_V2, sigma_low="1.45", lower_method=LOWER_METHOD,
                 grid="0.0001") -> dict:
    """A v2 predicate built from the spec: the v1 predicate plus `lower` (§1), `privacy`
    (smallest epsilon on the grid, §2) and `tpr` (best epsilon on a coarse scan, §3)."""
    from verifier.core import _upper
    from verifier.replay.lower_v1 import deltas, replay_lower
    pred = predicate(claim, method)
    typed = _typed({"claim": claim, "method": method}, {k: SCHEMA[k] for k in ("claim", "method")}, "p")
    lm = _typed(lower_method, SCHEMA_V2["lower"]["method"], "lm")
    lr = replay_lower(claim["steps"], claim["epochs"], fmpq(Fraction(sigma_low).numerator,
                      Fraction(sigma_low).denominator), lm)
    pred["lower"] = {"sigma_low": sigma_low, "target": claim["target"], "method": copy.deepcopy(lower_method),
                     "tv_lower": round_down(lr.bound, 10),
                     "enclosures": {"W_A": ball(lr.W_A), "U_A": ball(lr.U_A), "deleted_p": ball(lr.deficit)}}
    r = replay(typed["claim"], typed["method"])
    eta, g = typed["method"]["eta"], fmpq(Fraction(grid).numerator, Fraction(grid).denominator)
    with working_prec(200):
        worst = lambda eps: max(_upper(x) for x in deltas(r.b, r.F, eta, eps))
        rows = {}
        for d in ("1e-05", "1e-06"):
            delta = fmpq(1, Fraction(d).denominator)
            hi = smallest_step(lambda n, delta=delta: worst(n * g) <= delta, 2**24)
            dqp, dpq = deltas(r.b, r.F, eta, hi * g)
            rows[d] = {"epsilon": _dec(hi * g),
                       "delta_qp": ball(dqp), "delta_pq": ball(dpq)}
        pred["privacy"] = {"epsilon_grid": grid, "epsilon_at_delta": rows}
        tpr = {}
        for a in ("0.1", "0.01", "0.001"):
            al = fmpq(Fraction(a).numerator, Fraction(a).denominator)
            best = min((_upper(arb(fmpq(j, 20)).exp() * arb(al) + deltas(r.b, r.F, eta, fmpq(j, 20))[0]), j)
                       for j in range(0, 200))
            tpr[a] = {"tpr": round_up(best[0], 4), "epsilon": _dec(fmpq(best[1], 20))}
        pred["tpr"] = tpr
    return pred


def _dec(q: fmpq) -> str:
    """An exact decimal string of a rational whose denominator divides a power of 10."""
    x = Fraction(int(q.p), int(q.q))
    for k in range(40):
        if (x * 10**k).denominator == 1:
            s = str(x.numerator * 10**k // x.denominator).rjust(k + 1, "0")
            return s[:len(s) - k] + ("." + s[len(s) - k:] if k else "")
    raise ValueError(q)


def statement_v2(pred: dict) -> dict:
    return dict(statement(pred), predicateType="https://sigmacert.dev/tv-certificate/v2")
