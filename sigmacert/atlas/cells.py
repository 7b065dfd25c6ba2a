"""The grid of an atlas: cells (M, E, target), parsed exactly, and their certificate names.

The target is of one kind per atlas (sigmacert.kinds): tv (TV <= lambda), dp ((eps, delta)-DP both ways:
the cell's target is delta, its parameter eps) or tpr (TPR <= beta at FPR alpha: target beta, parameter alpha).
"""
from __future__ import annotations

from dataclasses import dataclass

from certifier import door
from certifier.door import Target
from certifier.params import ParameterError, decimal_str, parse_decimal, parse_epochs, parse_steps, parse_target
from sigmacert.kinds import parse_kind

MAX_CELLS = 10_000


@dataclass(frozen=True)
class Cell:
    """One cell: M steps per epoch, E epochs, the target (exact decimal text, normalized: lambda, delta or beta)
    of the kind, and the kind's parameter (eps for dp, the FPR alpha for tpr; None for tv)."""
    steps: int
    epochs: int
    target: str
    kind: str = "tv"
    param: str | None = None

    @property
    def goal(self) -> Target:
        """The cell's target as a certifier.targets.Target."""
        return door.make(self.kind, self.target, self.param)

    @property
    def name(self) -> str:
        return self.goal.cell_name(self.steps, self.epochs)

    def target_text(self) -> str:
        """The cell's target in words (the heatmap's panel title and the progress lines)."""
        return self.goal.cell_text()

    def claim_kind(self) -> dict:
        """The kind a certificate of this cell states (claim.kind; formats v1-v3 state none: tv)."""
        return self.goal.to_json()

    @property
    def file(self) -> str:
        """The certificate's path relative to the atlas directory."""
        return f"certificates/{self.name}.json"

    def label(self) -> str:
        return f"M={self.steps} E={self.epochs} {self.goal.cell_label()}"

    def matches(self, claim: dict, scheme: str) -> bool:
        """Whether a certificate's claim is about this cell under `scheme` (exact comparison)."""
        try:
            return (claim["steps"] == self.steps and claim["epochs"] == self.epochs
                    and door.from_json(claim.get("kind"), claim["target"]).same(self.goal)
                    and claim_scheme(claim) == scheme)
        except (KeyError, TypeError, ValueError, AttributeError):
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


def _exact_list(name: str, text: str) -> list[str]:
    """Distinct exact decimals (as written, normalized), sorted by value."""
    qs = {parse_decimal(name, s) for s in _items(name, text)}
    return [decimal_str(q) for q in sorted(qs)]


def kind_targets(targets=None, *, epsilon=None, delta=None, fpr=None, tpr=None) -> tuple[str, list]:
    """(kind, [(param, target), ...]): exactly one kind per atlas, each of its lists comma-separated, every
    (param, target) checked by the face's one kind parser (sigmacert.kinds.parse_kind). dp: every eps with
    every delta; tpr: every FPR with every TPR bound."""
    given = {"target": targets, "epsilon": epsilon, "delta": delta, "fpr": fpr, "tpr": tpr}
    first = {k: (None if v is None else _items(k, v)[0]) for k, v in given.items()}
    kind = type(parse_kind(first["target"], epsilon=first["epsilon"], delta=first["delta"], fpr=first["fpr"],
                           tpr=first["tpr"]))          # exactly one kind, or its one-line refusal
    if kind.PARAM is None:
        return kind.name, [(None, lam) for lam in parse_targets(targets)]
    pname, tname = kind.PARAM, kind.TARGET
    pairs = []
    for p in _exact_list(pname, given[pname]):
        for t in _exact_list(tname, given[tname]):
            k = parse_kind(**{pname: p, tname: t})
            pairs.append((k.param, decimal_str(parse_decimal(tname, k.target))))
    return kind.name, pairs


def grid_cells(steps: str, epochs: str, targets: str | None = None, **kind) -> list[Cell]:
    """Every cell of steps x epochs x targets (comma-separated lists), sorted by (M, E, target); a dp or tpr
    atlas names its kind instead of targets (kind_targets: epsilon= and delta=, or fpr= and tpr=)."""
    ms = sorted({parse_steps(s) for s in _items("steps", steps)})
    es = sorted({parse_epochs(s) for s in _items("epochs", epochs)})
    name, ts = kind_targets(targets, **kind)
    if len(ms) * len(es) * len(ts) > MAX_CELLS:
        raise ParameterError(f"the grid has {len(ms) * len(es) * len(ts)} cells; at most {MAX_CELLS} per atlas")
    return [Cell(m, e, t, name, p) for m in ms for e in es for p, t in ts]
