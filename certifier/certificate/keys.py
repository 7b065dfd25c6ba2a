"""Ed25519 keys: DIR/private.pem (PKCS#8 PEM, mode 0600) and DIR/public.pem (SubjectPublicKeyInfo)."""
from __future__ import annotations

import os

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

from certifier.certificate.envelope import key_id
from certifier.errors import KeyFileError


def keygen(directory: str) -> str:
    """Write a fresh key pair into `directory`; return the key id. Never overwrites."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    priv_path = os.path.join(directory, "private.pem")
    pub_path = os.path.join(directory, "public.pem")
    for p in (priv_path, pub_path):
        if os.path.lexists(p):
            raise KeyFileError(f"{p} exists; refusing to overwrite")
    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    pub = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    fd = os.open(priv_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)  # regardless of the umask
        os.write(fd, priv)
    finally:
        os.close(fd)
    fd = os.open(pub_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, pub)
    finally:
        os.close(fd)
    return key_id(key.public_key())


def load_private(path: str) -> Ed25519PrivateKey:
    """An Ed25519 private key from a PKCS#8 PEM file (unencrypted)."""
    try:
        with open(path, "rb") as f:
            key = load_pem_private_key(f.read(), password=None)
    except FileNotFoundError:
        raise KeyFileError(f"no such key file: {path}") from None
    except (ValueError, TypeError):
        raise KeyFileError(f"{path} is not an unencrypted PKCS#8 PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} is not an Ed25519 key")
    return key


def load_public(path: str) -> Ed25519PublicKey:
    """An Ed25519 public key from a SubjectPublicKeyInfo PEM file."""
    try:
        with open(path, "rb") as f:
            key = load_pem_public_key(f.read())
    except FileNotFoundError:
        raise KeyFileError(f"no such key file: {path}") from None
    except ValueError:
        raise KeyFileError(f"{path} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path} is not an Ed25519 key")
    return key
