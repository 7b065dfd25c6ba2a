"""The exact-sigma search's steering coordinates (certifier.numerics.targets.Curve.coord / steer_gap):
x = ln(e^{1/s^2} - 1) and y = ln mu(value) - ln mu(target), in which the GDP limit is a line of slope
1/2. Steering only: the answer is the least grid point whatever the steering, checked here against
brute force, against the unsteered search at real cells, and for the coordinates' own algebra."""
from __future__ import annotations

import math

import pytest

from certifier.numerics import targets as nt
from certifier.numerics.profile import Route
from certifier.params import parse_positive_decimal


def _gdp_mu(steps, epochs, s):
    return math.sqrt(epochs / steps * math.expm1(1.0 / (s * s)))


class GdpCurve(nt.Curve):
    """A pair that IS the GDP limit: the Gaussian shift mu^2 = (E/M)(e^{1/s^2} - 1) (closed forms)."""

    def __init__(self, steps, epochs, scale2, kind, x, target, steered=True):
        functional = (lambda r: r.delta(x)) if kind == "dp" else (lambda r: r.tpr(x))
        mu_of = (lambda v: nt.mu_for_delta(x, v)) if kind == "dp" else (lambda v: nt.mu_for_tpr(x, v))
        super().__init__(steps, epochs, scale2, functional, target, kind, mu_of=mu_of if steered else None)

    def route(self, s, u_hint):
        return Route("gdp", nt.GaussianLine(_gdp_mu(self.steps, self.epochs, s)))


def _least(f, step=1e-6, start=None):
    """Brute force over the grid from a point that misses upwards."""
    k = start
    while f(step * (k - 1)) <= 0:
        k -= 1
    while f(step * k) > 0:
        k += 1
    return k


@pytest.mark.parametrize("scale2", [1, 7])
def test_coord_and_sigma_at_are_inverse_and_decreasing(scale2):
    f = GdpCurve(100, 10, scale2, "dp", 1.0, 1e-5)
    xs = []
    for s in (0.04, 0.1, 0.3336, 1.0, 2.5, 30.0, 1e3):
        x = f.coord(s)
        assert f.sigma_at(x) == pytest.approx(s, rel=1e-12)
        xs.append(x)
    assert all(a > b for a, b in zip(xs, xs[1:]))
    assert f.coord(1.0) == pytest.approx(math.log(math.expm1(scale2)), rel=1e-12)


def test_mu_of_inverts_the_gaussian_closed_forms_and_clamps():
    for mu in (0.05, 0.7, 3.1, 9.0):
        for eps in (0.0, 1.0, 4.0):
            d = nt.gaussian_delta(eps, mu)
            if d > 1e-250:
                assert nt.mu_for_delta(eps, d) == pytest.approx(mu, rel=1e-8)
        for alpha in (0.1, 1e-3):
            tpr = nt.gaussian_tpr(alpha, mu)
            if tpr < 0.99:  # nearer 1 the TPR's float has lost the digits of mu (steering needs none)
                assert nt.mu_for_tpr(alpha, tpr) == pytest.approx(mu, rel=1e-8)
    lo, hi = nt.MU_RANGE
    assert nt.mu_for_delta(1.0, 0.0) == lo and nt.mu_for_delta(1.0, 1.0) == hi
    top = nt.mu_for_tpr(1e-3, 1.0)   # TPR 1 is clamped below 1: finite, above every TPR < 1's
    assert math.isfinite(top) and top >= nt.mu_for_tpr(1e-3, 1 - 1e-12) and nt.mu_for_tpr(1e-3, 1e-3) == lo


@pytest.mark.parametrize("cell", [(100, 10, 1, "dp", 1.0, 1e-5), (10**7, 1, 1, "dp", 4.0, 1e-5),
                                  (1000, 1, 1, "tpr", 1e-3, 2e-3), (250, 20, 1, "tpr", 1e-2, 0.036),
                                  (100, 1, 10, "dp", 0.5, 1e-6), (3, 1000, 1, "dp", 1.0, 1e-5)])
def test_steered_search_on_an_exact_gdp_pair_is_the_least_grid_point_in_few_evaluations(cell):
    m, e, scale2, kind, x, target = cell
    f = GdpCurve(m, e, scale2, kind, x, target)
    mu_star = nt.gdp_mu_for_delta(x, target) if kind == "dp" else nt.isf(x) - nt.isf(target)
    seed = math.sqrt(scale2) * nt._gdp_sigma(m, e, mu_star)
    got = nt.grid_search(f, 0.8 * seed, "1e-6")     # a seed 20 % low, as at E = 1
    brute = GdpCurve(m, e, scale2, kind, x, target, steered=False)
    k = _least(brute, start=math.ceil(seed / 1e-6) + 2)
    assert got == nt.decimal_str(parse_positive_decimal("r", "1e-6") * k)
    # on a pair where the coordinates are exactly a line of slope 1/2: the seed, one step, the answer
    # and the point below it (plus at most two steps where ceil lands one grid point off)
    assert len(f.values) <= 6


CELLS = [("dp", 1000, 1, 1.0, 1e-5), ("tpr", 10, 1, 1e-3, 2e-3), ("dp", 100000, 10, 1.0, 1e-5),
         ("tpr", 2, 10, 1e-3, 2e-3), ("dp", 3, 1000, 1.0, 1e-5)]


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: "-".join(map(str, c)))
def test_steering_does_not_change_the_answer_and_saves_evaluations(cell, monkeypatch):
    kind, m, e, x, target = cell
    made = []
    init = nt.Curve.__init__

    def recording(self, *a, steer=True, **kw):
        init(self, *a, **kw)
        made.append(self)
    monkeypatch.setattr(nt.Curve, "__init__", recording)
    search = nt.exact_sigma_dp if kind == "dp" else nt.exact_sigma_tpr
    nt._PRIMARY.clear()
    steered = search(m, e, x, target)
    n_steered = len(made[-1].values)

    def unsteered(self, *a, mu_of=None, **kw):
        init(self, *a, **kw)
        made.append(self)
    monkeypatch.setattr(nt.Curve, "__init__", unsteered)
    monkeypatch.setattr(nt, "SECANT", False)
    nt._PRIMARY.clear()
    plain = search(m, e, x, target)
    assert steered == plain
    assert n_steered <= len(made[-1].values)


class JumpCurve(nt.Curve):
    """A pair that IS the one-big-step model of one epoch: delta(eps) of the Gaussian shift 1/s at
    ln(1 + M (e^eps - 1)) (closed forms), steered in the jump coordinates x = ln(1/s)."""

    def __init__(self, steps, eps, target, steered=True):
        e_big = nt.jump_eps(steps, eps)
        super().__init__(steps, 1, 1, lambda r: r.delta(e_big), target, "jump",
                         mu_of=(lambda v: nt.mu_for_delta(e_big, v)) if steered else None, jump=steered)

    def route(self, s, u_hint):
        return Route("jump", nt.GaussianLine(1.0 / s))


@pytest.mark.parametrize("steps,eps,target", [(10**6, 2.0, 1e-8), (3000, 3.0, 1e-12), (50, 8.0, 1e-5)])
def test_jump_steering_on_an_exact_jump_pair_is_the_least_grid_point_in_few_evaluations(steps, eps, target):
    """In the jump coordinates the model is a line of slope 1 (y = x + const): from a seed 3 % low the search
    needs the seed, a step or two, the answer and the point below it."""
    f = JumpCurve(steps, eps, target)
    assert f.coord(0.5) == pytest.approx(math.log(2.0)) and f.sigma_at(f.coord(0.37)) == pytest.approx(0.37)
    seed = 1.0 / nt.mu_for_delta(nt.jump_eps(steps, eps), target)
    got = nt.grid_search(f, 0.97 * seed, "1e-6")
    k = _least(JumpCurve(steps, eps, target, steered=False), start=math.ceil(seed / 1e-6) + 2)
    assert got == nt.decimal_str(parse_positive_decimal("r", "1e-6") * k)
    assert len(f.values) <= 6


def _gdp_seed_dp(steps, eps, delta):
    return nt._gdp_sigma(steps, 1, nt.gdp_mu_for_delta(eps, delta))


def _gdp_seed_tpr(steps, alpha, beta):
    return nt._gdp_sigma(steps, 1, nt.isf(alpha) - nt.isf(beta))


@pytest.mark.parametrize("search,gdp_seed,steps,x,target", [(nt.exact_sigma_dp, _gdp_seed_dp, 10**6, 2.0, 1e-8),
                                                             (nt.exact_sigma_tpr, _gdp_seed_tpr, 10**5, 1e-8, 1e-7)],
                         ids=["dp", "tpr"])
def test_one_epoch_searches_start_at_the_one_big_step_seed(search, gdp_seed, steps, x, target, monkeypatch):
    """At one epoch of many steps the GDP seed lies 20 - 35 % low (delta 1e-3 where 1e-8 is asked); the one-big-step
    seed lies within 0.5 % of the exact sigma, and the search evaluates at most five sigmas."""
    made = []
    init = nt.Curve.__init__

    def recording(self, *a, **kw):
        init(self, *a, **kw)
        made.append(self)
    monkeypatch.setattr(nt.Curve, "__init__", recording)
    nt._PRIMARY.clear()
    exact = float(search(steps, 1, x, target))
    f = made[-1]
    assert f.jump
    first = next(iter(f.values))            # the seed is the first sigma evaluated
    gdp = gdp_seed(steps, x, target)
    assert abs(first / exact - 1.0) < 5e-3 < abs(gdp / exact - 1.0) / 40
    assert len(f.values) <= 5
