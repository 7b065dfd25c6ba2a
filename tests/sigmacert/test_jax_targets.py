"""sigmacert.jax calibrates jax_privacy's BallsInBinsSampling for (eps, delta) and TPR targets (fixed bins)."""
from __future__ import annotations

import pytest
from jax_privacy.batch_selection import BallsInBinsSampling

import sigmacert
import sigmacert.jax as sj
from certifier.numerics.targets import exact_privacy


def test_sigma_for_epsilon_delta_is_the_fixed_bins_grid_answer():
    """M = 20 bins, 80 iterations (E = 4): the pair is (20, 1, sigma/2); the grid point below misses."""
    s = BallsInBinsSampling(iterations=80, cycle_length=20)
    sigma = sj.sigma_for(s, epsilon=1, delta="1e-5")
    d = lambda x: exact_privacy(20, 1, float(x) / 2, epsilons=[1.0]).delta[1.0].value  # noqa: E731
    assert d(sigma) <= 1e-5 < d(sigma - sigmacert.api.Decimal("0.000001"))
    assert sigma == sigmacert.exact_sigma(20, 4, epsilon=1, delta="1e-5", scheme="fixed-bins")
    # fixed bins need more noise than random allocation at the same M and E
    assert sigma > sigmacert.exact_sigma(20, 4, epsilon=1, delta="1e-5")


def test_epsilon_for_is_the_profile_of_the_reduced_pair_and_meets_the_calibration():
    s = BallsInBinsSampling(iterations=80, cycle_length=20)
    sigma = sj.sigma_for(s, epsilon=2, delta="1e-5")
    eps = sj.epsilon_for(s, sigma, delta="1e-5")
    assert 2 - 1e-3 < eps <= 2 + 1e-9
    v = exact_privacy(20, 1, float(sigma) / 2, deltas=[1e-5]).epsilon[1e-5]
    assert eps == v.value + v.error


def test_tpr_kind_and_one_kind_per_call():
    s = BallsInBinsSampling(iterations=30, cycle_length=10)
    sigma = sj.sigma_for(s, fpr="0.01", tpr="0.05")
    assert exact_privacy(10, 1, float(sigma) / 3 ** 0.5, fprs=[0.01]).tpr[0.01].value <= 0.05
    with pytest.raises(sigmacert.ParameterError, match="exactly one target"):
        sj.sigma_for(s, "0.1", epsilon=1, delta="1e-5")
