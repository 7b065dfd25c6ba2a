"""certifier.numerics.profile: the ln-Lambda density's hockey-stick floor in the far tail (against the independent
M = 2 lattice of certifier.numerics.two_steps) and the moment line's last resort on that density."""
import pytest

from certifier.numerics.pair_routes import primary, two_steps_route, vfft_route
from certifier.numerics.profile import DENSITY_SWITCH
from certifier.numerics.targets import exact_sigma_dp


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
