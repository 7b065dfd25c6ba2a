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

KIND_FIELDS = ("target", "epsilon", "delta", "fpr", "tpr")
KINDS = {frozenset({"target"}): "tv", frozenset({"epsilon", "delta"}): "dp", frozenset({"fpr", "tpr"}): "tpr"}
HALVES = {"epsilon": "delta", "delta": "epsilon", "fpr": "tpr", "tpr": "fpr"}
ONE_KIND = "give exactly one target: a TV target lambda, or epsilon with delta, or fpr with tpr"
MAX_EPSILON = "100"  # the numerics' reach in epsilon (the `dp` command's rows); a target's is the stated domain's


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
    exactly (raising ParameterError). The ranges are the stated domain's (certifier.domain, the Target's
    check_domain, applied by certifier.targets.parse): one rule for every front end."""
    kind = kind_named(given)
    return kind, {name: rule(name, given[name]) for name in KIND_FIELDS if given.get(name) is not None}
