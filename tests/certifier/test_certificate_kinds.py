"""Two-sided dp and tpr certificates (format v4): issued by certify, verified by the independent verifier,
forgeries of kind, parameter and target (re-signed with the test key) refused; TV keeps its formats."""
from __future__ import annotations

import base64
import copy
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from certifier.certificate.envelope import PREDICATE_TYPE_V4, sign_certificate
from certifier.certify import certify
from certifier.claim import kind_statement
from certifier.numerics.targets import exact_privacy_scheme
from certifier.params import parse_decimal
from certifier.resolution import sigma_resolution
from verifier.core import verify_bytes

KEY = Ed25519PrivateKey.generate()
D = lambda s: parse_decimal("x", s)


@pytest.fixture(scope="module")
def dp():
    return certify(10, 2, D("0.0001"), kind_name="dp", kind_params={"epsilon": "0.5"}, two_sided=True)


@pytest.fixture(scope="module")
def tpr():
    return certify(10, 2, D("0.002"), kind_name="tpr", kind_params={"fpr": "0.001"}, two_sided=True)


def verify(pred):
    return verify_bytes(sign_certificate(pred, KEY), [KEY.public_key()])


def test_dp_two_sided_certificate_issues_and_verifies(dp):
    assert dp.success and dp.two_sided
    sigma, low = D(dp.sigma), D(dp.sigma_low)
    assert sigma - low == sigma_resolution(sigma)                   # one resolution step
    assert D(dp.bound) <= D("0.0001") < D(dp.bound_lower)
    # the exact delta(0.5) lies between the two sides' values (at sigma and at sigma_low)
    assert exact_privacy_scheme(10, 2, float(sigma), epsilons=(0.5,)).delta[0.5].value <= float(dp.bound) + 1e-12
    assert exact_privacy_scheme(10, 2, float(low), epsilons=(0.5,)).delta[0.5].value >= float(dp.bound_lower) - 1e-12
    p = dp.predicate
    assert p["claim"]["kind"] == {"name": "dp", "epsilon": "0.5"} and p["lower"]["bound_lower"] == dp.bound_lower
    cert = sign_certificate(p, KEY)
    assert json.loads(base64.b64decode(json.loads(cert)["payload"]))["predicateType"] == PREDICATE_TYPE_V4
    r = verify_bytes(cert, [KEY.public_key()])
    assert r.accepted, (r.reason, r.detail)
    assert D(r.derived["upper"]) <= D("0.0001") < D(r.derived["lower"])


def test_tpr_two_sided_certificate_issues_and_verifies(tpr):
    assert tpr.success and tpr.two_sided
    sigma = D(tpr.sigma)
    assert sigma - D(tpr.sigma_low) == sigma_resolution(sigma)
    assert D(tpr.bound) <= D("0.002") < D(tpr.bound_lower)
    x = exact_privacy_scheme(10, 2, float(sigma), fprs=(0.001,)).tpr[0.001]
    assert x.value - x.error <= float(tpr.bound)
    r = verify(tpr.predicate)
    assert r.accepted, (r.reason, r.detail)


def _forge(pred, **kind):
    p = copy.deepcopy(pred)
    p["claim"]["kind"].update(kind)
    k = p["claim"]["kind"]
    p["claim"]["statement"] = kind_statement(k, p["claim"]["scheme"])
    return p


def test_a_larger_forged_epsilon_fails_the_lower_side(dp):
    r = verify(_forge(dp.predicate, epsilon="0.55"))
    assert not r.accepted and r.reason in ("kind-lower-not-above-target", "kind-lower-below-recorded"), r.reason


def test_a_smaller_forged_epsilon_fails_the_upper_side(dp):
    r = verify(_forge(dp.predicate, epsilon="0.45"))
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason


def test_a_forged_fpr_is_refused(tpr):
    for fpr, side in (("0.0011", "kind-replay-exceeds-target"), ("0.0009", "kind-lower")):
        r = verify(_forge(tpr.predicate, fpr=fpr))
        assert not r.accepted and r.reason.startswith(side), (fpr, r.reason)


def test_a_forged_target_is_refused(dp):
    p = copy.deepcopy(dp.predicate)
    for where in (p["claim"], p["lower"]):
        where["target"] = "0.0000999"
    p["upper"]["bound"] = "0.0000999"
    r = verify(p)
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason
    p = copy.deepcopy(dp.predicate)
    for where in (p["claim"], p["lower"]):
        where["target"] = "0.000101"
    p["lower"]["bound_lower"] = "0.000102"
    r = verify(p)
    assert not r.accepted and r.reason.startswith("kind-lower"), r.reason


def test_a_forged_or_unknown_kind_is_refused(dp):
    p = copy.deepcopy(dp.predicate)
    p["claim"]["kind"] = {"name": "tpr", "fpr": "0.01"}
    p["claim"]["statement"] = kind_statement(p["claim"]["kind"], p["claim"]["scheme"])
    r = verify(p)
    assert not r.accepted                             # tpr's upper names its epsilon: the schema refuses
    p["upper"]["epsilon"] = "0"
    r = verify(p)
    assert not r.accepted and r.reason in ("kind-replay-exceeds-target", "kind-lower-not-above-target",
                                           "kind-lower-below-recorded"), r.reason
    p = copy.deepcopy(dp.predicate)
    p["claim"]["kind"] = {"name": "renyi", "order": "2"}
    r = verify(p)
    assert not r.accepted and r.reason == "claim-kind-unknown" and "\n" not in r.detail


def test_tv_certificates_keep_their_format():
    out = certify(10, 5, D("0.21"), two_sided=True)
    assert out.success and "kind" not in out.predicate["claim"] and "upper" not in out.predicate
    cert = sign_certificate(out.predicate, KEY)
    ptype = json.loads(base64.b64decode(json.loads(cert)["payload"]))["predicateType"]
    assert ptype.startswith("https://sigmacert.dev/tv-certificate/")
    assert verify_bytes(cert, [KEY.public_key()]).accepted
