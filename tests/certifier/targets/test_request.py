"""One reader of a request's target kind (certifier.kind_params), used by the face (sigmacert.kinds.parse_kind)
and the service (service.validate.kind_of): every subset of the five parameters names the same kind, or
the same one-line refusal, in both; the ranges are the stated domain's (certifier.domain), the same in both."""
from __future__ import annotations

from itertools import combinations

import pytest

from certifier.errors import ParameterError
from certifier.targets import request as kind_params
from service.validate import Limits, kind_of
from sigmacert.kinds import parse_kind

VALUES = {"target": "0.1", "epsilon": "1", "delta": "0.00001", "fpr": "0.001", "tpr": "0.002"}
SUBSETS = [frozenset(c) for n in range(6) for c in combinations(kind_params.KIND_FIELDS, n)]


def _outcome(fn):
    try:
        return "ok", fn()
    except ParameterError as e:
        return "refused", str(e)


@pytest.mark.parametrize("subset", SUBSETS, ids=lambda s: "+".join(sorted(s)) or "none")
def test_every_subset_names_one_kind_or_the_same_refusal_in_face_and_service(subset):
    given = {k: (VALUES[k] if k in subset else None) for k in kind_params.KIND_FIELDS}
    expected = kind_params.KINDS.get(subset)
    core = _outcome(lambda: kind_params.kind_named(given))
    face = _outcome(lambda: parse_kind(given["target"], epsilon=given["epsilon"], delta=given["delta"],
                                       fpr=given["fpr"], tpr=given["tpr"]))
    service = _outcome(lambda: kind_of(dict(given), Limits()))
    if expected is None:
        assert core[0] == face[0] == service[0] == "refused"
        assert core[1] == face[1] == service[1]
        assert "exactly one target" in core[1]
        if len(subset) == 1 and next(iter(subset)) in kind_params.HALVES:
            only = next(iter(subset))
            assert core[1].startswith(f"{only} needs {kind_params.HALVES[only]}")
        return
    assert core == ("ok", expected)
    assert face[0] == service[0] == "ok" and face[1].name == expected
    svc = service[1]
    assert svc.get("kind", {"name": "tv"})["name"] == expected
    if expected == "dp":
        assert (face[1].params["epsilon"], face[1].params["delta"]) == (svc["kind"]["epsilon"], svc["target"])
    elif expected == "tpr":
        assert (face[1].params["fpr"], face[1].params["tpr"]) == (svc["kind"]["fpr"], svc["target"])
    else:
        assert face[1].params["target"] == svc["target"]


@pytest.mark.parametrize("fpr,tpr", [("0.002", "0.002"), ("0.5", "0.2")])
def test_tpr_must_exceed_fpr_in_both(fpr, tpr):
    with pytest.raises(ParameterError, match="tpr must exceed fpr"):
        parse_kind(fpr=fpr, tpr=tpr)
    with pytest.raises(ParameterError, match="tpr must exceed fpr"):
        kind_of({"target": None, "epsilon": None, "delta": None, "fpr": fpr, "tpr": tpr}, Limits())


def test_the_ranges_are_the_stated_domain_in_both():
    # one domain for every front end (certifier.domain): the same one-line refusal from the face and the service
    for bad in ({"epsilon": "1", "delta": "0.9999999"}, {"epsilon": "101", "delta": "0.1"}):
        given = {"target": None, "fpr": None, "tpr": None, "epsilon": None, "delta": None, **bad}
        with pytest.raises(ParameterError, match="stated domain") as face:
            parse_kind(epsilon=bad["epsilon"], delta=bad["delta"])
        with pytest.raises(ParameterError, match="stated domain") as svc:
            kind_of(given, Limits())
        assert str(face.value) == str(svc.value)
    with pytest.raises(ParameterError, match="may have at most 12 decimal places"):   # the service's digits
        kind_of({"epsilon": "1", "delta": "0.0000000000015", "target": None, "fpr": None, "tpr": None}, Limits())
    assert parse_kind(epsilon="1", delta="0.0000000000015").params["delta"] == "0.0000000000015"
    calls = []
    assert kind_params.parse_kind({"fpr": "0.1", "tpr": "0.3"}, lambda n, v: calls.append(n) or v) == \
        ("tpr", {"fpr": "0.1", "tpr": "0.3"})
    assert calls == ["fpr", "tpr"]
