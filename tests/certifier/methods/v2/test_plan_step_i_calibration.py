"""Method v2's per-term calibration for a target kind (certifier.methods.v2.plan.scales_from, finer_steps):
step (i)'s share of the loss measured apart by a second coarse run with two more mantissa bits in every
octave, each part of the model set against its own prediction; y_scale = 1 leaves every plan as it was."""
from __future__ import annotations

import pytest

from certifier.methods.v2.plan import Y_SCALE_MAX, coarse, finer_steps, plan_v2, scales_from
from certifier.params import parse_decimal

T2 = 1 / parse_decimal("s", "0.8") ** 2


def _plan(**kw):
    return plan_v2(100, 10, T2, 1e-6, 0.3, n=12, eta="1e-4", **kw)


def test_y_scale_one_is_the_plan_without_it():
    a, b = _plan(), _plan(y_scale=1.0)
    assert a.method == b.method and a.predicted_loss == b.predicted_loss
    c = _plan(y_scale=50.0)       # step (i) weighs more: more points there, nothing else changes
    assert sum(c.method.y_mantissa_bits) > sum(a.method.y_mantissa_bits)
    assert (c.method.h, c.method.eta, c.method.mantissa_bits) == (a.method.h, a.method.eta, a.method.mantissa_bits)


def test_finer_steps_adds_bits_up_to_the_lattice():
    m = _plan().method
    f = finer_steps(m)
    assert all(y == min(x + 2, m.mantissa_bits) for x, y in zip(m.y_mantissa_bits, f.y_mantissa_bits))
    assert (f.h, f.eta, f.top_octave, f.k_top) == (m.h, m.eta, m.top_octave, m.k_top)


@pytest.mark.parametrize("k_true,y_true", [(1.0, 1.0), (0.8, 86.0), (5.0, 5.0), (3.0, 40.0), (2.0, 0.5)])
def test_scales_from_recovers_each_terms_factor(k_true, y_true):
    cal = coarse(_plan(k_scale=2.0), 100, 10, T2, 0.3, drop=3)
    d = cal.detail
    y_pred, rest_pred = d["step_i_coarse"], d["kpart"] - d["step_i_coarse"]
    assert y_pred > 0 and rest_pred > 0
    measured = d["fixed"] + k_true * rest_pred + y_true * y_pred
    finer = d["fixed"] + k_true * rest_pred + y_true * y_pred / 16
    k, y = scales_from(cal, measured, finer)
    assert k == pytest.approx(2.0 * k_true, rel=1e-9)
    # the step-(i) term's total factor k * y is the measured one, never below the common factor
    assert k * y == pytest.approx(2.0 * max(y_true, k_true), rel=1e-9)
    assert y >= 1.0


def test_scales_from_reads_a_plan_that_had_its_own_y_scale():
    cal = coarse(_plan(k_scale=2.0, y_scale=10.0), 100, 10, T2, 0.3, drop=3)
    d = cal.detail
    y_pred, rest_pred = d["step_i_coarse"], d["kpart"] - d["step_i_coarse"]
    # the plan's prediction was right: the factors stay what the plan had
    k, y = scales_from(cal, d["fixed"] + rest_pred + y_pred, d["fixed"] + rest_pred + y_pred / 16)
    assert k == pytest.approx(2.0, rel=1e-9) and y == pytest.approx(10.0, rel=1e-9)


def test_scales_from_clamps_and_never_lowers_step_i_below_k():
    cal = coarse(_plan(), 100, 10, T2, 0.3, drop=3)
    d = cal.detail
    y_pred, rest_pred = d["step_i_coarse"], d["kpart"] - d["step_i_coarse"]
    k, y = scales_from(cal, d["fixed"] + rest_pred + 1e6 * y_pred, d["fixed"] + rest_pred)
    assert k * y == pytest.approx(Y_SCALE_MAX, rel=1e-9)
    k, y = scales_from(cal, d["fixed"] + rest_pred, d["fixed"] + 2 * rest_pred)   # noise: finer lost more
    assert y == 1.0 and k == pytest.approx(1.0, rel=1e-9)
