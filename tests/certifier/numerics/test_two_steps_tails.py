"""M = 2, E = 1 by one integral (certifier.numerics.two_steps_tails) against 30-digit references.

References: the lognormal options C(b), P(b) in their textbook forms at 50 digits; the two divergences by
mpmath's quadrature of the same conditional expectation written independently (the inner expectation as
Phi-differences, not Mills' ratios; breakpoints dense where the integrand peaks, just below the kink); the
exact sigma at delta 1e-12 as the least grid sigma by that reference. The M = 1 closed form is tested in
test_saddle.py and test_targets.py.
"""
import math
from decimal import Decimal

import mpmath as mp
import pytest

from certifier.numerics import two_steps_tails as tt
from certifier.numerics.saddle import Factor, tail_delta
from certifier.numerics.targets import exact_sigma_dp


def ref_delta(sigma: str, eps: str, side: str, dps: int = 30):
    """E_P (L_2 - a)_+ (qp) or E_P (1 - a L_2)_+ (pq), by conditioning on X_1, at `dps` digits."""
    with mp.workdps(dps):
        t, a = 1 / mp.mpf(sigma), mp.exp(mp.mpf(eps))
        if side == "qp":
            k = (mp.log(2 * a) + t * t / 2) / t

            def g(x):
                y = mp.exp(t * x - t * t / 2)
                b = 2 * a - y
                if b <= 0:                                   # the kink's own node, by round-off
                    return mp.npdf(x) * (1 - b) / 2
                xb = (mp.log(b) + t * t / 2) / t
                return mp.npdf(x) * (mp.ncdf(t - xb) - b * mp.ncdf(-xb)) / 2
            above = mp.ncdf(t - k) / 2 - (a - mp.mpf(1) / 2) * mp.ncdf(-k)   # y > 2a: E = (y + 1)/2 - a
        else:
            k = (mp.log(2 / a) + t * t / 2) / t

            def g(x):
                y = mp.exp(t * x - t * t / 2)
                b = 2 / a - y
                if b <= 0:
                    return mp.mpf(0)
                xb = (mp.log(b) + t * t / 2) / t
                return mp.npdf(x) * a / 2 * (b * mp.ncdf(xb) - mp.ncdf(xb - t))
            above = 0
        lo = min(k, 0) - 40
        pts = [lo + (k - 8 - lo) * i / 24 for i in range(25)] + [k - 8 + mp.mpf(j) / 8 for j in range(1, 64)]
        return mp.quad(g, [p for p in pts if p < k] + [k]) + above


@pytest.mark.parametrize("t", [2.0, 0.3, 0.02, 1e-3])
def test_options_against_50_digits(t):
    """C(b) and P(b) over strikes in and far out of the money, to the module's round-off (the Mills form's
    cancellation and exp's ulps: 1e-15 (1 + 40/t) + 3.2e-13 relative)."""
    with mp.workdps(50):
        for z in (-30.0, -6.0, -1.0, 0.0, 0.7, 5.0, 12.0, 30.0):          # the strike at X = z
            b = math.exp(t * z - t * t / 2)
            xb = (mp.log(mp.mpf(b)) + mp.mpf(t) ** 2 / 2) / mp.mpf(t)
            c = mp.ncdf(mp.mpf(t) - xb) - b * mp.ncdf(-xb)
            p = b * mp.ncdf(xb) - mp.ncdf(xb - mp.mpf(t))
            if c > mp.mpf(10) ** -300:
                assert abs(tt.call(b, t) / float(c) - 1.0) < tt._roundoff(t)
            if p > mp.mpf(10) ** -300:
                assert abs(tt.put(b, t) / float(p) - 1.0) < tt._roundoff(t)


CELLS = [("0.3", "20"), ("1", "8"), ("4.70777", "1"), ("9.1", "0.5"), ("43.5", "0.1"), ("400", "0.01"),
         ("2.6", "-0.5"), ("1.5", "4")]


@pytest.mark.parametrize("sigma,eps", CELLS)
def test_divergences_against_a_30_digit_quadrature(sigma, eps):
    """Both sides to 1e-9 relative and within the estimate (itself below 1e-10 of the value), from delta near 1
    (eps < 0) down to 1e-40."""
    for side in ("qp", "pq"):
        ref = float(ref_delta(sigma, eps, side))
        value, err = tt.delta(float(sigma), float(eps), side)
        if ref < 1e-290:
            assert value < 1e-280
            continue
        assert abs(value / ref - 1.0) < 1e-9
        assert abs(value - ref) <= err + 1e-13 * ref
        assert err < 1e-10 * value


def test_the_tails_take_the_integral():
    """saddle.tail_delta at one epoch of two steps is this integral (no line, no density)."""
    v = tail_delta([Factor(2, 1, 4.7)], 1.0, "qp")
    assert "m2 integral" in v.parts
    assert v.value == tt.delta_qp(4.7, 1.0)[0]


@pytest.mark.parametrize("eps", ["0.1", "1", "4"])
def test_exact_sigma_at_1e_12_is_the_least_grid_sigma(eps):
    """The exact sigma at (2, 1, eps, 1e-12) meets delta <= 1e-12 by the reference, and one grid step (1e-6) below
    it misses (these cells were refused before: the density's round-off floor was 1 - 7 % of delta)."""
    sigma = Decimal(exact_sigma_dp(2, 1, eps, "1e-12"))
    step = Decimal("1e-6")                                                  # exact_sigma_dp's default grid
    at = max(ref_delta(str(sigma), eps, s) for s in ("qp", "pq"))
    below = max(ref_delta(str(sigma - step), eps, s) for s in ("qp", "pq"))
    assert at <= mp.mpf("1e-12") < below
