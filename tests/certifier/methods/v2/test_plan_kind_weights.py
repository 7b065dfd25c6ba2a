"""The method-v2 planner with a target kind's own loss model (methods.v1.plan.KindWeights) for runs in stages.

Without weights a plan is today's (the identity weights give the same plan: the TV path is untouched);
with the kink density ratio a dp margin of ~1e-11 fits a grid where the e^eps-divided TV model fits none;
and the smallest cell that was refused before (stages 4x1,8x1, eps 1, delta 1e-5) certifies two-sided,
verifies, and its bounds bracket the numerical delta at sigma and sigma_low.
"""
from __future__ import annotations

import math

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from verifier_v3_fixtures import resign_v3

from certifier.certificate.stages import stages_claim
from certifier.certify import certify_run
from certifier.claim import t2_runs
from certifier.errors import CannotCertifyError
from certifier.methods.v1.plan import KindWeights
from certifier.methods.v2.plan import MOVE_SHARE, choose_v2, plan_v2
from certifier.methods.v2.stages import need_eps, plan_product
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.params import parse_decimal
from certifier.run import Run
from certifier.targets import kind

V5 = "https://sigmacert.dev/certificate/v5"
STAGES = [(4, 1), (8, 1)]
D = lambda s: parse_decimal("x", s)  # noqa: E731


def _same(a, b):
    assert a.method == b.method
    assert a.predicted_loss == b.predicted_loss and a.predicted_seconds == b.predicted_seconds
    assert a.detail["loss"] == b.detail["loss"]


@pytest.mark.parametrize("M, E, s, tv, budget, need", [(10, 2, "1.1", 0.3, 1e-7, 0.0), (4, 3, "2", 0.2, 1e-9, 4.0),
                                                       (100, 10, "1.426215", 0.1, 1e-8, 9.0)])
def test_identity_weights_give_todays_plan(M, E, s, tv, budget, need):
    t2 = 1 / D(s) ** 2
    one = KindWeights(1.0, 1.0, tv)
    _same(choose_v2(M, E, t2, budget, tv, need_eps=need), choose_v2(M, E, t2, budget, tv, need_eps=need, weights=one))
    _same(plan_v2(M, E, t2, budget, tv, n=12, eta="1e-4", need_eps=need),
          plan_v2(M, E, t2, budget, tv, n=12, eta="1e-4", need_eps=need, weights=one))


def test_weights_scale_the_rounding_terms_and_the_moves():
    t2, tv = 1 / D("1.1") ** 2, 0.3
    base = plan_v2(10, 2, t2, 1e-7, tv, n=12, eta="1e-4", need_eps=4.0)
    w = plan_v2(10, 2, t2, 1e-7, tv, n=12, eta="1e-4", need_eps=4.0, weights=KindWeights(1e-3, math.e, tv))
    lo, lw = base.detail["loss"], w.detail["loss"]
    for k in ("lattice", "log_grid"):                       # the same grid points: the K terms scale exactly
        assert lw[k] == pytest.approx(1e-3 * lo[k], rel=1e-12)
    assert lw["k_minus"] == lo["k_minus"]
    assert w.method.trim == base.method.trim               # a deleted unit costs e^eps more, as a moved one
    assert lw["trim"] == pytest.approx(math.e * lo["trim"], rel=1e-12)
    # a move costs e^eps more, and the weighted plan's tops are where its moves are cheap at that price; both tops
    # also end at least twice above the epoch sums (M = 10), which decides them here (octaves of different h)
    top = lambda m: m.h * 2 ** (m.mantissa_bits + m.top_octave + 1)   # the value above which sums are moved
    assert lw["moves"] <= MOVE_SHARE * 1e-7 and top(w.method) >= 2 * 10 and top(base.method) >= 2 * 10


def _claim_and_weights(eps: str, delta: str, sigma: str):
    k = kind("dp", {"epsilon": eps}, D(delta))
    named = (("name", "dp"), *k.params)
    claim = stages_claim(tuple(STAGES), D(sigma), D(delta), named)
    return k, claim, k.plan_weights(claim, D(sigma))


def test_a_dp_margin_the_tv_model_cannot_plan_fits_with_the_kind_weights():
    # stages 4x1,8x1 at the exact sigma 2.402087 of (eps 1, delta 1e-5): margin ~2.6e-11
    k, claim, w = _claim_and_weights("1", "1e-5", "2.402087")
    assert w is not None and 1e-4 <= w.curvature < 1e-2 and w.deletion == pytest.approx(math.e)
    value, err = k.numerics(claim, D("2.402087"))
    margin = k.upper_margin(claim.target, value, err)
    assert 0 < margin < 1e-10
    runs, need = t2_runs(claim, D("2.402087")), need_eps(k)
    with pytest.raises(CannotCertifyError):
        plan_product(runs, None, 0.6 * margin / k.loss_factor, value, need_eps=need)      # today's model
    p = plan_product(runs, None, 0.6 * margin, w.tv, need_eps=need, weights=w)
    assert p.predicted_loss <= 0.6 * margin and p.predicted_seconds < 120


def test_the_weights_tv_is_the_pairs_tv():
    from certifier.numerics.stages import exact_tv_product
    _, _, w = _claim_and_weights("1", "1e-5", "2.402087")
    tv = exact_tv_product([(m, e, "2.402087") for m, e in STAGES])
    assert w.tv == pytest.approx(float(tv.tv), abs=1e-8)


@pytest.fixture(scope="module")
def dp():
    return certify_run(Run.composed(STAGES), D("1e-5"), two_sided=True, kind_name="dp", kind_params={"epsilon": "1"})


def test_stages_dp_at_delta_1e5_certifies_two_sided_and_verifies(dp):
    assert dp.success and dp.two_sided and dp.kind == "dp"
    up, lo = dp.predicate["upper"], dp.predicate["lower"]
    runs = lambda s: [(m, e, s) for m, e in STAGES]
    hi = exact_privacy_product(runs(dp.sigma), epsilons=[1.0]).delta[1.0]
    low = exact_privacy_product(runs(dp.sigma_low), epsilons=[1.0]).delta[1.0]
    assert hi.value + hi.error <= float(up["bound"]) <= 1e-5            # above the numerical delta, meets it
    assert 1e-5 < float(lo["bound_lower"]) <= low.value + low.error     # below it at sigma_low, misses it
    r = resign_v3(dp.predicate, Ed25519PrivateKey.generate(), None, V5)
    assert r.accepted, (r.reason, r.detail)
    assert r.replayed_lower is not None


def test_stages_dp_plans_spend_the_kinds_margin(dp):
    # the tries record the kind's budget (not divided by e^eps) and a prediction within it
    tries = [t for t in dp.tries + dp.lower_tries if "budget" in t]
    assert tries and all(t["predicted_loss"] <= t["budget"] for t in tries)
    first = next(t for t in dp.tries if "budget" in t)
    margin = 1e-5 - dp.tv - dp.tv_error
    assert first["budget"] == pytest.approx(0.6 * margin, rel=1e-9)       # SAFETY[0] of the kind's margin


def test_stages_dp_lower_tries_bound_delta_not_tv(dp):
    # the lower side of a stages dp claim proves delta(eps) at sigma_low > target: each try records the kind's
    # certified lower value (below the numerical delta there) beside the processed pair's TV, and plans on the
    # kind's margin (its budget a share of delta(sigma_low) - error - target, not of a TV margin)
    runs = [(m, e, dp.sigma_low) for m, e in STAGES]
    low = exact_privacy_product(runs, epsilons=[1.0]).delta[1.0]
    tries = [t for t in dp.lower_tries if t.get("sigma_low") == dp.sigma_low and "budget" in t]
    assert tries and all("dp_lower" in t and "value_exact" in t and "tv_exact" not in t for t in tries)
    for t in tries:
        assert float(t["dp_lower"]) <= low.value + low.error < 1e-3 < float(t["tv_lower"])
        assert t["budget"] <= 0.8 * (low.value - 1e-5) * (1 + 1e-9)
    assert float(dp.predicate["lower"]["bound_lower"]) == pytest.approx(float(tries[-1]["dp_lower"]), rel=1e-9)
    assert any(t.get("calibration") == "lower" for t in dp.lower_tries)     # the weighted model calibrated
