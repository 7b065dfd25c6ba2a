"""The methods: every rigorous bound a certificate may name, one home per method (v1, v2, gaussian_shift),
each with its bound's entry, its planner and its search; `base` is the protocol (BoundMethod), `search` the
shared try loop (Side, prove) and the certify record. This registry is what certify and the predicate consult;
adding a method is one more sub-package and one more entry.
"""
from __future__ import annotations

from certifier.errors import ParameterError
from certifier.methods.base import LOWER, UPPER, BoundMethod
from certifier.methods.gaussian_shift import GAUSSIAN_SHIFT_LOWER, GAUSSIAN_SHIFT_UPPER
from certifier.methods.v1 import LOWER_V1, UPPER_V1
from certifier.methods.v2 import LOWER_V2, UPPER_V2

__all__ = ["LOWER", "UPPER", "BoundMethod", "GAUSSIAN_SHIFT_LOWER", "GAUSSIAN_SHIFT_UPPER", "LOWER_V1", "UPPER_V1",
           "LOWER_V2", "UPPER_V2", "METHODS", "method", "of_json"]

METHODS = {m.key: m for m in (UPPER_V1, UPPER_V2, LOWER_V1, LOWER_V2, GAUSSIAN_SHIFT_UPPER, GAUSSIAN_SHIFT_LOWER)}


def method(name: str, version: int, side: str) -> BoundMethod:
    """The registered method, or ParameterError naming what is known."""
    try:
        return METHODS[(name, version, side)]
    except KeyError:
        known = ", ".join(sorted(f"{n} v{v}" for n, v, s in METHODS if s == side))
        raise ParameterError(f"unknown {side} method {name!r} v{version} (known: {known})") from None


def of_json(obj: dict, side: str) -> BoundMethod:
    """The method a `method` (or `lower.method`) object names."""
    return method(obj.get("name"), obj.get("version"), side)
