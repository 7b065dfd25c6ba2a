"""Which target kind a request names, and the rules every front end applies to its parameters.

A request names exactly one kind (docs/targets.md): `target` (tv: TV <= lambda), `epsilon` with
`delta` (dp), or `fpr` with `tpr` (tpr). `parse_kind` picks the kind from the parameters given and
refuses anything else in one line; each front end (sigmacert.kinds for the API and the command line,
service.validate for the service) passes its own range rule for a single parameter. The one reader of a
request's kind; certifier.targets.parse turns it into a Target.
"""
from __future__ import annotations

from typing import Callable

from certifier.errors import ParameterError
from certifier.params import parse_decimal

KIND_FIELDS = ("target", "epsilon", "delta", "fpr", "tpr")
KINDS = {frozenset({"target"}): "tv", frozenset({"epsilon", "delta"}): "dp", frozenset({"fpr", "tpr"}): "tpr"}
HALVES = {"epsilon": "delta", "delta": "epsilon", "fpr": "tpr", "tpr": "fpr"}
ONE_KIND = "give exactly one target: a TV target lambda, or epsilon with delta, or fpr with tpr"
MAX_EPSILON = "100"


def kind_named(given: dict) -> str:
    """"tv", "dp" or "tpr": the one kind the parameters given (not None) name, or ParameterError."""
    named = frozenset(k for k in KIND_FIELDS if given.get(k) is not None)
    if named in KINDS:
        return KINDS[named]
    if not named:
        raise ParameterError(ONE_KIND)
    if len(named) == 1 and next(iter(named)) in HALVES:
        only = next(iter(named))
        raise ParameterError(f"{only} needs {HALVES[only]} ({ONE_KIND})")
    raise ParameterError(f"{ONE_KIND}; got {', '.join(sorted(named))}")


def parse_kind(given: dict, rule: Callable[[str, object], str]) -> tuple[str, dict]:
    """(kind, {parameter: exact decimal text}) of the request; rule(name, value) parses one parameter
    exactly and applies the front end's range (raising ParameterError). For tpr the TPR must exceed the
    FPR: the test that rejects with probability fpr whatever the data has TPR = fpr."""
    kind = kind_named(given)
    params = {name: rule(name, given[name]) for name in KIND_FIELDS if given.get(name) is not None}
    if kind == "tpr" and parse_decimal("tpr", params["tpr"]) <= parse_decimal("fpr", params["fpr"]):
        raise ParameterError(f"tpr must exceed fpr (the test that rejects with probability fpr whatever the data "
                             f"has TPR = fpr); got fpr={params['fpr']}, tpr={params['tpr']}")
    return kind, params
