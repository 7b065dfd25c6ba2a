"""RFC 9162 Merkle log proofs, checked offline (docs/release.md "The log"); imports no other project package.

Leaf hash SHA-256(0x00 || entry), node hash SHA-256(0x01 || left || right) (RFC 9162 §2.1.1); inclusion
proofs are verified by §2.1.3.2, consistency proofs by §2.1.4.2. A tree head {log, size, root, time} is
signed as a DSSE envelope (payload type HEAD_TYPE) with the log's Ed25519 key, verified before it is read.
"""
from __future__ import annotations

import base64
import hashlib

from cryptography.exceptions import InvalidSignature

from .format.envelope import keyid, pae
from .format.strict import Reject, load_json

HEAD_TYPE = "application/vnd.sigmacert.tree-head+json"
PROOF_FORMAT = "sigmacert-log-proof/v1"
LOG_NAME = "sigmacert-log/v1"


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_inclusion(index: int, size: int, leaf: bytes, path: list[bytes]) -> bytes | None:
    """RFC 9162 §2.1.3.2: the root an inclusion proof leads to, or None if the proof is malformed."""
    if not 0 <= index < size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None


def verify_inclusion(index: int, size: int, leaf: bytes, path: list[bytes], root: bytes) -> bool:
    return root_from_inclusion(index, size, leaf, path) == root


def verify_consistency(size1: int, size2: int, proof: list[bytes], root1: bytes, root2: bytes) -> bool:
    """RFC 9162 §2.1.4.2: the tree of size2 with root2 extends the tree of size1 with root1."""
    if not 0 < size1 <= size2:
        return False
    if size1 == size2:
        return not proof and root1 == root2
    path = list(proof)
    if size1 & (size1 - 1) == 0:          # size1 a power of 2: the old root is the first node
        path = [root1, *path]
    if not path:
        return False
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == root1 and sr == root2 and sn == 0


def open_head(env: dict, keys: list) -> tuple[dict, str]:
    """(the signed tree head {log, size, root, time}, the keyid that signed it) after its Ed25519 signature
    verifies; Reject otherwise."""
    if not isinstance(env, dict) or set(env) != {"payloadType", "payload", "signatures"} \
            or env.get("payloadType") != HEAD_TYPE or not isinstance(env["signatures"], list):
        raise Reject("log-head", "the tree head is not a DSSE envelope of type " + HEAD_TYPE)
    try:
        body = base64.b64decode(env["payload"], validate=True)
        sigs = [(s["keyid"], base64.b64decode(s["sig"], validate=True)) for s in env["signatures"]]
    except (ValueError, TypeError, KeyError):
        raise Reject("log-head", "malformed base64 or signature entry") from None
    trusted = {keyid(k): k for k in keys}
    for kid, sig in sigs:
        if kid in trusted:
            try:
                trusted[kid].verify(sig, pae(HEAD_TYPE, body))
            except InvalidSignature:
                raise Reject("log-head", "the tree head's signature does not verify") from None
            head = load_json(body, "log-head")
            if not isinstance(head, dict) or head.get("log") != LOG_NAME or not isinstance(head.get("size"), int) \
                    or not isinstance(head.get("root"), str) or len(head["root"]) != 64:
                raise Reject("log-head", "the tree head lacks log, size, root")
            return head, kid
    raise Reject("log-head", "the tree head is not signed by a given key")


def _hexes(xs) -> list[bytes]:
    if not isinstance(xs, list):
        raise Reject("log-proof", "a proof path must be a list of hex hashes")
    try:
        out = [bytes.fromhex(x) for x in xs]
    except (TypeError, ValueError):
        raise Reject("log-proof", "a proof path must be a list of hex hashes") from None
    if any(len(x) != 32 for x in out):
        raise Reject("log-proof", "every hash of a proof path has 32 bytes")
    return out


def verify_log_proof(proof: dict, keys: list, certificate: bytes | None = None) -> dict:
    """Check an inclusion-proof bundle offline: the head's signature, then that the certificate (the
    bundle's own, or `certificate`, which must be the same bytes) is leaf `index` of the tree the head
    signs. Returns {index, size, root, time, keyid}; Reject(reason, detail) otherwise."""
    if not isinstance(proof, dict) or proof.get("format") != PROOF_FORMAT:
        raise Reject("log-proof", f"not a {PROOF_FORMAT} bundle")
    head, kid = open_head(proof.get("head"), keys)
    try:
        entry = base64.b64decode(proof["certificate"], validate=True)
        index = proof["index"]
    except (KeyError, TypeError, ValueError):
        raise Reject("log-proof", "the bundle lacks certificate (base64) or index") from None
    if certificate is not None and certificate != entry:
        raise Reject("log-proof", "the proof is for another certificate than the one given")
    if not isinstance(index, int) or proof.get("size") != head["size"]:
        raise Reject("log-proof", "index must be an integer and size the signed head's")
    if not verify_inclusion(index, head["size"], leaf_hash(entry), _hexes(proof.get("inclusion")),
                            bytes.fromhex(head["root"])):
        raise Reject("log-inclusion", f"the inclusion proof of leaf {index} does not lead to the signed root of the "
                     f"tree of size {head['size']}: this certificate is not in that log")
    return {"index": index, "size": head["size"], "root": head["root"], "time": head.get("time"), "keyid": kid}


def verify_consistency_bundle(old_head: dict, new_head: dict, proof: list, keys: list) -> dict:
    """Both heads signed by a given key and the consistency proof from the old to the new verifies."""
    (h1, _), (h2, _) = open_head(old_head, keys), open_head(new_head, keys)
    if not verify_consistency(h1["size"], h2["size"], _hexes(proof), bytes.fromhex(h1["root"]),
                              bytes.fromhex(h2["root"])):
        raise Reject("log-consistency", f"the tree of size {h2['size']} does not extend the signed tree of size "
                     f"{h1['size']}: an archived certificate was removed or replaced")
    return {"from": h1["size"], "to": h2["size"]}
