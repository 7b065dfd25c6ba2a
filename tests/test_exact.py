"""Exact TV (Theorem 4.1) and exact sigma (C.4) against independent references."""
import math

import numpy as np
import pytest
from scipy.stats import norm

from certifier import closed_form as cf
from certifier.errors import NumericsUnreliable
from certifier.exact import exact_sigma, exact_tv, tv_fft, tv_from_moments, tv_m1, tv_mellin
from certifier.montecarlo import monte_carlo_tv
from certifier.one_epoch import epoch_density


@pytest.mark.parametrize("epochs,sigma", [(1, 0.7), (4, 1.3), (10, 2.0), (40, 3.5), (125, 5.039)])
def test_formula_14_reproduces_m1_closed_form(epochs, sigma):
    # C.4: with F_1(q) = exp(q(q-1)t^2/2), formula (14) must give 2 Phi(t sqrt(E)/2) - 1
    t = 1.0 / sigma
    q = lambda u: 0.5 + 1j * u  # noqa: E731
    moment = lambda u: np.exp(q(u) * (q(u) - 1.0) * t * t / 2.0)  # noqa: E731
    got = tv_from_moments(moment, epochs, var_log=t * t)
    want = 2.0 * norm.cdf(t * math.sqrt(epochs) / 2.0) - 1.0
    assert abs(got - want) < 1e-12
    assert abs(tv_m1(epochs, sigma) - want) < 1e-14


@pytest.mark.parametrize("steps,epochs,sigma",
                         [(100, 10, 1.426215), (500, 10, 0.834432), (100, 40, 2.610518), (2, 3, 1.5)])
def test_two_routes_agree(steps, epochs, sigma):
    # FFT composition of the ln L density vs. the Mellin formula (14): independent compositions
    dens = epoch_density(steps, sigma)
    a, b = tv_fft(dens, epochs).tv, tv_mellin(dens, epochs).tv
    assert abs(a - b) < 1e-10


@pytest.mark.parametrize("steps,epochs,sigma,seed", [(8, 4, 1.5, 1), (20, 3, 1.1, 2)])
def test_monte_carlo_agrees_within_three_standard_errors(steps, epochs, sigma, seed):
    mc = monte_carlo_tv(steps, epochs, sigma, samples=400_000, seed=seed)
    ex = exact_tv(steps, epochs, sigma)
    assert mc.se > 0
    assert abs(mc.tv - ex.tv) < 3 * mc.se


def test_tv_decreases_in_sigma_and_respects_both_bounds():
    m, e = 50, 5
    sigmas = [0.8, 1.0, 1.3, 1.7, 2.5, 4.0]
    tvs = [exact_tv(m, e, s, check=False).tv for s in sigmas]
    assert all(a > b for a, b in zip(tvs, tvs[1:]))
    for s, tv in zip(sigmas, tvs):
        assert tv <= cf.tv_bound(m, e, s)  # Theorem 3.3
        assert tv >= 2 * norm.cdf(math.sqrt(e / m) / (2 * s)) - 1  # lower bound of C.4


def test_small_ratio_tends_to_sqrt_pi_over_2():
    # C.6: U(c_E)/TV -> sqrt(pi/2) as E/M -> 0; Section 4 reports 1.253314-1.253413 at E=1
    r = cf.tv_bound(4096, 1, 1.5) / exact_tv(4096, 1, 1.5).tv
    assert 1.2533 < r < 1.2535


@pytest.mark.parametrize("epochs,want", [(10, "1.426215"), (20, "1.907073"), (40, "2.610518")])
def test_exact_sigma_reproduces_table_4(epochs, want):
    assert exact_sigma(100, epochs, "0.1") == want


def test_exact_sigma_is_least_on_its_grid():
    s = exact_sigma(30, 3, "0.2", resolution="1e-4")
    q = float(s)
    assert exact_tv(30, 3, q, check=False).tv <= 0.2 < exact_tv(30, 3, q - 1e-4, check=False).tv
    assert len(s.split(".")[1]) <= 4


def test_exact_tv_rejects_unsupported_sigma():
    with pytest.raises(NumericsUnreliable):
        exact_tv(10, 2, 0.05)


def test_heavy_tail_uses_the_tilted_inversion_and_stays_accurate():
    # M=10, sigma=0.7: a plain grid would need > 2^21 points; the tilted inversion keeps 2^19
    from certifier.exact import density_for
    dens = density_for(10, 2, 0.7)
    assert dens.f.size == 1 << 19
    a, b = tv_fft(dens, 2).tv, tv_mellin(dens, 2).tv
    assert abs(a - b) < 1e-9
    mc = monte_carlo_tv(10, 2, 0.7, samples=400_000, seed=7)
    assert abs(mc.tv - a) < 3 * mc.se


def test_unresolvable_density_is_refused_not_returned():
    with pytest.raises(NumericsUnreliable, match="not"):
        exact_tv(10, 2, 0.3)
