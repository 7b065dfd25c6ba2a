"""What `certify` returns: the Outcome of one certify call (success iff the rigorous bound is <= the target), its
tries, rows, lower side and predicate. The methods write a mutable record while they search; certify hands it out
once, at the end."""
from __future__ import annotations

from dataclasses import dataclass, field

from certifier.claim import RANDOM_ALLOCATION


@dataclass
class Outcome:
    """The result of `certify`: success iff the rigorous bound is <= the target."""
    success: bool
    steps: int
    epochs: int
    sigma: str
    target: str
    bound: str | None
    tries: list = field(default_factory=list)
    predicate: dict | None = None
    tv: float | None = None
    tv_error: float | None = None
    two_sided: bool = False
    sigma_low: str | None = None      # certified to miss the target (two-sided only)
    tv_lower: str | None = None
    lower_tries: list = field(default_factory=list)
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
    sigma_steps: int = 0              # automatic sigma: resolution steps taken above the exact sigma
    bound_lower: str | None = None    # a kind other than tv: its certified lower value at sigma_low
    stages: list | None = None        # a run in stages: [[M_s, E_s], ...] (steps None, epochs the total)
    lower_result: object = None       # the lower side's LowerResult (its pmfs: an audit's interval end)
