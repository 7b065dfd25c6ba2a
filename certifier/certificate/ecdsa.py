"""ECDSA on the NIST P curves for release manifests: key id and DSSE signing over PAE (docs/release.md).

The hash follows the curve (P-256 SHA-256, P-384 SHA-384, P-521 SHA-512), as OpenSSF model signing
does; the signature is DER. The key id is the SHA-256 of the DER SubjectPublicKeyInfo.
"""
from __future__ import annotations

import base64
import hashlib

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from certifier.certificate.envelope import PAYLOAD_TYPE, canonical_json, pae

CURVE_HASH = {"secp256r1": hashes.SHA256, "secp384r1": hashes.SHA384, "secp521r1": hashes.SHA512}


def ec_key_id(public_key: ec.EllipticCurvePublicKey) -> str:
    """Lowercase hex SHA-256 of the DER SubjectPublicKeyInfo."""
    return hashlib.sha256(public_key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).hexdigest()


def sign_envelope_ec(stmt: dict, private_key: ec.EllipticCurvePrivateKey) -> dict:
    """The DSSE envelope of `stmt`: payload = canonical Statement bytes, ECDSA (DER) over PAE."""
    body = canonical_json(stmt)
    sig = private_key.sign(pae(PAYLOAD_TYPE, body), ec.ECDSA(CURVE_HASH[private_key.curve.name]()))
    return {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(body).decode("ascii"),
            "signatures": [{"keyid": ec_key_id(private_key.public_key()),
                            "sig": base64.b64encode(sig).decode("ascii")}]}
