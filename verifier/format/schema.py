"""Exact schemas: a predicate must have exactly the fields of its schema, each of its type; decimals
parse to exact rationals (fmpq), balls to arb (docs/certificate.md §3). Shared by every format."""
from __future__ import annotations

import re

from flint import arb, fmpq

from .strict import Reject, decimal, working_prec

D, I, B, S, N, SD = "decimal", "int", "ball", "str", "number", "signed decimal"
BALLS = lambda *names: {n: B for n in names}

class Rows:  # an object whose keys are checked later (check_v2) and values follow `row`
    def __init__(self, row):
        self.row = row


MAX_RADIUS = arb(2) ** -40  # docs/certificate.md §3: every recorded ball is this narrow


def typed(v, t, path):
    """Check v against schema t; return it with decimals as fmpq and balls as arb."""
    if isinstance(t, Rows):
        if not isinstance(v, dict):
            raise Reject("schema-type", f"{path} must be an object")
        return {k: typed(x, t.row, f"{path}.{k}") for k, x in v.items()}
    if isinstance(t, dict):
        if not isinstance(v, dict):
            raise Reject("schema-type", f"{path} must be an object")
        for k in v:
            if k not in t:
                raise Reject("schema-unknown-field", f"unknown field {path}.{k}")
        for k in t:
            if k not in v:
                raise Reject("schema-missing-field", f"missing field {path}.{k}")
        return {k: typed(v[k], t[k], f"{path}.{k}") for k in t}
    if isinstance(t, list):
        if not isinstance(v, list) or not v:
            raise Reject("schema-type", f"{path} must be a non-empty list")
        return [typed(x, t[0], f"{path}[{i}]") for i, x in enumerate(v)]
    ok = {I: isinstance(v, int) and not isinstance(v, bool), S: isinstance(v, str),
          N: isinstance(v, (int, float)) and not isinstance(v, bool), D: True, SD: True, B: isinstance(v, str)}[t]
    if not ok:
        raise Reject("schema-type", f"{path} must be of type {t}, got {type(v).__name__}")
    if t == D:
        return decimal(v, path)
    if t == SD:
        neg = isinstance(v, str) and v.startswith("-")
        return -decimal(v[1:], path) if neg else decimal(v, path)
    if t == B:
        x = None
        if len(v) <= 256 and not re.search(r"[eE][+-]?[0-9]{5}", v):  # no huge exponents
            try:
                with working_prec(400):  # parse recorded balls without widening them
                    x = arb(v)
            except (ValueError, TypeError):
                pass
        if x is None or not x.is_finite():
            raise Reject("schema-type", f"{path} is not a finite arb ball string: {v!r}")
        return x
    return v


def is_int(q: fmpq) -> bool:
    return q.q == 1


def balls(x, path):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from balls(v, f"{path}.{k}")
    elif isinstance(x, arb):
        yield path, x


def check_balls(p):
    """Every recorded ball is a mass or a probability: radius <= 2^-40 and a point in [0, 1].
    `bound` is at least the upper end of 1 - O (certificate.md §3)."""
    for path, x in balls(p, "predicate"):
        if x.rad() > MAX_RADIUS:
            raise Reject("enclosure-too-wide", f"{path} = {x.str(5, radius=True)} has radius above 2^-40")
        if x < 0 or x > 1:
            raise Reject("enclosure-out-of-range", f"{path} = {x.str(5, radius=True)} is outside [0, 1]")
    e = p["enclosures"]
    with working_prec(400):
        tv, what = (e["TV"], "TV") if "TV" in e else (1 - e["O"], "1 - O")  # gaussian-shift records TV
        if tv.upper() > arb(p["bound"]):
            raise Reject("bound-inconsistent", f"recorded bound {p['bound']} is below the upper end of {what} "
                         f"from the recorded enclosures ({tv.str(20, radius=True)})")
