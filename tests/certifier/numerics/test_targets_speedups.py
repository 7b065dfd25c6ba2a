"""The exact-sigma search's shortcuts change no answer: e^{-z} - 1 + z by |z| bands against mpmath, the
search with its quick steering lines against the same search on the primary route alone, and the
value at the exact sigma unchanged by the shared phi_V blocks."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from certifier.numerics import one_epoch
from certifier.numerics import targets as nt
from certifier.numerics.series import SERIES_BANDS, exp_minus_one_plus


@pytest.fixture(autouse=True)
def _digits():
    """60 digits for the mpmath references, whatever another test in this process left in mpmath.mp."""
    with mpmath.workdps(60):
        yield


def _reference(z: complex) -> complex:
    w = mpmath.mpc(z.real, z.imag)
    return complex(mpmath.exp(-w) - 1 + w)


def test_exp_minus_one_plus_keeps_relative_accuracy_at_every_band_edge():
    rng = np.random.default_rng(7)
    radii = [r * f for r, _ in SERIES_BANDS for f in (0.999, 1.0, 1.001)] + [1e-8, 3e-5, 2.0, 40.0]
    pts = []
    for r in radii:
        ang = rng.uniform(-0.5 * np.pi, 0.5 * np.pi, 12)   # Re z >= 0, as the callers have it
        pts.extend(r * np.exp(1j * ang))
    z = np.array(pts)
    got = exp_minus_one_plus(z)
    ref = np.array([_reference(x) for x in z])
    rel = np.abs(got - ref) / np.abs(ref)
    assert rel.max() < 2e-15, (z[int(rel.argmax())], rel.max())
    assert got.shape == z.shape and exp_minus_one_plus(z.reshape(6, -1)).shape == (6, z.size // 6)


CELLS = [("dp", 100, 10, 1.0, 1e-5), ("dp", 1000, 1, 4.0, 1e-5), ("tpr", 1000, 1, 1e-3, 2e-3),
         ("dp", 10, 2, 0.5, 1e-4), ("tpr", 3, 40, 1e-3, 2e-3)]


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: "-".join(map(str, c)))
def test_quick_steering_gives_the_primary_routes_answer(cell, monkeypatch):
    kind, m, e, x, target = cell
    search = nt.exact_sigma_dp if kind == "dp" else nt.exact_sigma_tpr
    nt._PRIMARY.clear()
    fast = search(m, e, x, target)
    nt._PRIMARY.clear()
    monkeypatch.setattr(nt, "QUICK_MARGIN", float("inf"))   # never keep a quick line
    slow = search(m, e, x, target)
    assert fast == slow


def test_the_second_grid_reuses_phi_blocks_without_changing_the_density():
    """Where both V grids share their period (no tilt), the second density reads the first's phi_V
    blocks; its values are those of a cold computation."""
    one_epoch._PHI.clear()
    d1 = one_epoch.epoch_density(100, 1.5, dx=1 / 256)
    cached = len(one_epoch._PHI)
    d2 = one_epoch.epoch_density(100, 1.5, dx=1 / 512)
    assert len(one_epoch._PHI) == cached                    # no new block: all shared
    one_epoch._PHI.clear()
    cold = one_epoch.epoch_density(100, 1.5, dx=1 / 512)
    assert np.array_equal(d2.f, cold.f) and d1.f.size * 2 == d2.f.size
