"""Single-block dp / tpr certificates by upper method v2 where method v1's truncation at 8M does not apply
(M = 2, E = 1 at sigma about 1): two-sided, verified by the independent verifier, bracketing the numerical
value at sigma and sigma_low; a forged kind parameter refused; v1 still preferred where it applies."""
from __future__ import annotations

import copy

import pytest
from helpers import sign_and_verify

from certifier.certify import certify
from certifier.claim import FIXED_BINS, RANDOM_ALLOCATION, Claim, kind_statement
from certifier.methods.v1.search import v1_fits
from certifier.methods.v2.search import KIND_UPPER_K_SCALE
from certifier.numerics.targets import exact_privacy, exact_privacy_scheme
from certifier.params import parse_decimal
from certifier.resolution import sigma_resolution

D = lambda s: parse_decimal("x", s)


@pytest.fixture(scope="module")
def dp():
    return certify(2, 1, D("0.05"), kind_name="dp", kind_params={"epsilon": "1"}, two_sided=True)


@pytest.fixture(scope="module")
def tpr():
    return certify(2, 1, D("0.1"), kind_name="tpr", kind_params={"fpr": "0.01"}, two_sided=True)


verify = sign_and_verify


def _v1_applies(out) -> bool:
    return v1_fits(Claim(RANDOM_ALLOCATION, out.steps, out.epochs, D(out.sigma), D(out.target)), D(out.sigma), False)


def _two_sided_by_v2(out, target):
    assert out.success and out.two_sided
    assert not _v1_applies(out)                       # the cell method v1 refuses
    p = out.predicate
    assert (p["method"]["name"], p["method"]["version"]) == ("lemma-c5-rounding", 2)
    assert (p["lower"]["method"]["name"], p["lower"]["method"]["version"]) == ("data-processing-lower", 2)
    sigma, low = D(out.sigma), D(out.sigma_low)
    assert sigma - low == sigma_resolution(sigma)
    assert D(out.bound) <= D(target) < D(out.bound_lower)
    assert p["upper"]["bound"] == out.bound and p["lower"]["bound_lower"] == out.bound_lower
    r = verify(p)
    assert r.accepted, (r.reason, r.detail)
    assert D(r.derived["upper"]) <= D(target) < D(r.derived["lower"])
    return float(sigma), float(low)


def test_dp_at_small_sigma_is_certified_two_sided_by_method_v2(dp):
    sigma, low = _two_sided_by_v2(dp, "0.05")
    hi = exact_privacy(2, 1, sigma, epsilons=(1.0,)).delta[1.0]        # quadrature-checked numerics
    lo = exact_privacy(2, 1, low, epsilons=(1.0,)).delta[1.0]
    assert hi.value - hi.error <= float(dp.bound)                       # the upper end is above delta(sigma)
    assert float(dp.bound_lower) <= lo.value + lo.error                 # the lower end is below delta(sigma_low)
    assert float(dp.bound) - hi.value < 1e-6 and lo.value - float(dp.bound_lower) < 1e-6   # and tight


def test_tpr_at_small_sigma_is_certified_two_sided_by_method_v2(tpr):
    sigma, low = _two_sided_by_v2(tpr, "0.1")
    hi = exact_privacy(2, 1, sigma, fprs=(0.01,)).tpr[0.01]
    lo = exact_privacy(2, 1, low, fprs=(0.01,)).tpr[0.01]
    assert hi.value - hi.error <= float(tpr.bound) < hi.value + 1e-5
    assert lo.value - 1e-5 < float(tpr.bound_lower) <= lo.value + lo.error


def test_the_kinds_own_calibration_measures_its_loss(dp):
    cal = [t for t in dp.tries if t.get("calibration") == "upper"]
    assert len(cal) == 1 and cal[0]["k_scale"] == round(dp.k_scale, 3)
    # it read the kind's value on the coarse grid (not the fallback factor) and stayed within k_scale_from's clamp
    assert dp.k_scale != KIND_UPPER_K_SCALE and 0.25 <= dp.k_scale <= 20
    tries = [t for t in dp.tries if t.get("certified")]
    assert tries and tries[-1]["dp_bound"] == dp.bound            # the kind's value on the grid that proved it


def _forge(pred, **kind):
    p = copy.deepcopy(pred)
    p["claim"]["kind"].update(kind)
    p["claim"]["statement"] = kind_statement(p["claim"]["kind"], p["claim"]["scheme"])
    return p


def test_a_forged_kind_epsilon_is_refused(dp):
    r = verify(_forge(dp.predicate, epsilon="0.99"))
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason
    r = verify(_forge(dp.predicate, epsilon="1.01"))
    assert not r.accepted and r.reason.startswith("kind-lower"), r.reason


def test_a_forged_fpr_is_refused(tpr):
    r = verify(_forge(tpr.predicate, fpr="0.0101"))
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason


def test_method_v1_stays_preferred_where_it_applies():
    out = certify(10, 5, D("0.05"), D("1.5"), kind_name="dp", kind_params={"epsilon": "1"})
    assert out.success and _v1_applies(out)
    assert out.predicate["method"]["name"] == "lemma-c5-rounding" and out.predicate["method"]["version"] == 1


def test_fixed_bins_dp_where_v1_does_not_apply_is_certified_by_method_v2():
    out = certify(2, 3, D("0.05"), scheme=FIXED_BINS, kind_name="dp", kind_params={"epsilon": "1"}, two_sided=True)
    assert out.success and out.two_sided and out.predicate["method"]["version"] == 2
    hi = exact_privacy_scheme(2, 3, float(D(out.sigma)), FIXED_BINS, epsilons=(1.0,)).delta[1.0]
    lo = exact_privacy_scheme(2, 3, float(D(out.sigma_low)), FIXED_BINS, epsilons=(1.0,)).delta[1.0]
    assert hi.value - hi.error <= float(out.bound) and float(out.bound_lower) <= lo.value + lo.error
    r = verify(out.predicate)
    assert r.accepted, (r.reason, r.detail)
