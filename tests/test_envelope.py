"""DSSE envelope, in-toto Statement, canonical JSON and Ed25519 keys (certifier/certificate/envelope.py, keys.py)."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from certifier.certificate.envelope import (
    PAYLOAD_TYPE,
    EnvelopeError,
    canonical_json,
    claim_subject,
    key_id,
    load_envelope,
    pae,
    public_raw,
    read_unverified,
    sign_envelope,
    statement,
    verify_envelope,
)
from certifier.certificate.keys import KeyFileError, keygen, load_private, load_public
from sigmacert.cli import main


def test_pae_matches_dsse_spec_example():
    assert pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"


def test_canonical_json():
    assert canonical_json({"b": 1, "a": [1, "x"], "c": {"z": 0, "y": "é"}}) == \
        '{"a":[1,"x"],"b":1,"c":{"y":"é","z":0}}'.encode("utf-8")
    with pytest.raises(EnvelopeError):
        canonical_json({"a": float("nan")})


def _stmt():
    claim = {"steps": 3, "epochs": 2, "sigma": "1.5", "target": "0.1"}
    return statement(claim_subject(claim), {"claim": claim, "bound": "0.09"})


def test_sign_verify_roundtrip_and_tamper():
    key = Ed25519PrivateKey.generate()
    env = sign_envelope(_stmt(), key)
    assert set(env) == {"payloadType", "payload", "signatures"}
    assert env["payloadType"] == PAYLOAD_TYPE
    assert env["signatures"][0]["keyid"] == hashlib.sha256(public_raw(key.public_key())).hexdigest()
    env2 = load_envelope(json.dumps(env).encode())
    assert verify_envelope(env2, key.public_key()) == _stmt()
    # payload bytes are the canonical Statement
    assert base64.b64decode(env["payload"]) == canonical_json(_stmt())
    # a changed payload no longer verifies
    bad = dict(env, payload=base64.b64encode(canonical_json(dict(_stmt(), predicateType="x"))).decode())
    with pytest.raises(EnvelopeError):
        verify_envelope(bad, key.public_key())
    # another key is not accepted
    with pytest.raises(EnvelopeError):
        verify_envelope(env, Ed25519PrivateKey.generate().public_key())
    assert read_unverified(env)["predicate"]["bound"] == "0.09"


def test_subject_is_digest_of_canonical_claim():
    claim = {"b": 1, "a": "2"}
    s = claim_subject(claim)
    assert s == {"name": "claim", "digest": {"sha256": hashlib.sha256(b'{"a":"2","b":1}').hexdigest()}}


def test_load_envelope_rejects_duplicates_and_extra_keys():
    with pytest.raises(EnvelopeError):
        load_envelope(b'{"payloadType":"a","payloadType":"b","payload":"","signatures":[]}')
    with pytest.raises(EnvelopeError):
        load_envelope(json.dumps({"payloadType": PAYLOAD_TYPE, "payload": "", "signatures": [],
                                  "x": 1}).encode())
    with pytest.raises(EnvelopeError):
        load_envelope(b"not json")


def test_keygen_mode_refusal_and_keyid(tmp_path, capsys):
    d = tmp_path / "k"
    kid = keygen(str(d))
    priv, pub = d / "private.pem", d / "public.pem"
    assert stat.S_IMODE(os.stat(priv).st_mode) == 0o600
    assert priv.read_bytes().startswith(b"-----BEGIN " + b"PRIVATE KEY-----")  # PKCS#8 (split: no key-like text in git)
    assert pub.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")    # SubjectPublicKeyInfo
    assert key_id(load_public(str(pub))) == kid == key_id(load_private(str(priv)).public_key())
    before = priv.read_bytes()
    with pytest.raises(KeyFileError):
        keygen(str(d))
    assert priv.read_bytes() == before


def test_keygen_cli_never_prints_private_key(tmp_path, capsys):
    d = tmp_path / "k2"
    assert main(["keygen", "-o", str(d)]) == 0
    out = capsys.readouterr()
    assert "PRIVATE KEY" not in out.out + out.err
    kid = out.out.split()[2]
    assert len(kid) == 64 and kid == key_id(load_public(str(d / "public.pem")))
    assert main(["keygen", "-o", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refusing to overwrite" in err


def test_keygen_umask_does_not_widen(tmp_path):
    old = os.umask(0)
    try:
        keygen(str(tmp_path / "k3"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "k3" / "private.pem").st_mode) == 0o600
