"""certify for the dp and tpr target kinds: the upper side from the Lemma C.5 masses (certifier.targets)."""
from __future__ import annotations

import pytest

from certifier.certify import certify
from certifier.errors import CannotCertifyError, ParameterError
from certifier.numerics.targets import exact_privacy
from certifier.params import parse_decimal
from certifier.targets import kind

D = lambda s: parse_decimal("x", s)


@pytest.mark.parametrize("M,E,sigma", [(10, 5, "1.5"), (20, 2, "2")])
def test_dp_upper_bound_is_above_the_exact_delta(M, E, sigma):
    out = certify(M, E, D("0.05"), D(sigma), kind_name="dp", kind_params={"epsilon": "1"})
    exact = exact_privacy(M, E, float(sigma), epsilons=(1.0,)).delta[1.0]
    assert out.success and out.kind == "dp" and out.predicate["claim"]["kind"] == {"name": "dp", "epsilon": "1"}
    assert out.predicate["upper"]["bound"] == out.bound and "lower" not in out.predicate
    bound = float(out.bound)
    assert bound >= exact.value - exact.error
    assert bound - exact.value < 1e-6                 # and tight: the grid's loss, not a loose bound
    assert "delta_Q||P(1)" in out.method and out.tries[-1]["dp_bound"] == out.bound


def test_dp_target_below_the_exact_delta_is_not_certified():
    exact = exact_privacy(10, 5, 1.5, epsilons=(1.0,)).delta[1.0].value    # about 0.0093050
    out = certify(10, 5, D("0.0093"), D("1.5"), kind_name="dp", kind_params={"epsilon": "1"}, max_tries=1)
    assert exact > 0.0093 and not out.success


def test_tpr_upper_bound_is_above_the_exact_tpr():
    out = certify(10, 5, D("0.5"), D("1.5"), kind_name="tpr", kind_params={"fpr": "0.01"})
    exact = exact_privacy(10, 5, 1.5, fprs=(0.01,)).tpr[0.01]
    assert out.success and out.kind == "tpr"
    assert exact.value - exact.error <= float(out.bound) < exact.value + 1e-4


def test_tpr_target_below_the_exact_tpr_is_not_certified():
    exact = exact_privacy(10, 5, 1.5, fprs=(0.01,)).tpr[0.01].value
    target = f"{exact * 0.999:.6f}"
    out = certify(10, 5, D(target), D("1.5"), kind_name="tpr", kind_params={"fpr": "0.01"}, max_tries=1)
    assert not out.success


def test_unknown_kind_and_missing_parameters_are_refused():
    with pytest.raises(ParameterError, match="unknown target kind"):
        kind("renyi")
    with pytest.raises(ParameterError, match="needs epsilon"):
        kind("dp", {})
    with pytest.raises(ParameterError, match="needs fpr"):
        kind("tpr", {"epsilon": "1"})
    with pytest.raises(ParameterError):
        kind("tpr", {"fpr": "1"})
    with pytest.raises(ParameterError):
        kind("dp", {"epsilon": "101"})
    assert kind("tv").params == () and kind("dp", {"epsilon": "0.5"}).params == (("epsilon", "0.5"),)


def test_two_sided_dp_far_from_the_target_stays_one_sided():
    # delta(1) at sigma 1.5 is about 0.0093, far below 0.05: sigma - res cannot miss the target
    out = certify(10, 5, D("0.05"), D("1.5"), kind_name="dp", kind_params={"epsilon": "1"}, two_sided=True)
    assert out.success and not out.two_sided and "lower" not in out.predicate
    assert any("does not exceed" in t.get("skipped", "") for t in out.lower_tries)


def test_dp_where_method_v1_does_not_apply_is_certified_by_method_v2():
    # method v1's truncation at 8M is too costly at (2, 1, sigma 1.5): forced, a one-line refusal; auto: v2
    with pytest.raises(CannotCertifyError, match="truncation at 8M"):
        certify(2, 1, D("0.05"), D("1.5"), kind_name="dp", kind_params={"epsilon": "1"}, method="v1")
    out = certify(2, 1, D("0.05"), D("1.5"), kind_name="dp", kind_params={"epsilon": "1"})
    exact = exact_privacy(2, 1, 1.5, epsilons=(1.0,)).delta[1.0]
    assert out.success and out.predicate["method"]["version"] == 2 and out.method.startswith("lemma-c5-rounding v2")
    assert exact.value - exact.error <= float(out.bound) <= 0.05
