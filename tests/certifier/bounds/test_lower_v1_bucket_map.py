"""The lower side's bucket map (lower v1 step (c)): floored tail units must not steer it.

At (10^4, 10^4, 0.1) the two epoch pmfs ended, at the bottom, in coefficients of 17 and 17 units
(ratio 1, beta = 0); the running max carried that 0 over the whole left half, so half of the P mass
shared one bucket and the lower bound was 0.0857 for a TV of 0.1 on every grid.
"""
import math

import numpy as np

from certifier.bounds.lower_v1 import RELIABLE_UNITS, bucket_map


def _pmfs(tail):
    """Epoch pmfs with ln(q/p) = c x - c^2/2 on a Gaussian bulk (units 2^-80), `tail` units prepended to both."""
    x = np.linspace(-8, 8, 2001)
    c = 0.01
    p = np.exp(-x * x / 2)
    p = p / p.sum() * 2.0**80
    q = p * np.exp(c * x - c * c / 2)
    ap = [17] * tail + [int(v) for v in p]
    aq = [17] * tail + [int(v) for v in q]
    return ap, aq, x, c


def test_floored_tail_units_do_not_flatten_the_map():
    eta = 1e-4
    ap, aq, x, c = _pmfs(tail=5)
    beta, b_min, b_max = bucket_map(ap, aq, eta)
    assert np.all(np.diff(beta) >= 0)                                 # still a non-decreasing map
    bulk = np.arange(5, len(ap))
    big = np.minimum(np.array(ap, float), np.array(aq, float))[bulk] >= RELIABLE_UNITS
    want = np.floor((c * x - c * c / 2) / eta)[big]
    got = beta[bulk][big]
    assert np.max(np.abs(got - want)) <= 1                             # the bulk follows ln(q/p)/eta
    assert b_min <= math.floor((-8 * c - c * c / 2) / eta) + 200 and b_min < 0   # the range reaches below 0
    # the old map (running max over every index with both masses > 0) was stuck at 0 below the median
    assert np.count_nonzero(got < 0) > 0.4 * got.size


def test_without_reliable_masses_every_index_counts():
    ap, aq = [3, 5, 9], [1, 5, 27]
    beta, b_min, b_max = bucket_map(ap, aq, 0.5)
    assert list(beta) == [math.floor(math.log(1 / 3) / 0.5), 0, math.floor(math.log(3) / 0.5)]
    assert (b_min, b_max) == (beta[0], beta[-1])
