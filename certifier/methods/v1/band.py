"""Grids for method v1 with a band (docs/method-v2.md §8): step (i)'s grid only around Y = 1.

At a large sigma each step's likelihood ratio Y = exp(tX - t^2/2) lies within a few t = 1/sigma of
1, and the margin lambda - TV is of the order of the per-epoch sd of ln L: the uniform grid of
method v1 would need h ~ t/200 over all of [0, cap] (10^7 points and more), the octaves of method v2
a relative spacing far finer than 2^-24. A band [band_low, cap] of +-z t around 1 with the same h
has a few thousand points; Y below the band is deleted (its mass E M F0(band_low) costs at most
that much) and Y above the cap deleted as in v1. Everything else is method v1: the lattice
schedule of step (ii), the log grid of step (iii), the powering of step (iv) (the partial sums'
supports follow their sd, since masses below 2^-F floor to zero and strip off).

Loss model: methods.v1.plan's (K = E f(1)/2 times the rounding variances), plus the two deletions, plus
the trims and floors, which a deficit in a block of 2^i steps carries M/2^i times into the epoch
and E times into Lambda (about 2 M E per trimmed product): hence F = 128 and a trim of 1e-30.
Cost model: the lengths of the partial sums are 2 Z sd(block)/spacing with Z = 13 (the sd at which a
mass falls below 2^-128), the log-grid cells and the E-fold power likewise from the sd of ln L.
"""
from __future__ import annotations

import dataclasses
import math

from flint import fmpq
from scipy.special import ndtri

from certifier.bounds.lower_v1 import LowerV1
from certifier.bounds.upper_v1 import make_method
from certifier.errors import CannotCertifyError
from certifier.methods.v1.plan import (
    LOWER_CAP_FACTOR,
    LOWER_LOSS_RATIO,
    RHOS,
    SEC_PER_CELL,
    SEC_PER_COEFF,
    SEC_PER_POINT,
    Model,
    Plan,
    lattice_for,
    lattice_variance,
    nice_values,
)
from certifier.params import parse_decimal

BAND_BITS = 128                # fixed point of a banded grid (the floors are carried ~2 M E times)
BAND_TRIM = fmpq(1, 10**30)    # trim per product (likewise)
BAND_PREC = 192                # arb precision of step (i): the two-point masses cancel ~log2(1/h) bits, and a
                               # ball radius lost per step is carried M E times (at 128 bits: ~1e-20)
BAND_DELETE_SHARE = 0.02       # share of the budget the two deletions (below and above the band) may cost
BAND_MAX_POINTS = 2 * 10**6    # step (i) points of a band
Z_FLOOR = 13.0                 # sd at which a Gaussian mass falls below 2^-128 (the supports' half-width)
WIDE_COEFF = 1.6               # a product's time per coefficient at 128-bit masses over 80-bit ones
H_RANGE, ETA_RANGE = (1e-11, 0.05), (1e-11, 2e-3)


def _q(s: str) -> fmpq:
    return parse_decimal("grid", s)


def band_ends(mod: Model, loss: float) -> tuple[float, float]:
    """(low, cap): E M Pr(Y < low) = E M Pr(Y > cap) = loss/2, ln Y ~ N(-t^2/2, t^2)."""
    t = 1.0 / mod.sigma
    z = -float(ndtri(loss / (2.0 * mod.epochs * mod.steps)))
    return math.exp(-t * t / 2 - z * t), math.exp(-t * t / 2 + z * t)


def band_seconds(mod: Model, h: float, g: list[int], eta: float, points: float) -> float:
    """Predicted time of a banded grid: step (i) points, the products of steps (ii) and (iv), log-grid cells."""
    M, E = mod.steps, mod.epochs
    per = SEC_PER_COEFF * WIDE_COEFF
    length = lambda i, gg: 2 * Z_FLOOR * math.sqrt(2**i) * mod.sd_y / (gg * h) + 2  # noqa: E731
    t = points * SEC_PER_POINT
    n = len(g) - 1
    for i in range(n):
        t += 2 * length(i, g[i]) * per                       # B_{i+1} = B_i^2
    for i in range(1, n + 1):
        if (M >> i) & 1:
            t += (length(i, g[i]) + length(n, g[i])) * per    # A <- A B_i
    sd_l = mod.s / math.sqrt(E)                               # sd of ln L per epoch
    cells = 2 * Z_FLOOR * sd_l / eta + 2
    t += cells * SEC_PER_CELL + length(n, g[n]) * 2e-6
    span = 2 * Z_FLOOR * mod.s / eta
    cur, e = cells, E
    while e > 1:
        cur = min(2 * cur, cur + span)
        t += 2 * cur * per
        e //= 2
    return t + bin(E).count("1") * cur * per


def choose_band_grid(steps: int, epochs: int, sigma: fmpq, budget: float, prec: int = BAND_PREC) -> Plan:
    """The fastest banded grid (by band_seconds) whose predicted loss is at most `budget` (TV units)."""
    mod = Model.at(steps, epochs, float(sigma))
    M, E, K = steps, epochs, mod.K
    n_products = 2 * (steps.bit_length() + epochs.bit_length())
    fixed = (2 * M * E + E * n_products) * float(BAND_TRIM) + 1e-18
    dele = BAND_DELETE_SHARE * budget
    lo_f, cap_f = band_ends(mod, dele)
    avail = budget - fixed - dele
    if avail <= 0 or lo_f <= 0:
        raise CannotCertifyError("no banded grid fits the margin")
    best = None
    for hv, hs in nice_values(*H_RANGE):
        points = (cap_f - lo_f) / hv
        if points > BAND_MAX_POINTS or lo_f <= 2 * hv:
            continue
        lh = K * hv * hv / (6 * M)
        if lh >= 0.7 * avail:
            continue
        for rho in RHOS:
            g = lattice_for(M, rho) if rho > 0 else [1] * M.bit_length()
            lg = K * hv * hv * lattice_variance(M, g)
            rest = avail - lh - lg
            if rest <= 0:
                continue
            cand = [(ev, es) for ev, es in nice_values(*ETA_RANGE) if K * ev * ev / 6 <= rest]
            if not cand:
                continue
            ev, es = max(cand)
            secs = band_seconds(mod, hv, g, ev, points)
            if best is None or secs < best[0]:
                best = (secs, hv, hs, rho, g, ev, es, lh, lg, points)
    if best is None:
        raise CannotCertifyError("no banded grid fits the margin")
    secs, hv, hs, rho, g, ev, es, lh, lg, points = best
    hq, eq = _q(hs), _q(es)
    loq = hq * int(math.floor(lo_f / hv))
    capq = hq * int(math.ceil(cap_f / hv))
    km = math.floor(math.log(float(loq)) / ev) - 2            # L = S/M lies in [band_low, cap]
    kp = math.ceil(math.log(float(capq)) / ev) + 2
    method = make_method(M, h=hq, eta=eq, cap=capq, tail_start=capq, tail_step=hq, lattice_schedule=g,
                         prec=prec, fixed_point_bits=BAND_BITS, trim=BAND_TRIM, k_minus=km, k_plus=kp,
                         band_low=loq)
    le = K * ev * ev / 6
    loss = lh + lg + le + dele + fixed
    detail = {"step_i": lh, "lattice": lg, "log_grid": le, "band": dele, "trim": fixed, "rho": rho,
              "points": int(points), "band_low": float(loq), "cap": 0.0, "tail": 0.0}
    return Plan(method, loss, secs, budget, detail)


def choose_lower_band_grid(steps: int, epochs: int, sigma: fmpq, budget: float, prec: int = BAND_PREC) -> Plan:
    """A banded grid for lower method v1 (cells from band_low, [0, band_low + h) the first; [cap, inf) the
    last): the upper planner's grid at the budget scaled by LOWER_LOSS_RATIO, as methods.v1.plan does."""
    plan = choose_band_grid(steps, epochs, sigma, budget * (1 - BAND_DELETE_SHARE) / LOWER_LOSS_RATIO, prec=prec)
    method = LowerV1.from_v1(plan.method)
    mod = Model.at(steps, epochs, float(sigma))
    t = 1.0 / mod.sigma
    merge = LOWER_CAP_FACTOR * epochs * float(0.5 * math.erfc((math.log(float(method.cap)) - t * t / 2)
                                                             / (t * math.sqrt(2))))
    loss = LOWER_LOSS_RATIO * (plan.predicted_loss - plan.detail["band"]) + merge
    secs = plan.detail["points"] * 16e-6 + 2.2 * plan.predicted_seconds
    return dataclasses.replace(plan, method=method, predicted_loss=loss, predicted_seconds=secs,
                               detail={**plan.detail, "merge": merge})
