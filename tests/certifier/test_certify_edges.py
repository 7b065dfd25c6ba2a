"""The edges of the domain: each failure once seen at a cell off the coverage grid, at the smallest size
that shows it (the full cells are in `benchmarks/bench_coverage.py --edges`)."""
from __future__ import annotations

import json
import time

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import fmpq

import certifier.bounds.privacy as privacy
from certifier.certificate.envelope import canonical_json, claim_subject, sign_envelope, statement
from certifier.certify import certify
from certifier.domain import OutsideDomainError, check_cell
from certifier.errors import NumericsUnreliable
from certifier.methods.v2.plan import choose_v2, eps_gaussian, eps_tail
from certifier.params import parse_decimal
from certifier.resolution import round_up, sigma_resolution, step_up
from sigmacert.cli import main
from verifier.core import verify_bytes

Q = lambda s: parse_decimal("x", s)  # noqa: E731
TABLE_4_SIGMAS = ("1.426215", "1.907073", "2.610518", "1.024495", "1.309428", "1.732809", "0.834432", "1.025964",
                  "1.310146")


def _verify(pred: dict, key: Ed25519PrivateKey):
    env = sign_envelope(statement(claim_subject(pred["claim"]), pred), key)
    return verify_bytes(canonical_json(env), [key.public_key()])


# ----------------------------------------------------------------------------- the sigma resolution

def test_resolution_is_six_digits_from_ten_and_1e6_below():
    assert sigma_resolution(Q("0.26")) == Q("1e-6")
    assert sigma_resolution(Q("9.999999")) == Q("1e-6")
    assert sigma_resolution(Q("10")) == Q("1e-4")
    assert sigma_resolution(Q("126.158555")) == Q("1e-3")
    assert sigma_resolution(Q("398942.279358")) == Q("1")
    assert round_up(Q("126.158555")) == Q("126.159")
    assert round_up(Q("9.9999991")) == Q("10")            # on both grids
    assert step_up(Q("126.159")) == Q("126.16")


def test_table_4_sigmas_are_on_the_new_grid():
    for s in TABLE_4_SIGMAS:                              # their certificates stay as they are
        assert sigma_resolution(Q(s)) == Q("1e-6") and round_up(Q(s)) == Q(s)


# ----------------------------------------------------------------------------- the stated domain

@pytest.mark.parametrize("cell, nearest", [((2 * 10**7, 10, "0.1"), "M = 10000000"),
                                           ((100, 20000, "0.1"), "E = 10000"),
                                           ((100, 10, "0.00001"), "0.0001"),
                                           ((100, 10, "0.9995"), "0.999")])
def test_outside_the_domain_is_refused_with_the_nearest_cell(cell, nearest):
    M, E, lam = cell
    t0 = time.perf_counter()
    with pytest.raises(OutsideDomainError, match=nearest):
        certify(M, E, Q(lam), two_sided=True)
    assert time.perf_counter() - t0 < 1.0                  # before any long computation


def test_domain_corners_are_inside():
    for M, E, lam in ((1, 1, "0.0001"), (10**7, 10**4, "0.999"), (3, 1, "0.999")):
        check_cell(M, E, Q(lam))                           # no exception


def test_sigma_below_the_numerics_is_refused_in_one_line(tmp_path, capsys):
    from certifier.certificate.keys import keygen
    keygen(str(tmp_path / "k"))
    code = main(["certify", "-M", "100", "-E", "1", "-l", "0.5", "--sigma", "0.05", "--key",
                 str(tmp_path / "k/private.pem"), "-o", str(tmp_path / "c.json"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "below 0.1" in err[0], err
    assert not (tmp_path / "c.json").exists()


def test_the_exact_sigma_search_reaches_the_largest_m_at_the_largest_lambda():
    # once: the search's bracket jumped from sigma 0.118 to 0.072, where the numerics stop, and the cell
    # (10^7, 1, 0.999) -- inside the domain, exact sigma ~0.103 -- was refused
    from certifier.numerics.exact import exact_tv
    from certifier.numerics.schemes import exact_sigma
    s = float(exact_sigma(10**7, 1, "0.999"))
    assert 0.1 <= s < 0.11
    assert exact_tv(10**7, 1, s, check=False).tv <= 0.999 < exact_tv(10**7, 1, s - 1e-6, check=False).tv


# ----------------------------------------------------------------------------- trim_shift (lambda = 0.999)

def test_rows_range_beyond_100_is_clamped_not_a_user_error():
    t2 = 1 / (Q("0.262672") ** 2)
    plan = choose_v2(100, 10, t2, 3e-8, 0.999, need_eps=2 * eps_gaussian(0.999) + 5)   # ~111: once a ParameterError
    assert 0 <= plan.method.trim_shift <= 100


def test_lambda_0999_certifies_two_sided_small():
    r = certify(10, 2, Q("0.999"), two_sided=True)
    assert r.success and r.two_sided and r.rows_missing is None
    assert float(r.privacy["epsilon_at_delta"]["1e-05"]["epsilon"]) > 10


# ----------------------------------------------------------------------------- eps from the lognormal tail

def test_eps_tail_estimate_of_the_issue_cell():
    t2 = 1 / (0.260167**2)
    assert 9 < eps_tail(10**6, 1, t2, 1e-5) < 11            # the issue's rough estimate: eps of order 10
    assert eps_tail(10**4, 1, 1 / 0.353152**2) > 2 * eps_gaussian(0.1) + 5   # the Gaussian guess falls short


def test_heavy_tail_rows_are_certified():
    r = certify(10**4, 1, Q("0.1"), Q("0.353152"), two_sided=False)
    assert r.success and r.rows_missing is None
    e6 = float(r.privacy["epsilon_at_delta"]["1e-06"]["epsilon"])
    assert e6 > 2 * eps_gaussian(0.1) + 5 - 1                # beyond the old range, where the rows were lost
    assert float(r.privacy["epsilon_at_delta"]["1e-05"]["epsilon"]) < e6 < 100


# ----------------------------------------------------------------------------- nothing proven is lost

def _fail_one_row(monkeypatch):
    real = privacy.epsilon_at_delta

    def flaky(ms, delta, grid):
        if delta == Q("1e-06"):
            raise NumericsUnreliable("no eps <= 100 reaches delta 0.000001")
        return real(ms, delta, grid)
    monkeypatch.setattr(privacy, "epsilon_at_delta", flaky)


@pytest.fixture(scope="module")
def partial(request):
    mp = pytest.MonkeyPatch()
    _fail_one_row(mp)
    try:
        r = certify(10, 3, Q("0.3"), two_sided=True)
    finally:
        mp.undo()
    return r


def test_a_row_that_fails_leaves_the_others_and_its_reason(partial):
    r = partial
    assert r.success and r.two_sided
    assert set(r.privacy["epsilon_at_delta"]) == {"1e-05"} and set(r.tpr) == {"0.1", "0.01", "0.001"}
    p = r.predicate
    assert p["rows_not_certified"] == {"privacy": {"1e-06": "no eps <= 100 reaches delta 0.000001"}, "tpr": {}}
    assert "resolution" in p["lower"]                       # format v3


def test_the_verifier_accepts_an_omission_only_with_its_reason(partial):
    key = Ed25519PrivateKey.generate()
    pred = json.loads(json.dumps(partial.predicate))
    assert _verify(pred, key).accepted
    gone = json.loads(json.dumps(pred))
    del gone["rows_not_certified"]
    res = _verify(gone, key)
    assert not res.accepted and res.reason == "schema-missing-row"
    empty = json.loads(json.dumps(pred))
    empty["rows_not_certified"]["privacy"]["1e-06"] = " "
    assert _verify(empty, key).reason == "rows-not-certified-reason"
    both = json.loads(json.dumps(pred))
    both["rows_not_certified"]["privacy"]["1e-05"] = "claimed lost"
    assert _verify(both, key).reason == "rows-not-certified-conflict"


def test_the_verifier_derives_sigma_low_from_the_resolution(partial):
    key = Ed25519PrivateKey.generate()
    pred = json.loads(json.dumps(partial.predicate))
    pred["lower"]["resolution"] = "0.0001"                  # not res(sigma) (sigma < 10: 1e-6)
    res = _verify(pred, key)
    assert not res.accepted and res.reason == "lower-resolution"


def test_cli_prints_the_missing_row_without_a_traceback(tmp_path, capsys, monkeypatch):
    from certifier.certificate.keys import keygen
    keygen(str(tmp_path / "k"))
    _fail_one_row(monkeypatch)
    code = main(["certify", "-M", "10", "-E", "3", "-l", "0.3", "--key", str(tmp_path / "k/private.pem"), "-o",
                 str(tmp_path / "c.json"), "--quiet"])
    out = capsys.readouterr()
    assert code == 0 and "not certified: the privacy row at 1e-06" in out.out and out.err == ""
    assert (tmp_path / "c.json").exists()


# ----------------------------------------------------------------------------- retries where the bound needs them

def test_small_lambda_large_sigma_certifies_two_sided():
    # (100, 10, 0.001) once ran one grid and exited 1: at sigma 126.158555 the 1e-6 grid left a margin
    # below the numerics' error. The same regime at M = 10: sigma ~ 218 on the 1e-3 grid.
    r = certify(10, 3, Q("0.001"), two_sided=True)
    assert r.success and r.two_sided
    assert sigma_resolution(Q(r.sigma)) == Q("1e-3")
    assert Q(r.sigma) - Q(r.sigma_low) in (Q("1e-3"), Q("2e-3"))


def test_a_margin_below_the_numerics_goes_to_the_next_sigma_step(monkeypatch):
    import dataclasses

    import certifier.certify as cc
    from certifier.targets import kind
    tv_kind = kind("tv")
    first = {}

    def thin(claim, sigma):                          # the first sigma's margin is reported as nil
        tv, err = tv_kind.numerics(claim, sigma)
        if not first:
            first["sigma"] = sigma
            return float(claim.target), err
        return tv, err
    monkeypatch.setattr(cc, "kind", lambda name: dataclasses.replace(tv_kind, numerics=thin))
    r = certify(10, 3, Q("0.005"))
    assert r.success and r.sigma_steps == 1 and Q(r.sigma) == step_up(first["sigma"])
    assert r.tries[0]["sigma"] != r.sigma and "skipped" in r.tries[0]


def test_finer_grids_exist_where_the_usual_ones_fit_nothing():
    from certifier.errors import CannotCertify
    from certifier.methods.v1.plan import FLOORS, _choose_grid, choose_grid
    with pytest.raises(CannotCertify):                      # the usual floors: "no grid fits the margin"
        _choose_grid(100, 10, Q("25.24097"), 3e-11, h=None, eta=None, cap=None, prec=100, floors=FLOORS[0])
    plan = choose_grid(100, 10, Q("25.24097"), 3e-11)
    m = plan.method
    assert plan.predicted_loss <= 3e-11 and (m.eta < Q("1e-6") or m.h < Q("1e-5")) and m.eta > fmpq(0)


def test_a_tail_mass_of_1e_minus_462661_is_written_so_a_verifier_reads_it():
    # once: enclosures.moved.cap = '[1.7555929844604939604e-462661 +/- ...]' at (2, 1, 1e-4), rejected as schema-type
    from flint import arb

    from certifier.bounds.fixedpoint import arb_str
    from verifier.format.schema import B, typed
    tiny = arb(2) ** -1537000
    s = arb_str(tiny)
    assert typed(s, B, "x").contains(tiny)
    assert arb_str(arb(0)) == "0" and arb_str(arb("0.25")).startswith("0.25")


def test_the_top_octave_stays_within_the_format_at_the_heaviest_corner():
    # once: (10^7, 1, 0.999) was refused with the internal "need len(y_mantissa_bits) <= top_octave <= 200"
    t2 = 1 / (Q("0.102707") ** 2)
    plan = choose_v2(10**7, 1, t2, 6e-7, 0.999, need_eps=20)
    plan.method.validate()
    assert len(plan.method.y_mantissa_bits) <= plan.method.top_octave <= 200


@pytest.mark.parametrize("steps,epochs", [(1, 10), (10, 3)])
def test_an_automatic_sigma_above_the_least_walks_down_on_its_upper_side(monkeypatch, steps, epochs):
    """The numerics' exact sigma two steps above the least (as at delta ~ 1e-12, where their estimate spans grid
    steps): the lower side cannot show sigma - res to miss, so certify walks down while the upper side proves
    sigma - res, and ends two-sided at the least sigma, one step apart, with every walk recorded."""
    import certifier.shape as shape
    plain = certify(steps, epochs, Q("0.1"), two_sided=True)
    assert plain.two_sided and plain.sigma_steps == 0
    least = Q(plain.sigma)
    exact = shape.exact_sigma
    monkeypatch.setattr(shape, "exact_sigma", lambda *a: (lambda s: s + 2 * sigma_resolution(s))(exact(*a)))
    r = certify(steps, epochs, Q("0.1"), two_sided=True)
    assert r.success and r.two_sided and Q(r.sigma) == least and r.sigma_steps == -2
    assert Q(r.sigma_low) == least - sigma_resolution(least)
    assert [t["sigma"] for t in r.tries if t.get("walk_down") is True][-1] == r.sigma
    given = certify(steps, epochs, Q("0.1"), least + 2 * sigma_resolution(least), two_sided=True)
    assert Q(given.sigma) == least + 2 * sigma_resolution(least) and given.sigma_steps == 0   # a given sigma stays
    assert not given.two_sided


def test_the_walk_plans_on_the_lower_sides_certified_value_where_the_numerics_say_miss(monkeypatch):
    """The numerics put sigma - res above the target (wrongly, within an estimate): the lower side's tries there
    certify less than the target, and the walk plans the upper side on that certified value; it proves sigma - res
    and the certificate ends two-sided at the least sigma."""
    import dataclasses

    import certifier.certify as cc
    import certifier.shape as shape
    from certifier.targets import kind
    plain = certify(10, 3, Q("0.1"), two_sided=True)
    least = Q(plain.sigma)
    exact = shape.exact_sigma
    monkeypatch.setattr(shape, "exact_sigma", lambda *a: (lambda s: s + sigma_resolution(s))(exact(*a)))
    tv_kind = kind("tv")

    def wrong(claim, sigma):                          # at the least sigma the numerics say "misses", within 1e-7
        tv, err = tv_kind.numerics(claim, sigma)
        return (float(claim.target) + 3e-8, 1e-7) if sigma == least else (tv, err)
    monkeypatch.setattr(cc, "kind", lambda name: dataclasses.replace(tv_kind, numerics=wrong))
    r = certify(10, 3, Q("0.1"), two_sided=True)
    assert r.success and r.two_sided and Q(r.sigma) == least and r.sigma_steps == -1
    assert any("planned_on" in t for t in r.tries)
    assert any(t.get("sigma_low") == r.sigma and t.get("tv_lower") for t in r.lower_tries)   # the failed tries


def test_a_sigma_below_the_least_steps_up_and_its_lower_side_plans_on_the_upper_bound_there(monkeypatch):
    """The numerics' exact sigma one step below the least, where they say "meets" within their estimate: the upper
    side is not proven there, certify steps up to the least, and the lower side at the first sigma (which the
    numerics would have skipped) is planned on the upper side's bound there and certified: two-sided, one step."""
    import dataclasses

    import certifier.certify as cc
    import certifier.shape as shape
    from certifier.targets import kind
    plain = certify(10, 3, Q("0.1"), two_sided=True)
    least = Q(plain.sigma)
    low = least - sigma_resolution(least)
    exact = shape.exact_sigma
    monkeypatch.setattr(shape, "exact_sigma", lambda *a: (lambda s: s - sigma_resolution(s))(exact(*a)))
    tv_kind = kind("tv")

    def wrong(claim, sigma):                          # one step below the least: "meets", within 1e-7
        tv, err = tv_kind.numerics(claim, sigma)
        return (float(claim.target) - 1e-8, 1e-7) if sigma == low else (tv, err)
    monkeypatch.setattr(cc, "kind", lambda name: dataclasses.replace(tv_kind, numerics=wrong))
    r = certify(10, 3, Q("0.1"), two_sided=True)
    assert r.success and r.two_sided and Q(r.sigma) == least and Q(r.sigma_low) == low and r.sigma_steps == 1
    assert any("planned_on" in t for t in r.lower_tries)


def test_the_lower_side_plans_below_a_failed_try_on_its_bound_plus_the_numerics_step():
    """(10^6, 10, eps 1, delta 1e-12): the lower tries at 0.558815 reached 0.999994e-12, the numerics there read
    0.999118e-12 and one step down 0.999238e-12 (both biased low by about 1e-3, within their estimate): the plan one
    step down is 0.999994e-12 + 1.2e-16, above the target, so it is tried instead of skipped. Where the bound plus
    the step stays below the target, or nothing was tried above, there is no plan."""
    from certifier.certify import _planned_below
    above = ("0.558815", 0.999994e-12, 0.999118e-12)
    planned = _planned_below(above, 0.999238e-12, 1e-12)
    assert planned is not None and abs(planned - (0.999994e-12 + 1.2e-16)) < 1e-22
    assert _planned_below(above, 0.999120e-12, 1e-12) is None          # the step too small to pass the target
    assert _planned_below(("0.558815", 0.999994e-12, 0.999300e-12), 0.999238e-12, 1e-12) is None   # no negative step
    assert _planned_below(None, 0.999238e-12, 1e-12) is None
    assert _planned_below(("0.558815", None, 0.999118e-12), 0.999238e-12, 1e-12) is None
