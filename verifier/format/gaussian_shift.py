"""The schema and static checks of method `gaussian-shift` v1 (docs/method-v2.md §5): the pair with one
step per epoch (M = 1); its replay is verifier.replay.gaussian_shift."""
from __future__ import annotations

from .strict import Reject

NAME = "gaussian-shift"
METHOD = {"name": "str", "version": "int", "prec": "int"}
ENCLOSURES = {"TV": "ball"}


def check(m: dict, claim: dict, code: str) -> None:
    """Static checks: the pair must have one step (M = 1); 64 <= prec <= 4096."""
    if claim["steps"] != 1:
        raise Reject("method-scheme", f"method gaussian-shift needs steps = 1, got {claim['steps']}")
    if not 64 <= m["prec"] <= 4096:
        raise Reject(code, f"need 64 <= prec <= 4096, got {m['prec']}")
