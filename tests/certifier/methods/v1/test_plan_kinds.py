"""The dp/tpr kinds' own loss model for the v1 planners (methods.v1.plan.KindWeights, numerics.kink_density)
and the integer hockey-stick of the lower side: densities against closed forms, plans whose bounds
still bracket the exact values and lose no more than the budget they were planned for."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
from flint import fmpq

from certifier import methods as mt
from certifier.bounds import lower_kinds as lk
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.methods.v1.plan import budget, choose_grid, choose_lower_grid
from certifier.numerics.kink_density import f_p, f_q, line
from certifier.numerics.targets import exact_sigma_dp, exact_sigma_tpr
from certifier.params import parse_decimal
from certifier.resolution import sigma_resolution
from certifier.targets import kind

D = lambda s: parse_decimal("x", s)  # noqa: E731


def _phi(x: float) -> float:
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("s", [-1.5, -0.5, 0.0, 0.25, 1.0, 2.0])
def test_kink_densities_match_the_gaussian_shift(s):
    # M = 1: ln Lambda ~ N(-mu^2/2, mu^2) under P and N(mu^2/2, mu^2) under Q, mu = sqrt(E)/sigma
    mu = math.sqrt(4) / 2.0
    g = line([(1, 4, 2.0)]).g
    assert f_p(g, s) == pytest.approx(_phi((s + mu * mu / 2) / mu) / mu, rel=1e-5)
    assert f_q(g, s) == pytest.approx(_phi((s - mu * mu / 2) / mu) / mu, rel=1e-5)


def test_kink_densities_are_densities_at_m_10():
    # not Gaussian: both integrate to 1, and the P-mass above 0 is G'(0) (= P(Lambda > 1))
    g = line([(10, 2, 1.5)]).g
    s = np.linspace(-4.0, 6.0, 2001)
    fp = np.array([f_p(g, x) for x in s])
    fq = np.array([f_q(g, x) for x in s])
    assert np.trapezoid(fp, s) == pytest.approx(1.0, abs=2e-4)
    assert np.trapezoid(fq, s) == pytest.approx(1.0, abs=2e-4)
    d = 1e-4
    tail = (g(d) - g(-d)) / (2 * d)                                  # G'(0) = P(ln Lambda > 0)
    assert np.trapezoid(fp[s >= 0], s[s >= 0]) == pytest.approx(tail, abs=1e-3)
    assert (fp >= -1e-6).all() and (fq >= -1e-6).all()


def test_integer_hockey_stick_equals_the_rational_formula():
    random.seed(7)
    for t in range(300):
        n, F = random.randint(1, 25), 16
        X = [random.randint(0, 1 << 11) for _ in range(n)]
        Y = [random.randint(0, 1 << 11) for _ in range(n)]
        c = lk.exp_upper(fmpq(random.randint(0, 40), 10)) if t % 2 else fmpq(random.randint(1, 9), random.randint(1, 9))
        deleted = (1 << F) - sum(X)
        want = (sum((fmpq(y) - c * x for x, y in zip(X, Y) if y > c * x), fmpq(0)) - c * deleted) / (1 << F)
        assert lk._hockey_stick(X, Y, F, c) == want
    # by hand: A = {1}, (3 - 2 * 1 - 2 * (16 - 3)) / 16
    assert lk._hockey_stick([1, 2], [3, 1], 4, fmpq(2)) == fmpq(3 - 2 * 1 - 2 * 13, 16)


CELLS = [("dp", "0.5", "0.0001"), ("tpr", "0.001", "0.002")]


def _cell(name, x, target):
    key = "epsilon" if name == "dp" else "fpr"
    tq = D(target)
    k = kind(name, {key: x}, tq)
    find = exact_sigma_dp if name == "dp" else exact_sigma_tpr
    sigma = D(find(10, 2, float(x), float(target)))
    return k, key, tq, sigma


@pytest.mark.parametrize("name,x,target", CELLS)
def test_the_kind_plan_is_coarser_and_its_upper_bound_holds(name, x, target):
    k, key, tq, sigma = _cell(name, x, target)
    claim = Claim(RANDOM_ALLOCATION, 10, 2, sigma, tq, None, (("name", name), (key, x)))
    value, err = k.numerics(claim, sigma)
    w = k.plan_weights(claim, sigma)
    assert w is not None and 0 < w.curvature < 1 and w.deletion >= 1
    margin = k.upper_margin(tq, value, err)
    b = budget(margin, 0.6)
    plan = choose_grid(10, 2, sigma, b, allow_moved=True, weights=w)
    old = choose_grid(10, 2, sigma, budget(margin / k.loss_factor, 0.6), allow_moved=True)
    assert plan.method.h >= old.method.h and plan.method.eta > old.method.eta
    r = mt.UPPER_V1.run(claim, sigma, plan.method)
    r.method = plan.method
    up = float(D(k.upper_bound(r)))
    assert value - err <= up <= float(tq)                          # still an upper bound, and it decides
    # the model's prediction is within a small factor of the actual loss (measured 0.85 at (100, 10), 1.3 here);
    # the TV-unit model it replaces over-asked 10-60x
    assert 0.3 * plan.predicted_loss <= up - value <= 2.0 * plan.predicted_loss


@pytest.mark.parametrize("name,x,target", CELLS)
def test_the_kind_lower_plan_holds_at_sigma_low(name, x, target):
    k, key, tq, sigma = _cell(name, x, target)
    low = sigma - sigma_resolution(sigma)
    claim = Claim(RANDOM_ALLOCATION, 10, 2, low, tq, None)
    value, err = k.numerics(claim, low)
    w = k.plan_weights(claim, low)
    b = budget(k.lower_margin(tq, value, err), 0.8, 2e-7)
    plan = choose_lower_grid(10, 2, low, b, weights=w)
    L = mt.LOWER_V1.run(claim, low, plan.method)
    lv = float(k.lower_value(L))
    assert float(tq) < lv <= value + err                           # a lower bound that misses the target
    assert value - lv <= 2.0 * plan.predicted_loss


def test_a_kind_lower_cap_stays_far_below_the_truncation():
    # where the merge model alone would put the cap at 8M or above it, the verifier's own cut at 8M
    # deleted other mass than ours (a lower-enclosure mismatch at (10, 5, eps = 1, delta = 0.01))
    tq = D("0.01")
    k = kind("dp", {"epsilon": "1"}, tq)
    sigma = D(exact_sigma_dp(10, 5, 1.0, 0.01))
    low = sigma - sigma_resolution(sigma)
    claim = Claim(RANDOM_ALLOCATION, 10, 5, low, tq, None)
    plan = choose_lower_grid(10, 5, low, 1e-8, weights=k.plan_weights(claim, low))
    assert plan.method.cap <= 4 * 10 + plan.method.h


def test_a_two_sided_dp_certificate_at_10_5_verifies():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from certifier.certificate.envelope import sign_certificate
    from certifier.certify import certify
    from verifier.core import verify_bytes
    out = certify(10, 5, D("0.01"), kind_name="dp", kind_params={"epsilon": "1"}, two_sided=True)
    assert out.success and out.two_sided and D(out.bound) <= D("0.01") < D(out.bound_lower)
    key = Ed25519PrivateKey.generate()
    r = verify_bytes(sign_certificate(out.predicate, key), [key.public_key()])
    assert r.accepted, (r.reason, r.detail)
