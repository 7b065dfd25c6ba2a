"""Method v1 with the mass above the cap moved down to the cap ("above_cap": "moved", format v3;
docs/method-v2.md §7): the bound stays above the exact TV and below the deleting grid's, a certificate
issues and verifies, forged values are rejected, and the planner takes it where it is cheaper."""
from __future__ import annotations

import dataclasses
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import fmpq

import certifier.methods.v1.plan as v1_plan
from certifier.bounds.upper_v1 import UpperV1, make_method, rounding_bound
from certifier.certificate.envelope import canonical_json, claim_subject, sign_envelope, statement
from certifier.certify import certify
from certifier.methods.v1.plan import choose_grid
from certifier.numerics.exact import exact_tv
from certifier.params import ParameterError, parse_decimal
from verifier.core import verify_bytes

Q = lambda s: parse_decimal("x", s)  # noqa: E731


def _verify(pred: dict, key: Ed25519PrivateKey):
    env = sign_envelope(statement(claim_subject(pred["claim"]), pred), key)
    return verify_bytes(canonical_json(env), [key.public_key()])


# a heavy-tailed small cell: Pr(Y > cap = 3) ~ 3e-3 per step, so the cap matters at 1e-4
M, E, SIGMA = 4, 3, Q("0.9")
GRID = dict(h="0.005", eta="0.001", cap="3")


def _pair():
    deleting = make_method(M, **GRID)
    moving = dataclasses.replace(deleting, cap_moved=True)
    return rounding_bound(M, E, SIGMA, deleting), rounding_bound(M, E, SIGMA, moving)


def test_moving_the_tail_to_the_cap_keeps_the_bound_above_the_exact_tv_and_below_deleting_it():
    deleted, moved = _pair()
    ex = exact_tv(M, E, float(SIGMA))
    tv, err = ex.tv, ex.error
    assert float(moved.bound) >= tv - err                    # still an upper bound on TV (exact numerics)
    # deleting costs the tail's whole payoff; moving it only where Lambda crosses 1
    lost_deleted, lost_moved = float(deleted.bound) - tv, float(moved.bound) - tv
    assert lost_moved < 0.5 * lost_deleted
    assert "cap" not in moved.enclosures["deleted"] and "cap" in moved.enclosures["moved"]
    assert moved.enclosures["moved"]["cap"] == deleted.enclosures["deleted"]["cap"]   # the same mass, 1 - F0(cap)


def test_the_method_object_records_the_move_and_reads_it_back():
    m = dataclasses.replace(make_method(M, **GRID), cap_moved=True)
    js = m.to_json(M)
    assert js["above_cap"] == "moved"
    assert UpperV1.from_json(js) == m
    assert "above_cap" not in make_method(M, **GRID).to_json(M)  # deleting grids keep the v1 object exactly
    with pytest.raises(ParameterError):
        UpperV1.from_json({**js, "above_cap": "deleted"})


@pytest.fixture(scope="module")
def moved_cert():
    mp = pytest.MonkeyPatch()
    mp.setattr(v1_plan, "MOVED_GAIN", 10.0)                # take the moved cap whenever it fits
    try:
        r = certify(5, 2, Q("0.1"), Q("2.589777"), two_sided=True)   # the v1 regime (bench --small)
    finally:
        mp.undo()
    return r


def test_a_certificate_with_a_moved_cap_issues_in_format_v3_and_verifies(moved_cert):
    r = moved_cert
    assert r.success and r.two_sided
    p = json.loads(json.dumps(r.predicate))
    assert p["method"]["version"] == 1 and p["method"]["above_cap"] == "moved"
    assert "moved" in p["enclosures"] and "cap" not in p["enclosures"]["deleted"]
    assert float(r.bound) <= 0.1 and float(r.bound) >= r.tv - r.tv_error
    key = Ed25519PrivateKey.generate()
    assert _verify(p, key).accepted


def test_forged_moved_cap_certificates_are_rejected(moved_cert):
    key = Ed25519PrivateKey.generate()
    p = json.loads(json.dumps(moved_cert.predicate))
    bad = json.loads(json.dumps(p))
    bad["method"]["above_cap"] = "deleted"
    res = _verify(bad, key)
    assert not res.accepted and res.reason == "method-invalid"
    gone = json.loads(json.dumps(p))                        # the key dropped: the layout is v1's again
    del gone["method"]["above_cap"]
    assert not _verify(gone, key).accepted
    small = json.loads(json.dumps(p))                       # a moved mass the replay does not find
    small["enclosures"]["moved"]["cap"] = "[0.25 +/- 1e-20]"
    res = _verify(small, key)
    assert not res.accepted and res.reason == "enclosure-mismatch"


def test_the_planner_moves_the_cap_where_it_is_cheaper_at_the_hardest_table_4_cell():
    sigma = Q("1.024495")
    old = choose_grid(250, 10, sigma, 1.742e-9)
    new = choose_grid(250, 10, sigma, 1.742e-9, allow_moved=True)
    assert not old.method.cap_moved and new.method.cap_moved
    assert new.method.cap < fmpq(7, 10) * old.method.cap and new.predicted_loss <= 1.742e-9
    assert new.predicted_seconds < 0.8 * old.predicted_seconds
    assert new.method.trim == old.method.trim                 # the rows need the verifier's replay within their digits
    # a user grid is kept as given: no move
    assert not choose_grid(250, 10, sigma, 1.742e-9, h="0.0004", allow_moved=True).method.cap_moved
