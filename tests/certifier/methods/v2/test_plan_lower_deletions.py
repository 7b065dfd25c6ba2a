"""The lower method v2 loses every deleted or floored mass in full, amplified by the epoch sum and the E
epochs (methods.v2.plan.lower_deletions); at (10^4, 10^4, 0.999) trims of 1e-14 per sum lost 2.4e-7 against a
margin of 2.7e-8 and every try failed, whatever its grid."""
from __future__ import annotations

from dataclasses import replace

from flint import fmpq

from certifier.bounds.lower_v2 import lower_bound_v2
from certifier.methods.v2.plan import LOWER_TRIM_SHARE, TRIM_MAX, choose_v2, lower_deletions, plan_v2, upper_trim
from certifier.params import parse_decimal

Q = lambda s: parse_decimal("x", s)  # noqa: E731


def _t2(sigma: str) -> fmpq:
    return 1 / Q(sigma) ** 2


def test_a_trim_reaches_the_lower_bound_amplified_and_the_model_bounds_it():
    """A forced trim of 1e-9 per sum: the P-side deficit is many times what each sum's trim/2 counted once
    would lose (measured 23x: 5.0e-7), and stays within lower_deletions' bound E (2M + log2 M) trim/2."""
    M, E, t2 = 1024, 2, _t2("0.45")
    plan = choose_v2(M, E, t2, 1e-6, 0.99, lower=True)
    trim = Q("1e-9")
    m = replace(plan.method, trim=trim)
    L = lower_bound_v2(M, E, t2, m)
    F = m.fixed_point_bits
    uu, _, _ = L.pmfs
    deleted_p = ((1 << F) - sum(uu)) / 2**F
    once = E * 2 * M.bit_length() * float(trim) / 2          # every sum's trim counted once
    assert deleted_p > 10 * once
    assert deleted_p <= E * (2 * M + M.bit_length()) * float(trim) / 2 + 2 * E.bit_length() * float(trim)


def test_the_lower_plan_sizes_its_trim_and_floors_against_the_budget():
    """At the issue cell the lower plan's trim and floors predict at most 2 % of the budget together, the
    trim is far below the usual 1e-14, and the fixed point stays near 80 bits (no eps range, which would add
    tens of bits; the floors' share may add one or two)."""
    M = E = 10**4
    t2, b = _t2("0.509904"), 2.17e-8
    p = choose_v2(M, E, t2, b, 0.99900003, lower=True)
    loss = p.detail["loss"]
    assert loss["trim"] + loss["fixed_point"] <= 2 * LOWER_TRIM_SHARE * b
    assert p.method.trim <= Q("1e-18")
    assert p.method.fixed_point_bits <= 84
    up = plan_v2(M, E, t2, b, 0.99900003, n=p.method.mantissa_bits, eta="0.0002")
    assert up.method.trim > p.method.trim               # the upper side's paths keep only 1 - TV of the payoff


def test_lower_deletions_keeps_the_trim_where_it_is_cheap():
    trim, bits, loss = lower_deletions(10, 2, 12, 20, 1e-6, 80)
    assert trim == TRIM_MAX and bits == 80 and loss["trim"] < 1e-3 * 1e-6


def test_the_upper_trim_is_sized_where_its_amplified_cost_shows():
    """(10^7, 10^4, 0.999): E (2M) (trim/2) (1 - TV) at 1e-14 is ~1e-6, so the trim shrinks to cost 1 % of a
    1e-8 budget; at (1000, 10, 0.1) the usual 1e-14 stays."""
    trim, loss = upper_trim(10**7, 10**4, 1e-8, 0.999)
    assert trim <= Q("1e-18") and loss["trim"] <= 2 * LOWER_TRIM_SHARE * 1e-8
    assert upper_trim(1000, 10, 6e-9, 0.09)[0] == TRIM_MAX


def test_a_tv_lower_side_calibrates_step_a_apart_and_relearns_from_each_try():
    """The lower side of a TV target: the calibration measures step (a)'s share apart (y_scale), and every
    try records its measured loss, from which a next try plans (at (10^7, 10^3, 0.999) the tries lost 3-5x
    their prediction)."""
    from certifier.certify import certify
    r = certify(10, 2, Q("0.999"), two_sided=True)
    assert r.two_sided
    cal = [t for t in r.tries if t.get("calibration") == "lower"]
    assert cal and all("y_scale" in t and t["measured_loss_finer_steps"] is not None for t in cal)
    rows = [t for t in r.lower_tries if "tv_lower" in t]
    assert rows and all(t["measured_loss"] is not None for t in rows)
