"""What `certify` returns: the Outcome of one certify call (success iff the rigorous bound is <= the target), its
tries, rows, lower side and predicate, immutable. While they search, the methods write a Record (the same fields,
mutable); certify freezes it once, at the end (Record.outcome)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, make_dataclass

from certifier.claim import RANDOM_ALLOCATION


@dataclass(frozen=True)
class Outcome:
    """The result of `certify`: success iff the rigorous bound is <= the target (the tries in order, as tuples)."""
    success: bool
    steps: int
    epochs: int
    sigma: str
    target: str
    bound: str | None
    tries: tuple = ()
    predicate: dict | None = None
    tv: float | None = None
    tv_error: float | None = None
    two_sided: bool = False
    sigma_low: str | None = None      # certified to miss the target (two-sided only)
    tv_lower: str | None = None
    lower_tries: tuple = ()
    lower_seconds: float | None = None
    privacy_seconds: float | None = None
    privacy: dict | None = None
    tpr: dict | None = None
    scheme: str = RANDOM_ALLOCATION
    method: str | None = None         # the upper bound's method, e.g. 'lemma-c5-rounding v2'
    k_scale: float = 1.0              # method v2: the calibrated factor of the loss model
    y_scale: float = 1.0              # method v2, a kind: step (i)'s own calibrated factor (on top of k_scale)
    need_eps: float = 0.0             # method v2: estimated eps(1e-6), the range the rows need
    kind: str = "tv"                  # the target kind (certifier.targets)
    law: object = None                # the upper bound's rounded law of Lambda (bounds.privacy.RoundedLaw)
    rows_missing: dict | None = None  # rows that could not be certified: {"privacy"|"tpr": {key: reason}}
    sigma_steps: int = 0              # automatic sigma: resolution steps above the exact sigma (below: walked down)
    bound_lower: str | None = None    # a kind other than tv: its certified lower value at sigma_low
    stages: tuple | None = None       # a run in stages: ([M_s, E_s], ...) (steps None, epochs the total)
    lower_result: object = None       # the lower side's LowerResult (its pmfs: an audit's interval end)


SEQUENCES = ("tries", "lower_tries", "stages")     # lists in a Record, tuples in its Outcome


def _record_field(f):
    if f.name in ("tries", "lower_tries"):
        return f.name, list, field(default_factory=list)
    return f.name, f.type, field(default=f.default)


def _outcome(self) -> Outcome:
    """The Record frozen: its lists as tuples."""
    values = {f.name: getattr(self, f.name) for f in fields(self)}
    return Outcome(**{k: tuple(v) if k in SEQUENCES and v is not None else v for k, v in values.items()})


# The mutable record of one certify call (Outcome's fields; tries and lower_tries as lists the searches append to).
Record = make_dataclass("Record", [_record_field(f) for f in fields(Outcome)], namespace={"outcome": _outcome})
Record.__module__ = __name__
