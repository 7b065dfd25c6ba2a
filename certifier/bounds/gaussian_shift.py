"""Method `gaussian-shift` v1: the pair with one step per epoch (M = 1) in closed form, in balls.

With M = 1 every epoch has one coordinate, shifted by t under Q: the pair is N(0, I_E) against
N(t 1, I_E), whose likelihood ratio depends only on the sum of the coordinates, a Gaussian shift
by mu = t sqrt(E) (Appendix C.4). So, in arb balls (docs/method-v2.md §6):

    TV = 2 Phi(mu/2) - 1 = erf(mu / (2 sqrt 2)),
    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)   (both directions),

and a test with FPR alpha has TPR <= e^eps alpha + delta(eps) for every eps. mu^2 = E t^2 is an exact
rational (t^2 = 1/sigma^2; for fixed bins the pair is already one epoch at t^2 = E/sigma^2).

The target kinds (certifier.targets): delta(eps) as above; 1 - T(alpha) = Phi(mu + Phi^-1(alpha))
((7), Appendix B.4), bounded above by e^eps alpha + delta(eps) at the tangent eps* = -mu z - mu^2/2
(z = Phi^-1(alpha), where the bound equals 1 - T(alpha); eps* is a decimal near it, any eps is an upper
bound) and below by Phi(mu + z_lo) for a rational z_lo with Phi(z_lo) <= alpha proven in balls.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from flint import arb, fmpq
from scipy.special import ndtr, ndtri

from certifier.bounds.fixedpoint import arb_exact, arb_str, round_down_sig, round_up_sig, working_prec
from certifier.bounds.privacy import ALPHAS, DELTAS, EPSILON_GRID
from certifier.bounds.result import LowerResult, UpperResult
from certifier.errors import ParameterError
from certifier.params import decimal_str, parse_decimal

METHOD_NAME = "gaussian-shift"
METHOD_VERSION = 1
PREC = 128


@dataclass(frozen=True)
class GaussianShift:
    """The method object: only the working precision."""
    prec: int = PREC

    def to_json(self) -> dict:
        return {"name": METHOD_NAME, "version": METHOD_VERSION, "prec": self.prec}

    @classmethod
    def from_json(cls, obj: dict) -> "GaussianShift":
        if obj.get("name") != METHOD_NAME or obj.get("version") != METHOD_VERSION:
            raise ParameterError("unsupported method (want gaussian-shift v1)")
        return cls(int(obj["prec"]))

    def validate(self) -> None:
        if not 32 <= self.prec <= 4096:
            raise ParameterError("prec must lie in [32, 4096]")


def _phi(x: arb) -> arb:
    """Phi(x) = erfc(-x / sqrt 2)/2."""
    return (-x / arb(2).sqrt()).erfc() / 2


def mu_of(epochs: int, t2: fmpq) -> arb:
    """mu = sqrt(E t^2) as a ball."""
    return arb_exact(fmpq(epochs) * t2).sqrt()


def tv_ball(epochs: int, t2: fmpq, prec: int = PREC) -> arb:
    """A ball containing TV(N(0, I_E), N(t 1, I_E)) = erf(mu / (2 sqrt 2))."""
    with working_prec(prec):
        return (mu_of(epochs, t2) / (2 * arb(2).sqrt())).erf()


def delta_ball(epochs: int, t2: fmpq, eps: fmpq, prec: int = PREC) -> arb:
    """A ball containing delta(eps) of the Gaussian shift mu (the same in both directions)."""
    with working_prec(prec):
        mu, e = mu_of(epochs, t2), arb_exact(eps)
        return _phi(-e / mu + mu / 2) - e.exp() * _phi(-e / mu - mu / 2)


def upper(steps: int, epochs: int, t2: fmpq, method: GaussianShift) -> UpperResult:
    """The certified TV (upper end of the ball, rounded up to 10 significant digits); M must be 1."""
    if steps != 1:
        raise ParameterError("method gaussian-shift needs one step per epoch (M = 1)")
    tv = tv_ball(epochs, t2, method.prec)
    return UpperResult(round_up_sig(tv, 10), tv, {"TV": arb_str(tv)}, method=method, shift2=fmpq(epochs) * t2)


def lower(steps: int, epochs: int, t2: fmpq, method: GaussianShift) -> LowerResult:
    """The TV at t2 from below: its ball's exact lower end, rounded down to 10 digits; M must be 1."""
    if steps != 1:
        raise ParameterError("method gaussian-shift needs one step per epoch (M = 1)")
    tv = tv_ball(epochs, t2, method.prec)
    man, exp = tv.lower().man_exp()
    exact = fmpq(int(man)) * fmpq(2) ** int(exp) if int(exp) >= 0 else fmpq(int(man), 2 ** (-int(exp)))
    return LowerResult(round_down_sig(exact, 10), exact, {"TV": arb_str(tv)}, method=method,
                       shift2=fmpq(epochs) * t2)


def lower_end(x: arb) -> fmpq:
    """The exact lower end of a ball, a rational."""
    man, exp = x.lower().man_exp()
    return fmpq(int(man)) * fmpq(2) ** int(exp) if int(exp) >= 0 else fmpq(int(man), 2 ** (-int(exp)))


def dp_upper(mu2: fmpq, eps: fmpq, prec: int = PREC) -> str:
    """delta(eps) of the shift mu (both directions), the upper end rounded up to 10 digits."""
    return round_up_sig(delta_ball(1, mu2, eps, prec), 10)


def dp_lower(mu2: fmpq, eps: fmpq, prec: int = PREC) -> fmpq:
    """delta(eps) of the shift mu, the exact lower end of its ball."""
    return lower_end(delta_ball(1, mu2, eps, prec))


def tpr_upper(mu2: fmpq, alpha: fmpq, prec: int = PREC) -> dict:
    """{tpr, epsilon}: the upper end of e^eps alpha + delta(eps) at eps* = -mu z - mu^2/2 rounded to 12
    significant digits (the tangent of the trade-off curve at alpha, (7))."""


    mu = math.sqrt(float(mu2))
    eps = parse_decimal("epsilon", f"{-mu * float(ndtri(float(alpha))) - mu * mu / 2:.12g}")
    with working_prec(prec):
        ball = arb_exact(eps).exp() * arb_exact(alpha) + delta_ball(1, mu2, eps, prec)
    return {"tpr": round_up_sig(ball, 10), "epsilon": decimal_str(eps)}


def z_below(alpha: fmpq, prec: int = PREC) -> fmpq:
    """A rational z <= Phi^-1(alpha): Phi(z) <= alpha proven in balls (floats only locate it)."""

    z = float(ndtri(float(alpha)))
    step = max(abs(z), 1.0) * 1e-15
    with working_prec(prec):
        while True:
            zq = parse_decimal("z", repr(z))
            if _phi(arb_exact(zq)).upper() <= arb_exact(alpha):
                return zq
            z, step = z - step, 2 * step


def tpr_lower(mu2: fmpq, alpha: fmpq, prec: int = PREC) -> fmpq:
    """1 - T(alpha) = Phi(mu + Phi^-1(alpha)) from below: the exact lower end of Phi(mu + z_lo)."""
    z = z_below(alpha, prec)
    with working_prec(prec):
        return lower_end(_phi(arb_exact(mu2).sqrt() + arb_exact(z)))


def rows(epochs: int, t2: fmpq, prec: int = PREC) -> tuple[dict, dict]:
    """The `privacy` and `tpr` objects (docs/two-sided.md §2-3) of the Gaussian shift, in balls.

    eps at delta: the smallest multiple of the epsilon grid whose delta ball's upper end is <= delta
    (floats only locate it); TPR at alpha: the upper end of e^eps alpha + delta(eps) at the grid point
    minimising it.
    """


    grid = parse_decimal("grid", EPSILON_GRID)
    g = float(grid)
    mu = math.sqrt(epochs * float(t2))
    dfloat = lambda e: ndtr(-e / mu + mu / 2) - np.exp(e) * ndtr(-e / mu - mu / 2)
    priv = {}
    for d in DELTAS:
        dq = parse_decimal("delta", d)
        js = np.arange(0, int(100 / g))
        j = int(np.flatnonzero(dfloat(js * g) <= float(dq))[0])
        up = lambda j, dq=dq: delta_ball(epochs, t2, grid * j, prec).upper() <= arb_exact(dq)
        while not up(j):
            j += 1
        while j > 0 and up(j - 1):
            j -= 1
        ball = delta_ball(epochs, t2, grid * j, prec)
        priv[d] = {"epsilon": decimal_str(grid * j), "delta_qp": arb_str(ball), "delta_pq": arb_str(ball)}
    tpr = {}
    for a in ALPHAS:
        aq = parse_decimal("alpha", a)
        js = np.arange(int(-10 / g), int(30 / g) + 1)
        with np.errstate(over="ignore"):
            j = int(js[int(np.argmin(np.exp(js * g) * float(aq) + dfloat(js * g)))])
        e = grid * j
        with working_prec(prec):
            ball = arb_exact(e).exp() * arb_exact(aq) + delta_ball(epochs, t2, e, prec)
        tpr[a] = {"tpr": round_up_sig(ball, 10), "epsilon": decimal_str(e)}
    return {"epsilon_grid": EPSILON_GRID, "epsilon_at_delta": priv}, tpr
