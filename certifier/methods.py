"""The method protocol and its registry: every rigorous bound a certificate may name.

A method is keyed by (name, version, side); side "upper" bounds the target's functional from above
at sigma, "lower" from below at sigma_low. Each entry turns its `method` object to and from JSON,
validates it for a claim and runs the bound, returning one result type per side (UpperResult or
LowerResult). `certify` and the predicate consult this table; adding a method is one more entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from certifier.bounds import gaussian_shift as gs
from certifier.bounds import lower_v1, lower_v2, upper_v1, upper_v2
from certifier.claim import FIXED_BINS, RANDOM_ALLOCATION, Claim
from certifier.errors import ParameterError

UPPER, LOWER = "upper", "lower"


@dataclass(frozen=True)
class BoundMethod:
    """One rigorous bound: its name and version in the certificate, its side and what it covers."""
    name: str
    version: int
    side: str
    least_format: int                                  # the least certificate format that records it
    schemes: tuple                                     # the sampling schemes it covers
    from_json: Callable[[dict], object]                # the `method` object -> its parameters
    to_json: Callable[[object, Claim], dict]           # parameters -> the `method` object
    validate: Callable[[object, Claim], None]          # raises ParameterError
    run: Callable                                      # (claim, sigma, params, progress) -> Upper/LowerResult

    @property
    def key(self) -> tuple[str, int, str]:
        return self.name, self.version, self.side

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


BOTH = (RANDOM_ALLOCATION, FIXED_BINS)
# method v1 on the claim's pair (M, E of step (iv), t^2): fixed bins only for a target kind (format v4)
UPPER_V1 = BoundMethod(
    upper_v1.METHOD_NAME, upper_v1.METHOD_VERSION, UPPER, 1, BOTH, upper_v1.UpperV1.from_json,
    lambda m, c: m.to_json(c.steps), lambda m, c: m.validate(c.steps),
    lambda c, s, m, progress=None: upper_v1.rounding_bound(*c.pair(), s, m, progress=progress, t2=c.t2_at(s)))
UPPER_V2 = BoundMethod(
    upper_v2.METHOD_NAME, upper_v2.METHOD_VERSION, UPPER, 3, BOTH, upper_v2.UpperV2.from_json,
    lambda m, c: m.to_json(), lambda m, c: m.validate(),
    lambda c, s, m, progress=None: upper_v2.rounding_bound_v2(*c.pair(), c.t2_at(s), m, progress=progress))
LOWER_V1 = BoundMethod(
    lower_v1.METHOD_NAME, lower_v1.METHOD_VERSION, LOWER, 2, BOTH, lower_v1.LowerV1.from_json,
    lambda m, c: m.to_json(c.steps), lambda m, c: m.validate(c.steps),
    lambda c, s, m, progress=None: lower_v1.lower_bound(*c.pair(), s, m, progress=progress, t2=c.t2_at(s)))
LOWER_V2 = BoundMethod(
    lower_v2.METHOD_NAME, lower_v2.METHOD_VERSION, LOWER, 3, BOTH, lower_v2.method_from_json,
    lambda m, c: lower_v2.method_json(m), lambda m, c: m.validate(),
    # a kind pays e^eps per deleted P-mass: delete by the replay's rule (the tight value the replay accepts)
    lambda c, s, m, progress=None: lower_v2.lower_bound_v2(*c.pair(), c.t2_at(s), m, progress=progress,
                                                           replay_trims=bool(c.kind)))
GAUSSIAN_SHIFT_UPPER = BoundMethod(
    gs.METHOD_NAME, gs.METHOD_VERSION, UPPER, 3, BOTH, gs.GaussianShift.from_json,
    lambda m, c: m.to_json(), lambda m, c: m.validate(),
    lambda c, s, m, progress=None: gs.upper(*c.pair(), c.t2_at(s), m))
GAUSSIAN_SHIFT_LOWER = BoundMethod(
    gs.METHOD_NAME, gs.METHOD_VERSION, LOWER, 3, BOTH, gs.GaussianShift.from_json,
    lambda m, c: m.to_json(), lambda m, c: m.validate(),
    lambda c, s, m, progress=None: gs.lower(*c.pair(), c.t2_at(s), m))

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
