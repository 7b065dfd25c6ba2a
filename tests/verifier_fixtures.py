"""Build signed test certificates straight from docs/certificate.md (no certifier code)."""
from __future__ import annotations

import base64
import copy
import hashlib
import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import arb, fmpq

from verifier.core import round_up
from verifier.envelope import PAYLOAD_TYPE, keyid, pae
from verifier.replay import replay
from verifier.statement import STATEMENT, _typed, SCHEMA
from verifier.strict import working_prec

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
    digest = hashlib.sha256(canonical(pred["claim"])).hexdigest()
    return {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "claim", "digest": {"sha256": digest}}],
            "predicateType": "https://sigmacert.dev/tv-certificate/v1", "predicate": pred}


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
