"""Rejections and strict parsing helpers shared by the envelope and statement checks."""
from __future__ import annotations

import base64
import binascii
import json
import re
from fractions import Fraction

from flint import ctx, fmpq


class Reject(Exception):
    """A certificate is rejected: `reason` is a stable code, `detail` says what was wrong."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def _no_dups(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate JSON key {k!r}")
        d[k] = v
    return d


def _no_const(name):
    raise ValueError(f"non-finite number {name}")


def load_json(data: bytes, where: str):
    """UTF-8 JSON with no duplicate keys and no NaN/Infinity."""
    try:
        text = data.decode("utf-8")
        return json.loads(text, object_pairs_hook=_no_dups, parse_constant=_no_const)
    except ValueError as e:  # includes UnicodeDecodeError and JSONDecodeError
        code = f"{where}-duplicate-key" if "duplicate JSON key" in str(e) else f"{where}-not-json"
        raise Reject(code, f"{where} is not strict JSON: {e}") from None


def canonical(obj, ascii_only: bool = False) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii_only,
                      allow_nan=False).encode("utf-8")


def b64(s, what: str) -> bytes:
    """Standard base64 with padding, canonical (re-encoding gives the same text)."""
    if not isinstance(s, str):
        raise Reject("envelope-base64", f"{what} is not a string")
    try:
        raw = base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise Reject("envelope-base64", f"{what} is not valid standard base64") from None
    if base64.b64encode(raw).decode("ascii") != s:
        raise Reject("envelope-base64", f"{what} is not canonical base64")
    return raw


_DEC = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def decimal(s, path: str) -> fmpq:
    """An exact non-negative decimal string ("1.426215", "0.00005", "1e-20") as a rational."""
    if not isinstance(s, str) or len(s) > 64 or not _DEC.fullmatch(s) or re.search(r"[eE][+-]?[0-9]{4}", s):
        raise Reject("schema-type", f"{path} must be an exact decimal string, got {s!r}")
    f = Fraction(s)
    return fmpq(f.numerator, f.denominator)


class working_prec:
    """with working_prec(bits): ... -- temporarily set the arb working precision."""

    def __init__(self, bits: int):
        self.bits = bits

    def __enter__(self):
        self.old, ctx.prec = ctx.prec, self.bits

    def __exit__(self, *exc):
        ctx.prec = self.old
