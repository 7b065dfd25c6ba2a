"""DSSE v1 envelope around an in-toto Statement v1, signed with Ed25519 (docs/certificate.md §1-2)."""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from certifier.errors import EnvelopeError

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://sigmacert.dev/tv-certificate/v1"
PREDICATE_TYPE_V2 = "https://sigmacert.dev/tv-certificate/v2"  # docs/two-sided.md: v1 + lower, privacy, tpr
PREDICATE_TYPE_V3 = "https://sigmacert.dev/tv-certificate/v3"  # docs/method-v2.md: scheme, method v2
PREDICATE_TYPE_V4 = "https://sigmacert.dev/certificate/v4"      # v3 + claim.kind (dp, tpr), upper, bound_lower
PREDICATE_TYPE_V5 = "https://sigmacert.dev/certificate/v5"      # a run in stages (certifier.certificate.stages)
PREDICATE_TYPE_V6 = "https://sigmacert.dev/certificate/v6"      # an audit (certifier.certificate.audit)
MAX_BYTES = 4 * 1024 * 1024
# the field of the claim that names its format, newest first: a run in stages (v5), a target kind (v4), a scheme (v3)
CLAIM_FIELD_TYPES = (("stages", PREDICATE_TYPE_V5), ("kind", PREDICATE_TYPE_V4), ("scheme", PREDICATE_TYPE_V3))


def _reject_float_specials(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        raise EnvelopeError("NaN/Infinity not allowed in canonical JSON")
    if isinstance(obj, dict):
        for v in obj.values():
            _reject_float_specials(v)
    elif isinstance(obj, list):
        for v in obj:
            _reject_float_specials(v)


def canonical_json(obj) -> bytes:
    """UTF-8, keys sorted, separators (',', ':'), no NaN/Infinity (docs/certificate.md §2)."""
    _reject_float_specials(obj)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def public_raw(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id(public_key: Ed25519PublicKey) -> str:
    """Lowercase hex SHA-256 of the raw 32-byte Ed25519 public key."""
    return hashlib.sha256(public_raw(public_key)).hexdigest()


def claim_subject(claim: dict) -> dict:
    """The subject when no file is given: name 'claim', digest of the canonical claim."""
    return {"name": "claim", "digest": {"sha256": hashlib.sha256(canonical_json(claim)).hexdigest()}}


def file_subject(name: str, data: bytes) -> dict:
    return {"name": name, "digest": {"sha256": hashlib.sha256(data).hexdigest()}}


def predicate_type(predicate: dict) -> str:
    """v6 for an audit; else the type of the newest format field the claim carries (CLAIM_FIELD_TYPES: v5 a run in
    stages, v4 a target kind, v3 a scheme, docs/method-v2.md); else v2 iff the predicate carries the two-sided
    additions (docs/two-sided.md); else v1."""
    if "audit" in predicate:                      # an audit of a claim (format v6)
        return PREDICATE_TYPE_V6
    return next((ptype for field, ptype in CLAIM_FIELD_TYPES if field in predicate["claim"]),
                PREDICATE_TYPE_V2 if "lower" in predicate else PREDICATE_TYPE)


def statement(subject: dict, predicate: dict) -> dict:
    """An in-toto Statement v1 with our predicate type (v1, or v2 for a two-sided predicate)."""
    return {"_type": STATEMENT_TYPE, "subject": [subject], "predicateType": predicate_type(predicate),
            "predicate": predicate}


def sign_envelope(stmt: dict, private_key: Ed25519PrivateKey) -> dict:
    """The DSSE envelope: payload = canonical Statement bytes, Ed25519 signature over PAE."""
    body = canonical_json(stmt)
    sig = private_key.sign(pae(PAYLOAD_TYPE, body))
    return {"payloadType": PAYLOAD_TYPE,
            "payload": base64.b64encode(body).decode("ascii"),
            "signatures": [{"keyid": key_id(private_key.public_key()),
                            "sig": base64.b64encode(sig).decode("ascii")}]}


def sign_certificate(predicate: dict, private_key: Ed25519PrivateKey, subject: dict | None = None) -> bytes:
    """The certificate as written: the canonical bytes of the DSSE envelope of the Statement of
    `predicate` about `subject` (default: the claim), signed with `private_key`. The one place a
    certificate is built and signed (API, CLI, service, atlas)."""
    subj = claim_subject(predicate["claim"]) if subject is None else subject
    return sign_statement(statement(subj, predicate), private_key)


def sign_statement(stmt: dict, private_key: Ed25519PrivateKey) -> bytes:
    """The canonical bytes of the signed DSSE envelope of an already built Statement (the service
    signs exactly the Statement the independent verifier replayed)."""
    return canonical_json(sign_envelope(stmt, private_key))


def _no_dupes(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise EnvelopeError(f"duplicate JSON key {k!r}")
        d[k] = v
    return d


def load_envelope(data: bytes) -> dict:
    """Parse an envelope file strictly (size, exact keys, no duplicate keys)."""
    if len(data) > MAX_BYTES:
        raise EnvelopeError("certificate larger than 4 MiB")
    try:
        env = json.loads(data.decode("utf-8"), object_pairs_hook=_no_dupes)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise EnvelopeError(f"not a JSON certificate: {err.__class__.__name__}") from None
    except RecursionError:
        raise EnvelopeError("not a certificate: JSON nested too deeply") from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise EnvelopeError("not a certificate: a number with too many digits") from None
    if not isinstance(env, dict) or set(env) != {"payloadType", "payload", "signatures"}:
        raise EnvelopeError("not a DSSE envelope (want payloadType, payload, signatures)")
    if env["payloadType"] != PAYLOAD_TYPE:
        raise EnvelopeError("unexpected payloadType")
    sigs = env["signatures"]
    if not isinstance(sigs, list) or not sigs or any(
            not isinstance(s, dict) or set(s) != {"keyid", "sig"} for s in sigs):
        raise EnvelopeError("malformed signatures")
    return env


def _b64(s: str) -> bytes:
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, AttributeError):
        raise EnvelopeError("bad base64") from None


def verify_envelope(env: dict, public_key: Ed25519PublicKey) -> dict:
    """Verify-then-read: check the Ed25519 signature over PAE, then return the parsed Statement."""
    body = _b64(env["payload"])
    want = key_id(public_key)
    for s in env["signatures"]:
        if s["keyid"] != want:
            continue
        try:
            public_key.verify(_b64(s["sig"]), pae(env["payloadType"], body))
        except InvalidSignature:
            raise EnvelopeError("signature does not verify") from None
        return json.loads(body.decode("utf-8"), object_pairs_hook=_no_dupes)
    raise EnvelopeError("no signature by this key")


def read_unverified(env: dict) -> dict:
    """The Statement without any verification (for `show`, which says so)."""
    return json.loads(_b64(env["payload"]).decode("utf-8"), object_pairs_hook=_no_dupes)
