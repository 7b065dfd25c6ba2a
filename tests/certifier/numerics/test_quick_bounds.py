"""The proven quick bounds of certifier.numerics.quick_bounds: the integer moments (R1) of L_M, the
RDP-to-DP bound (R2) on delta_{Q||P}, the trade-off lower bound (R3) and Proposition B.2's sigma."""
from __future__ import annotations

import math

import pytest

from certifier.numerics import quick_bounds as qb
from certifier.numerics.targets import exact_privacy, exact_sigma_dp, exact_sigma_tpr, route_at


def _moments_by_convolution(steps: int, q: int) -> dict[int, int]:
    """M^q F_M(q) as an integer polynomial in x = e^{t^2/2}, by another algorithm: E Y^k = x^{k(k-1)} and
    the binomial convolution E(S + Y)^q = sum_k C(q, k) E S^k E Y^{q-k} over the M independent steps."""
    one = [{k * (k - 1): 1} for k in range(q + 1)]      # E Y^k
    cur = one
    for _ in range(steps - 1):
        nxt = []
        for n in range(q + 1):
            acc: dict[int, int] = {}
            for k in range(n + 1):
                for a, c in cur[k].items():
                    for b, d in one[n - k].items():
                        acc[a + b] = acc.get(a + b, 0) + math.comb(n, k) * c * d
            nxt.append(acc)
        cur = nxt
    return cur[q]


@pytest.mark.parametrize("steps,q", [(1, 5), (2, 3), (3, 6), (5, 7), (12, 8), (40, 9)])
def test_r1_coefficients_equal_the_convolution(steps, q):
    assert dict(qb.moment_coefficients(steps, q)) == _moments_by_convolution(steps, q)
    assert sum(c for _, c in qb.moment_coefficients(steps, q)) == steps ** q   # F = 1 at t = 0


@pytest.mark.parametrize("sigma", [0.3, 0.9, 3.0])
def test_r1_closed_cases(sigma):
    t2 = 1 / sigma ** 2
    for m in (1, 7, 1000):
        assert math.exp(qb.log_moment(m, 2, sigma)) == pytest.approx(1 + math.expm1(t2) / m, rel=1e-13)
    assert math.exp(qb.log_moment(1, 4, sigma)) == pytest.approx(math.exp(6 * t2), rel=1e-13)
    assert math.exp(qb.log_moment(2, 3, sigma)) == pytest.approx((2 * math.exp(3 * t2) + 6 * math.exp(t2)) / 8,
                                                                 rel=1e-13)


@pytest.mark.parametrize("steps,epochs,sigma", [(1, 10, 4.0), (2, 1, 1.0), (100, 10, 1.37), (1000, 1, 0.64),
                                                (250, 20, 2.1), (10, 3, 0.6)])
def test_bounds_lie_above_the_exact_values(steps, epochs, sigma):
    p = exact_privacy(steps, epochs, sigma, fprs=[0.1, 1e-3, 1e-5])
    r = route_at(steps, epochs, sigma, check=False)[0]
    for eps in (0.0, 0.5, 1.0, 3.0):
        b, q = qb.delta_qp_bound(steps, epochs, sigma, eps)
        assert 2 <= q <= qb.Q_MAX and b >= r.delta_qp(eps).value - r.delta_qp(eps).error
    for alpha, v in p.tpr.items():
        assert qb.rdp_tpr_bound(steps, epochs, sigma, alpha) >= v.value - v.error
        assert qb.chi2_tpr_bound(steps, epochs, sigma, alpha) >= v.value - v.error


def test_m1_rdp_bound_is_the_gaussian_conversion():
    """M = 1: D_q = q mu^2 / 2, so (R2) is min_q e^{(q-1)(q mu^2/2 - eps)} (q-1)^{q-1}/q^q."""
    mu2 = 10 / 16.0
    want = min(math.exp((q - 1) * (q * mu2 / 2 - 1.0)) * (q - 1) ** (q - 1) / q ** q for q in range(2, qb.Q_MAX + 1))
    assert qb.delta_qp_bound(1, 10, 4.0, 1.0)[0] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("steps,epochs,eps", [(100, 10, 1.0), (1000, 1, 1.0), (1, 10, 1.0)])
def test_rdp_sigma_is_above_the_exact_sigma_and_meets_its_bound(steps, epochs, eps):
    s = float(qb.rdp_sigma([(steps, epochs)], eps, 1e-5, seed=1.0))
    assert qb.delta_qp_bound(steps, epochs, s, eps)[0] <= 1e-5 < qb.delta_qp_bound(steps, epochs, s - 1e-6, eps)[0]
    # measured: delta_{P||Q} <= delta_{Q||P} at these cells, so the one-direction bound lies above the exact sigma
    assert s >= float(exact_sigma_dp(steps, epochs, eps, 1e-5))


@pytest.mark.parametrize("steps,epochs,alpha,beta", [(100, 10, 1e-3, 2e-3), (1000, 1, 1e-3, 1e-2), (1, 10, 0.01, 0.05)])
def test_tpr_sigmas_are_above_the_exact_sigma(steps, epochs, alpha, beta):
    exact = float(exact_sigma_tpr(steps, epochs, alpha, beta))
    b2 = float(qb.tpr_bound_sigma(steps, epochs, alpha, beta))
    rdp = float(qb.rdp_tpr_sigma([(steps, epochs)], alpha, beta, seed=exact))
    assert exact <= rdp and exact <= b2
    assert qb.chi2_tpr_bound(steps, epochs, b2, alpha) <= beta < qb.chi2_tpr_bound(steps, epochs, b2 - 1e-6, alpha)
    assert qb.rdp_tpr_bound(steps, epochs, rdp, alpha) <= beta < qb.rdp_tpr_bound(steps, epochs, rdp - 1e-6, alpha)


def test_fixed_bins_scale():
    a = qb.tpr_bound_sigma(20, 1, 0.01, 0.05, scale2=4)
    b = qb.tpr_bound_sigma(20, 1, 0.01, 0.05)
    assert abs(float(a) - 2 * float(b)) <= 2.1e-6
