"""Target kinds: the functional a certificate bounds, and how a bound decides its target.

Today one kind, `tv`: TV(P_M^E, Q_M^E) <= lambda (Section 2). A kind holds its numerics (a float
estimate and its error, never a proof: they only choose grids and sigma), the exact-sigma search,
the margins the grid planners may spend, and what an upper / lower result must show. Every rigorous
bound (certifier.methods) bounds a functional non-decreasing in Lambda. A new kind is one entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flint import fmpq

from certifier.bounds.result import LowerResult, UpperResult
from certifier.certificate.claim import Claim
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.params import parse_decimal

SEARCH_RESOLUTION = "1e-6"


@dataclass(frozen=True)
class TargetKind:
    name: str
    functional: str
    numerics: Callable[[Claim, fmpq], tuple]            # (estimate, error) at sigma, or (None, None)
    exact_sigma: Callable[[Claim, fmpq], fmpq]          # the least sigma on the search grid meeting the target
    upper_proves: Callable[[UpperResult, fmpq], bool]   # the upper bound meets the target
    lower_proves: Callable[[LowerResult, fmpq], bool]   # the lower bound misses the target

    @staticmethod
    def upper_margin(target: fmpq, value: float | None, error: float | None) -> float | None:
        """target - value - error: what the upper side's grid may lose (None: numerics unavailable)."""
        return None if value is None else float(target) - value - (error or 0)

    @staticmethod
    def lower_margin(target: fmpq, value: float | None, error: float | None) -> float | None:
        """value - error - target: what the lower side's grid may lose."""
        return None if value is None else value - error - float(target)


def _tv_numerics(claim: Claim, sigma: fmpq) -> tuple[float | None, float | None]:
    """The exact TV at sigma (FFT route) and its error estimate, or (None, None) if unavailable."""
    from certifier.numerics.exact import exact_tv
    M, E = claim.pair()
    try:
        r = exact_tv(M, E, claim.sigma_of_pair(float(sigma)), check=False)
        return float(r.tv), float(r.error)
    except (NumericsUnreliableError, ParameterError, OverflowError):
        return None, None


def _tv_exact_sigma(claim: Claim, target: fmpq) -> fmpq:
    """The exact sigma on the 1e-6 grid for the claim's scheme (Theorem 4.1, numerical)."""
    from certifier.numerics.schemes import exact_sigma
    return parse_decimal("sigma", exact_sigma(claim.steps, claim.epochs, target, scheme=claim.scheme,
                                              resolution=SEARCH_RESOLUTION))


TV = TargetKind("tv", "TV(P_M^E, Q_M^E)", _tv_numerics, _tv_exact_sigma,
                lambda r, target: parse_decimal("bound", r.bound) <= target,
                lambda r, target: r.exact > target)

TARGETS = {k.name: k for k in (TV,)}


def kind(name: str) -> TargetKind:
    try:
        return TARGETS[name]
    except KeyError:
        raise ParameterError(f"unknown target kind {name!r} (known: {', '.join(TARGETS)})") from None
