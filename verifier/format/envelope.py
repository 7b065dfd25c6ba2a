"""DSSE v1 envelope: strict parse, keyid, Ed25519 over PAE, verify-then-read (spec §1)."""
from __future__ import annotations

import hashlib
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .strict import Reject, b64, load_json

PAYLOAD_TYPE = "application/vnd.in-toto+json"
MAX_BYTES = 4 * 1024 * 1024
_HEX64 = re.compile(r"[0-9a-f]{64}")


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    """SubjectPublicKeyInfo PEM holding an Ed25519 key (ValueError otherwise)."""
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return key


def keyid(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def pae(payload_type: str, body: bytes) -> bytes:
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def open_envelope(data: bytes, keys: list[Ed25519PublicKey]) -> tuple[bytes, str]:
    """Return (payload bytes, keyid of the key that verified) or raise Reject."""
    if len(data) > MAX_BYTES:
        raise Reject("envelope-too-large", f"{len(data)} bytes > {MAX_BYTES}")
    env = load_json(data, "envelope")
    if not isinstance(env, dict) or set(env) != {"payloadType", "payload", "signatures"}:
        got = sorted(env) if isinstance(env, dict) else type(env).__name__
        raise Reject("envelope-fields", f"envelope must have exactly payloadType, payload, signatures; got {got}")
    sigs = env["signatures"]
    if not isinstance(sigs, list) or not sigs:
        raise Reject("envelope-fields", "signatures must be a non-empty list")
    for s in sigs:
        if not isinstance(s, dict) or set(s) != {"keyid", "sig"}:
            raise Reject("envelope-fields", "each signature must have exactly keyid and sig")
        if not isinstance(s["keyid"], str) or not _HEX64.fullmatch(s["keyid"]):
            raise Reject("envelope-fields", "keyid must be 64 lowercase hex digits")
    if env["payloadType"] != PAYLOAD_TYPE:
        raise Reject("payload-type", f"payloadType {env['payloadType']!r} != {PAYLOAD_TYPE!r}")
    payload = b64(env["payload"], "payload")
    raws = [(b64(s["sig"], "sig"), s["keyid"]) for s in sigs]
    trusted = {keyid(k): k for k in keys}
    matching = [(raw, kid) for raw, kid in raws if kid in trusted]
    if not matching:
        raise Reject("unknown-key", "no signature has the keyid of a given public key "
                     f"(envelope keyids: {', '.join(k for _, k in raws)})")
    message = pae(PAYLOAD_TYPE, payload)
    for raw, kid in matching:
        try:
            trusted[kid].verify(raw, message)  # raises unless a valid 64-byte Ed25519 signature
            return payload, kid  # verify-then-read: the payload is parsed only now
        except InvalidSignature:
            pass
    raise Reject("bad-signature", "Ed25519 signature over PAE(payloadType, payload) does not verify")
