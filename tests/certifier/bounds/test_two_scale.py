"""Two-scale partial sums in step (ii) of method v1, upper and lower (docs/method-v2.md §9): the bounds stay
on the right side of the exact TV and within the loss model of the plain grid's, a certificate issues in
format v3 and verifies, and forged values of the new keys are rejected."""
from __future__ import annotations

import dataclasses
import json

import pytest
from flint import fmpq
from helpers import sign_and_verify

from certifier.bounds.lower_v1 import LowerV1, lower_bound
from certifier.bounds.upper_v1 import UpperV1, make_method, rounding_bound
from certifier.certificate.envelope import PREDICATE_TYPE_V3, predicate_type
from certifier.certify import certify
from certifier.methods.v1.plan import Model, choose_grid
from certifier.methods.v1.two_scale_plan import TAU_MAX, TAU_MIN, two_scale_loss, with_two_scale
from certifier.numerics.exact import exact_tv
from certifier.params import ParameterError, parse_decimal

Q = lambda s: parse_decimal("x", s)  # noqa: E731

# M = 22 = 10110b: three set bits, so the A split after the middle product is used too
M, E, SIGMA = 22, 2, Q("1.4")
GRID = dict(h="0.002", eta="0.0002", cap="40", tail_start="10", tail_step="0.02")
R, TAU = 32, fmpq(1, 10**5)


@pytest.fixture(scope="module")
def upper_pair():
    m = make_method(M, **GRID)
    return m, rounding_bound(M, E, SIGMA, m), rounding_bound(M, E, SIGMA, dataclasses.replace(m, tail_factor=R,
                                                                                               tail_tau=TAU))


def test_two_scale_upper_bound_stays_above_the_exact_tv_and_within_the_loss_model(upper_pair):
    m, plain, two = upper_pair
    ex = exact_tv(M, E, float(SIGMA))
    assert float(two.bound) >= ex.tv - ex.error                      # still an upper bound on TV
    predicted = two_scale_loss(Model.at(M, E, float(SIGMA)), float(m.h), list(m.lattice_schedule), R, float(TAU))
    assert float(two.bound) <= float(plain.bound) + predicted + 1e-10  # 1e-10: the 10-digit rounding up
    used = two.method.tail_splits
    assert len(used) == 2 * M.bit_length() and used[0] > 0
    assert used[2 * 2 + 1] > 0 and used[1] == 0 and used[-1] == 0     # A after bit 2 split; bit 1, bit 4 not
    # the recorded splits replay to the same integers
    again = rounding_bound(M, E, SIGMA, two.method)
    assert again.bound == two.bound and again.enclosures == two.enclosures


def test_the_method_object_records_the_two_scale_keys_and_reads_them_back(upper_pair):
    _, _, two = upper_pair
    js = two.method.to_json(M)
    assert js["tail_factor"] == R and js["tail_splits"] == list(two.method.tail_splits)
    assert UpperV1.from_json(js) == two.method
    assert "tail_factor" not in make_method(M, **GRID).to_json(M)   # plain grids keep the v1 object exactly
    with pytest.raises(ParameterError):
        UpperV1.from_json({k: v for k, v in js.items() if k != "tail_splits"})
    with pytest.raises(ParameterError):
        UpperV1.from_json({**js, "tail_splits": js["tail_splits"][:-1]}).validate(M)
    with pytest.raises(ParameterError):
        UpperV1.from_json({**js, "tail_factor": 1}).validate(M)


def test_two_scale_lower_bound_stays_below_the_exact_tv_and_near_the_plain_one():
    s_low = Q("1.4")
    lm = LowerV1(h=Q("0.003"), cap=Q("45"), lattice_schedule=(1,) * M.bit_length(), eta=Q("0.0004"))
    plain = lower_bound(M, E, s_low, lm)
    two = lower_bound(M, E, s_low, dataclasses.replace(lm, tail_factor=R, tail_tau=TAU))
    ex = exact_tv(M, E, float(s_low))
    assert float(two.exact) <= ex.tv + ex.error                      # still a lower bound on TV
    predicted = two_scale_loss(Model.at(M, E, float(s_low)), 0.003, [1] * M.bit_length(), R, float(TAU))
    assert float(two.exact) >= float(plain.exact) - predicted
    assert two.method.tail_splits[0] % R == 0 and len(two.method.tail_splits) == 2 * M.bit_length()
    again = lower_bound(M, E, s_low, two.method, fixed_buckets=True)   # the recorded map replays exactly
    assert again.exact == two.exact


def test_the_planner_gives_the_tail_its_share_at_the_hardest_table_4_cell():
    sigma, b = Q("1.024495"), 1.742e-9
    plan = with_two_scale(lambda bb: choose_grid(250, 10, sigma, bb, allow_moved=True), 250, 10, sigma, b)
    m = plan.method
    assert m.tail_factor == 32 and TAU_MIN <= float(m.tail_tau) <= TAU_MAX
    assert plan.predicted_loss <= b and plan.detail["two_scale"]["loss"] >= 0.15 * b * 0.999   # the rest, at least
    small = with_two_scale(lambda bb: choose_grid(8, 2, Q("2"), bb), 8, 2, Q("2"), 1e-8)
    assert small.method.tail_factor == 0                              # M < 16: the plain grid


@pytest.fixture(scope="module")
def cert():
    r = certify(M, E, Q("0.1"), two_sided=True)
    assert r.success and r.two_sided
    return json.loads(json.dumps(r.predicate)), r


def test_a_two_scale_certificate_issues_in_format_v3_and_verifies(cert):
    p, r = cert
    assert predicate_type(p) == PREDICATE_TYPE_V3                         # the keys exist in format v3 only
    assert p["method"]["tail_factor"] >= 2 and p["lower"]["method"]["tail_factor"] >= 2
    assert float(r.bound) >= r.tv - r.tv_error and float(r.bound) <= 0.1 < float(p["lower"]["tv_lower"])
    res = sign_and_verify(p)
    assert res.accepted, (res.reason, res.detail)


def _forged(p: dict, edit) -> dict:
    q = json.loads(json.dumps(p))
    edit(q)
    return q


@pytest.mark.parametrize("edit, reasons", [
    (lambda q: q["method"].update(tail_factor=1), {"method-invalid"}),
    (lambda q: q["method"]["tail_splits"].pop(), {"method-invalid"}),
    (lambda q: q["method"]["tail_splits"].__setitem__(1, 5), {"method-invalid"}),     # bit 1: no product
    (lambda q: q["method"].pop("tail_splits"), {"schema-missing-field"}),
    (lambda q: q["claim"].pop("scheme"), {"schema-unknown-field"}),                    # a v2 predicate: no such keys
    (lambda q: q["lower"]["method"]["tail_splits"].__setitem__(0, 33), {"lower-method-invalid"}),
    # every value in the tail from the start: the replay's bound is far above the recorded one
    (lambda q: q["method"].update(tail_splits=[1 if k % 2 == 0 else 0 for k in range(len(q["method"]["tail_splits"]))],
                                  tail_factor=1024), {"replay-bound-exceeds", "enclosure-mismatch"}),
])
def test_forged_two_scale_keys_are_rejected(cert, edit, reasons):
    res = sign_and_verify(_forged(cert[0], edit))
    assert not res.accepted and res.reason in reasons, (res.reason, res.detail)


def test_the_q_side_mixture_of_a_part_that_one_summand_lacks_is_weighted_not_copied():
    from flint import fmpz_poly

    from certifier.bounds.fixedpoint import Poly
    from certifier.bounds.lower_v1 import _mix2
    from certifier.bounds.two_scale import TwoScale, empty
    a = TwoScale(Poly(0, fmpz_poly([30, 60])), empty())
    b = TwoScale(Poly(1, fmpz_poly([90])), Poly(5, fmpz_poly([9, 3])))
    mix = _mix2(a, 1, b, 2)                               # weights 1/3, 2/3: floor((a + 2b)/3) per part
    assert (mix.body.off, [int(x) for x in mix.body.poly.coeffs()]) == (0, [10, 80])
    assert (mix.tail.off, [int(x) for x in mix.tail.poly.coeffs()]) == (5, [6, 2])


def _predicted(p: dict) -> dict:
    """The verifier's cost model on p, without the replay (a zero time budget stops it right after)."""
    from certifier.certificate.envelope import canonical_json, claim_subject, statement
    from verifier.core import replay_statement
    res = replay_statement(canonical_json(statement(claim_subject(p["claim"]), p)), max_seconds=0.0)
    assert res.reason == "cost-exceeds-limit"
    return res.cost["steps"]


def test_the_cost_model_prices_the_two_scale_products(cert):
    """A partial sum's tail is R times shorter: the model priced every polynomial at its full length (at
    (10^6, 1, 0.001) it predicted 8.65 GiB and refused a replay that took 2.45 GB)."""
    p, _ = cert
    plain = _forged(p, lambda q: [q[k]["method"].pop(x) for k in ("lower",) for x in ("tail_factor", "tail_splits")]
                    + [q["method"].pop(x) for x in ("tail_factor", "tail_splits")])
    two, one = _predicted(p), _predicted(plain)
    for step in ("step_ii", "lower.epoch", "lower.masses"):   # the lower map's far cells of (a) merged R at a time
        assert two[step]["seconds"] < one[step]["seconds"]
        assert two[step]["memory"] <= one[step]["memory"]
