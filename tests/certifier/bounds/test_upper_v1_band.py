"""Method v1 with a band around Y = 1 ("band_low", format v3; docs/method-v2.md §8): at a large-sigma cell
the banded bound brackets the exact TV with the lower side, agrees with the plain v1 grid, issues two-sided
and verifies; forged band fields are rejected; certificates without a band are read as before."""
from __future__ import annotations

import copy
import dataclasses

import pytest
from flint import arb
from helpers import dec, sign_and_verify

import certifier.methods.v1.search as v1_search
from certifier.bounds.fixedpoint import working_prec
from certifier.bounds.lower_v1 import LowerV1, lower_bound
from certifier.bounds.upper_v1 import UpperV1, make_method, rounding_bound
from certifier.certify import certify
from certifier.errors import CannotCertifyError
from certifier.methods.v1.band import choose_band_grid, choose_lower_band_grid
from certifier.methods.v1.plan import choose_grid
from certifier.numerics.exact import exact_tv
from certifier.params import ParameterError, parse_decimal

Q = lambda s: parse_decimal("x", s)  # noqa: E731

# a large-sigma, small-lambda cell small enough for a test: t = 1/sigma ~ 1e-3, ln Lambda's sd ~ 2.6e-3
M, E, TARGET, SIGMA = 3, 20, Q("0.001"), Q("1030.07")
BUDGET = 2e-9


def _no_plain(*args, **kwargs):
    raise CannotCertifyError("plain v1 refused by the test")


@pytest.fixture(scope="module")
def banded():
    """A two-sided certificate at (3, 20, 0.001) with the plain v1 planners switched off (so the band is taken)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(v1_search, "choose_grid", _no_plain)
    mp.setattr(v1_search, "choose_lower_grid", _no_plain)
    try:
        out = certify(M, E, TARGET, SIGMA, two_sided=True)
    finally:
        mp.undo()
    return out


def test_the_band_certifies_two_sided_and_the_verifier_accepts(banded):
    assert banded.success and banded.two_sided and banded.sigma_low == "1030.06"
    p = banded.predicate
    assert "band_low" in p["method"] and "band_low" in p["lower"]["method"]
    assert Q(p["method"]["band_low"]) < 1 < Q(p["method"]["cap"])
    assert "band" in p["enclosures"]["deleted"]
    assert float(p["bound"]) <= float(TARGET) < float(p["lower"]["tv_lower"])
    r = sign_and_verify(p)
    assert r.accepted, r.detail
    assert r.claim["sigma"] == "1030.07"


def test_the_band_needs_format_v3():
    from certifier.certificate.predicate import format_version
    from certifier.claim import RANDOM_ALLOCATION, Claim
    claim = Claim(RANDOM_ALLOCATION, M, E, SIGMA, TARGET, None)
    plain = make_method(M, h="0.00001", eta="0.00001", cap="2").to_json(M)
    band = {**plain, "band_low": "0.99"}
    assert format_version(claim, plain, None, None) == 1
    assert format_version(claim, band, None, None) == 3


def _forged(banded, change):
    p = copy.deepcopy(banded.predicate)
    change(p)
    return sign_and_verify(p)


@pytest.mark.parametrize("change, reason", [
    (lambda p: p["method"].__setitem__("band_low", p["method"]["tail_start"]), "method-invalid"),
    (lambda p: p["method"].__setitem__("band_low", "0"), "method-invalid"),
    (lambda p: p["method"].__setitem__("band_low", dec(Q(p["method"]["band_low"]) + Q(p["method"]["h"]) / 2)),
     "method-invalid"),
    (lambda p: p["enclosures"]["deleted"].pop("band"), "schema"),
    (lambda p: p["method"].pop("band_low"), "schema"),
    (lambda p: p["enclosures"]["deleted"].__setitem__("band", "[0 +/- 0]"), "enclosure-mismatch"),
    (lambda p: p["lower"]["method"].__setitem__("band_low", p["lower"]["method"]["cap"]), "lower-method-invalid"),
    (lambda p: p["lower"]["method"].__setitem__("band_low", "0"), "lower-method-invalid"),
    (lambda p: p["lower"]["method"].__setitem__("band_low", "-1"), "schema"),
])
def test_forged_band_fields_are_rejected(banded, change, reason):
    r = _forged(banded, change)
    assert not r.accepted
    assert r.reason.startswith(reason), (r.reason, r.detail)


def test_a_band_moved_into_the_bulk_is_rejected(banded):
    """band_low raised to 1 - t (a sixth of the steps' mass below it): the replay's bound exceeds the target."""
    def up(p):
        h, cap = Q(p["method"]["h"]), Q(p["method"]["cap"])
        lo = h * int(((1 - (cap - 1) / 8) / h).floor())
        p["method"]["band_low"] = dec(lo)
    r = _forged(banded, up)
    assert not r.accepted and r.reason in ("replay-bound-exceeds", "enclosure-mismatch"), r.reason


def test_a_band_in_a_format_v2_predicate_fails_its_schema(banded):
    """The same predicate without claim.scheme is signed as format v2, whose exact schema has no band."""
    def as_v2(p):
        del p["claim"]["scheme"]
        p.pop("rows_not_certified", None)
        p["lower"].pop("resolution", None)
    r = _forged(banded, as_v2)
    assert not r.accepted and r.reason.startswith("schema"), (r.reason, r.detail)


def test_the_banded_bound_agrees_with_the_plain_grid_and_brackets_the_exact_tv():
    ex = exact_tv(M, E, float(SIGMA))
    plain = choose_grid(M, E, SIGMA, BUDGET)
    band = choose_band_grid(M, E, SIGMA, BUDGET)
    assert band.method.band_low is not None and plain.method.band_low is None
    rp, rb = rounding_bound(M, E, SIGMA, plain.method), rounding_bound(M, E, SIGMA, band.method)
    up_p, up_b = float(rp.bound), float(rb.bound)
    assert up_b >= ex.tv - ex.error and up_p >= ex.tv - ex.error      # both upper bounds on TV
    assert abs(up_b - up_p) <= BUDGET                                  # the same number to ~the budget
    assert up_b - ex.tv <= 1.5 * band.predicted_loss + ex.error        # the loss model holds
    low = lower_bound(M, E, SIGMA, choose_lower_band_grid(M, E, SIGMA, BUDGET).method)
    assert float(low.tv_lower) <= ex.tv + ex.error <= up_b + 2 * ex.error   # a bracket around the exact TV
    assert up_b - float(low.tv_lower) <= 3 * BUDGET


def test_the_band_deletes_exactly_the_mass_below_it():
    """Step (i)'s kept mass + F0(band_low) + Pr(Y > cap) + the floors = 1, and the polynomial starts at band_low/h."""
    from certifier.bounds.upper_v1 import band_mass, step_i
    m = make_method(M, h="0.0001", eta="0.0001", cap="1.004", band_low="0.996", prec=128)
    P, above, loss = step_i(SIGMA, m)
    below = band_mass(1 / (SIGMA * SIGMA), m)
    assert P.off == 9960
    with working_prec(128):
        total = arb(P.mass()) / arb(2) ** m.fixed_point_bits + below + above + loss
        assert abs(total - 1) < arb(10) ** -25   # a ball within 1e-25 of 1
    assert float(below.mid()) > 1e-6          # at 4 t below 1 the band deletes a visible mass


def test_the_method_objects_read_the_band_back_and_refuse_bad_ones():
    m = make_method(M, h="0.0001", eta="0.0001", cap="1.004", band_low="0.996")
    js = m.to_json(M)
    assert js["band_low"] == "0.996" and UpperV1.from_json(js) == m
    assert "band_low" not in make_method(M, h="0.0001", eta="0.0001", cap="1.004").to_json(M)
    lo = LowerV1.from_v1(m)
    assert lo.to_json(M)["band_low"] == "0.996" and LowerV1.from_json(lo.to_json(M)).band_low == m.band_low
    for bad in ("0.99605", "1.004", "0"):
        with pytest.raises(ParameterError):
            dataclasses.replace(m, band_low=Q(bad)).validate(M)


def test_a_blocks_deficit_is_carried_into_the_epoch_so_many_steps_take_wide_fixed_point():
    """A trim of a block of 2^i steps reaches the epoch sum M/2^i times: at M = 4096 the epoch's deficit is
    hundreds of times what the trims recorded when they happened (so methods.v1.plan prices it as carried_deficit,
    and takes 128 bits and a trim of 1e-30 where that would cost the budget)."""
    from fractions import Fraction

    from certifier.bounds.fixedpoint import Ledger
    from certifier.bounds.upper_v1 import step_i, step_ii
    from certifier.methods.v1.plan import TRIM, WIDE_BITS, WIDE_TRIM, carried_deficit
    steps, sigma = 4096, Q("50")
    out = {}
    for F, tr in ((80, "1e-20"), (128, "1e-30")):
        m = make_method(steps, h="0.0002", eta="0.0001", cap="1.3", band_low="0.7", fixed_point_bits=F, trim=tr)
        P, _, _ = step_i(sigma, m)
        led = Ledger(F)
        A, _ = step_ii(P, steps, m, led)
        out[F] = (Fraction(2**F - A.mass(), 2**F), Fraction(led.trim, 2**F), Fraction(2**F - P.mass(), 2**F))
    deficit, trimmed, _ = out[80]
    assert deficit > 100 * trimmed and deficit > steps * Fraction(1, 10**21)
    assert deficit <= carried_deficit(steps, 1, TRIM, 80)
    deficit128, _, step128 = out[128]
    assert deficit128 < 2 * steps * step128 + Fraction(1, 10**24)        # what is left: step (i)'s own deletions
    wide = choose_grid(10**6, 100, Q("3"), 1e-9)                         # M E = 1e8: the carried deficit would cost
    assert (wide.method.fixed_point_bits, wide.method.trim) == (WIDE_BITS, WIDE_TRIM)
    table4 = choose_grid(100, 10, Q("1.426215"), 1e-9)                   # a Table 4 cell keeps its grid
    assert (table4.method.fixed_point_bits, table4.method.trim) == (80, TRIM)
