"""Format v5 with a target kind (dp, tpr) or a sigma per stage: issued, replayed, forgeries rejected.

A forgery caught only after the lower replay (tens of seconds on a loaded machine) is tested once.
Small cells (stages 4x1,8x1) with targets whose exact sigma leaves the v2 grid a margin of about 1e-7
(delta 0.1 at eps 0.5; TPR 0.3 at FPR 0.1), so each two-sided certificate takes seconds, not minutes.
A certificate of the format-v5 tv kind issued before these additions (tests/data/v5) still verifies.
"""
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from verifier_v3_fixtures import resign_v3

from certifier.certify import certify_run
from certifier.numerics.stages import exact_tv_product
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.params import parse_decimal
from certifier.run import Run
from verifier import load_public_key, verify_bytes

V5 = "https://sigmacert.dev/certificate/v5"
DATA = Path(__file__).resolve().parents[2] / "data" / "v5"
STAGES = [(4, 1), (8, 1)]


@pytest.fixture(scope="module")
def key():
    return Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def dp():
    return certify_run(Run.composed(STAGES), parse_decimal("delta", "0.1"), two_sided=True, kind_name="dp",
                          kind_params={"epsilon": "0.5"})


@pytest.fixture(scope="module")
def tpr():
    return certify_run(Run.composed(STAGES), parse_decimal("tpr", "0.3"), two_sided=True, kind_name="tpr",
                          kind_params={"fpr": "0.1"})


@pytest.fixture(scope="module")
def own():
    """A sigma per stage, tv: one-sided."""
    return certify_run(Run.composed([(4, 1, "1.2"), (8, 1, "1.5")]), parse_decimal("target", "0.3"))


def verdict(out, key, change=None):
    return resign_v3(out.predicate, key, change, V5)


def _profile(stages, sigma, **kw):
    return exact_privacy_product([(m, e, sigma) for m, e in stages], **kw)


def test_dp_stages_certificate_is_two_sided_and_verifies(dp, key):
    assert dp.success and dp.two_sided and dp.kind == "dp"
    c = dp.predicate["claim"]
    assert c["kind"] == {"name": "dp", "epsilon": "0.5"} and "(0.5, target)-DP" in c["statement"]
    assert "at one sigma" in c["statement"] and "steps" not in c
    up, lo = dp.predicate["upper"], dp.predicate["lower"]
    hi = _profile(STAGES, dp.sigma, epsilons=[0.5]).delta[0.5]
    low = _profile(STAGES, dp.sigma_low, epsilons=[0.5]).delta[0.5]
    assert hi.value + hi.error <= float(up["bound"]) <= 0.1            # the bound is above the exact delta
    assert 0.1 < float(lo["bound_lower"]) <= low.value + low.error     # and the lower value below it
    r = verdict(dp, key)
    assert r.accepted, (r.reason, r.detail)
    assert "stages 4x1,8x1" in r.detail and "dp" in r.detail and r.replayed_lower is not None


def test_tpr_stages_certificate_is_two_sided_and_verifies(tpr, key):
    assert tpr.success and tpr.two_sided and tpr.kind == "tpr"
    assert tpr.predicate["claim"]["kind"] == {"name": "tpr", "fpr": "0.1"}
    hi = _profile(STAGES, tpr.sigma, fprs=[0.1]).tpr[0.1]
    low = _profile(STAGES, tpr.sigma_low, fprs=[0.1]).tpr[0.1]
    assert hi.value + hi.error <= float(tpr.predicate["upper"]["bound"]) <= 0.3
    assert 0.3 < float(tpr.predicate["lower"]["bound_lower"]) <= low.value + low.error
    r = verdict(tpr, key)
    assert r.accepted, (r.reason, r.detail)


def _kind(**kind):
    """Change claim.kind and its statement consistently (a forger who knows the format)."""
    def change(p):
        from certifier.certificate.stages import STAGES_PAIR
        from certifier.claim import KIND_TEXT
        p["claim"]["kind"] = kind
        p["claim"]["statement"] = KIND_TEXT[kind["name"]].format(pair=STAGES_PAIR[False], **kind)
    return change


@pytest.mark.parametrize("change, reasons", [
    (_kind(name="dp", epsilon="0.3"), {"kind-replay-exceeds-target"}),          # a stronger claim: smaller eps
    (_kind(name="dp", epsilon="0.7"), {"kind-lower-not-above-target"}),         # weaker: the lower side fails
    (_kind(name="dp", epsilon="101"), {"claim-kind-invalid"}),
    (_kind(name="tpr", fpr="0.1"), {"schema-missing-field"}),                    # tpr's upper needs its epsilon
    (lambda p: p["claim"]["kind"].update(name="rdp"), {"claim-kind-unknown"}),
    (lambda p: p["claim"]["kind"].update(epsilon="0.3"), {"claim-statement"}),   # the statement not updated
    (lambda p: p["claim"].update(target="0.05"), {"bound-above-target"}),
    (lambda p: p["upper"].update(bound="0.01"), {"kind-replay-bound-exceeds"}),
    (lambda p: p["claim"]["stages"][0].update(steps=2), {"replay-bound-exceeds", "kind-replay-exceeds-target"}),
    (lambda p: p["claim"]["stages"].pop(0), {"enclosure-mismatch"}),
    (lambda p: p["claim"]["stages"][1].update(sigma="1.2"), {"claim-stages-sigma-mixed"}),
])
def test_forged_dp_stage_certificates_are_rejected(dp, key, change, reasons):
    r = verdict(dp, key, change)
    assert not r.accepted and r.reason in reasons and "\n" not in r.detail, (r.reason, r.detail)


@pytest.mark.parametrize("change, reasons", [
    (_kind(name="tpr", fpr="0.2"), {"kind-replay-exceeds-target"}),   # a larger FPR: the TPR bound grows
    (_kind(name="tpr", fpr="1"), {"claim-kind-invalid"}),
    (_kind(name="dp", epsilon="0.5"), {"schema-unknown-field"}),       # dp's upper has no epsilon
])
def test_forged_tpr_stage_certificates_are_rejected(tpr, key, change, reasons):
    r = verdict(tpr, key, change)
    assert not r.accepted and r.reason in reasons, (r.reason, r.detail)


def test_per_stage_sigma_certificate_verifies_and_bounds_the_exact_tv(own, key):
    assert own.success and not own.two_sided and own.sigma is None
    c = own.predicate["claim"]
    assert c["stages"] == [{"steps": 4, "epochs": 1, "sigma": "1.2"}, {"steps": 8, "epochs": 1, "sigma": "1.5"}]
    assert "sigma" not in c and "each at its own sigma" in c["statement"] and "lower" not in own.predicate
    exact = exact_tv_product([(4, 1, "1.2"), (8, 1, "1.5")])
    won = next(t for t in own.tries if t.get("certified"))
    # rigorous: above the exact TV; tight: within the loss its grid was given (the try's budget)
    assert exact.tv + exact.error <= float(own.bound) <= exact.tv + won["budget"]
    r = verdict(own, key)
    assert r.accepted, (r.reason, r.detail)
    assert "stages 4x1@1.2,8x1@1.5" in r.detail and "each stage's own sigma" in r.detail


@pytest.mark.parametrize("change, reasons", [
    (lambda p: p["claim"]["stages"][0].update(sigma="1.1"), {"replay-bound-exceeds"}),   # less noise
    (lambda p: p["claim"]["stages"][1].update(sigma="1.6"), {"enclosure-mismatch"}),     # more noise: O differs
    (lambda p: p["claim"]["stages"][1].update(sigma="0"), {"claim-invalid"}),
    (lambda p: p["claim"]["stages"][1].update(sigma="-1.5"), {"schema-type"}),         # not a decimal >= 0
    (lambda p: p["claim"]["stages"][1].update(sigma=1.5), {"schema-type"}),
    (lambda p: p["claim"]["stages"][1].pop("sigma"), {"claim-stages-sigma-mixed"}),
    (lambda p: p["claim"].update(sigma="1.2"), {"claim-stages-sigma-mixed"}),
    (lambda p: p["claim"].update(statement=p["claim"]["statement"].replace("each at its own", "at one")),
     {"claim-statement"}),
])
def test_forged_per_stage_sigmas_are_rejected(own, key, change, reasons):
    r = verdict(own, key, change)
    assert not r.accepted and r.reason in reasons and "\n" not in r.detail, (r.reason, r.detail)


def test_a_lower_side_beside_per_stage_sigmas_is_refused(own, dp, key):
    r = verdict(own, key, lambda p: p.update(lower=json.loads(json.dumps(dp.predicate["lower"]))))
    assert not r.accepted and r.reason == "lower-per-stage-sigma", (r.reason, r.detail)


def test_equal_sigma_per_stage_gives_the_shared_sigma_bound():
    t = parse_decimal("target", "0.3")
    each = certify_run(Run.composed([(4, 1, "1.2"), (8, 1, "1.2")]), t)
    shared = certify_run(Run.composed(STAGES), t, parse_decimal("sigma", "1.2"))
    assert each.success and shared.success
    assert each.bound == shared.bound and each.predicate["enclosures"] == shared.predicate["enclosures"]
    assert each.predicate["method"] == shared.predicate["method"]


def test_a_v5_certificate_issued_before_kinds_and_stage_sigmas_still_verifies():
    data = (DATA / "stages_4x1_8x1_tv.json").read_bytes()
    r = verify_bytes(data, [load_public_key((DATA / "public.pem").read_bytes())])
    assert r.accepted, (r.reason, r.detail)
    assert r.claim["kind"] == {"name": "tv"} and r.replayed_lower is not None and "stages 4x1,8x1" in r.detail
