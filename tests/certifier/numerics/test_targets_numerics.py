"""The exact privacy profile delta(eps), the trade-off curve T(alpha) and the exact sigma for the dp and
tpr kinds (certifier.numerics, docs/targets.md): against the M = 1 closed forms, an M = 2 quadrature,
Monte Carlo with standard errors, the certified rows of the committed certificates, TV = delta(0),
and at the corners of the domain (M = 1, 2, 3, 10^4 - 10^6; E = 1 - 1000; small and large sigma)."""
from __future__ import annotations

import base64
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr, ndtri

from certifier.numerics import montecarlo_profile as mc
from certifier.numerics import pair_routes
from certifier.numerics.exact import exact_tv
from certifier.numerics.targets import (
    exact_privacy,
    exact_sigma_dp,
    exact_sigma_tpr,
    gaussian_delta,
    gaussian_tpr,
    route_at,
)

ROOT = Path(__file__).resolve().parents[3]


def delta_m1(eps, mu):
    return ndtr(-eps / mu + mu / 2) - math.exp(eps) * ndtr(-eps / mu - mu / 2)


def tpr_m1(alpha, mu):
    return 1.0 - ndtr(ndtri(1 - alpha) - mu)


@pytest.mark.parametrize("epochs,sigma", [(1, 0.3), (1, 1.0), (10, 2.0), (100, 10.0), (1000, 30.0), (3, 0.15)])
def test_laplace_route_reproduces_the_m1_closed_forms(epochs, sigma):
    """At M = 1 the moment line is F_1(q) = e^{q(q-1)t^2/2}; (P1) must give the Gaussian-shift profile."""
    mu = math.sqrt(epochs) / sigma
    r = pair_routes.laplace_route(1, epochs, sigma)
    for eps in (0.0, 0.3, 1.0, 3.0):
        for v in (r.delta_qp(eps), r.delta_pq(eps)):
            assert abs(v.value - delta_m1(eps, mu)) <= max(v.error, 1e-14) and v.error < 1e-9
    for alpha in (0.1, 1e-3, 1e-6):
        v = r.tpr(alpha)
        assert abs(v.value - tpr_m1(alpha, mu)) <= max(v.error, 1e-14)
    assert gaussian_delta(1.0, mu) == pytest.approx(delta_m1(1.0, mu), rel=1e-14, abs=1e-16)  # log_ndtr form: ulps
    assert gaussian_tpr(1e-3, mu) == pytest.approx(tpr_m1(1e-3, mu), abs=1e-15)


def _m2_quadrature(sigma: float, eps: float) -> tuple[float, float]:
    """M = 2, E = 1: (delta_{Q||P}, delta_{P||Q}) by one quadrature over X_1, the X_2 expectation in
    closed form: E(Y - k)_+ = Phi(d) - k Phi(d - t), E(k - Y)_+ = k Phi(t - d) - Phi(-d), d = (t^2/2 - ln k)/t."""
    t, big_k = 1.0 / sigma, math.exp(eps)

    def call(k):  # E (Y - k)_+
        if k <= 0:
            return 1.0 - k
        d = (0.5 * t * t - math.log(k)) / t
        return ndtr(d) - k * ndtr(d - t)

    def put(k):   # E (k - Y)_+
        if k <= 0:
            return 0.0
        d = (0.5 * t * t - math.log(k)) / t
        return k * ndtr(t - d) - ndtr(-d)

    phi = lambda x: math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)  # noqa: E731
    y1 = lambda x: math.exp(t * x - 0.5 * t * t)  # noqa: E731
    # Lambda = (Y1 + Y2)/2: (Lambda - K)_+ = (Y2 - (2K - Y1))_+ / 2; (1 - K Lambda)_+ = (K/2)(2/K - Y1 - Y2)_+
    qp = integrate.quad(lambda x: 0.5 * call(2 * big_k - y1(x)) * phi(x), -12, 12 + t, limit=400,
                        epsabs=1e-14, epsrel=1e-12)[0]
    pq = integrate.quad(lambda x: 0.5 * big_k * put(2 / big_k - y1(x)) * phi(x), -12, 12 + t, limit=400,
                        epsabs=1e-14, epsrel=1e-12)[0]
    return qp, pq


@pytest.mark.parametrize("sigma", [0.4, 0.7, 1.5])
def test_m2_agrees_with_quadrature(sigma):
    r, other = route_at(2, 1, sigma)
    for eps in (0.2, 1.0, 2.5):
        qp, pq = _m2_quadrature(sigma, eps)
        a, b = r.delta_qp(eps), r.delta_pq(eps)
        assert abs(a.value - qp) <= a.error + 1e-11
        assert abs(b.value - pq) <= b.error + 1e-11
        assert abs(other.delta_qp(eps).value - qp) <= other.delta_qp(eps).error + 1e-11


@pytest.mark.parametrize("steps,epochs,sigma", [(2, 1, 0.7), (10, 2, 0.3), (100, 10, 0.35), (1000, 1, 0.3),
                                                (10000, 1, 0.35), (3, 1000, 3.0)])
def test_tv_is_delta_at_zero(steps, epochs, sigma):
    p = exact_privacy(steps, epochs, sigma, epsilons=[0.0])
    tv = exact_tv(steps, epochs, sigma)
    assert abs(p.tv.value - tv.tv) <= p.tv.error + tv.error
    assert abs(p.delta[0.0].value - tv.tv) <= p.delta[0.0].error + tv.error


@pytest.mark.parametrize("steps,epochs,sigma", [(100, 10, 0.3), (1000, 1, 0.3), (3, 1, 0.5), (10, 100, 0.8),
                                                (1000000, 1, 0.3), (100, 1, 10.0), (1000000, 10, 1.0),
                                                (10000, 1000, 2.0), (1000, 1, 0.1), (2, 3, 0.1)])
def test_corners_are_answered_with_two_routes_that_agree(steps, epochs, sigma):
    """Cells the V-density route refuses (certifier.numerics.tradeoff at (100, 10, 0.3), (1000, 1, 0.3)) and the
    corners: every value with an estimate <= 1e-8 and the second route within the summed estimates."""
    r, other = route_at(steps, epochs, sigma)
    assert other is not None and other.name != r.name or other.name.startswith("vfft")
    for eps in (0.0, 0.5, 2.0, 6.0):
        a, b = r.delta(eps), other.delta(eps)
        assert a.error <= 1e-8 and abs(a.value - b.value) <= a.error + b.error + 1e-12
    for alpha in (0.1, 1e-3, 1e-5):
        a, b = r.tpr(alpha), other.tpr(alpha)
        assert a.error <= 1e-8 and abs(a.value - b.value) <= a.error + b.error + 1e-12
    p = exact_privacy(steps, epochs, sigma, fprs=[1e-3])
    assert 1e-3 <= p.tpr[1e-3].value <= 1.0
    rough = r.epsilon(1e-5).value
    if rough < 20:
        assert 0.0 <= exact_privacy(steps, epochs, sigma, deltas=[1e-5]).epsilon[1e-5].value
    else:  # (P1) carries e^{eps/2} x the line's error; the tilted line (docs/exact.md §8) answers beyond the
        # target domain (eps <= 20) as far as its lines reach (about 55 here) and refuses further out, never a value
        from certifier.errors import NumericsUnreliableError
        try:
            v = exact_privacy(steps, epochs, sigma, deltas=[1e-5]).epsilon[1e-5]
        except NumericsUnreliableError as err:
            assert "eps at delta" in str(err) and rough > 60
        else:
            assert math.isfinite(v.value) and v.value > 15.0 and v.error <= 1e-4 * v.value


@pytest.mark.parametrize("steps,epochs,sigma,seed", [(10, 3, 0.8, 1), (3, 2, 0.5, 2)])
def test_monte_carlo_within_four_standard_errors(steps, epochs, sigma, seed):
    n = 200_000
    lp = mc.log_lambda_samples(steps, epochs, sigma, n, under_q=False, seed=seed)
    lq = mc.log_lambda_samples(steps, epochs, sigma, n, under_q=True, seed=seed + 100)
    r, _ = route_at(steps, epochs, sigma)
    for eps in (0.3, 1.0):
        for est, exact in ((mc.delta_pq(lp, eps), r.delta_pq(eps)), (mc.delta_qp(lq, eps), r.delta_qp(eps))):
            assert est.se > 0 and abs(est.value - exact.value) <= 4 * est.se
    for alpha in (0.05, 0.01):
        tpr, s = r.main.tpr(alpha)       # the Neyman-Pearson threshold K = e^s of FPR alpha
        fpr_hat, tpr_hat = mc.rate_above(lp, s), mc.rate_above(lq, s)
        assert abs(fpr_hat.value - alpha) <= 4 * fpr_hat.se
        assert abs(tpr_hat.value - tpr) <= 4 * tpr_hat.se


def _certificates():
    for path in sorted((ROOT / "artifacts" / "certificates").glob("*.json")):
        env = json.loads(path.read_text())
        yield path.name, json.loads(base64.b64decode(env["payload"]))["predicate"]


@pytest.mark.parametrize("name,pred", list(_certificates()))
def test_exact_rows_lie_below_the_certified_rows_and_close(name, pred):
    """The certificates' eps(delta) and TPR rows are certified UPPER bounds (eps on a 1e-4 grid). Measured
    gaps: eps +1.3e-5 to +2.5e-3 (largest at M = 500, E = 10, delta = 1e-6), TPR +1e-8 to +7.1e-6 relative."""
    c = pred["claim"]
    deltas = [float(d) for d in pred["privacy"]["epsilon_at_delta"]]
    alphas = [float(a) for a in pred["tpr"]]
    p = exact_privacy(c["steps"], c["epochs"], float(c["sigma"]), deltas=deltas, fprs=alphas)
    for d, row in pred["privacy"]["epsilon_at_delta"].items():
        v = p.epsilon[float(d)]
        certified = float(row["epsilon"])
        assert v.value - v.error <= certified <= v.value + 3e-3, (d, v, certified)
    for a, row in pred["tpr"].items():
        v = p.tpr[float(a)]
        certified = float(row["tpr"])
        assert v.value - v.error <= certified <= v.value * (1 + 1e-5), (a, v, certified)


@pytest.mark.parametrize("steps,epochs,eps,delta", [(100, 10, 1.0, 1e-5), (250, 20, 0.5, 1e-5), (1, 10, 1.0, 1e-5),
                                                    (2, 1, 1.0, 1e-5), (1000, 1, 4.0, 1e-6), (3, 1000, 1.0, 1e-5)])
def test_exact_sigma_dp_is_the_least_grid_point(steps, epochs, eps, delta):
    s = float(exact_sigma_dp(steps, epochs, eps, delta))
    at = lambda x: exact_privacy(steps, epochs, x, epsilons=[eps]).delta[eps]  # noqa: E731
    hit, miss = at(s), at(s - 1e-6)
    # the grid point meets the target and the one below misses it, within the error estimates (at
    # sigma = 68, M = 3, E = 1000, neighbouring grid points differ by 1e-12 in delta, below the estimate)
    assert hit.value - hit.error <= delta < miss.value + miss.error and hit.error < 1e-3 * delta
    assert at(s * 1.001).value < delta < at(s / 1.001).value
    if steps == 1:  # closed form: sqrt(E)/mu*, mu* the Gaussian shift with delta(eps) = delta
        from scipy.optimize import brentq
        mu = brentq(lambda m: delta_m1(eps, m) - delta, 0.01, 50, xtol=1e-14)
        assert s == pytest.approx(math.ceil(math.sqrt(epochs) / mu / 1e-6) * 1e-6, abs=1.01e-6)


@pytest.mark.parametrize("steps,epochs,alpha,beta", [(100, 10, 1e-3, 2e-3), (1, 10, 1e-3, 2e-3),
                                                     (1000, 1, 1e-3, 1e-2), (3, 100, 0.1, 0.2)])
def test_exact_sigma_tpr_is_the_least_grid_point(steps, epochs, alpha, beta):
    s = float(exact_sigma_tpr(steps, epochs, alpha, beta))
    at = lambda x: exact_privacy(steps, epochs, x, fprs=[alpha]).tpr[alpha].value  # noqa: E731
    assert at(s) <= beta < at(s - 1e-6)
    if steps == 1:
        mu = ndtri(1 - alpha) - ndtri(1 - beta)
        assert s == pytest.approx(math.ceil(math.sqrt(epochs) / mu / 1e-6) * 1e-6, abs=1.01e-6)


def test_monotone_in_sigma():
    sigmas = np.linspace(0.4, 3.0, 9)
    d = [exact_privacy(50, 5, float(s), epsilons=[1.0], fprs=[1e-3]) for s in sigmas]
    # non-increasing within the error estimates: at sigma near 3, delta(1) is round-off (~1e-15) and
    # only its estimate (~1e-13) is meaningful
    for vals in ([p.delta[1.0] for p in d], [p.tpr[1e-3] for p in d]):
        assert all(b.value <= a.value + a.error + b.error for a, b in zip(vals, vals[1:]))
        assert vals[0].value > 100 * vals[-1].value + vals[-1].error   # and it does decrease


def test_fixed_bins_is_the_one_epoch_pair_at_sigma_over_sqrt_e():
    from certifier.numerics.targets import exact_privacy_scheme
    a = exact_privacy_scheme(20, 4, 2.0, "fixed-bins", deltas=[1e-5], fprs=[1e-3])
    b = exact_privacy(20, 1, 1.0, deltas=[1e-5], fprs=[1e-3])
    assert a.epsilon == b.epsilon and a.tpr == b.tpr
    s = exact_sigma_dp(20, 4, 1.0, 1e-5, scheme="fixed-bins")
    assert exact_privacy(20, 1, float(s) / 2, epsilons=[1.0]).delta[1.0].value <= 1e-5


def test_tiny_sigma_and_bad_input():
    from certifier.errors import NumericsUnreliableError, ParameterError
    p = exact_privacy(100, 10, 0.06, epsilons=[1.0], fprs=[1e-3])        # E Lambda^{1/2} below 1e-17
    assert p.delta[1.0].value == 1.0 and p.tpr[1e-3].value == 1.0 and p.method.startswith("bound")
    with pytest.raises(NumericsUnreliableError):
        exact_privacy(100, 10, 0.01, epsilons=[1.0])
    for kw in ({"deltas": [0.0]}, {"deltas": [1.5]}, {"fprs": [1.0]}, {"epsilons": [-1.0]}):
        with pytest.raises(ParameterError):
            exact_privacy(10, 1, 1.0, **kw)
    with pytest.raises(ParameterError):
        exact_sigma_tpr(10, 1, 0.1, 0.05)
