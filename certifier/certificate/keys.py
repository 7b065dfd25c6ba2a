"""Key pairs: DIR/private.pem (PKCS#8 PEM, mode 0600) and DIR/public.pem (SubjectPublicKeyInfo).

Ed25519 signs certificates; an ECDSA key on a NIST P curve signs releases (docs/release.md:
OpenSSF model signing's offline key method takes only those)."""
from __future__ import annotations

import os
import stat

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

from certifier.certificate.ecdsa import ec_key_id
from certifier.certificate.envelope import key_id
from certifier.errors import KeyFileError

KINDS = {"ed25519": None, "ecdsa-p256": ec.SECP256R1, "ecdsa-p384": ec.SECP384R1, "ecdsa-p521": ec.SECP521R1}


def keygen(directory: str, force: bool = False, kind: str = "ed25519") -> str:
    """Write a fresh key pair of `kind` (KINDS) into `directory`; return the key id. Never overwrites
    unless forced."""
    if kind not in KINDS:
        raise KeyFileError(f"unknown key kind {kind!r} (one of {', '.join(KINDS)})")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    priv_path = os.path.join(directory, "private.pem")
    pub_path = os.path.join(directory, "public.pem")
    for p in (priv_path, pub_path):
        if os.path.lexists(p):
            if not force:
                raise KeyFileError(f"{p} exists; refusing to overwrite it (--force replaces it)")
            os.unlink(p)
    key = Ed25519PrivateKey.generate() if KINDS[kind] is None else ec.generate_private_key(KINDS[kind]())
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
    return any_key_id(key.public_key())


def any_key_id(public_key) -> str:
    """The key id of an Ed25519 key (certifier.certificate.envelope.key_id) or of an ECDSA key
    (certifier.certificate.ecdsa.ec_key_id)."""
    if isinstance(public_key, Ed25519PublicKey):
        return key_id(public_key)
    return ec_key_id(public_key)


MAX_KEY_FILE = 64 * 1024  # bytes: a PEM key is a few hundred


def read_key_file(path: str, private: bool = False) -> bytes:
    """The bytes of a key file: opened without blocking (a FIFO cannot hang us), a regular file of at
    most MAX_KEY_FILE bytes; a private key readable by group or others is refused, as ssh does."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise KeyFileError(f"no such key file: {path}") from None
    except OSError as err:
        raise KeyFileError(f"cannot read key file {path}: {err.strerror or err}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_KEY_FILE:
            raise KeyFileError(f"key file {path} is not a regular file of at most {MAX_KEY_FILE} bytes")
        if private and st.st_mode & 0o077:
            raise KeyFileError(f"private key {path} is accessible by group or others (mode "
                               f"{stat.S_IMODE(st.st_mode):04o}); chmod 600 it")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_KEY_FILE + 1)
    except OSError as err:
        raise KeyFileError(f"cannot read key file {path}: {err.strerror or err}") from None
    finally:
        os.close(fd)


def load_private(path: str) -> Ed25519PrivateKey:
    """An Ed25519 private key from a PKCS#8 PEM file (unencrypted, mode 0600 or stricter)."""
    data = read_key_file(path, private=True)
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise KeyFileError(f"{path} is not an unencrypted PKCS#8 PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} is not an Ed25519 key")
    return key


def load_public(path: str) -> Ed25519PublicKey:
    """An Ed25519 public key from a SubjectPublicKeyInfo PEM file."""
    data = read_key_file(path)
    try:
        key = load_pem_public_key(data)
    except ValueError:
        raise KeyFileError(f"{path} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path} is not an Ed25519 key")
    return key


def load_release_private(path: str) -> ec.EllipticCurvePrivateKey:
    """An ECDSA private key on P-256, P-384 or P-521 (PKCS#8 or SEC1 PEM, unencrypted, mode 0600 or stricter)."""
    data = read_key_file(path, private=True)
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise KeyFileError(f"{path} is not an unencrypted PEM private key") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name not in ("secp256r1", "secp384r1",
                                                                                  "secp521r1"):
        raise KeyFileError(f"{path} is not an ECDSA key on P-256, P-384 or P-521 (a release key: "
                           "sigmacert keygen --kind ecdsa-p256 makes one)")
    return key
