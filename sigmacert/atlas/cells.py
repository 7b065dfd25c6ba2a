"""The grid of an atlas: cells (M, E, lambda), parsed exactly, and their certificate names."""
from __future__ import annotations

from dataclasses import dataclass

from certifier.params import ParameterError, decimal_str, parse_decimal, parse_epochs, parse_steps, parse_target

MAX_CELLS = 10_000


@dataclass(frozen=True)
class Cell:
    """One cell: M steps per epoch, E epochs, target lambda (exact decimal text, normalized)."""
    steps: int
    epochs: int
    target: str

    @property
    def name(self) -> str:
        return f"M{self.steps}_E{self.epochs}_L{self.target}"

    @property
    def file(self) -> str:
        """The certificate's path relative to the atlas directory."""
        return f"certificates/{self.name}.json"

    def label(self) -> str:
        return f"M={self.steps} E={self.epochs} lambda={self.target}"

    def matches(self, claim: dict, scheme: str) -> bool:
        """Whether a certificate's claim is about this cell under `scheme` (exact comparison)."""
        try:
            return (claim["steps"] == self.steps and claim["epochs"] == self.epochs
                    and parse_decimal("target", claim["target"]) == parse_target(self.target)
                    and claim_scheme(claim) == scheme)
        except (KeyError, TypeError, ValueError):
            return False


def claim_scheme(claim: dict) -> str:
    """The sampling scheme of a claim: its `scheme`, else the suffix of `mechanism` (dp-sgd/<scheme>)."""
    return claim.get("scheme") or str(claim["mechanism"]).removeprefix("dp-sgd/")


def _items(name: str, text: str) -> list[str]:
    items = [s.strip() for s in str(text).split(",")]
    if not items or any(not s for s in items):
        raise ParameterError(f"{name} must be a comma-separated list, got {text!r}")
    return items


def parse_targets(text: str) -> list[str]:
    """Targets lambda as normalized exact decimals ("0.10" -> "0.1"), sorted, without repeats."""
    qs = {parse_target(s) for s in _items("targets", text)}
    return [decimal_str(q) for q in sorted(qs)]


def grid_cells(steps: str, epochs: str, targets: str) -> list[Cell]:
    """Every cell of steps x epochs x targets (comma-separated lists), sorted by (M, E, lambda)."""
    ms = sorted({parse_steps(s) for s in _items("steps", steps)})
    es = sorted({parse_epochs(s) for s in _items("epochs", epochs)})
    ls = parse_targets(targets)
    if len(ms) * len(es) * len(ls) > MAX_CELLS:
        raise ParameterError(f"the grid has {len(ms) * len(es) * len(ls)} cells; at most {MAX_CELLS} per atlas")
    return [Cell(m, e, lam) for m in ms for e in es for lam in ls]
