"""The planners at the tails (small delta, large eps): losses priced relative to the target.

A kind's kink density comes from its own profile (relative error), its curvature floor scales with the
target, its moves are priced where they cross the kink, and a kind's lower v1 keeps the far tail's indices
apart; a small dp cell then certifies two-sided one resolution step apart, its sides bracketing the numerics.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from flint import fmpq
from scipy.stats import norm

from certifier.bounds.lower_v1 import LowerV1
from certifier.certify import certify
from certifier.methods.v1.plan import KIND_RELIABLE_SHARE, _reliable_tail
from certifier.methods.v2.plan import CellModel
from certifier.numerics.targets import GaussianLine, exact_privacy_scheme
from certifier.params import parse_decimal
from certifier.resolution import sigma_resolution
from certifier.targets import kind
from certifier.targets.rules import CURVATURE_FLOOR, hockey_density

D = lambda s: parse_decimal("x", s)  # noqa: E731


@pytest.mark.parametrize("eps, mu", [(8.0, 2.0), (2.0, 0.3), (4.0, 1.0), (0.5, 1.5)])
def test_hockey_density_is_the_gaussian_density_at_the_kink_to_relative_accuracy(eps, mu):
    # M = 1: ln Lambda ~ N(-mu^2/2, mu^2) under P, N(mu^2/2, mu^2) under Q (delta down to 1e-12 here)
    line = GaussianLine(mu)
    f_q = norm.pdf((eps - mu * mu / 2) / mu) / mu
    f_p = norm.pdf((-eps + mu * mu / 2) / mu) / mu
    # the central differences' bias is about (step x eps/mu^2)^2/12: 0.4 % at (2, 0.3), a planner's tolerance
    assert hockey_density(line.dqp, eps) == pytest.approx(f_q, rel=1e-2)
    assert hockey_density(line.dpq, eps) == pytest.approx(f_p, rel=1e-2)


def test_the_curvature_floor_is_a_share_of_the_target():
    # (1, 1, eps 2) at sigma 3.3: delta ~ 1e-10, and its kink density over f(0) ~ 1e-9, far below the old floor
    # 1e-4 (which priced every rounding 10^5 times too high)
    from certifier.claim import Claim
    k = kind("dp", {"epsilon": "2"}, D("1e-10"))
    claim = Claim("random-allocation", 1, 1, D("3.3"), D("1e-10"), None, (("name", "dp"), ("epsilon", "2")))
    mu = 1 / 3.3
    w = k.plan_weights(claim, D("3.3"))
    exact = norm.pdf((2 - mu * mu / 2) / mu) / mu / (norm.pdf(mu / 2) / mu)
    assert 1e-12 < exact < 1e-8 and w.curvature == pytest.approx(exact, rel=1e-2) and w.curvature < CURVATURE_FLOOR


def test_a_kinds_moves_are_priced_where_they_cross_its_kink():
    cm = CellModel.at(100, 10, 1 / 1.43**2, 0.1)
    top = 2.0**14
    assert cm.move_cost(top, 8.0) > 100 * cm.move_cost(top)       # below e^8 far more often than below 1
    assert cm.move_cost(top, 0.0) == cm.move_cost(top)


def test_a_kinds_lower_v1_keeps_the_far_tail_apart():
    m = LowerV1(h=fmpq(1, 10**4), eta=fmpq(1, 10**4), cap=fmpq(8), lattice_schedule=(1, 1), b_min=-1, b_max=1)
    got = _reliable_tail(m, 8e4, 1e-13)
    # indices below 2^40 units (2^(40-F) in mass) merge into the top bucket: at most a share of the budget
    assert 8e4 * 2.0 ** (40 - got.fixed_point_bits) <= KIND_RELIABLE_SHARE * 1e-13
    assert got.prec >= got.fixed_point_bits + 20
    assert _reliable_tail(m, 10.0, 1.0) is m                      # a wide margin keeps the grid as it was


@pytest.fixture(scope="module")
def small_dp():
    return certify(3, 2, D("1e-6"), two_sided=True, kind_name="dp", kind_params={"epsilon": "1"})


def test_a_small_tail_cell_is_two_sided_one_step_apart_and_brackets_the_numerics(small_dp):
    out = small_dp
    assert out.success and out.two_sided
    s, lo = D(out.sigma), D(out.sigma_low)
    assert s - lo == sigma_resolution(s)
    hi_num = exact_privacy_scheme(3, 2, float(s), epsilons=(1.0,)).delta[1.0]
    lo_num = exact_privacy_scheme(3, 2, float(lo), epsilons=(1.0,)).delta[1.0]
    up, low = float(D(out.bound)), float(D(out.bound_lower))
    assert hi_num.value - hi_num.error <= up <= 1e-6 < low <= lo_num.value + lo_num.error
    # the lower tries record the kind's value they proved (not the TV of the processed pair)
    ok = [t for t in out.lower_tries if t.get("certified")]
    assert ok and "dp_lower" in ok[0] and float(ok[0]["dp_lower"]) > 1e-6 and float(ok[0]["tv_lower"]) > 0.05


def test_the_steps_that_alone_reach_the_kink_get_the_bits():
    # (10^6, 100, eps 2, delta 1e-10) at sigma 0.49964: delta lives in one step Y ~ M (e^2 - 1) per run; the
    # common curvature (~4e-10) gave its octave 2 bits and every grid lost ~3e-12 against a margin of 4e-15.
    # (The weights as the numerics give them there: the bound itself, 3 s, is in docs/two-sided.md section 7.)
    from certifier.methods.v1.plan import KindWeights
    from certifier.methods.v2.plan import choose_v2, kink_weight
    M, t2 = 10**6, 1 / D("0.49964") ** 2
    w = KindWeights(3.917e-10, math.exp(2.0), 0.0292452)
    p = choose_v2(M, 100, t2, 2e-15, w.tv, need_eps=5.0, weights=w)
    m = p.method
    Nh = float(m.h) * 2**m.mantissa_bits
    k = math.floor(math.log2(M * (math.e**2 - 1) / Nh))          # the octave holding Y = M (e^2 - 1)
    bits = m.y_mantissa_bits
    assert bits[k] >= 8 and bits[k] >= bits[k + 3] + 6 and bits[k] >= bits[k - 3] + 4
    cm = CellModel.at(M, 100, float(t2), w.tv)
    at = kink_weight(cm, Nh * 2**k, Nh * 2 ** (k + 1), 2.0)
    assert at > 1e6 * kink_weight(cm, Nh * 2 ** (k - 4), Nh * 2 ** (k - 3), 2.0)
    assert p.predicted_loss <= 2e-15 and p.predicted_seconds < 60


def test_k_minus_follows_where_the_epoch_values_lie():
    """Step (iii) deletes L < e^(k_minus eta) only where that Q-mass is negligible: with Pr_P(L < a) <=
    Pr(Y < M a)^M (L >= Y_i / M) k_minus sits just below the epoch values, not at ln a = ln(share / E) (-66 at
    (2, 10^4), sigma 64.5: a verifier fenced E (k_top - k_minus) = 1.3e11 and refused the certificate)."""
    from certifier.methods.v2.plan import plan_v2
    t2 = 1 / fmpq(645079, 10**4) ** 2
    p = plan_v2(2, 10**4, t2, 1.2e-18, 0.4163, n=20, eta="0.000005", need_eps=11.0, weights=None)
    m = p.method
    assert -2.0 <= m.k_minus * float(m.eta) < 0
    assert min(m.k_top, 10**4 * m.k_plus) - 10**4 * m.k_minus < 10**11       # the verifier's fence
    assert p.detail["loss"]["k_minus"] <= 0.02 * 1.2e-18


@pytest.mark.parametrize("M, t, a", [(2, 2.0, 0.3), (3, 1.0, 0.5), (10, 2.0, 0.05)])
def test_the_epoch_value_tail_bound_holds_by_monte_carlo(M, t, a):
    """Pr_P(L < a) <= Pr(Y < M a)^M for L the mean of M lognormal steps Y = e^(tX - t^2/2) (the k_minus model)."""
    rng = np.random.default_rng(5)
    Y = np.exp(t * rng.standard_normal((200_000, M)) - t * t / 2)
    p = float(np.mean(Y.mean(axis=1) < a))
    se = math.sqrt(p * (1 - p) / 200_000)
    bound = norm.cdf((math.log(M * a) + t * t / 2) / t) ** M
    assert p > 1e-3 and p <= bound + 3 * se
