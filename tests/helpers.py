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


def one_epoch_delta_by_convolution(steps: int, sigma: float, eps: float, h: float, side: str = "qp",
                                   reach: float = 3.0) -> float:
    """delta_{Q||P}(eps) = E_P (L_M - e^eps)_+ (side "qp") or delta_{P||Q}(eps) = E_P (1 - e^eps L_M)_+ ("pq") of one
    epoch, independently of the certifier's routes: L_M = (1/M) sum Y_j with Y_j lognormal; the masses of Y on the
    lattice h k (the exact CDF over each cell, upper tails by the survival function) are convolved M-fold directly
    (every product and sum is positive: the far tail keeps its relative digits, no FFT round-off). The lattice's
    error is O(h^2); sums beyond reach M e^eps + 60 are dropped (a Y beyond about 10 sd where t <= 0.6)."""
    import math

    import numpy as np
    from scipy.signal import convolve
    from scipy.stats import norm
    t, a = 1.0 / sigma, math.exp(eps)
    top = reach * steps * a + 60.0 if side == "qp" else steps / a + 1.0
    n = int(top / h) + 1
    z = (np.log(np.maximum((np.arange(n + 1) - 0.5) * h, 1e-300)) + 0.5 * t * t) / t
    sf, cdf = norm.sf(z), norm.cdf(z)
    mass = np.where(z[:-1] < 0, cdf[1:] - cdf[:-1], sf[:-1] - sf[1:])
    out, square, e = None, mass, steps   # by squaring: M - 1 products cost minutes at M = 20 on a fine lattice
    while e:
        out = (square if out is None else convolve(out, square, method="direct")[:n]) if e & 1 else out
        e >>= 1
        square = convolve(square, square, method="direct")[:n] if e else square
    s = h * np.arange(n)
    if side == "qp":
        return float(np.clip(s / steps - a, 0.0, None) @ out)
    return float(np.clip(1.0 - a * s / steps, 0.0, None) @ out)
