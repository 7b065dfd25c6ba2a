"""Binary powering, shared by the numerics (log-domain convolutions) and the rigorous bounds."""
from __future__ import annotations


def binary_power(base, n: int, mul, progress=None):
    """base^n (n >= 1) by binary powering along the bits of n, every product through mul(a, b)."""
    acc, e = None, n
    nbits, i = n.bit_length(), 0
    while e:
        if e & 1:
            acc = base if acc is None else mul(acc, base)
        e >>= 1
        if e:
            base = mul(base, base)
        i += 1
        if progress:
            progress(i / nbits)
    return acc
