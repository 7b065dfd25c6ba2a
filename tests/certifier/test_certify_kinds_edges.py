"""dp and tpr certificates at the edges the kinds first missed: one step per epoch (M = 1, the Gaussian
shift in closed form) and the fixed-bins scheme (method v1 on the one-epoch pair at sigma/sqrt(E)).

Both sides are checked against the M = 1 closed forms computed here with mpmath at 50 digits,
    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),  1 - T(alpha) = Phi(Phi^-1(alpha) + mu),
mu = sqrt(E)/sigma, and the independent verifier replays each certificate; forged kinds, parameters and
schemes (re-signed with the test key) are refused."""
from __future__ import annotations

import copy

import mpmath
import pytest
from helpers import sign_and_verify

from certifier.certify import certify
from certifier.claim import kind_statement
from certifier.numerics.targets import exact_privacy, exact_sigma_dp, exact_sigma_tpr
from certifier.params import parse_decimal
from certifier.resolution import sigma_resolution

D = lambda s: parse_decimal("x", s)


@pytest.fixture(autouse=True)
def _digits():
    """50 digits for the mpmath references, whatever another test in this process left in mpmath.mp."""
    with mpmath.workdps(50):
        yield


def _phi(x):
    return mpmath.ncdf(x)


def delta_closed(epochs: int, sigma: str, eps: str):
    mu = mpmath.sqrt(epochs) / mpmath.mpf(sigma)
    e = mpmath.mpf(eps)
    return _phi(-e / mu + mu / 2) - mpmath.exp(e) * _phi(-e / mu - mu / 2)


def tpr_closed(epochs: int, sigma: str, alpha: str):
    mu = mpmath.sqrt(epochs) / mpmath.mpf(sigma)
    z = -mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * mpmath.mpf(alpha))   # Phi^-1(alpha)
    return _phi(z + mu)


verify = sign_and_verify


def _forge(pred, **kind):
    p = copy.deepcopy(pred)
    p["claim"]["kind"].update(kind)
    p["claim"]["statement"] = kind_statement(p["claim"]["kind"], p["claim"]["scheme"])
    return p


# ---------------------------------------------------------------- M = 1: the Gaussian shift

@pytest.fixture(scope="module")
def dp1():
    return certify(1, 3, D("0.00001"), kind_name="dp", kind_params={"epsilon": "1"}, two_sided=True)


@pytest.fixture(scope="module")
def tpr1():
    return certify(1, 3, D("0.002"), kind_name="tpr", kind_params={"fpr": "0.001"}, two_sided=True)


def test_m1_dp_certificate_brackets_the_closed_form_and_verifies(dp1):
    assert dp1.success and dp1.two_sided and dp1.method.startswith("gaussian-shift v1")
    sigma, low = dp1.sigma, dp1.sigma_low
    assert D(sigma) - D(low) == sigma_resolution(D(sigma))
    up, lo = delta_closed(3, sigma, "1"), delta_closed(3, low, "1")
    assert up <= mpmath.mpf(dp1.bound) <= up * (1 + mpmath.mpf("1e-9"))          # rounded up to 10 digits
    assert lo * (1 - mpmath.mpf("1e-9")) <= mpmath.mpf(dp1.bound_lower) <= lo    # rounded down
    assert D(dp1.bound) <= D("0.00001") < D(dp1.bound_lower)
    p = dp1.predicate
    assert p["claim"]["kind"] == {"name": "dp", "epsilon": "1"} and p["method"]["name"] == "gaussian-shift"
    assert p["lower"]["method"]["name"] == "gaussian-shift"
    r = verify(p)
    assert r.accepted, (r.reason, r.detail)
    assert up <= mpmath.mpf(r.derived["upper"]) and mpmath.mpf(r.derived["lower"]) <= lo


def test_m1_tpr_certificate_brackets_the_closed_form_and_verifies(tpr1):
    assert tpr1.success and tpr1.two_sided
    up, lo = tpr_closed(3, tpr1.sigma, "0.001"), tpr_closed(3, tpr1.sigma_low, "0.001")
    # the upper side is e^eps* alpha + delta(eps*) at the tangent eps*: the closed form within 1e-12
    assert up <= mpmath.mpf(tpr1.bound) <= up * (1 + mpmath.mpf("1e-9"))
    assert lo * (1 - mpmath.mpf("1e-9")) <= mpmath.mpf(tpr1.bound_lower) <= lo
    assert D(tpr1.bound) <= D("0.002") < D(tpr1.bound_lower)
    r = verify(tpr1.predicate)
    assert r.accepted, (r.reason, r.detail)
    assert up <= mpmath.mpf(r.derived["upper"]) and mpmath.mpf(r.derived["lower"]) <= lo


def test_m1_fixed_bins_is_the_same_shift():
    out = certify(1, 3, D("0.00001"), kind_name="dp", kind_params={"epsilon": "1"}, two_sided=True,
                  scheme="fixed-bins")
    assert out.success and out.two_sided and out.predicate["claim"]["scheme"] == "fixed-bins"
    assert delta_closed(3, out.sigma, "1") <= mpmath.mpf(out.bound)
    r = verify(out.predicate)
    assert r.accepted, (r.reason, r.detail)


def test_m1_forged_parameters_and_kinds_are_refused(dp1, tpr1):
    r = verify(_forge(dp1.predicate, epsilon="0.9"))       # smaller eps: delta(0.9) > target at sigma
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason
    r = verify(_forge(dp1.predicate, epsilon="1.1"))       # larger eps: sigma_low no longer misses
    assert not r.accepted and r.reason.startswith("kind-lower"), r.reason
    for fpr, side in (("0.0011", "kind-replay-exceeds-target"), ("0.0009", "kind-lower")):
        r = verify(_forge(tpr1.predicate, fpr=fpr))
        assert not r.accepted and r.reason.startswith(side), (fpr, r.reason)
    p = copy.deepcopy(dp1.predicate)                       # dp's certificate read as a tpr claim
    p["claim"]["kind"] = {"name": "tpr", "fpr": "0.001"}
    p["claim"]["statement"] = kind_statement(p["claim"]["kind"], p["claim"]["scheme"])
    p["upper"]["epsilon"] = "0"
    r = verify(p)
    assert not r.accepted and r.reason.startswith("kind-"), r.reason
    p = copy.deepcopy(tpr1.predicate)                      # a forged tangent: a worse eps* no longer proves it
    p["upper"]["epsilon"] = "3"
    r = verify(p)
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason
    p = copy.deepcopy(dp1.predicate)
    p["claim"]["kind"] = {"name": "renyi", "order": "2"}
    r = verify(p)
    assert not r.accepted and r.reason == "claim-kind-unknown"


@pytest.mark.parametrize("epochs", [1, 3, 50])
def test_exact_sigma_at_m1_is_the_closed_forms_sigma(epochs):
    """The least sigma on the 1e-6 grid whose closed form meets the target (and the one below misses)."""
    s = exact_sigma_dp(1, epochs, 1.0, 1e-5)
    below = str(D(s) - sigma_resolution(D(s)))
    assert delta_closed(epochs, s, "1") <= mpmath.mpf("1e-5") < delta_closed(epochs, below, "1")
    s = exact_sigma_tpr(1, epochs, 1e-3, 2e-3)
    below = str(D(s) - sigma_resolution(D(s)))
    assert tpr_closed(epochs, s, "0.001") <= mpmath.mpf("0.002") < tpr_closed(epochs, below, "0.001")


# ---------------------------------------------------------------- fixed bins: method v1 on the pair

@pytest.fixture(scope="module")
def dp_fb():
    return certify(10, 2, D("0.0001"), kind_name="dp", kind_params={"epsilon": "0.5"}, two_sided=True,
                   scheme="fixed-bins")


@pytest.fixture(scope="module")
def tpr_fb():
    return certify(10, 2, D("0.002"), kind_name="tpr", kind_params={"fpr": "0.001"}, two_sided=True,
                   scheme="fixed-bins")


def _pair_value(sigma: str, kind: str) -> float:
    """The kind's numerical value of the fixed-bins pair: the one-epoch pair (10, 1) at sigma/sqrt(2)."""
    s = float(D(sigma)) / 2 ** 0.5
    if kind == "dp":
        return exact_privacy(10, 1, s, epsilons=(0.5,)).delta[0.5].value
    return exact_privacy(10, 1, s, fprs=(0.001,)).tpr[0.001].value


@pytest.mark.parametrize("which", ["dp_fb", "tpr_fb"])
def test_fixed_bins_two_sided_certificate_verifies(which, request):
    out = request.getfixturevalue(which)
    target = D("0.0001") if which == "dp_fb" else D("0.002")
    assert out.success and out.two_sided and out.method.startswith("lemma-c5-rounding v1")
    p = out.predicate
    assert p["claim"]["scheme"] == "fixed-bins" and p["claim"]["iterations"] == 20
    assert D(out.sigma) - D(out.sigma_low) == sigma_resolution(D(out.sigma))
    assert D(out.bound) <= target < D(out.bound_lower)
    kind = "dp" if which == "dp_fb" else "tpr"
    assert _pair_value(out.sigma, kind) <= float(out.bound) + 1e-12            # the sides bracket the numerics
    assert _pair_value(out.sigma_low, kind) >= float(out.bound_lower) - 1e-12
    r = verify(p)
    assert r.accepted, (r.reason, r.detail)
    assert D(r.derived["upper"]) <= target < D(r.derived["lower"])


def test_fixed_bins_forgeries_are_refused(dp_fb):
    r = verify(_forge(dp_fb.predicate, epsilon="0.45"))
    assert not r.accepted and r.reason == "kind-replay-exceeds-target", r.reason
    r = verify(_forge(dp_fb.predicate, epsilon="0.55"))
    assert not r.accepted and r.reason.startswith("kind-lower"), r.reason
    # the same grids read as random allocation (E = 2 epochs of the pair at sigma): a different pair
    p = copy.deepcopy(dp_fb.predicate)
    c = p["claim"]
    c["scheme"], c["mechanism"] = "random-allocation", "dp-sgd/random-allocation"
    del c["iterations"]
    c["statement"] = kind_statement(c["kind"], "random-allocation")
    r = verify(p)
    assert not r.accepted, r.reason


def test_tv_in_fixed_bins_keeps_method_v2():
    """A TV claim in fixed bins is not given method v1 (format v3 has no such certificate)."""
    from certifier.errors import CannotCertifyError
    with pytest.raises(CannotCertifyError, match="method v1"):
        certify(10, 2, D("0.3"), scheme="fixed-bins", method="v1")


def test_an_automatic_grid_the_method_refuses_is_a_skipped_try():
    """A planned grid beyond the method's limits (its validate raises ParameterError, as lower v1's
    'grid too fine' did at (250, 20, dp)) is recorded as a skipped try, not a crash; a user's grid
    (single) still raises."""
    from types import SimpleNamespace

    from certifier.errors import ParameterError
    from certifier.methods.search import Side, prove

    def refuse(method, progress):
        raise ParameterError("grid too fine: cap/h must be <= 3e7 and tail_start/h <= 1e7")
    plan = SimpleNamespace(method=None, predicted_seconds=1.0, predicted_loss=1e-12)
    side = Side("lower", 1e-9, (0.8, 0.45, 0.2), 2e-7, lambda b: plan, refuse, lambda r: True,
                lambda p, r: {})
    tries = []
    assert prove(side, 3, tries, lambda stage, frac: None) is None
    assert len(tries) == 3 and all("grid refused by the method" in t["skipped"] for t in tries)
    with pytest.raises(ParameterError):
        prove(side, 3, [], lambda stage, frac: None, single=True)
