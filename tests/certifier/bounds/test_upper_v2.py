"""Method v2 and format v3 (docs/method-v2.md): certified brackets around closed forms and quadrature at
heavy-tailed cells, the fixed-bins scheme, the v3 predicate, fail-fast refusals."""
from __future__ import annotations

import math
import time

import pytest
from flint import fmpq
from scipy import integrate
from scipy.special import erf, ndtr

import certifier.certify as certify_mod
from certifier.bounds.lower_v2 import lower_bound_v2
from certifier.bounds.upper_v2 import UpperV2, rounding_bound_v2
from certifier.certify import certify
from certifier.claim import FIXED_BINS, Claim
from certifier.errors import CannotCertifyError, ParameterError
from certifier.methods.v2.plan import choose_v2
from certifier.params import parse_decimal

Q = lambda s: parse_decimal("x", s)


def tv_m1(epochs: int, sigma: float) -> float:
    """M = 1: 2 Phi(sqrt(E)/(2 sigma)) - 1 (Appendix C.4)."""
    return float(erf(math.sqrt(epochs) / (2 * math.sqrt(2) * sigma)))


def tv_m2_one_epoch(sigma: float) -> float:
    """M = 2, E = 1 by one-dimensional quadrature: E (1 - (Y1 + Y2)/2)_+ with the inner integral in closed form."""
    t = 1 / sigma
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    def inner(x1):                                   # int over x2 with Y2 < 2 - Y1 of (1 - Y1/2 - Y2/2)
        y1 = math.exp(t * x1 - t * t / 2)
        c = (math.log(2 - y1) + t * t / 2) / t
        return ((1 - y1 / 2) * ndtr(c) - 0.5 * ndtr(c - t)) * phi(x1)
    top = (math.log(2) + t * t / 2) / t
    val, err = integrate.quad(inner, -40, top, epsabs=1e-14, epsrel=1e-13, limit=400)
    assert err < 1e-11
    return val


def _bracket(steps, epochs, sigma: str, tv: float, budget=2e-7):
    t2 = 1 / (Q(sigma) * Q(sigma))
    plan = choose_v2(steps, epochs, t2, budget, tv)
    up = rounding_bound_v2(steps, epochs, t2, plan.method)
    lo = lower_bound_v2(steps, epochs, t2, plan.method)
    return float(lo.exact), up.ball.upper(), plan


@pytest.mark.parametrize("epochs,sigma", [(1, "0.35"), (3, "0.6")])
def test_m1_heavy_tail_bracket_around_the_closed_form(epochs, sigma):
    tv = tv_m1(epochs, float(sigma))
    lo, up, plan = _bracket(1, epochs, sigma, tv)
    assert lo <= tv <= float(up)
    assert float(up) - tv < 2e-6 and tv - lo < 2e-6


def test_m2_heavy_tail_bracket_around_quadrature():
    tv = tv_m2_one_epoch(0.7)                        # refused by the exact TV of earlier releases
    lo, up, _ = _bracket(2, 1, "0.7", tv)
    assert lo <= tv <= float(up) and float(up) - lo < 2e-6


def test_moves_not_deletions_in_step_i_and_the_ledger():
    tv = tv_m1(1, 0.5)
    t2 = fmpq(4)
    plan = choose_v2(1, 1, t2, 1e-7, tv)
    r = rounding_bound_v2(1, 1, t2, plan.method)
    enc = r.enclosures
    assert set(enc["moved"]) == {"cap", "top_octave", "k_plus", "k_top"}
    G0 = float(ndtr(-(math.log(float(plan.method.cap)) + 2) / 2))   # Pr(Y > cap) at t = 2
    moved = float(enc["moved"]["cap"].split()[0].strip("["))
    assert abs(moved - G0) <= 1e-12 + 1e-9 * G0
    assert float(r.bound) >= tv


def test_method_json_round_trip_and_validation():
    plan = choose_v2(10, 3, Q("4"), 1e-7, 0.2)
    m = plan.method
    assert UpperV2.from_json(m.to_json()) == m
    bad = dict(m.to_json(), y_mantissa_bits=[m.mantissa_bits + 1])
    with pytest.raises(ParameterError):
        UpperV2.from_json(bad)
    with pytest.raises(ParameterError):
        UpperV2.from_json(dict(m.to_json(), top_octave=0))


def test_fixed_bins_claim_reduces_to_one_epoch_at_sigma_over_sqrt_e():
    c = Claim.fixed_bins(10, 35, Q("2"), Q("0.3"))
    assert c.epochs == 4 and c.pair() == (10, 1) and c.t2_at(Q("2")) == 1
    obj = c.to_json(3)
    assert obj["scheme"] == FIXED_BINS and obj["iterations"] == 35 and obj["mechanism"] == "dp-sgd/fixed-bins"
    with pytest.raises(ParameterError):
        c.to_json(1)
    with pytest.raises(ParameterError):
        Claim(FIXED_BINS, 10, 3, Q("2"), Q("0.3"), 35)          # epochs must be ceil(35/10) = 4


def test_certify_fixed_bins_is_v3_and_bounds_the_one_epoch_pair():
    from certifier.numerics.exact import exact_tv
    out = certify(10, 4, Q("0.3"), Q("2"), scheme=FIXED_BINS, iterations=40)
    assert out.success and out.method == "lemma-c5-rounding v2"
    p = out.predicate
    assert p["claim"]["scheme"] == FIXED_BINS and p["claim"]["iterations"] == 40 and p["method"]["version"] == 2
    tv1 = exact_tv(10, 1, 1.0).tv                                 # sigma/sqrt(E) = 2/2 = 1, one epoch
    assert tv1 <= float(out.bound) <= 0.3
    assert {"privacy", "tpr"} <= set(p) and "lower" not in p     # rows without the lower side: v3


@pytest.mark.parametrize("method,name", [("v2", "lemma-c5-rounding v2"), ("auto", "gaussian-shift v1")])
def test_certify_heavy_one_step_two_sided_v3_rows_against_gdp(method, name):
    """M = E = 1, lambda = 0.9: Y lognormal with t = 3.29; TV, eps(delta), TPR are closed forms (mu-GDP).
    Method v2 computes them by the multiscale construction, gaussian-shift (auto at M = 1) in closed form."""
    out = certify(1, 1, Q("0.9"), two_sided=True, method=method)
    assert out.success and out.two_sided and out.method == name
    p = out.predicate
    assert p["claim"]["scheme"] == "random-allocation"
    assert p["lower"]["method"]["name"] == ("data-processing-lower" if method == "v2" else "gaussian-shift")
    mu = 1 / float(Q(out.sigma))
    assert tv_m1(1, float(Q(out.sigma))) <= float(out.bound) <= 0.9 < float(out.tv_lower)
    delta = lambda e: ndtr(-e / mu + mu / 2) - math.exp(e) * ndtr(-e / mu - mu / 2)
    for d, row in p["privacy"]["epsilon_at_delta"].items():
        eps = float(row["epsilon"])
        assert delta(eps) <= float(d) < delta(eps - 0.05)         # certified, and at most 0.05 above the truth
    for a, row in p["tpr"].items():
        exact = ndtr(mu - float(__import__("scipy.special", fromlist=["ndtri"]).ndtri(1 - float(a))))
        assert exact - 1e-12 <= float(row["tpr"]) <= exact * 1.001 + 1e-9


def test_refuses_fast_when_the_grid_would_be_too_slow(monkeypatch):
    monkeypatch.setattr(certify_mod, "MAX_PREDICTED_SECONDS", 1e-6)
    t0 = time.perf_counter()
    with pytest.raises(CannotCertifyError, match="predicted to take"):
        certify(1, 2, Q("0.5"), Q("0.9"), method="v2")   # M = 1: the numerics are a closed form
    assert time.perf_counter() - t0 < 5
