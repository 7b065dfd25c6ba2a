"""delta(eps), T(alpha) and the exact sigma (dp, tpr) of a run in stages (certifier.numerics.stages_profile):
stages of one (M, sigma) against the single block, M = 1 stages through the product route against the
Gaussian closed form, Monte Carlo with standard errors for a two-stage run, the grid search's least
point, monotonicity and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import montecarlo_profile as mc
from certifier.numerics.stages_profile import (
    exact_privacy_product,
    exact_sigma_dp_product,
    exact_sigma_tpr_product,
    laplace_route_product,
    logconv_route_product,
    product_route_at,
)
from certifier.numerics.targets import exact_privacy, exact_sigma_dp, exact_sigma_tpr, route_at

EPS = (0.0, 0.5, 1.0, 2.0)
ALPHAS = (0.05, 1e-3, 1e-5)


def _close(a, b, rel=1e-9):
    """Equal to 1e-9 relative or within the two error estimates."""
    return abs(a.value - b.value) <= max(rel * abs(b.value), a.error + b.error)


@pytest.mark.parametrize("steps,split,sigma", [(100, (3, 7), "1.426215"), (10, (1, 1, 3), "0.8"),
                                               (1000, (1, 1), "0.6")])
def test_stages_of_one_block_reproduce_the_single_block(steps, split, sigma):
    epochs = sum(split)
    p = exact_privacy_product([(steps, e, sigma) for e in split], deltas=[1e-5, 1e-3], epsilons=EPS, fprs=ALPHAS)
    q = exact_privacy(steps, epochs, float(sigma), deltas=[1e-5, 1e-3], epsilons=EPS, fprs=ALPHAS)
    assert "stages" in p.method
    assert _close(p.tv, q.tv)
    for e in EPS:
        assert _close(p.delta[e], q.delta[e])
    for a in ALPHAS:
        assert _close(p.tpr[a], q.tpr[a])
    for d in (1e-5, 1e-3):
        assert _close(p.epsilon[d], q.epsilon[d])


def _gauss_delta(eps, mu):
    return ndtr(-eps / mu + mu / 2) - math.exp(eps) * ndtr(-eps / mu - mu / 2)


@pytest.mark.parametrize("runs", [[(1, 3, 3.0), (1, 7, 4.0)], [(1, 1, 0.7), (1, 20, 5.0), (1, 2, 1.5)]])
def test_m1_stages_through_the_product_line_give_the_gaussian_closed_form(runs):
    """The laplace product route (not the closed-form shortcut) at M_s = 1: a Gaussian of mu^2 = sum mu_s^2."""
    mu = math.sqrt(sum(e / s ** 2 for _, e, s in runs))
    r = laplace_route_product(runs)
    for eps in EPS:
        for v in (r.delta_qp(eps), r.delta_pq(eps)):
            assert abs(v.value - _gauss_delta(eps, mu)) <= max(v.error, 1e-14) and v.error < 1e-9
    for a in ALPHAS:
        v = r.tpr(a)
        assert abs(v.value - (1 - ndtr(ndtri(1 - a) - mu))) <= max(v.error, 1e-14)
    # and the public evaluation (closed-form shortcut) agrees with it
    p = exact_privacy_product([(m, e, repr(s)) for m, e, s in runs], epsilons=[1.0])
    assert p.method.startswith("closed-form M=1")
    assert p.delta[1.0].value == pytest.approx(_gauss_delta(1.0, mu), abs=1e-14)


def test_mixed_stages_second_routes_agree():
    """logconv (lattice densities) and laplace' against the primary at a mixed run, within the estimates."""
    runs = [(10, 2, 0.9), (40, 3, 1.1), (1, 2, 2.0)]
    first = laplace_route_product(runs)
    for other in (logconv_route_product(runs), laplace_route_product(runs, None, disc=__import__(
            "certifier.numerics.laplace_moments", fromlist=["SECOND"]).SECOND)):
        for eps in EPS:
            a, b = first.delta(eps), other.delta(eps)
            assert abs(a.value - b.value) <= a.error + b.error and a.error < 1e-9
        for al in ALPHAS:
            a, b = first.tpr(al), other.tpr(al)
            assert abs(a.value - b.value) <= a.error + b.error


def _stage_samples(runs, n, under_q, seed):
    """ln Lambda of the product pair: independent stages, their log ratios add."""
    return sum(mc.log_lambda_samples(m, e, s, n, under_q=under_q, seed=seed + 17 * i)
               for i, (m, e, s) in enumerate(runs))


@pytest.mark.parametrize("runs,seed", [([(10, 2, 0.8), (3, 2, 0.6)], 5), ([(4, 1, 0.5), (20, 3, 1.0)], 9)])
def test_two_stages_against_monte_carlo_within_four_standard_errors(runs, seed):
    n = 200_000
    lp = _stage_samples(runs, n, False, seed)
    lq = _stage_samples(runs, n, True, seed + 1000)
    r, _ = product_route_at(runs)
    for eps in (0.3, 1.0):
        for est, exact in ((mc.delta_pq(lp, eps), r.delta_pq(eps)), (mc.delta_qp(lq, eps), r.delta_qp(eps))):
            assert est.se > 0 and abs(est.value - exact.value) <= 4 * est.se, (eps, est, exact)
    for alpha in (0.05, 0.01):
        tpr, s = r.main.tpr(alpha)  # the Neyman-Pearson threshold e^s of FPR alpha
        fpr_hat, tpr_hat = mc.rate_above(lp, s), mc.rate_above(lq, s)
        assert abs(fpr_hat.value - alpha) <= 4 * fpr_hat.se
        assert abs(tpr_hat.value - tpr) <= 4 * tpr_hat.se


def test_each_stage_alone_is_less_private_than_none_and_the_run_more_than_each():
    """Adding a stage releases more: eps(delta) of the run exceeds each stage's own."""
    p = exact_privacy_product([(100, 5, "1.2"), (400, 5, "1.5")], deltas=[1e-5])
    own = [exact_privacy(100, 5, 1.2, deltas=[1e-5]), exact_privacy(400, 5, 1.5, deltas=[1e-5])]
    assert all(p.epsilon[1e-5].value > q.epsilon[1e-5].value + 1e-3 for q in own)


@pytest.mark.parametrize("stages,eps,delta", [([(100, 5), (400, 5)], 1.0, 1e-5), ([(1, 3), (1, 7)], 1.0, 1e-5),
                                              ([(20, 2), (5, 3), (50, 1)], 2.0, 1e-4)])
def test_exact_shared_sigma_dp_is_the_least_grid_point(stages, eps, delta):
    s = float(exact_sigma_dp_product(stages, eps, delta))
    at = lambda x: exact_privacy_product([(m, e, repr(x)) for m, e in stages], epsilons=[eps]).delta[eps]  # noqa: E731
    hit, miss = at(s), at(round(s - 1e-6, 6))
    assert hit.value - hit.error <= delta < miss.value + miss.error and hit.error < 1e-3 * delta
    if all(m == 1 for m, _ in stages):  # M = 1: the Gaussian shift sqrt(sum E)/sigma
        from scipy.optimize import brentq
        mu = brentq(lambda m: _gauss_delta(eps, m) - delta, 0.01, 50, xtol=1e-14)
        total = sum(e for _, e in stages)
        assert s == pytest.approx(math.ceil(math.sqrt(total) / mu / 1e-6) * 1e-6, abs=1.01e-6)


def test_exact_shared_sigma_tpr_is_the_least_grid_point():
    stages, alpha, beta = [(100, 5), (400, 5)], 1e-3, 2e-3
    s = float(exact_sigma_tpr_product(stages, alpha, beta))
    at = lambda x: exact_privacy_product([(m, e, repr(x)) for m, e in stages], fprs=[alpha]).tpr[alpha].value  # noqa: E731
    assert at(s) <= beta < at(round(s - 1e-6, 6))


def test_one_stage_and_split_stages_give_the_single_block_sigma():
    assert exact_sigma_dp_product([(100, 10)], 1, 1e-5) == exact_sigma_dp(100, 10, 1, 1e-5)
    assert exact_sigma_dp_product([(100, 4), (100, 6)], 1, 1e-5) == exact_sigma_dp(100, 10, 1, 1e-5)
    assert exact_sigma_tpr_product([(100, 4), (100, 6)], 1e-3, 2e-3) == exact_sigma_tpr(100, 10, 1e-3, 2e-3)


def test_monotone_in_the_shared_sigma():
    sigmas = np.linspace(0.5, 3.0, 6)
    ps = [exact_privacy_product([(30, 2, repr(float(s))), (120, 3, repr(float(s)))], epsilons=[1.0], fprs=[1e-3])
          for s in sigmas]
    # non-increasing within the error estimates: at the largest sigma delta(1) is round-off (~1e-16)
    for vals in ([p.delta[1.0] for p in ps], [p.tpr[1e-3] for p in ps]):
        assert all(b.value <= a.value + a.error + b.error for a, b in zip(vals, vals[1:]))
        assert vals[0].value > 2 * (vals[-1].value + vals[-1].error)   # and it does decrease


def test_bad_input():
    with pytest.raises(ParameterError, match="every stage needs its sigma"):
        exact_privacy_product([(100, 5), (400, 5)], deltas=[1e-5])
    with pytest.raises(ParameterError, match="share one sigma"):
        exact_sigma_dp_product([(100, 5, "1.2")], 1, 1e-5)
    with pytest.raises(ParameterError, match="TPR target must exceed"):
        exact_sigma_tpr_product([(100, 5), (10, 1)], 0.01, 0.005)
    with pytest.raises(ParameterError, match="delta"):
        exact_privacy_product([(100, 5, "1")], deltas=[1.5])
    with pytest.raises(NumericsUnreliableError, match="sigma >="):
        exact_privacy_product([(100, 5, "0.01"), (10, 1, "1")], epsilons=[1.0])


def test_quick_bounds_of_stages():
    """(R2)/(R3) on the product: a split gives the block's sigma; the bounds hold at their sigma."""
    from certifier.numerics import quick_bounds as qb
    assert qb.rdp_sigma([(100, 3), (100, 7)], 1.0, 1e-5, seed=1.3) == qb.rdp_sigma([(100, 10)], 1.0, 1e-5, seed=1.3)
    assert qb.rdp_tpr_sigma([(100, 4), (100, 6)], 1e-3, 2e-3, seed=1.6) == \
        qb.rdp_tpr_sigma([(100, 10)], 1e-3, 2e-3, seed=1.6)
    stages = [(100, 5), (400, 5)]
    s = float(qb.rdp_sigma(stages, 1.0, 1e-5, seed=1.1))
    p = exact_privacy_product([(m, e, repr(s)) for m, e in stages], epsilons=[1.0])
    r, _ = product_route_at([(m, e, s) for m, e in stages])
    assert r.delta_qp(1.0).value <= 1e-5 and p.delta[1.0].value <= 1e-5   # R2 bounds delta_Q||P at its sigma
    t = float(qb.rdp_tpr_sigma(stages, 1e-3, 2e-3, seed=1.3))
    assert float(exact_sigma_tpr_product(stages, 1e-3, 2e-3)) <= t           # a proven bound: never below exact


def test_one_stage_takes_the_blocks_routes():
    one, _ = product_route_at([(10, 3, 0.9)], check=False)
    block, _ = route_at(10, 3, 0.9, check=False)
    assert one.name == block.name and one.tv() == block.tv()
