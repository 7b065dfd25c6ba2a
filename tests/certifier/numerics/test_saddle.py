"""The privacy profile in the tails (certifier.numerics.saddle, tilted_moments): relative accuracy
against the M = 1 closed form (to delta = 1e-12, eps = 20), the moments off the 1/2-line against
F_1(z) = e^{z(z-1)t^2/2}, and M = 2, E = 1 against a one-dimensional integral."""
import math

import mpmath as mp
import numpy as np
import pytest

from certifier.numerics.laplace_moments import SECOND
from certifier.numerics.saddle import C_MAX, Factor, refine_c, tail_delta, tail_delta_second
from certifier.numerics.targets import exact_privacy, gaussian_delta
from certifier.numerics.tilted_moments import tilted_line

mp.mp.dps = 50


def gaussian_delta_mp(eps, mu):
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def mu_for(eps, delta):
    """mu with delta(eps) = delta (delta increases in mu), by bisection in ln mu on the 50-digit form."""
    lo, hi = math.log(1e-5), math.log(60.0)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gaussian_delta_mp(eps, math.exp(mid)) < delta else (lo, mid)
    return math.exp(0.5 * (lo + hi))


CORNERS = [(eps, d) for eps in (0.01, 0.5, 2.0, 8.0, 20.0) for d in (1e-12, 1e-8, 1e-5, 0.1)]


@pytest.mark.parametrize("eps,delta", CORNERS)
def test_m1_closed_form_relative_in_the_tails(eps, delta):
    """The closed form the M = 1 route answers with keeps 1e-9 relative down to delta = 1e-12."""
    mu = mu_for(eps, delta)
    ref = float(gaussian_delta_mp(eps, mu))
    assert abs(gaussian_delta(eps, mu) / ref - 1.0) < 1e-9
    p = exact_privacy(1, 1, 1.0 / mu, epsilons=[eps])
    assert abs(p.delta[eps].value / ref - 1.0) < 1e-9


@pytest.mark.parametrize("eps,delta", [(0.5, 1e-12), (2.0, 1e-12), (8.0, 1e-8), (20.0, 1e-12), (4.0, 1e-5),
                                       (1.0, 0.1)])
def test_tilted_inversion_m1_both_directions(eps, delta):
    """The inversion on the tilted line with the exact F_1 gives delta to 1e-6 relative (1e-9 where the
    line reaches the saddle point, c >= -C_MAX for P||Q), and its estimate covers the error."""
    mu = mu_for(eps, delta)
    ref = float(gaussian_delta_mp(eps, mu))
    v = tail_delta([Factor(1, 1, 1.0 / mu)], eps, "pq")
    # where c* lies beyond the line's range (c >= -C_MAX) the loss e^{phi(c) - phi(c*)} shows in the estimate
    assert abs(v.value / ref - 1.0) < (1e-9 if v.c > -C_MAX + 0.01 else 1e-2)
    assert abs(v.value - ref) <= v.error + 1e-13 * ref
    w = tail_delta_second([Factor(1, 1, 1.0 / mu)], eps, "pq")   # the check: another line, other nodes
    assert abs(w.value - ref) <= w.error + 1e-13 * ref   # off the saddle point it is looser, never wrong


@pytest.mark.parametrize("sigma,c", [(0.5, -2.0), (1.0, -0.5), (0.5, 1.3), (1.0, 2.5), (3.0, 1.8), (0.7, 2.9)])
def test_tilted_moments_m1(sigma, c):
    """(T1) and (T2) reproduce F_1(z) = e^{z(z-1)t^2/2} off the 1/2-line, relative to F(c)."""
    line = tilted_line(1, sigma, c, 0.05, 6.0)
    z = c + 1j * line.u
    exact = z * (z - 1.0) / (2.0 * sigma * sigma)
    err = np.abs(np.exp(line.log_f - exact[0].real) - np.exp(exact - exact[0].real))
    assert err.max() < 1e-10


def m2_delta_qp(sigma, eps):
    """E_P (L_2 - e^eps)_+ at E = 1 by one integral over X_1: given Y_1 = y, (y + Y_2)/2 > a iff
    Y_2 > b = 2a - y, and E (Y - b)_+ = Phi(t - x_b) - b Phi(-x_b), x_b = (ln b + t^2/2)/t
    (E[Y 1{X > x}] = Phi(t - x)); for b <= 0 it is 1 - b."""
    t, a = mp.mpf(1) / sigma, mp.exp(eps)

    def inner(x):
        y = mp.exp(t * x - t * t / 2)
        b = 2 * a - y
        if b <= 0:
            return (1 - b) / 2
        xb = (mp.log(b) + t * t / 2) / t
        return (mp.ncdf(t - xb) - b * mp.ncdf(-xb)) / 2
    split = (mp.log(2 * a) + t * t / 2) / t   # y = 2a: the kink
    return mp.quad(lambda x: mp.npdf(x) * inner(x), [-mp.inf, split - 3, split, split + 3, mp.inf])


def m2_delta_pq(sigma, eps):
    """E_P (1 - e^eps L_2)_+ at E = 1: given Y_1 = y, (a/2) E (b - Y_2)_+ with b = 2/a - y, and
    E (b - Y)_+ = b Phi(x_b) - Phi(x_b - t)."""
    t, a = mp.mpf(1) / sigma, mp.exp(eps)

    def inner(x):
        y = mp.exp(t * x - t * t / 2)
        b = 2 / a - y
        if b <= 0:
            return mp.mpf(0)
        xb = (mp.log(b) + t * t / 2) / t
        return a / 2 * (b * mp.ncdf(xb) - mp.ncdf(xb - t))
    split = (mp.log(2 / a) + t * t / 2) / t
    return mp.quad(lambda x: mp.npdf(x) * inner(x), [-mp.inf, split - 3, split])


@pytest.mark.parametrize("sigma,eps", [(0.5, 12.0), (0.8, 8.0), (1.0, 5.0), (0.4, 16.0)])
def test_m2_e1_against_one_dimensional_integral(sigma, eps):
    """M = 2, E = 1 at small delta: both directions on the tilted line (at its refined c: by default one epoch
    of two steps is the integral itself, certifier.numerics.two_steps_tails) to 1e-6 relative, within the
    estimate; and the exact profile (the route the exact sigma uses) agrees with the max."""
    ref_qp, ref_pq = float(m2_delta_qp(sigma, eps)), float(m2_delta_pq(sigma, eps))
    assert ref_qp < 2e-8     # a small delta: the 1/2-line's absolute error would be a large share of it
    f = [Factor(2, 1, sigma)]
    v = tail_delta(f, eps, "qp", c=refine_c(f, eps, "qp")[0])
    assert abs(v.value / ref_qp - 1.0) < 1e-6
    assert abs(v.value - ref_qp) <= v.error + 1e-12 * ref_qp
    if ref_pq > 1e-300:
        w = tail_delta(f, eps, "pq", c=refine_c(f, eps, "pq")[0])
        assert abs(w.value - ref_pq) <= max(w.error, 1e-6 * ref_pq) + 1e-3 * ref_qp
    p = exact_privacy(2, 1, sigma, epsilons=[eps])
    ref = max(ref_qp, ref_pq)
    assert abs(p.delta[eps].value / ref - 1.0) < 1e-6


def test_profile_relative_where_the_half_line_was_absolute():
    """At the issue's cell (100, 10, eps 8) around its exact sigma, delta ~ 1e-5 now carries an error
    estimate below 1e-6 of itself, and the second route agrees within the estimates."""
    p = exact_privacy(100, 10, 0.5585, epsilons=[8.0])
    d = p.delta[8.0]
    assert 1e-6 < d.value < 1e-4
    assert d.error < 1e-6 * d.value
    assert math.isfinite(d.value)


# ---------------------------------------------------------------- the density line (density_moments)

DENSITY_CELLS = [(10**4, 2.187), (10**7, 18.3), (10, 99.0), (1000, 5.0)]


@pytest.mark.parametrize("steps,sigma", DENSITY_CELLS)
def test_density_moments_integer_moments(steps, sigma):
    """The density's moments at c = 0, 1, 2, 3 against their closed forms (E L^2 = 1 + v^2, E L^3 =
    e^{3t^2}/M^2 + 3(1 - 1/M) e^{t^2}/M + (1 - 1/M)(1 - 2/M)) to 1e-12."""
    from certifier.numerics.density_moments import log_moment
    t2, m = 1.0 / sigma ** 2, steps
    assert abs(log_moment(m, sigma, 0.0)) < 1e-12
    assert abs(log_moment(m, sigma, 1.0)) < 1e-12
    assert abs(log_moment(m, sigma, 2.0) - math.log1p(math.expm1(t2) / m)) < 1e-12
    l3 = math.exp(3 * t2) / m ** 2 + 3 * (1 - 1 / m) * math.exp(t2) / m + (1 - 1 / m) * (1 - 2 / m)
    assert abs(log_moment(m, sigma, 3.0) - math.log(l3)) < 1e-12


@pytest.mark.parametrize("steps,sigma", DENSITY_CELLS[:2])
def test_density_line_against_t_lines(steps, sigma):
    """F(c + iu) from the density against (T2) at c = 1.7 and (T1) at c = -2.5 (independent quadratures):
    1e-12 relative to F(c), and the density line's own estimates are below 1e-12."""
    from certifier.numerics.density_moments import density_line
    for c in (1.7, -2.5):
        a, b = density_line(steps, sigma, c, 0.5, 20.0), tilted_line(steps, sigma, c, 0.5, 20.0)
        fa, fb = np.exp(a.log_f - a.log_f[0].real), np.exp(b.log_f - a.log_f[0].real)
        assert np.abs(fa - fb).max() < 1e-12
        assert np.abs(np.exp(a.log_f_coarse_x - a.log_f[0].real) - fa).max() < 1e-12
        assert a.floor.max() < 1e-12


@pytest.mark.parametrize("steps,sigma", [(10, 7.513956), (10, 4.47), (100, 4.46), (1000, 1.0)])
def test_density_closes_only_where_its_round_off_is_small(steps, sigma):
    """Where closes() holds at c < 0 the density's moment agrees with (T1) (an independent quadrature) to
    1e-10 relative; where the samples' round-off weighed by L^c is large it does not hold (at M = 10,
    sigma 7.514, c = -3 the density's F was 4.5e-5 off and closes() held: a wrong slope of phi made a
    line of 3e7 u-nodes)."""
    from certifier.numerics.density_moments import closes, log_moment
    from certifier.numerics.tilted_moments import log_moment as t_moment
    held = 0
    for c in (-4.0001, -3.0, -2.0, -1.0, -0.5):
        if closes(steps, sigma, c):
            held += 1
            assert abs(math.expm1(log_moment(steps, sigma, c) - t_moment(steps, sigma, c))) < 1e-10
    assert held >= (0 if steps == 1000 else 2)
    if steps in (10, 1000):   # a light density at M = 10, a heavy left end at (1000, 1): L^c swamps it
        assert not closes(steps, sigma, -3.0) and not closes(steps, sigma, -4.0001)


def test_a_line_too_fine_is_refused_before_it_is_formed():
    """A u-step that would need more than MAX_U_NODES nodes is refused at once (no 30-million-node arrays)."""
    import time

    from certifier.errors import NumericsUnreliableError
    from certifier.numerics.laplace_moments import FIRST
    from certifier.numerics.saddle import MAX_U_NODES, _log_g
    t = time.process_time()
    with pytest.raises(NumericsUnreliableError, match="u-nodes"):
        _log_g([Factor(10, 1000, 7.5)], -4.0, 6.0 / (4 * MAX_U_NODES), 6.0, FIRST)
    assert time.process_time() - t < 0.5


def test_measured_slope_at_the_p_q_range_end():
    """phi'(c) at c = -4 (the P||Q range's end: its central difference reaches c = -4.0001) agrees with the
    GDP model's to 1 %: both moments come from (T1) there, not one from a density swamped by round-off."""
    from certifier.numerics.saddle import _measured_slope, _slope
    f = [Factor(10, 1000, 7.513956)]
    assert abs(_measured_slope(f, 8.0, "pq", -4.0) / _slope(f, 8.0, "pq", -4.0) - 1.0) < 0.01


def test_large_c_against_the_t_line_at_its_range_end():
    """(10^4, 10^3, sigma 2.187, eps 1): the saddle point lies beyond c = 2.9; the density line at its saddle
    point and (T2) at c = 2.9 (second discretization: no shared quadrature) agree within both estimates,
    and the density line's estimate is below 1 % of delta ~ 1e-12 (the 1/2-line's error is 1e-10)."""
    f = [Factor(10**4, 1000, 2.187)]
    v = tail_delta(f, 1.0, "qp")
    assert v.c > 3.0 and 1e-13 < v.value < 1e-11
    assert v.error < 1e-2 * v.value
    w = tail_delta(f, 1.0, "qp", disc=SECOND, c=2.9, second=True)
    assert abs(v.value - w.value) <= v.error + w.error
    assert w.error < 0.2 * w.value


def test_small_eps_tiny_delta_corner():
    """(10^7, 10^4, eps 0.01) near its exact sigma: both directions' saddle points lie in the thousands, the
    density line gives delta ~ 1e-12 to below 1e-4 of itself (measured 1e-8 ... 1e-5, mostly the coarse
    u-sum's change), and a second line (c moved by a fifth) agrees within the estimates."""
    f = [Factor(10**7, 10**4, 18.3232)]
    for side in ("qp", "pq"):
        v = tail_delta(f, 0.01, side)
        assert abs(v.c) > 100.0 and 5e-13 < v.value < 2e-12
        assert v.error < 1e-4 * v.value
        w = tail_delta_second(f, 0.01, side)
        assert abs(v.value - w.value) <= v.error + w.error


@pytest.mark.parametrize("steps,epochs,sigma,eps", [(10, 100, 4.469042180724121, 4.0), (100, 1000, 2.46658, 8.0),
                                                     (106, 140, 1.76791, 4.41)])
def test_p_q_saddle_beyond_minus_four(steps, epochs, sigma, eps):
    """Large sigma, many epochs: delta_{P||Q} is within a few % of delta_{Q||P}, its saddle point lies below
    c = -4 where the density line's round-off (weighted by L^c) swamps it; the T-line at the range's end or
    further in gives it to below 1e-6 of itself, and (T1) at c = -2 (an independent u- and r-grid) agrees within
    both estimates. These cells of the scan were refused before (the 1/2-line's error 3 - 60 % of the target)."""
    f = [Factor(steps, epochs, sigma)]
    v = tail_delta(f, eps, "pq")
    assert v.error < 1e-6 * v.value
    w = tail_delta(f, eps, "pq", c=-2.0, second=True)
    assert w.error < 1e-5 * w.value
    assert abs(v.value - w.value) <= v.error + w.error
    q = tail_delta(f, eps, "qp")
    assert 0.5 < v.value / q.value < 1.0


@pytest.mark.parametrize("sigma,eps", [(2.0, 2.2)])
def test_m2_e1_direct_density_sum(sigma, eps):
    """M = 2, E = 1 where the one-epoch density exists: the direct sum on it (density_moments.direct_delta,
    no u-integral) against the one-dimensional integral, within its estimate (itself below 1e-3 of delta:
    the density's round-off) and 1e-5 relative (measured 1.4e-6)."""
    from certifier.numerics.density_moments import direct_delta
    ref = float(m2_delta_qp(sigma, eps))
    assert ref < 1e-5
    value, err = direct_delta(2, sigma, eps, "qp")
    assert abs(value - ref) <= err + 1e-12 * ref
    assert err < 1e-3 * ref and abs(value / ref - 1.0) < 1e-5
    ref_pq = float(m2_delta_pq(sigma, eps))
    value, err = direct_delta(2, sigma, eps, "pq")
    assert abs(value - ref_pq) <= err + 1e-12 * ref


@pytest.mark.parametrize("alpha,mu", [(1e-8, 0.41), (1e-5, 1.0), (1e-3, 2.5)])
def test_tilted_tpr_m1(alpha, mu):
    """1 - T(alpha) as min over s of delta_{Q||P}(s) + e^s alpha on the tilted line, against the closed form
    1 - Phi(Phi^-1(1 - alpha) - mu): 1e-6 relative, within the estimate."""
    from scipy.special import ndtri

    from certifier.numerics.profile import Route
    from certifier.numerics.targets import GaussianLine, gaussian_tpr
    route = Route("m1", GaussianLine(mu), factors=(Factor(1, 1, 1.0 / mu),))
    s_star = -mu * float(ndtri(alpha)) - mu * mu / 2.0 + 0.03   # the threshold's ln K, moved a little
    v = route.tilted_tpr(alpha, s_star)
    ref = gaussian_tpr(alpha, mu)
    assert abs(v.value / ref - 1.0) < 1e-6
    assert abs(v.value - ref) <= v.error + 1e-12 * ref


def test_the_search_steering_line_takes_the_primary_tails():
    """The search's quick line (far from the target, steering only) takes the primary tilted line (one epoch:
    the direct sum on the density), not the check's second line: at (100, 1, eps 0.5, delta 1e-8) that
    second line cost 1.3 s of a 1.5 s search. The check's route keeps the second tails."""
    from certifier.numerics.pair_routes import laplace_route
    from certifier.numerics.targets import QUICK
    assert not laplace_route(100, 1, 1.37, None, QUICK).second_tails
    assert laplace_route(100, 1, 1.37, None, SECOND).second_tails


def test_a_search_skips_the_fallback_line_where_the_first_line_decides(monkeypatch):
    """With decide (a search's target), the fallback to (T2) at the range's end is not formed where the density
    line's value lies beyond 3 estimates from the target; where it does not, it is tried as without decide.
    (11, 99, sigma 126.8236, eps 0.133): the Q||P saddle point c ~ 48, delta ~ 4e-11, estimate ~ 2e-14."""
    from certifier.numerics import saddle
    factors = (Factor(11, 99, 126.8236),)
    original = saddle.tail_delta
    fallbacks = []

    def spy(*args, **kw):
        fallbacks.append(kw.get("second", args[6] if len(args) > 6 else False))
        return original(*args, **kw)

    monkeypatch.setattr(saddle, "tail_delta", spy)
    full = original(factors, 0.133, "qp")
    assert full.c > 10 and full.error > saddle.FALLBACK * full.value and fallbacks.count(True) == 1
    fallbacks.clear()
    decided = original(factors, 0.133, "qp", decide=1.01 * full.value + 3.0 * full.error)
    assert fallbacks.count(True) == 0 and (decided.value, decided.error) == (full.value, full.error)
    undecided = original(factors, 0.133, "qp", decide=full.value + full.error)
    assert fallbacks.count(True) == 1 and undecided.value == full.value


def test_a_search_stops_the_tpr_minimisation_once_its_side_is_decided(monkeypatch):
    """tilted_tpr with decide: the walk stops as soon as its value lies beyond 3 estimates from the target (fewer
    tail evaluations than the full minimisation) and says the same side as the full value; a target at the
    full value itself is not decided early, so the walk runs as without decide. M = 1, mu 1, alpha 1e-5."""
    from scipy.special import ndtri

    from certifier.numerics import profile
    from certifier.numerics.profile import Route
    from certifier.numerics.targets import GaussianLine
    route = Route("m1", GaussianLine(1.0), factors=(Factor(1, 1, 1.0),))
    s0 = -float(ndtri(1e-5)) - 0.5 + 0.03
    calls = []
    original = profile.tail_delta

    def spy(*args, **kw):
        calls.append(args[1])
        return original(*args, **kw)

    monkeypatch.setattr(profile, "tail_delta", spy)
    full = route.tilted_tpr(1e-5, s0)
    n_full = len(calls)
    for target in (0.5 * full.value, 2.0 * full.value):
        calls.clear()
        v = route.tilted_tpr(1e-5, s0, decide=target)
        assert len(calls) < n_full
        assert (v.value > target) == (full.value > target) and abs(v.value - target) > 3.0 * v.error
    calls.clear()
    same = route.tilted_tpr(1e-5, s0, decide=full.value)
    assert len(calls) == n_full and same.value == full.value


@pytest.mark.parametrize("steps,sigma,eps", [(2, 6.59569, 1.0), (10, 3.04781, 1.0)])
def test_the_fallback_line_is_refined_in_u(steps, sigma, eps):
    """Two epochs at delta ~ 1e-12: the saddle point lies beyond c = 2.9, the density line's estimate is too
    wide and (T2) at the range's end serves. Its u-step estimate (the change to step 2 du, e^{-10 pi} of the
    integrand's size, about 2 % of delta) is replaced by the change from du to du / 2: the estimate falls
    below 1 % of delta, and (T2) at another c (an independent quadrature: every c > 1 is exact) agrees
    within the two estimates."""
    f = [Factor(steps, 2, sigma)]
    v = tail_delta(f, eps, "qp")
    assert v.c == pytest.approx(2.9) and 5e-13 < v.value < 2e-12
    assert v.error < 1e-2 * v.value
    assert v.parts["u_step"] < 1e-3 * v.value
    w = tail_delta(f, eps, "qp", disc=SECOND, c=2.6, second=True, du_scale=0.5)
    assert abs(v.value - w.value) <= v.error + w.error
    assert w.error < 1e-2 * w.value
