"""certifier.numerics.profile: the ln-Lambda density's hockey-stick floor in the far tail (against the independent
M = 2 lattice of certifier.numerics.two_steps and the tilted line), its closed-form bounds on the cut mass, and the
moment line's last resort on that density."""
import math

import numpy as np
import pytest
from helpers import one_epoch_delta_by_convolution

from certifier.numerics.one_epoch import epoch_density
from certifier.numerics.pair_routes import primary, two_steps_route, vfft_route
from certifier.numerics.profile import DENSITY_SWITCH
from certifier.numerics.saddle import Factor, tail_delta
from certifier.numerics.targets import exact_sigma_dp
from certifier.numerics.tv_vfft import _v_top, log_lower_tail, log_period, log_upper_tail


@pytest.mark.parametrize("epochs,sigma,eps", [(2, 120.0, 0.05), (3, 150.0, 0.05), (2, 120.0, 0.035)])
def test_density_floor_holds_against_the_m2_lattice(epochs, sigma, eps):
    """M = 2, sigma >= 100: route vfft's delta (both directions) at delta 6e-13 ... 2e-8 agrees with route m2-lattice
    (another grid, another density) within the two estimates, and its estimate is below 2 % of delta (with a floor
    of 1e-12 plus the whole grid's negative mass it was 100 % at delta = 1e-12)."""
    density, lattice = vfft_route(2, epochs, sigma), two_steps_route(epochs, sigma)
    for side in ("qp", "pq"):
        a = density.delta_qp_line(eps) if side == "qp" else density.delta_pq_line(eps)
        b = lattice.delta_qp_line(eps) if side == "qp" else lattice.delta_pq_line(eps)
        assert 1e-13 < a.value < 1e-7
        assert a.error < 2e-2 * a.value
        assert abs(a.value - b.value) <= a.error + b.error


def test_the_moment_line_takes_the_density_in_the_tails():
    """(1000, 2, sigma 2.83968, eps 0.1), delta about 1e-12: the saddle point lies at c = 13 where the tilted line's
    round-off is weighted by L^c (its estimate about 10 % of delta); the primary moment line takes the density's
    sums (within DENSITY_SWITCH) and the exact sigma answers; on the density alone its value meets 1e-12 within the
    estimate and half a per cent less sigma misses it."""
    route = primary(1000, 2, 2.83968)
    assert route.name == "laplace" and route.density is not None
    got = route.delta_qp(0.1, 1e-12)
    ref = route.density().delta_qp_line(0.1)
    assert got.error <= DENSITY_SWITCH * got.value
    assert got.value == ref.value
    sigma = float(exact_sigma_dp(1000, 2, "0.1", "1e-12"))
    at, below = (vfft_route(1000, 2, s).delta(0.1) for s in (sigma, 0.995 * sigma))
    assert at.value - at.error <= 1e-12 < below.value - below.error


@pytest.mark.parametrize("epochs,sigma,eps", [(2, 120.0, 0.05), (3, 150.0, 0.05), (4, 150.0, 0.05), (10, 200.0, 0.06),
                                              (10, 150.0, 0.1)])
def test_density_floor_with_closed_form_cuts_holds_against_the_m2_lattice(epochs, sigma, eps):
    """M = 2, sigma >= 100, delta 2e-14 ... 1e-10, E = 2 ... 10: route vfft's floor now bounds the mass its grids cut
    in closed form (not the whole grid's |1 - mass|); its delta (both directions) still agrees with route m2-lattice
    within the two estimates, and its estimate is below 0.1 % of delta at delta >= 5e-13 (it was 0.2 - 1.2 %)."""
    density, lattice = vfft_route(2, epochs, sigma), two_steps_route(epochs, sigma)
    assert density.main.cut is not None
    for side in ("qp", "pq"):
        a = density.delta_qp_line(eps) if side == "qp" else density.delta_pq_line(eps)
        b = lattice.delta_qp_line(eps) if side == "qp" else lattice.delta_pq_line(eps)
        assert abs(a.value - b.value) <= a.error + b.error
        if a.value > 5e-13:
            assert a.error < 1e-3 * a.value


@pytest.mark.parametrize("steps,epochs,sigma,eps,sides", [
    (100, 2, 1.294317, 1.0, ("qp",)), (10, 2, 24.251393, 0.1, ("qp", "pq")), (10, 3, 317.131, 0.01, ("qp", "pq")),
    (10, 10, 61.543, 0.1, ("qp", "pq")), (1000, 10, 6.1945, 0.1, ("qp", "pq"))])
def test_density_floor_holds_against_the_tilted_line(steps, epochs, sigma, eps, sides):
    """M >= 10, E in {2, 3, 10}, delta 1e-12 ... 1e-10: route vfft's delta agrees with the tilted line (another method:
    saddle.tail_delta) within the sum of the two estimates, the density's below 0.5 % of delta."""
    density = vfft_route(steps, epochs, sigma)
    for side in sides:
        a = density.delta_qp_line(eps) if side == "qp" else density.delta_pq_line(eps)
        b = tail_delta((Factor(steps, epochs, sigma),), eps, side)
        assert 1e-13 < a.value < 1e-9
        assert a.error < 5e-3 * a.value
        assert abs(a.value - b.value) <= a.error + b.error


def test_cut_bounds_hold_where_the_grid_cuts():
    """(1000, 2, sigma 1.13033): beyond L = 2.45 (the ln-L grid's top when its range left out the other steps' 1)
    lies 2e-15 of the one-epoch tail (one big step). That P- and Q-mass, summed on a V grid three times as long, lies
    below the closed-form bounds of tv_vfft.log_upper_tail, which are within 20 times of it (the Chernoff part's
    slack); the grid's own top (L = 3.45) leaves less than the density resolves; the lower tail's bound holds at
    (10, 1, sigma 1) against the density's mass below L = 0.3."""
    steps, sigma = 1000, 1.13033
    t = 1.0 / sigma
    top = 2.45
    dens = epoch_density(steps, sigma, v_max=3.0 * _v_top(steps, 2, sigma))
    assert math.exp(0.5 * log_period(steps, 2, sigma)) > 3.4
    x = dens.x()
    beyond = x > (top - 1.0) / dens.v
    p_mass = float(dens.f[beyond].sum() * dens.dx)
    q_mass = float((dens.f[beyond] * (1.0 + dens.v * x[beyond])).sum() * dens.dx)
    log_p, log_q = log_upper_tail(steps, t, top)
    assert 1e-16 < p_mass <= math.exp(log_p) < 20.0 * p_mass
    assert q_mass <= math.exp(log_q) < 20.0 * q_mass
    low = epoch_density(10, 1.0)
    below = low.x() < (0.3 - 1.0) / low.v
    assert 1e-12 < float(low.f[below].sum() * low.dx) <= math.exp(log_lower_tail(10, 1.0, 0.3))


def test_a_v_range_past_the_plain_grid_is_cut_to_it_where_it_cuts_little():
    """(10^6, 1, sigma 0.6007688): the full V range (L up to 5.05) needs more than the plain grid's 2^19 points, and
    the tilted inversion it would take lifts the round-off in the tail (delta_{Q||P}(0.1) ~ 1e-10 came out 1.05e-10
    +- 1.6e-11). The plain grid's top (L = 4.8) cuts less than PLAIN_CUT, which grid_cuts bounds: the density line
    reads 1.0127e-10 to 1 %."""
    from certifier.numerics import tv_vfft
    from certifier.numerics.one_epoch import PLAIN_POINTS
    from certifier.numerics.targets import route_at
    steps, sigma = 10**6, 0.6007688
    full, plain = _v_top(steps, 1, sigma), tv_vfft._plain_top(steps, 1, sigma, tv_vfft.V_DX)
    dens = tv_vfft.density_for(steps, 1, sigma)
    assert plain < full and dens.f.size == PLAIN_POINTS
    cut_p, _ = tv_vfft.grid_cuts(dens, log_period(steps, 1, sigma))
    assert cut_p < 10.0 * tv_vfft.PLAIN_CUT
    line = route_at(steps, 1, sigma, check=False)[0].delta_qp_line(0.1)
    assert 1e-10 < line.value < 1.03e-10 and line.error < 0.01 * line.value


@pytest.mark.parametrize("steps,sigma,eps", [(10, 2.41299, 1.0), (10, 1.67321, 2.0), (20, 1.5, 2.0)])
def test_one_epoch_density_tail_against_a_direct_convolution(steps, sigma, eps):
    """One epoch, delta_{Q||P} about 1e-12 - 2e-13 (the tails of the (eps, delta) question at small M): route vfft's
    value lies within its estimate of the direct convolution (helpers; its lattices 0.02 and 0.01 agree to 2e-16).
    The sums are signed: the V density's round-off (samples near -1e-15 in the tail) once was clipped at 0, which
    kept only its positive half; at (10, sigma 2.41299, eps 1) that read 1.0151e-12 against 1.0003e-12, 1.5 %
    high and 2.4 times the estimate (the sigma search then took the density's value and refused the cell)."""
    route = vfft_route(steps, 1, sigma)
    got = route.delta_qp_line(eps)
    coarse, fine = (one_epoch_delta_by_convolution(steps, sigma, eps, h) for h in (0.02, 0.01))
    assert abs(coarse - fine) < 0.1 * got.error
    assert 1e-13 < fine < 2e-12
    assert abs(got.value - fine) <= got.error
    d = route.main.density
    clipped = float(np.clip(d.f, 0.0, None) @ np.clip(np.exp(d.s) - math.exp(eps), 0.0, None)) * d.h
    assert clipped - fine > 0.5 * got.error   # the bias the signed sums remove (half an estimate at least)


def test_one_epoch_density_wraps_nothing():
    """E = 1 is not composed (its FFT power is the identity): the grid's end bands hold the epoch's own tail mass,
    not a wrap, and the floor adds none; at E = 2 the band's mass is the wrap's estimate."""
    one, two = vfft_route(10, 1, 2.41299), vfft_route(10, 2, 2.41299)
    assert one.main.wrap("qp") == 0.0 and one.main.wrap("pq") == 0.0
    assert two.main.wrap("qp") > 0.0
