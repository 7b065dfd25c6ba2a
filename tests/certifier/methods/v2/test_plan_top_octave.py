"""Method v2's planner: the top octave holds the epoch sums themselves, whatever h and n (values above it are
moved down to its largest point: a top below the sums moves every epoch value, and at (10^6, 10^4, 0.1) a lower
calibration at n = 15, h = 8e-6 put the top at 2.7e5 < M = 10^6 and its bound came out 0)."""
from __future__ import annotations

import pytest

from certifier.bounds.lower_v2 import lower_bound_v2
from certifier.methods.v2.plan import ETAS, plan_v2
from certifier.params import parse_decimal

Q = lambda s: parse_decimal("x", s)


@pytest.mark.parametrize("M, E, sigma, tv", [(10**6, 10**4, "0.708858", 0.10000025), (10**7, 1, "0.489947", 0.001),
                                             (1000, 100, "0.9", 0.5), (10**5, 10, "3.0", 0.01)])
@pytest.mark.parametrize("lower", [False, True])
def test_the_top_octave_lies_above_the_epoch_sums_at_every_n(M, E, sigma, tv, lower):
    t2 = 1 / (Q(sigma) * Q(sigma))
    for n in range(6, 23):
        for eta in ETAS[::3]:
            m = plan_v2(M, E, t2, 1e-7, tv, n=n, eta=eta, lower=lower, level_ratio=2.0).method
            assert float(m.h) * 2 ** (n + m.top_octave + 1) >= 2 * M * 0.99, (n, eta, m.top_octave)
            assert m.k_plus > 0                       # the log grid reaches above L = 1


def test_the_lower_calibration_grid_of_that_cell_now_bounds():
    s = Q("0.708858")
    m = plan_v2(10**6, 10**4, 1 / (s * s), 2e-6, 0.10000025, n=15, eta="1.6e-5", lower=True, level_ratio=2.0).method
    L = lower_bound_v2(10**6, 10**4, 1 / (s * s), m)
    assert 0.0999 < float(L.exact) < 0.10000025
