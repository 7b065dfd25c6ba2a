"""The routes to the privacy profile and trade-off curve of the pair (certifier.numerics.profile).

  * "laplace": the moment line F_M(1/2 + iu) of certifier.laplace_moments (every tail weight),
    with its coarse r- and x-sums as variants; the primary route.
  * "vfft": the density of ln Lambda (certifier.tv_vfft, C.4) where ln L_M is so narrow that the
    moment line gets long (light tails); its variant is the second grid (both spacings halved).
  * "logconv": the moment line from the lattice density of ln L_M (certifier.log_convolution),
    lattice h with lattice 2h as variant; independent of Laplace transforms.
  * "laplace'": route laplace on the second discretization (checks the quadratures, not (P1)).
  * "m2-lattice" at M = 2, sigma >= 100 (certifier.numerics.two_steps): the ln-Lambda density on a grid
    scaled to t, its variant the grid of half the points; checked by the same two grids swapped.
`second` picks logconv where affordable, else laplace'; route vfft serves only light tails, where its
ln-Lambda grid (24 sd wide) holds every s that carries P- or Q-mass: at heavier tails it cuts the
Q-tail that delta_{Q||P}(eps) needs (at M = 10^6, E = 1, sigma = 0.3 it returned delta(4) = 4e-30
against 5.4e-5).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from certifier.errors import NumericsUnreliableError
from certifier.numerics import two_steps
from certifier.numerics.big_step_tails import EPOCHS, FEW_STEPS, MANY_STEPS, BigStepTails
from certifier.numerics.laplace_moments import FIRST, SECOND, Discretization
from certifier.numerics.log_convolution import lattice_step, logconv_affordable, mean_density, moments
from certifier.numerics.profile import DensityLine, MomentLineE, Route
from certifier.numerics.saddle import Factor
from certifier.numerics.tv_laplace import DU, TAIL_LEVEL, decayed_line, u_guess
from certifier.numerics.tv_vfft import GRID_POINTS, V_DX, density_for, log_lambda_density
from certifier.numerics.tv_vfft import MIN_SIGMA as VFFT_MIN_SIGMA

LAPLACE_MAX_U = 300.0      # beyond, the moment line is long and route "vfft" is the cheaper primary
# per-node round-off floor of the moment line: e^{-w} - psi_L(w) cancels on the far branch, which the
# line's own estimate (50 eps x the sum of |gap|) does not see; measured |F - F_1| at M = 1 reaches
# 2.5e-14 = 113 eps (sigma = 2, 10, 30), and E |F|^{E-1} amplifies it (E = 1000: 4e-13 in delta(0))
F_FLOOR = 200.0 * float(np.finfo(float).eps)


def laplace_route(steps: int, epochs: int, sigma: float, u_hint: float | None = None,
                  disc: Discretization = FIRST) -> Route:
    """The moment line to where |F|^E has decayed (certifier.numerics.tv_laplace.decayed_line)."""
    line, cut = decayed_line(steps, epochs, sigma, u_hint, disc)
    n = cut + 1
    f = line.f[:n]
    slope = epochs * np.maximum(np.abs(f), 1e-300) ** (epochs - 1)  # |d F^E / d F|
    main = MomentLineE(DU, f ** epochs, slope * (line.truncation[:n] + line.roundoff[:n] + F_FLOOR),
                       tail=float(np.abs(f[-1]) ** epochs))
    variants = tuple(MomentLineE(DU, g[:n] ** epochs) for g in (line.f_coarse_r, line.f_coarse_x))
    return Route("laplace" if disc is FIRST else "laplace'", main, variants, float(line.u[n - 1]),
                 factors=(Factor(steps, epochs, sigma),), second_tails=disc is SECOND,   # the check's tails
                 big_step=big_step_tails(steps, epochs, sigma) if disc is FIRST else None,
                 density=density_fallback(steps, epochs, sigma) if disc is FIRST else None)


def density_fallback(steps: int, epochs: int, sigma: float):
    """The primary's last resort in the tails: route vfft as a zero-argument callable, formed once on first call;
    None where it is not formed or its grids cut more P-mass than VFFT_MAX_DEFECT (a tail, bounded in closed form)"""
    @functools.cache
    def route() -> Route | None:
        if sigma < VFFT_MIN_SIGMA:
            return None
        try:
            r = vfft_route(steps, epochs, sigma)
        except NumericsUnreliableError:
            return None
        return r if max(r.main.mass_defect, r.variants[0].mass_defect) <= VFFT_MAX_DEFECT else None
    return route


def big_step_tails(steps: int, epochs: int, sigma: float) -> BigStepTails | None:
    """The primary's far tails at one or more epochs of many steps, or one epoch of a few
    (certifier.numerics.big_step_tails), else None."""
    many = epochs in EPOCHS and steps >= MANY_STEPS
    return BigStepTails(steps, epochs, sigma) if many or (epochs == 1 and steps >= FEW_STEPS) else None


def _logconv_line(steps: int, epochs: int, sigma: float, step: float) -> MomentLineE:
    d = mean_density(steps, sigma, step)
    du = 2.0 * math.pi / (step * round(2.0 * math.pi / (DU * step)))
    f = moments(d, du, int(round(2.0 * math.pi / (du * step))) // 2)
    loud = np.nonzero(np.abs(f) ** epochs >= TAIL_LEVEL)[0]
    cut = int(loud[-1]) + 2 if loud.size else 2
    f = f[:cut]
    return MomentLineE(du, f ** epochs, defect=epochs * abs(1.0 - float(d.f.sum() * step)),
                       tail=float(np.abs(f[-1]) ** epochs))


def logconv_route(steps: int, epochs: int, sigma: float) -> Route:
    h = lattice_step(steps, sigma)
    fine = _logconv_line(steps, epochs, sigma, h)
    return Route("logconv", fine, (_logconv_line(steps, epochs, sigma, 2.0 * h),),
                 factors=(Factor(steps, epochs, sigma),), second_tails=True)


def vfft_route(steps: int, epochs: int, sigma: float, second_grid: bool = False) -> Route:
    """The ln-Lambda density on the grid (and on the second grid as variant)."""
    def line(k: int) -> DensityLine:
        d = log_lambda_density(density_for(steps, epochs, sigma, V_DX / k), epochs, k * GRID_POINTS)
        negative = float(-d.f[d.f < 0].sum() * d.h)
        missing = abs(1.0 - d.mass1) * epochs
        # the hockey-stick floor takes the closed-form bounds on the cut mass (tv_vfft.grid_cuts), not |1 - mass1|
        return DensityLine(d, missing + 10.0 * negative + 1e-12, missing, epochs)
    tails = (Factor(steps, epochs, sigma),)
    if second_grid:
        return Route("vfft'", line(2), (line(1),), factors=tails, second_tails=True)
    return Route("vfft", line(1), (line(2),), factors=tails, big_step=big_step_tails(steps, epochs, sigma))


def light(steps: int, epochs: int, sigma: float) -> bool:
    """|F|^E decays only beyond u = 2 LAPLACE_MAX_U (ln L_M is narrow): the V-density route is the
    primary there. Between LAPLACE_MAX_U and twice it laplace stays primary (the more accurate route)
    and vfft is the check. (Before the density's sums had their kink corrections, 11 of 1742
    comparisons of a 147-cell sweep disagreed beyond the estimates, all at vfft cells.)"""
    return u_guess(steps, epochs, sigma) > 2 * LAPLACE_MAX_U and sigma >= VFFT_MIN_SIGMA


def _vfft_checks(steps: int, epochs: int, sigma: float) -> bool:
    return LAPLACE_MAX_U < u_guess(steps, epochs, sigma) <= 2 * LAPLACE_MAX_U and sigma >= VFFT_MIN_SIGMA


VFFT_MAX_DEFECT = 1e-10    # a density that misses more mass (its grid cut a tail) yields to laplace


def two_steps_route(epochs: int, sigma: float, second_grid: bool = False) -> Route:
    """M = 2, sigma >= 100: the ln-Lambda density of route "m2-lattice" (certifier.numerics.two_steps), on
    2^13 points with 2^12 as variant (second_grid: the other way round)."""
    def line(points: int) -> DensityLine:
        d = two_steps.log_lambda_lattice(epochs, sigma, points)
        negative = float(-d.f[d.f < 0].sum() * d.h)
        missing = abs(1.0 - d.mass1 ** epochs)
        return DensityLine(d, missing + 10.0 * negative + 1e-15, missing)
    fine, coarse = line(two_steps.LATTICE_POINTS), line(two_steps.LATTICE_POINTS // 2)
    if second_grid:
        return Route("m2-lattice'", coarse, (fine,), factors=(Factor(2, epochs, sigma),), second_tails=True)
    return Route("m2-lattice", fine, (coarse,), factors=(Factor(2, epochs, sigma),))


def primary(steps: int, epochs: int, sigma: float, u_hint: float | None = None) -> Route:
    if steps == 2 and sigma >= two_steps.MIN_SIGMA:   # the routes above lose their digits to Y - 1 ~ t there
        return two_steps_route(epochs, sigma)
    if light(steps, epochs, sigma) and not u_hint:
        try:
            r = vfft_route(steps, epochs, sigma)
            if max(r.main.defect, r.variants[0].defect) <= VFFT_MAX_DEFECT:
                return r
        except NumericsUnreliableError:
            pass
    try:
        return laplace_route(steps, epochs, sigma, u_hint)
    except NumericsUnreliableError:
        if not (u_hint and light(steps, epochs, sigma)):
            raise
    return primary(steps, epochs, sigma)   # a hint's line too long to form: the light density serves (unhinted)


def second(steps: int, epochs: int, sigma: float, first: Route) -> Route:
    """An independent route where one is affordable, else the primary on a second discretization."""
    if first.name == "m2-lattice":
        return two_steps_route(epochs, sigma, second_grid=True)
    if first.name == "vfft":  # the paper's second grid (both spacings halved), already the primary's variant
        return Route("vfft'", first.variants[0], (first.main,))
    if light(steps, epochs, sigma):  # laplace replaced a vfft that cut a tail: its second discretization
        return laplace_route(steps, epochs, sigma, None if first.u_max is None else 1.1 * first.u_max, SECOND)
    if _vfft_checks(steps, epochs, sigma):
        try:
            return vfft_route(steps, epochs, sigma)
        except NumericsUnreliableError:
            pass
    if logconv_affordable(steps, epochs, sigma):
        return logconv_route(steps, epochs, sigma)
    return laplace_route(steps, epochs, sigma, None if first.u_max is None else 1.1 * first.u_max, SECOND)
