"""The exact-sigma grid search (certifier.numerics.targets.grid_search) and the convex early stop of
(R2)/(R3) in certifier.numerics.quick_bounds: against brute force on synthetic monotone curves and
against the full min over orders."""
from __future__ import annotations

import math

import numpy as np
import pytest

from certifier.numerics import quick_bounds as qb
from certifier.numerics.targets import NOISE_STOP, Curve, grid_search


class Synthetic:
    """value(sigma) = target * exp(c (ln r - ln sigma) + d (ln r - ln sigma)^3): decreasing, root at r."""

    def __init__(self, r, c=8.0, d=0.0, lie_at=None):
        self.r, self.c, self.d, self.lie_at = r, c, d, lie_at
        self.what, self.target, self.calls = "synthetic", 1e-5, []

    def value(self, s):
        x = math.log(self.r) - math.log(s)
        return self.target * math.exp(self.c * x + self.d * x ** 3)

    def __call__(self, s):
        self.calls.append(s)
        if self.lie_at is not None and abs(s - self.lie_at) < 1e-12:
            return 1e-9   # a noisy miss where monotonicity says meet: the search must walk
        return self.value(s) - self.target

    def log_gap(self, s):
        g = math.log(self.value(s) / self.target)
        return max(g, 1e-300) if self(s) > 0 else min(g, 0.0)


def _least(f, step=1e-6):
    k = math.ceil(f.r / step)
    while f.value(step * (k - 1)) <= f.target:
        k -= 1
    while f.value(step * k) > f.target:
        k += 1
    return k


@pytest.mark.parametrize("r,seed,c,d", [(1.36919017, 1.2, 8.0, 0.0), (0.4648483, 0.39, 30.0, 5.0),
                                        (68.1141513, 60.0, 3.0, 0.0), (2.5e-6, 1e-5, 2.0, 0.0),
                                        (0.3958795, 0.3176, 50.0, 40.0), (1.0000005, 1.0000005, 8.0, 0.0)])
def test_grid_search_is_the_least_grid_point_with_both_neighbours_evaluated(r, seed, c, d):
    f = Synthetic(r, c, d)
    got = grid_search(f, seed, "1e-6")
    k = _least(f)
    assert abs(float(got) - k * 1e-6) < 1e-12
    seen = {round(s / 1e-6) for s in f.calls if abs(s / 1e-6 - round(s / 1e-6)) < 1e-6}
    assert k in seen and (k - 1 in seen or k == 1)
    assert len(set(f.calls)) <= 14


@pytest.mark.parametrize("r,seed", [(1529.80789, 1400.0), (68.1141513, 60.0), (9.99999951, 9.0), (10.0000004, 9.5),
                                    (1.36919017, 1.2)])
def test_auto_resolution_is_the_fine_answer_rounded_up_in_fewer_evaluations(r, seed):
    """AUTO walks res(sigma) at the bracket's lower end (certifier.resolution.search_step): rounded up to
    res(answer) (`issued`), the same point as the 1e-6 search rounded up, also where the bracket straddles
    sigma = 10, in no more evaluations (on a real curve near sigma ~ 1500, 4 against 15: its value is noisy at
    the 1e-6 grid's scale)."""
    from certifier.resolution import AUTO, issued
    fine, coarse = Synthetic(r, 3.0), Synthetic(r, 3.0)
    want = issued(grid_search(fine, seed, "1e-6"))
    assert issued(grid_search(coarse, seed, AUTO)) == want
    assert len(set(coarse.calls)) <= len(set(fine.calls))


@pytest.mark.parametrize("m,e,eps,delta", [(1, 1000, "0.05", "1e-10"), (1, 3, "0.5", "1e-6")])
def test_auto_resolution_on_the_gaussian_mechanism(m, e, eps, delta):
    from certifier.numerics.targets import exact_sigma_dp
    from certifier.resolution import AUTO, issued
    assert issued(exact_sigma_dp(m, e, eps, delta, AUTO)) == issued(exact_sigma_dp(m, e, eps, delta, "1e-6"))


def test_grid_search_walks_past_a_contradicting_evaluation():
    f = Synthetic(1.36919017)
    k = _least(f)
    f.lie_at = k * 1e-6  # the true answer evaluates as a miss: the search must answer the next point
    assert abs(float(grid_search(f, 1.2, "1e-6")) - (k + 1) * 1e-6) < 1e-12


class Noisy(Synthetic):
    """A shallow curve (one grid step moves it 3e-8 of the target) read with seeded noise of 3e-4 of the target and
    that as its error estimate: the values' noise spans about ten thousand grid steps either side of the root."""

    def __init__(self, r, stop: bool):
        super().__init__(r, c=0.04)
        self.rng, self.amp, self.stop = np.random.default_rng(3), 3e-4 * self.target, stop
        self.values, self.raw, self.errors = {}, {}, {}

    def __call__(self, s):
        if s not in self.values:
            self.calls.append(s)
            v = self.value(s) + self.amp * float(self.rng.uniform(-1.0, 1.0))
            self.values[s], self.raw[s], self.errors[s] = v - self.target, v, self.amp
        return self.values[s]

    undecided = Curve.undecided

    def in_noise(self):
        return self.stop and Curve.in_noise(self)


def test_grid_search_stops_where_the_values_noise_spans_the_bracket():
    """Both ends within 3 estimates of the target and four such evaluations: the search answers its meeting end,
    a point inside the noise band, in fewer evaluations than bisecting on through the round-off."""
    stopped, walked = Noisy(1.36919017, stop=True), Noisy(1.36919017, stop=False)
    got = float(grid_search(stopped, 1.3, "1e-6"))
    grid_search(walked, 1.3, "1e-6")
    assert abs(stopped.value(got) - stopped.target) <= 3.0 * stopped.amp + stopped.amp   # inside the band
    assert stopped(got) <= 0.0                                                          # its read value meets
    assert sum(stopped.undecided(x) for x in stopped.values) >= NOISE_STOP
    assert len(stopped.calls) < len(walked.calls)


def _full_min(steps, epochs, sigma, eps):
    vals = [qb._log_r2(steps, epochs, sigma, q, eps) for q in range(2, qb.Q_MAX + 1)]
    return math.exp(min(min(vals), 0.0))


@pytest.mark.parametrize("steps,epochs,sigma", [(100000, 10, 0.6675), (100, 10, 1.1), (1000, 1, 0.5), (3, 100, 5.0),
                                                (2, 1, 0.7), (250, 20, 1.0)])
def test_r2_early_stop_is_the_full_min_over_orders(steps, epochs, sigma):
    for eps in (0.0, 0.5, 1.0, 4.0, 8.0):
        assert qb.delta_qp_bound(steps, epochs, sigma, eps)[0] == pytest.approx(_full_min(steps, epochs, sigma, eps),
                                                                                rel=1e-12)
    k, b = qb._lines(steps, epochs, sigma)
    full = np.exp(np.minimum(np.min([qb._log_r2(steps, epochs, sigma, q, qb.EPS_LINES)
                                     for q in range(2, qb.Q_MAX + 1)], axis=0), 0.0))
    assert np.allclose(b, full, rtol=1e-12, atol=0)


def test_partitions_with_at_most_k_parts():
    counts = [1, 1, 2, 3, 5, 7, 11, 15, 22, 30, 42, 56, 77, 101, 135, 176, 231, 297, 385, 490, 627]
    assert [sum(1 for _ in qb._partitions(n)) for n in range(21)] == counts
    for n in (1, 7, 16):
        for k in range(1, n + 1):
            assert sorted(qb._partitions(n, parts=k)) == sorted(p for p in qb._partitions(n) if len(p) <= k)


@pytest.mark.parametrize("steps", [1, 2, 3, 5, 100])
def test_moment_coefficients_give_the_lognormal_moments(steps):
    """F_M(q) of (R1) at q = 2 is the chi-square line 1 + (e^{t^2} - 1)/M; at M = 1, e^{q(q-1)t^2/2}."""
    for sigma in (0.7, 1.5):
        t2 = 1 / sigma ** 2
        assert math.exp(qb.log_moment(steps, 2, sigma)) == pytest.approx(1 + math.expm1(t2) / steps, rel=1e-13)
        if steps == 1:
            for q in (3, 7, 12):
                assert qb.log_moment(1, q, sigma) == pytest.approx(q * (q - 1) * t2 / 2, rel=1e-13)


@pytest.mark.parametrize("steps,epochs", [(100, 10), (3, 1000), (1, 10), (100000, 10)])
def test_early_verdicts_equal_the_bounds(steps, epochs):
    for sigma in np.geomspace(0.3, 80.0, 25):
        for eps, delta in ((1.0, 1e-5), (4.0, 1e-6), (0.5, 1e-2)):
            assert qb.r2_meets(steps, epochs, sigma, eps, delta) == (qb.delta_qp_bound(steps, epochs, sigma, eps)[0]
                                                                     <= delta)
        for alpha, beta in ((1e-3, 2e-3), (0.1, 0.2)):
            assert qb.r3_meets(steps, epochs, sigma, alpha, beta) == (qb.rdp_tpr_bound(steps, epochs, sigma, alpha)
                                                                      <= beta)


def test_primary_route_cache_is_bounded_and_agrees_with_a_fresh_line():
    from certifier.numerics import pair_routes
    from certifier.numerics import targets as nt
    s = float(nt.exact_sigma_dp(1000, 1, 1.0, 1e-5))
    cached, _ = nt.route_at(1000, 1, s, check=False)       # the search's line (with its u-hint)
    fresh = pair_routes.primary(1000, 1, s)                 # a line grown from scratch
    a, b = cached.delta(1.0), fresh.delta(1.0)
    assert abs(a.value - b.value) <= a.error + b.error and a.value <= 1e-5
    assert len(nt._PRIMARY) <= nt.PRIMARY_CACHE


def _coefficients_by_enumeration(steps, q):
    """(R1)'s grouped coefficients straight from every partition (the rule before the shared tables)."""
    out = {}
    for lam in qb._partitions(q):
        if len(lam) > steps:
            continue
        ways = math.perm(steps, len(lam))
        for size in set(lam):
            ways //= math.factorial(lam.count(size))
        multinomial = math.factorial(q)
        for part in lam:
            multinomial //= math.factorial(part)
        a = sum(p * (p - 1) for p in lam)
        out[a] = out.get(a, 0) + ways * multinomial
    return tuple(sorted(out.items()))


@pytest.mark.parametrize("steps", [1, 2, 3, 8, 9, 12, 20, 10**6])
def test_shared_partition_tables_give_the_same_coefficients(steps):
    for q in (2, 5, 9, 13, 16):
        assert qb.moment_coefficients(steps, q) == _coefficients_by_enumeration(steps, q)
