"""Closed form of Section 3: identities, both branches, extreme sigma."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from certifier.numerics import closed_form as cf


@given(st.integers(1, 10**6), st.integers(1, 10**4), st.floats(0.3, 50.0))
@settings(max_examples=200, deadline=None)
def test_c_E_sandwich(m, e, sigma):
    x, hi = cf.c_E_sandwich(m, e, sigma)
    c = cf.c_E(m, e, sigma)
    assert x * (1 - 1e-12) <= c <= hi * (1 + 1e-12)  # B.2


@given(st.integers(1, 10**5), st.integers(1, 1000), st.floats(0.01, 0.99))
@settings(max_examples=200, deadline=None)
def test_closed_form_sigma_solves_the_bound_on_both_branches(m, e, lam):
    s = cf.closed_form_sigma(m, e, lam)  # Corollary 3.4
    assert cf.tv_bound(m, e, s) == pytest.approx(lam, rel=1e-9)


def test_U_branches_meet_and_increase():
    assert cf.U(1.0) == 0.5 and cf.U(1.0 + 1e-12) == pytest.approx(0.5, abs=1e-12)
    cs = [0.0, 0.01, 0.5, 1.0, 2.0, 10.0, 1e6]
    assert all(cf.U(a) < cf.U(b) for a, b in zip(cs, cs[1:]))
    assert cf.U(3.0) == 0.75 and cf.U(0.04) == pytest.approx(0.1)


def test_no_overflow_for_small_sigma_and_no_lost_digits_for_large():
    assert cf.tv_bound(100, 10, 0.01) == 1.0  # e^{10^4} overflows a double; U -> 1
    assert cf.c_E(100, 10, 0.01) == math.inf
    assert cf.accuracy_bound(100, 10, 0.01) == 1.0
    # log(1 + c_E) in (700, 709.78): still a finite double (e^{1/0.0376^2} - 1 = 1.5527e307)
    assert cf.c_E(1, 1, 0.0376) == pytest.approx(math.expm1(1 / 0.0376**2), rel=1e-12)
    assert math.isfinite(cf.c_E_sandwich(1, 1, 0.0376)[0])
    s = 1e4  # c_E = E/(M s^2) (1 + O(1/s^2)): needs expm1/log1p
    assert cf.c_E(100, 10, s) == pytest.approx(10 / (100 * s * s), rel=1e-7)
    assert cf.tv_bound(100, 10, s) == pytest.approx(0.5 * math.sqrt(10 / (100 * s * s)), rel=1e-7)


def test_paper_values():
    # Table 2: sigma = 5.039 at M=128, E=125 is the closed form for lambda = 0.1 (bound 0.55)
    assert cf.closed_form_sigma(128, 125, 0.1) == pytest.approx(5.039, abs=5e-4)
    assert cf.accuracy_bound(128, 125, 1.561) == pytest.approx(0.70, abs=5e-3)
    # Table 3: chi-square TPR bound at alpha = 1e-3, M=100, E=10, sigma=1.4262: 0.0091
    c = cf.c_E(100, 10, 1.426215)
    assert cf.chi2_tpr_bound(1e-3, c) == pytest.approx(0.0091, abs=5e-5)
    assert cf.chi2_tpr_bound(0.1, c) == pytest.approx(0.1767, abs=5e-5)


@pytest.mark.parametrize("m,e,lam", [(100, 10, 0.1), (250, 20, 0.1), (500, 40, 0.1)])
def test_gdp_limit_within_paper_range_above_exact(m, e, lam):
    # B.3: the GDP-limit multiplier lies 0.04-0.40 % above the exact sigma in the nine cells
    exact = {(100, 10): 1.426215, (250, 20): 1.309428, (500, 40): 1.310146}[(m, e)]
    excess = cf.gdp_limit_sigma(m, e, lam) / exact - 1
    assert 0.0004 - 5e-5 <= excess <= 0.0040 + 5e-5


@given(st.integers(1, 5000), st.floats(0.5, 20.0), st.floats(0.02, 0.9))
@settings(max_examples=100, deadline=None)
def test_epochs_and_steps_solutions(m, sigma, lam):
    e = cf.largest_epochs(m, sigma, lam)
    if e > 0:
        assert cf.tv_bound(m, e, sigma) <= lam
    assert cf.tv_bound(m, e + 1, sigma) > lam
    m2 = cf.smallest_steps(3, sigma, lam)
    assert cf.tv_bound(m2, 3, sigma) <= lam
    assert m2 == 1 or cf.tv_bound(m2 - 1, 3, sigma) > lam
