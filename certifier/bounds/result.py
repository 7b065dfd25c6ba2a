"""The two results a rigorous bound returns, one per side, whatever the method (certifier.methods)."""
from __future__ import annotations

from dataclasses import dataclass, field

from flint import arb, fmpq

from certifier.bounds.fixedpoint import Poly
from certifier.errors import ParameterError


@dataclass
class UpperResult:
    """An upper bound on the functional and everything the certificate records about it."""
    bound: str                 # the upper end of `ball`, rounded up to 10 significant digits
    ball: arb                  # a ball containing the bounded quantity (1 - O of Lemma C.5, or the TV itself)
    enclosures: dict           # JSON-ready balls, as the method's format records them
    timings: dict = field(default_factory=lambda: dict.fromkeys(("step_i", "step_ii", "step_iii", "step_iv",
                                                                  "total"), 0.0))
    stats: dict = field(default_factory=dict)
    b: Poly | None = None      # step (iv) masses (lower bounds, units 2^-F) at Lambda = e^{k eta}, for the rows
    O: arb | None = None       # Lemma C.5 methods: the ball of O (ball = 1 - O)
    method: object = None      # the method as used (its eta, fixed_point_bits, prec locate b_k)
    shift2: fmpq | None = None  # closed form (M = 1): mu^2 = E t^2 of the Gaussian shift it is exact for


@dataclass
class LowerResult:
    """A lower bound on the functional and what the certificate records about it."""
    tv_lower: str              # the exact bound rounded DOWN to 10 significant digits
    exact: fmpq                # the exact rational lower bound
    enclosures: dict
    timings: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    method: object = None      # the method as used (lower v1 records its bucket range b_min, b_max)
    pmfs: tuple | None = None  # data processing: (U, W, F), the final integer pmfs (lower bounds, units 2^-F)
    shift2: fmpq | None = None  # closed form (M = 1): mu^2 = E t^2 of the Gaussian shift at sigma_low
    slack: fmpq = field(default_factory=fmpq)  # how much less mass another correct replay's pmfs may hold in all
                               # (lower v1: replay_slack, already taken from `exact`; a kind's value takes it too)


def require_positive(x, name: str) -> None:
    """A bound's sigma or t^2 must be a positive exact rational (never a float)."""
    if not isinstance(x, fmpq) or x <= 0:
        raise ParameterError(f"{name} must be a positive exact rational")
