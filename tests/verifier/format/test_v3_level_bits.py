"""Method v2 with a lattice per level of step (ii) (docs/method-v2.md §10): a spec-built v3 certificate whose
upper and lower methods carry `level_bits` is accepted, and every edit of the key is refused with its reason."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from verifier_v3_fixtures import METHOD_V2, predicate_v3, resign_v3  # noqa: E402

# M = 6: levels 0, 1, 2; step (i) at <= 4 mantissa bits so that levels 0 and 1 can sit on coarser lattices
LEVELED = {**METHOD_V2, "y_mantissa_bits": [3, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2], "level_bits": [4, 5, 6]}
LOWER_LEVELED = {**{k: v for k, v in LEVELED.items() if k != "trim_shift"}, "name": "data-processing-lower"}


@pytest.fixture(scope="module")
def spec():
    return predicate_v3(method=LEVELED, lower_method=LOWER_LEVELED), Ed25519PrivateKey.generate()


def test_a_spec_built_certificate_with_level_lattices_is_accepted(spec):
    pred, key = spec
    r = resign_v3(pred, key)
    assert r.accepted, (r.reason, r.detail)
    assert r.mismatches == []


def levels(side: str, value):
    def change(p):
        m = p["method"] if side == "upper" else p["lower"]["method"]
        if value is None:
            del m["level_bits"]
        else:
            m["level_bits"] = value
    return change


MUTATIONS = {
    "falling": (levels("upper", [5, 4, 6]), "method-invalid"),
    "too-few": (levels("upper", [5, 6]), "method-invalid"),
    "too-many": (levels("upper", [4, 4, 5, 6]), "method-invalid"),
    "not-ending-at-n": (levels("upper", [4, 5, 5]), "method-invalid"),
    "below-step-i": (levels("upper", [3, 5, 6]), "method-invalid"),
    "as-strings": (levels("upper", ["4", "5", "6"]), "schema-type"),
    "empty": (levels("upper", []), "schema-type"),
    "coarser-than-replayed": (levels("upper", [4, 4, 6]), "replay-bound-exceeds"),
    "dropped": (levels("upper", None), "enclosure-mismatch"),
    "lower-falling": (levels("lower", [6, 5, 6]), "lower-method-invalid"),
    "lower-coarser": (levels("lower", [4, 4, 6]), "lower-replay-below-recorded"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_an_edited_level_schedule_is_refused_with_its_reason(spec, name):
    pred, key = spec
    change, reason = MUTATIONS[name]
    r = resign_v3(pred, key, change)
    assert not r.accepted and r.reason == reason, (name, r.reason, r.detail)

