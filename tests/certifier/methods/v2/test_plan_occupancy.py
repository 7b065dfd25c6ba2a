"""Method v2's cost model at large sigma: a narrow block sum fills only a share of its octave, and a narrow
ln Lambda a span of the log grid (methods.v2.plan.occupied_share); at small sigma the octave model stands."""
import math

from flint import fmpq

from certifier.methods.v2 import plan as v2plan


def test_the_share_of_an_octave_shrinks_with_the_block_and_sigma():
    narrow = v2plan.CellModel.at(1000, 10, 1 / 900.0, 0.01)        # sigma 30
    shares = [v2plan.occupied_share(narrow, 1 << i) for i in range(10)]
    assert all(a > b for a, b in zip(shares, shares[1:]))
    assert shares[0] > 1.0 > shares[-1] >= v2plan.OCC_MIN                # one step: more than its octave
    heavy = v2plan.CellModel.at(1000, 10, 1.0, 0.3)                 # sigma 1: the octave model
    assert v2plan.occupied_share(heavy, 1 << 9) == math.inf


def test_large_sigma_grids_are_priced_below_the_octave_model():
    """At the stages cell (568511, 421) at sigma 896.124 (dp eps 0.0406) the octave model priced step (ii) at
    ~1000 s for a grid whose whole certificate took 111 CPU s; the occupancy prices it in seconds."""
    t2 = fmpq(1) / (fmpq(896124, 1000) ** 2)
    kw = dict(n=22, eta="2e-7", need_eps=3.0)
    narrow = v2plan.plan_v2(568511, 738, t2, 8e-12, 0.0046, **kw)
    occ = (v2plan.OCC_Z, v2plan.OCC_T)
    try:
        v2plan.OCC_T = -1.0                                           # the octave model, for comparison
        v2plan._Y_BITS.clear()
        octave = v2plan.plan_v2(568511, 738, t2, 8e-12, 0.0046, **kw)
    finally:
        v2plan.OCC_Z, v2plan.OCC_T = occ
    assert narrow.method == octave.method                            # the same grid, priced differently
    assert narrow.detail["seconds"]["step_ii"] < octave.detail["seconds"]["step_ii"] / 20
    assert narrow.detail["seconds"]["step_iv"] < octave.detail["seconds"]["step_iv"] / 5


def test_small_sigma_prices_as_before():
    t2 = fmpq(1) / (fmpq(7, 10) ** 2)
    a = v2plan.plan_v2(1000, 10, t2, 1e-6, 0.1, n=14, eta="1e-5")
    saved = v2plan.OCC_T
    try:
        v2plan.OCC_T = -1.0
        b = v2plan.plan_v2(1000, 10, t2, 1e-6, 0.1, n=14, eta="1e-5")
    finally:
        v2plan.OCC_T = saved
    assert a.predicted_seconds == b.predicted_seconds
