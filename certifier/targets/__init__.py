"""Targets: what a certificate bounds (docs/targets.md). One module per kind (tv, dp, tpr), each a
frozen Target value parsed from exact decimals; `rules` holds what the certifier needs of a kind
(the functional both sides bound), `request` which kind a request names.

Adding a kind is one module here (its Target and its rule) plus its verifier replay.
"""
from __future__ import annotations

from typing import Callable

from flint import fmpq

from certifier.errors import ParameterError
from certifier.params import decimal_str
from certifier.targets.base import Target
from certifier.targets.dp import DP, dp_kind
from certifier.targets.request import ONE_KIND, parse_kind
from certifier.targets.rules import TargetKind
from certifier.targets.tpr import TPR, tpr_kind
from certifier.targets.tv import TV

KINDS = {k.name: k for k in (TV, DP, TPR)}
NAMES = tuple(KINDS)
FACTORIES = {"dp": (dp_kind, "epsilon"), "tpr": (tpr_kind, "fpr")}

__all__ = ["DP", "KINDS", "NAMES", "ONE_KIND", "TPR", "TV", "Target", "TargetKind", "curve_of", "from_json", "kind",
           "make", "of_kind", "parse"]


def curve_of(kind: dict | None) -> str | None:
    """The privacy curve (Target.CURVE) of a claim's `kind` object: None for tv, no kind, or a kind this version
    does not know."""
    name = kind.get("name") if isinstance(kind, dict) else None
    return getattr(KINDS.get(name), "CURVE", None)


def parse(given: dict, rule: Callable[[str, object], str]) -> Target:
    """The one Target the request's fields name (target; epsilon, delta; fpr, tpr), each parsed by the
    front end's `rule` (certifier.targets.request.parse_kind) and held to the stated domain (the Target's
    check_domain: what the exact sigma needs; a TV target's lambda is certify's), or ParameterError in one line
    (certifier.domain.OutsideDomainError naming the nearest target that works)."""
    name, params = parse_kind(given, rule)
    target = KINDS[name].from_params(params)
    target.check_domain(certify=False)
    return target


def make(name: str, target: str, param: str | None = None) -> Target:
    """The Target of kind `name` with its target and parameter (exact decimal text)."""
    if name not in KINDS:
        raise ParameterError(f"unknown target kind {name!r} (known: {', '.join(KINDS)})")
    return KINDS[name].of(target, param)


def of_kind(name: str, params: dict | None, target: fmpq) -> Target:
    """The Target of certify's arguments: kind name, its parameter ({"epsilon": text}; None for tv) and the
    exact target."""
    cls = KINDS.get(name)
    if cls is None:
        raise ParameterError(f"unknown target kind {name!r} (known: {', '.join(KINDS)})")
    param = None if cls.PARAM is None else (params or {}).get(cls.PARAM)
    if cls.PARAM is not None and param is None:
        raise ParameterError(f"target kind {name!r} needs {cls.PARAM}")
    return cls.of(decimal_str(target), None if param is None else str(param))


def from_json(kind: dict | None, target: str) -> Target:
    """The Target of a claim's (or a service request's) `kind` object and target text; None or no kind: tv."""
    kind = {"name": "tv"} if kind is None else kind
    if not isinstance(kind, dict) or kind.get("name") not in KINDS:
        raise ParameterError(f"the claim's target kind is not one of {', '.join(KINDS)}")
    try:
        return KINDS[kind["name"]].from_json(kind, target)
    except KeyError as err:
        raise ParameterError(f"target kind {kind['name']!r} needs {err.args[0]}") from None


def kind(name: str, params: dict | None = None, target: fmpq | None = None) -> TargetKind:
    """The certifier's rule of kind `name`; dp and tpr take their parameter (epsilon / fpr, an exact decimal
    string) and the target (tpr's loss factor reads it; default 1/2)."""
    if name in FACTORIES:
        make, key = FACTORIES[name]
        if not params or key not in params:
            raise ParameterError(f"target kind {name!r} needs {key}")
        return make(str(params[key]), target if target is not None else fmpq(1, 2))
    if name == "tv":
        return TV("0").rule()
    raise ParameterError(f"unknown target kind {name!r} (known: {', '.join(KINDS)})")
