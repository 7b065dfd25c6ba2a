"""Format v4 (a claim with a target kind): spec-built certificates, accepted and forged.

The fixtures follow docs/certificate.md "Format v4": the v3 predicate of method lemma-c5-rounding v1,
claim.kind and the kind's statement (written out here, not taken from the verifier), `upper.bound` the
kind's value from the replayed b_k (Lemma C.5), the kind's numerics. Every forgery is re-signed with
the test key, so only the replay or the static checks can refuse it.
"""
from __future__ import annotations

import copy
import hashlib
from fractions import Fraction

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import arb, fmpq
from verifier_fixtures import CLAIM, METHOD, canonical, predicate, sign_statement, typed_v1

from verifier.core import round_up, verify_bytes
from verifier.format.strict import working_prec
from verifier.replay.lower_v1 import deltas
from verifier.replay.slack import upper_end
from verifier.replay.upper_v1 import replay

KEY = Ed25519PrivateKey.generate()
PAIR = "the pair (P_M^E, Q_M^E)"
DP_TEXT = ("max(delta_Q||P({e}), delta_P||Q({e})) <= target for " + PAIR + ", so the run is ({e}, target)-DP "
           "under zero-out adjacency (Appendix B.4)")
TPR_TEXT = ("1 - T({a}) <= target for " + PAIR + ", so every membership-inference test with false-positive "
            "rate <= {a} has true-positive rate <= target ((7))")
Q = lambda s: fmpq(Fraction(s).numerator, Fraction(s).denominator)


def _replayed():
    t = typed_v1(CLAIM, METHOD)
    return replay(t["claim"], t["method"]), t["method"]["eta"]


R, ETA = _replayed()


def dp_value(eps: str) -> fmpq:
    with working_prec(200):
        return max(upper_end(d) for d in deltas(R.b, R.F, ETA, Q(eps)))


def tpr_value(fpr: str, gamma: str) -> fmpq:
    with working_prec(200):
        return upper_end(arb(Q(gamma)).exp() * arb(Q(fpr)) + deltas(R.b, R.F, ETA, Q(gamma))[0])


def v4(kind: dict, target: str, upper: dict) -> dict:
    pred = predicate(CLAIM, METHOD)
    text = DP_TEXT.format(e=kind.get("epsilon")) if kind["name"] == "dp" else TPR_TEXT.format(a=kind.get("fpr"))
    pred["claim"] = {**pred["claim"], "scheme": "random-allocation", "kind": kind, "target": target,
                     "statement": text}
    pred["numerics"] = {**pred["numerics"], "tv_exact": "n/a", "tv_error": "n/a", "value": "0.01", "error": "1e-9"}
    pred["upper"] = upper
    return pred


def sign(pred: dict) -> bytes:
    digest = hashlib.sha256(canonical(pred["claim"])).hexdigest()
    st = {"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "claim", "digest": {"sha256": digest}}],
          "predicateType": "https://sigmacert.dev/certificate/v4", "predicate": pred}
    return sign_statement(st, KEY)


def verify(pred: dict):
    return verify_bytes(sign(pred), [KEY.public_key()])


def dp_cert(eps: str = "1") -> dict:
    v = dp_value(eps)
    return v4({"name": "dp", "epsilon": eps}, round_up(v * fmpq(11, 10), 3), {"bound": round_up(v, 10)})


def tpr_cert(fpr: str = "0.01", gamma: str = "1.5") -> dict:
    v = tpr_value(fpr, gamma)
    return v4({"name": "tpr", "fpr": fpr}, round_up(v * fmpq(11, 10), 3), {"bound": round_up(v, 10), "epsilon": gamma})


def test_dp_and_tpr_upper_sides_are_accepted_and_name_their_kind():
    for pred in (dp_cert(), tpr_cert()):
        r = verify(pred)
        assert r.accepted, (r.reason, r.detail)
        assert r.detail.startswith(pred["claim"]["kind"]["name"])
        assert Q(r.derived["upper"]) <= Q(pred["claim"]["target"])


def test_the_dp_value_decreases_in_epsilon_and_is_tv_at_zero():
    # delta(eps) decreases in eps; delta(0) = TV, so its bound is the grid's TV bound (1 - O)
    assert dp_value("2") < dp_value("1") < dp_value("0.5")
    assert dp_value("0") <= Q(predicate(CLAIM, METHOD)["bound"])


def test_unknown_or_missing_kind_is_refused():
    pred = dp_cert()
    pred["claim"]["kind"] = {"name": "renyi", "alpha": "2"}
    r = verify(pred)
    assert not r.accepted and r.reason == "claim-kind-unknown" and "renyi" in r.detail
    pred = dp_cert()
    del pred["claim"]["kind"]
    assert verify(pred).reason == "claim-kind-unknown"


@pytest.mark.parametrize("forged", ["0.5", "0"])
def test_a_forged_smaller_epsilon_fails_the_replay(forged):
    pred = dp_cert("1")
    pred["claim"]["kind"]["epsilon"] = forged
    pred["claim"]["statement"] = DP_TEXT.format(e=forged)
    r = verify(pred)
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason


def test_a_forged_fpr_fails_the_replay():
    pred = tpr_cert("0.01")
    pred["claim"]["kind"]["fpr"] = "0.1"
    pred["claim"]["statement"] = TPR_TEXT.format(a="0.1")
    r = verify(pred)
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason


def test_a_forged_target_is_refused_statically_or_by_the_replay():
    pred = dp_cert()
    low = round_up(dp_value("1") * fmpq(9, 10), 3, up=False)
    pred["claim"]["target"] = low
    assert verify(pred).reason == "bound-above-target"
    pred["upper"]["bound"] = low
    r = verify(pred)
    assert r.reason == "kind-replay-exceeds-target", r.reason


def test_a_recorded_bound_below_the_replay_is_refused():
    pred = dp_cert()
    pred["upper"]["bound"] = round_up(dp_value("1") * fmpq(1, 2), 6, up=False)
    assert verify(pred).reason == "kind-replay-bound-exceeds"


def test_statement_parameters_and_schema_are_checked():
    pred = dp_cert()
    pred["claim"]["statement"] = DP_TEXT.format(e="2")
    assert verify(pred).reason == "claim-statement"
    pred = dp_cert()
    pred["claim"]["kind"]["epsilon"] = "101"
    pred["claim"]["statement"] = DP_TEXT.format(e="101")
    assert verify(pred).reason == "claim-kind-invalid"
    pred = tpr_cert()
    pred["claim"]["kind"]["fpr"] = "1"
    pred["claim"]["statement"] = TPR_TEXT.format(a="1")
    assert verify(pred).reason == "claim-kind-invalid"
    pred = tpr_cert()
    del pred["upper"]["epsilon"]                       # tpr's upper names the epsilon of its bound
    assert verify(pred).reason == "schema-missing-field"
    pred = dp_cert()
    pred["claim"]["kind"] = {"name": "dp", "fpr": "0.01"}
    assert verify(pred).reason in ("schema-unknown-field", "schema-missing-field")


def test_a_v4_claim_under_the_v3_type_and_a_tv_claim_under_v4_are_refused():
    pred = dp_cert()
    st = copy.deepcopy(pred)
    digest = hashlib.sha256(canonical(st["claim"])).hexdigest()
    stmt = {"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "claim", "digest": {"sha256": digest}}],
            "predicateType": "https://sigmacert.dev/tv-certificate/v3", "predicate": st}
    r = verify_bytes(sign_statement(stmt, KEY), [KEY.public_key()])
    assert not r.accepted and r.reason.startswith("schema")
    tv = predicate(CLAIM, METHOD)
    tv["claim"] = {**tv["claim"], "scheme": "random-allocation"}
    assert verify(tv).reason == "claim-kind-unknown"
