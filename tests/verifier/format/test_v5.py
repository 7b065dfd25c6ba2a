"""Format v5 (a run in stages): a two-stage certificate issues and verifies; forged stage lists are rejected.

Order: the pair of a run in stages is the product of the stages' pairs, and TV of a product does not
depend on the order of its factors, so a certificate whose stages are reordered (and re-signed) states
the same true fact; the verifier replays the recorded order, and its roundings differ only within the
slack, so it accepts. Every other change of the list changes the pair and is caught by the replay.
"""
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from verifier_v3_fixtures import resign_v3

from certifier.certificate.envelope import predicate_type
from certifier.certify import certify_run
from certifier.numerics.stages import exact_tv_product
from certifier.params import parse_decimal
from certifier.run import Run

V5 = "https://sigmacert.dev/certificate/v5"


@pytest.fixture(scope="module")
def issued():
    out = certify_run(Run.composed([(4, 1), (8, 1)]), parse_decimal("target", "0.3"), two_sided=True)
    return out, Ed25519PrivateKey.generate()


def verdict(issued, change=None):
    out, key = issued
    return resign_v3(out.predicate, key, change, V5)


def test_two_stage_certificate_is_two_sided_and_verifies(issued):
    out, _ = issued
    assert out.success and out.two_sided and predicate_type(out.predicate) == V5
    claim = out.predicate["claim"]
    assert claim["stages"] == [{"steps": 4, "epochs": 1}, {"steps": 8, "epochs": 1}]
    assert "steps" not in claim and "epochs" not in claim and claim["kind"] == {"name": "tv"}
    exact = exact_tv_product([(4, 1, out.sigma), (8, 1, out.sigma)])
    low = exact_tv_product([(4, 1, out.sigma_low), (8, 1, out.sigma_low)])
    assert float(out.bound) <= 0.3 and exact.tv + exact.error < float(out.bound)
    assert 0.3 < float(out.tv_lower) < low.tv - low.error
    r = verdict(issued)
    assert r.accepted, (r.reason, r.detail)
    assert "stages 4x1,8x1" in r.detail and r.replayed_lower is not None and r.derived


@pytest.mark.parametrize("change, reason", [
    (lambda p: p["claim"]["stages"][1].update(epochs=2), "replay-bound-exceeds"),      # an epoch added
    (lambda p: p["claim"]["stages"].append({"steps": 4, "epochs": 1}), "replay-bound-exceeds"),   # a stage added
    (lambda p: p["claim"]["stages"].pop(0), "enclosure-mismatch"),                     # a stage dropped
    (lambda p: p["claim"]["stages"][0].update(steps=2), "replay-bound-exceeds"),       # fewer steps: more privacy loss
])
def test_forged_stage_lists_are_rejected(issued, change, reason):
    r = verdict(issued, change)
    assert not r.accepted and r.reason == reason, (r.reason, r.detail)


def test_reordered_stages_state_the_same_pair_and_verify(issued):
    r = verdict(issued, lambda p: p["claim"]["stages"].reverse())
    assert r.accepted and "stages 8x1,4x1" in r.detail


@pytest.mark.parametrize("change, reason", [
    (lambda p: p["claim"].update(steps=4), "claim-stages-mixed"),
    (lambda p: p["claim"].update(epochs=2), "claim-stages-mixed"),
    (lambda p: p["claim"].update(stages=[]), "claim-stages-empty"),
    (lambda p: p["claim"].pop("stages"), "claim-stages-missing"),
    (lambda p: p["claim"].update(scheme="fixed-bins"), "claim-scheme"),
    (lambda p: p["claim"].update(kind={"name": "dp"}), "schema-missing-field"),       # dp needs epsilon and upper
    (lambda p: p["claim"].update(kind={"name": "tv", "epsilon": "1"}), "schema-unknown-field"),
    (lambda p: p["claim"].update(kind={"name": "rdp"}), "claim-kind-unknown"),
    (lambda p: p["claim"]["stages"][0].update(epochs=0), "claim-invalid"),
    (lambda p: p["claim"]["stages"][0].update(epochs="1"), "schema-type"),
    (lambda p: p["claim"].update(stages=[{"steps": 4, "epochs": 1}] * 65), "claim-stages-too-many"),
    (lambda p: p["claim"]["stages"][0].update(epochs=10**6), "method-too-expensive"),
    (lambda p: p["claim"].update(statement="TV <= target"), "claim-statement"),
    (lambda p: p["method"].update(version=1), "method-unknown"),
    (lambda p: p["lower"]["method"].update(version=1), "lower-method-unknown"),
    # a lattice per level (method-v2.md §10) is not for a run in stages (several M), on either side
    (lambda p: p["method"].update(level_bits=[p["method"]["mantissa_bits"]] * 4), "schema-unknown-field"),
    (lambda p: p["lower"]["method"].update(level_bits=[p["lower"]["method"]["mantissa_bits"]] * 4),
     "schema-unknown-field"),
])
def test_malformed_stage_claims_get_one_line_rejections(issued, change, reason):
    r = verdict(issued, change)
    assert not r.accepted and r.reason == reason and "\n" not in r.detail, (r.reason, r.detail)


def test_cost_model_prices_every_distinct_line_and_a_forged_lower_enclosure_is_caught(issued):
    r = verdict(issued)
    assert 0 < r.cost["seconds"] < 1e6 and any(k.startswith("M=8.lower") for k in r.cost["steps"])
    bad = verdict(issued, lambda p: p["lower"]["enclosures"].update(W_A="[0.99 +/- 1e-20]"))
    assert not bad.accepted and bad.reason == "lower-enclosure-mismatch", (bad.reason, bad.detail)
