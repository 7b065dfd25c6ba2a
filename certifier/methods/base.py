"""The method protocol: one rigorous bound a certificate may name (certifier.methods holds the registry).

A method is keyed by (name, version, side); side "upper" bounds the target's functional from above
at sigma, "lower" from below at sigma_low. Each one turns its `method` object to and from JSON,
validates it for a claim and runs the bound, returning one result type per side (UpperResult or
LowerResult).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from certifier.claim import FIXED_BINS, RANDOM_ALLOCATION, Claim

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


BOTH = (RANDOM_ALLOCATION, FIXED_BINS)    # the schemes every method covers


@dataclass(frozen=True)
class Method:
    """A method as certify's search sees it: its upper bound, when auto picks it, how it proves the target (its
    planner and tries), how it derives the rows, and which lower methods to try after it (in order)."""
    method: BoundMethod
    alias: str | None                  # the --method name that forces it
    fits: object                       # (claim, sigma, user_grid) -> bool: auto may pick it
    prove: object                      # (Ctx) -> (UpperResult, params) or None
    rows: object                       # (Ctx, result, params) -> (privacy, tpr) or None
    rows_one_sided: bool               # the rows come with a one-sided certificate too
    lowers: tuple                      # (lower method, its search) to try at each sigma_low, in order
    screen_lower: bool = True          # skip a sigma_low whose numerical value does not miss the target
    grid_search: bool = True           # its grid follows the margin (no margin: no grid can decide it)
    label: str | None = None           # the Outcome's method name where not the upper bound's label
    rounded_law: bool = True           # the Outcome keeps the upper bound's rounded law of Lambda (a PLD export)
    auto_lowers: bool = True           # auto may reorder its lowers and add lower v1 (methods.auto.lower_order)
    screen_names_tv: bool = True       # a TV claim's lower screen names the TV (else "value")
