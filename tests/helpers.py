"""Small helpers the tests share, each defined once: exact decimals and recorded balls."""
from __future__ import annotations

from fractions import Fraction

from flint import arb, fmpq

from verifier.format.strict import working_prec


def dec(x) -> str:
    """An exact decimal string of a rational (int, Fraction or fmpq) with a terminating expansion."""
    x = Fraction(int(x.p), int(x.q)) if isinstance(x, fmpq) else Fraction(x)
    for k in range(80):
        if (x * 10**k).denominator == 1:
            s = str(x.numerator * 10**k // x.denominator).rjust(k + 1, "0")
            return s[:len(s) - k] + ("." + s[len(s) - k:] if k else "")
    raise ValueError(x)


def ball(x, prec: int = 400) -> str:
    """The recorded form of a ball (or of a number made into one at `prec` bits): '[mid +/- rad]'."""
    with working_prec(prec):
        return (x if isinstance(x, arb) else arb(x)).str(30, radius=True)


def sign_and_verify(predicate: dict):
    """The independent verifier's result for `predicate` signed with a fresh test key (one per process)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from certifier.certificate.envelope import sign_certificate
    from verifier.core import verify_bytes
    global _TEST_KEY
    if _TEST_KEY is None:
        _TEST_KEY = Ed25519PrivateKey.generate()
    return verify_bytes(sign_certificate(predicate, _TEST_KEY), [_TEST_KEY.public_key()])


_TEST_KEY = None
