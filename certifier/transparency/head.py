"""Signed tree heads and inclusion-proof bundles (docs/release.md "The log").

A head is {log, size, root (hex), time (UTC seconds)} as canonical JSON in a DSSE envelope of payload
type HEAD_TYPE, signed with Ed25519 over PAE. `sign_head` is the one place a head is signed: a service
whose key lives in another process passes its own `sign(message) -> signature`.
"""
from __future__ import annotations

import base64
import json
import time
from typing import Callable

from certifier.certificate.envelope import canonical_json, pae

HEAD_TYPE = "application/vnd.sigmacert.tree-head+json"
PROOF_FORMAT = "sigmacert-log-proof/v1"
LOG_NAME = "sigmacert-log/v1"


def sign_head(size: int, root: bytes, sign: Callable[[bytes], bytes], keyid: str, at: int | None = None) -> dict:
    """The DSSE envelope of the head (size, root, time); `sign` signs the PAE bytes (Ed25519)."""
    body = canonical_json({"log": LOG_NAME, "size": size, "root": root.hex(),
                           "time": int(time.time() if at is None else at)})
    return {"payloadType": HEAD_TYPE, "payload": base64.b64encode(body).decode("ascii"),
            "signatures": [{"keyid": keyid, "sig": base64.b64encode(sign(pae(HEAD_TYPE, body))).decode("ascii")}]}


def read_head(env: dict) -> dict:
    """The head's fields WITHOUT verifying the signature (for the log's own bookkeeping)."""
    return json.loads(base64.b64decode(env["payload"]))


def proof_bundle(entry: bytes, index: int, tree, head_env: dict) -> dict:
    """The inclusion proof of leaf `index` (the certificate bytes `entry`) against the signed head."""
    size = read_head(head_env)["size"]
    return {"format": PROOF_FORMAT, "index": index, "size": size,
            "certificate": base64.b64encode(entry).decode("ascii"),
            "inclusion": [h.hex() for h in tree.inclusion(index, size)], "head": head_env}


def consistency_bundle(tree, old_env: dict, new_env: dict) -> dict:
    """The consistency proof between two signed heads of the same tree."""
    old, new = read_head(old_env)["size"], read_head(new_env)["size"]
    return {"format": "sigmacert-log-consistency/v1", "from": old, "to": new, "old_head": old_env,
            "new_head": new_env, "proof": [h.hex() for h in tree.consistency(old, new)]}
