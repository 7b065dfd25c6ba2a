"""The exact TV and the exact shared sigma of a run in stages (Theorem 4.1 with a product).

A run of stages s = 1..S, stage s being E_s epochs of M_s steps at sigma_s, releases the product
of the stages' pairs; its likelihood ratio is the product of independent epoch factors, so

    E Lambda^q = prod_s F_{M_s, sigma_s}(q)^{E_s}                    (Theorem 4.1, a product)

and formula (14) applies to that product on q = 1/2 + iu (|prod| <= 1 on 0 <= Re q <= 1 by
Jensen, so the aliasing bound of certifier.numerics.tv_laplace holds unchanged).

  * route "laplace": each distinct (M, sigma) line F(1/2 + iu) from certifier.numerics.laplace_moments
    on one u-grid, raised to each stage's E_s and multiplied; the error budget of tv_laplace with
    the derivative of the product, sum_s E_s |F_s|^{E_s - 1} prod_{r != s} |F_r|^{E_r}.
  * route "logconv" (check): the lattice densities of ln L_{M_s} (certifier.numerics.log_convolution)
    on one lattice, their moments by FFT, the product, (14); independent of Laplace transforms.
    Where it is too costly, route "laplace'" (the second discretization).
  * M_s = 1 stages: F_1(1/2 + iu) = exp(-(1/4 + u^2) t^2 / 2) exactly; all stages M = 1:
    TV = 2 Phi(sqrt(sum_s E_s / sigma_s^2) / 2) - 1.
Floating point with error estimates, not a certificate (docs/compose.md).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
from scipy.optimize import brentq
from scipy.special import erf, ndtri

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import exact as _exact
from certifier.numerics.closed_form import c_lambda, log1p_b_over_m
from certifier.numerics.laplace_moments import FIRST, SECOND, Discretization, moment_line
from certifier.numerics.log_convolution import MAX_WORK, lattice_step, logconv_work, mean_density, moments
from certifier.numerics.one_epoch import bulk_sd
from certifier.numerics.tv_laplace import ALIASING, DU, MAX_TRIES, TAIL_LEVEL, formula14
from certifier.params import MAX_EPOCHS, MAX_STEPS, StageTally, as_decimal_text, decimal_str, parse_sigma
from certifier.resolution import search_step

__all__ = ["Stage", "parse_stage_list", "exact_tv_product", "exact_sigma_product", "Product", "OneStage", "product_of",
           "sigma_runs", "shared_sigma_runs", "tv_m1_product",
           "one_minus_tv_bound_product", "closed_form_sigma_product", "MAX_STAGES"]

MAX_STAGES = 64


@dataclass(frozen=True)
class Stage:
    """E = epochs epochs of M = steps steps each; sigma an exact decimal text, or None (shared, searched)."""
    steps: int
    epochs: int
    sigma: str | None = None

    def __post_init__(self):
        for name, v, top in (("steps M", self.steps, MAX_STEPS), ("epochs E", self.epochs, MAX_EPOCHS)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
                raise ParameterError(f"stage {name} must be an integer in [1, {top}], got {v!r}")
        if self.sigma is not None:
            text = as_decimal_text("sigma", self.sigma)
            parse_sigma(text)
            object.__setattr__(self, "sigma", text)

    def with_sigma(self, sigma) -> Stage:
        return Stage(self.steps, self.epochs, sigma)

    def __str__(self) -> str:
        return f"{self.steps}x{self.epochs}" + ("" if self.sigma is None else f"@{self.sigma}")


def parse_stage_list(spec, sigma_per_stage: bool | None = None) -> tuple[Stage, ...]:
    """'100x5,400x5' or '100x5@1.2,400x5@1.5', a Stage list, or (M, E) / (M, E, sigma) tuples.

    sigma_per_stage=True requires a sigma on every stage, False forbids them, None accepts either
    (but not a mixture)."""
    if isinstance(spec, str):
        items = [p.strip() for p in spec.split(",")]
        if not spec.strip() or any(not p for p in items):
            raise ParameterError(f"stages must look like 100x5,400x5 or 100x5@1.2,400x5@1.5, got {spec!r}")
        out = []
        for p in items:
            head, at, sig = p.partition("@")
            m, x, e = head.partition("x")
            if not x or not m.strip().isdigit() or not e.strip().isdigit() or (at and not sig.strip()):
                raise ParameterError(f"stage {p!r} must look like 100x5 or 100x5@1.2")
            out.append(Stage(int(m), int(e), sig.strip() if at else None))
    else:
        try:
            raw = list(spec)
        except TypeError:
            raise ParameterError(f"stages must be a list of (steps, epochs) pairs, got {spec!r}") from None
        out = []
        for item in raw:
            if isinstance(item, Stage):
                out.append(item)
            elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
                out.append(Stage(*item))
            else:
                raise ParameterError(f"a stage must be (steps, epochs), (steps, epochs, sigma) or a Stage, "
                                     f"got {item!r}")
    tally = StageTally.of(s.sigma is not None for s in out)
    if tally.count > MAX_STAGES:
        raise ParameterError(f"at most {MAX_STAGES} stages, got {tally.count}")
    tally.require(sigma_per_stage)
    return tuple(out)


def sigma_runs(stages) -> list[tuple[int, int, float]]:
    """(M_s, E_s, sigma_s) in floats of stages that carry their sigma (parse_stage_list(..., sigma_per_stage=True))."""
    return [(s.steps, s.epochs, float(parse_sigma(s.sigma))) for s in stages]


def shared_sigma_runs(stages) -> Callable[[float], list[tuple[int, int, float]]]:
    """sigma -> [(M_s, E_s, sigma)]: the stages at one shared sigma (the curve a shared-sigma search walks)."""
    pairs = [(s.steps, s.epochs) for s in stages]
    return lambda sigma: [(m, e, sigma) for m, e in pairs]


def tv_m1_product(runs) -> float:
    """All M_s = 1: the Gaussian pair of mean distance sqrt(sum E_s / sigma_s^2): 2 Phi(mu/2) - 1."""
    mu = math.sqrt(sum(e / (s * s) for _, e, s in runs))
    return float(erf(mu / (2.0 * math.sqrt(2.0))))


def one_minus_tv_bound_product(runs) -> float:
    """1 - TV <= E Lambda^{1/2} = prod_s F_s(1/2)^{E_s} <= prod_s (sqrt(M_s) e^{-1/(8 sigma_s^2)})^{E_s}."""
    log_f = sum(e * (0.5 * math.log(m) - 1.0 / (8.0 * s * s)) for m, e, s in runs)
    return math.exp(log_f) if log_f < 0 else 1.0


def _groups(runs) -> dict[tuple[int, float], list[int]]:
    """The distinct (M, sigma) lines, each with the epochs of its stages (one line serves them all)."""
    out: dict[tuple[int, float], list[int]] = {}
    for m, e, s in runs:
        out.setdefault((m, s), []).append(e)
    return out


def _u_guess(runs) -> float:
    """u where exp(-sum_s E_s sd_s^2 u^2 / 2) = TAIL_LEVEL (as tv_laplace.u_guess, for the product)."""
    var = sum(e * bulk_sd(m, s) ** 2 for m, e, s in runs)
    return max(2.0, math.sqrt(2.0 * math.log(1.0 / TAIL_LEVEL) / var))


@dataclass(frozen=True)
class _Line:
    f: np.ndarray
    f_coarse_r: np.ndarray
    f_coarse_x: np.ndarray
    truncation: np.ndarray
    roundoff: np.ndarray


def _line(steps: int, sigma: float, u_top: float, disc: Discretization) -> _Line:
    if steps == 1:  # F_1(1/2 + iu) = e^{q(q-1) t^2/2}, q(q-1) = -(1/4 + u^2): exact
        n_u = int(math.ceil(u_top / DU)) + 1
        u = DU * np.arange(n_u)
        f = np.exp(-(0.25 + u * u) / (2.0 * sigma * sigma)).astype(complex)
        zero = np.zeros(n_u)
        return _Line(f, f, f, zero, np.abs(f) * 4.0 * np.finfo(float).eps)
    ln = moment_line(steps, sigma, u_top, DU, disc)
    return _Line(ln.f, ln.f_coarse_r, ln.f_coarse_x, ln.truncation, ln.roundoff)


def _product(lines, groups, attr: str, n: int) -> np.ndarray:
    out = np.ones(n, dtype=complex)
    for key, epochs in groups.items():
        f = getattr(lines[key], attr)[:n]
        for e in epochs:  # one factor per stage: F^{E_1} F^{E_2}, not F^{E_1 + E_2}
            out = out * f ** e
    return out


@dataclass(frozen=True)
class StagesTV:
    tv: float
    error: float
    parts: dict


def tv_laplace_product(runs, disc: Discretization = FIRST) -> StagesTV:
    """(14) on prod_s F_s^{E_s}, growing u_max until the product has decayed inside it."""
    groups = _groups(runs)
    u_top = _u_guess(runs)
    for _ in range(MAX_TRIES):
        lines = {key: _line(key[0], key[1], u_top, disc) for key in groups}
        n_all = min(ln.f.size for ln in lines.values())
        log_mag = np.zeros(n_all)
        floor = np.zeros(n_all, dtype=bool)
        for key, epochs in groups.items():
            mag = np.abs(lines[key].f[:n_all])
            log_mag += sum(epochs) * np.log(np.maximum(mag, 1e-300))
            floor |= mag < 3.0 * lines[key].roundoff[:n_all]
        done = (log_mag < math.log(TAIL_LEVEL)) | floor
        loud = np.nonzero(~done)[0]
        cut = int(loud[-1]) + 1 if loud.size else 1
        if cut < 0.9 * n_all:
            break
        u_top *= 2.0
    else:
        raise NumericsUnreliableError(f"the product of the stages' moments has not decayed by u = {u_top:.0f}")
    n = min(cut + 1, n_all)
    value = formula14(_product(lines, groups, "f", n), DU, 1)
    mags = {key: np.maximum(np.abs(lines[key].f[:n]), 1e-300) for key in groups}
    total = sum(sum(ep) * np.log(mags[key]) for key, ep in groups.items())
    r_cut = np.zeros(n)
    roundoff = np.zeros(n)
    for key, epochs in groups.items():  # |d prod / d F_s| <= sum over its stages of E_s |prod| / |F_s|
        slope = sum(epochs) * np.exp(total - np.log(mags[key]))
        r_cut += slope * lines[key].truncation[:n]
        roundoff += slope * lines[key].roundoff[:n]
    parts = {
        "r_step": abs(formula14(_product(lines, groups, "f_coarse_r", n), DU, 1).tv - value.tv),
        "x_step": abs(formula14(_product(lines, groups, "f_coarse_x", n), DU, 1).tv - value.tv),
        "r_cut": float(value.weight @ r_cut),
        "roundoff": float(value.weight @ roundoff),
        "u_step": ALIASING,
        "u_cut": value.tail,
    }
    return StagesTV(value.tv, sum(parts.values()), parts)


def logconv_product_affordable(runs) -> bool:
    h = min(lattice_step(m, s) for m, _, s in runs if m > 1)
    return sum(logconv_work(m, s, h) for (m, s) in _groups(runs) if m > 1) <= MAX_WORK


def tv_logconv_product(runs) -> tuple[float, float]:
    """(14) from the lattice densities of ln L_{M_s} on one lattice; estimate: lattice 2h against h,
    plus sum_s E_s times each density's mass defect."""
    groups = _groups(runs)
    h = min(lattice_step(m, s) for m, _, s in runs if m > 1)
    values = []
    for step in (2.0 * h, h):
        du = 2.0 * math.pi / (step * round(2.0 * math.pi / (0.05 * step)))
        n_u = int(round(2.0 * math.pi / (du * step))) // 2
        prod = np.ones(n_u, dtype=complex)
        defect = 0.0
        for (m, s), epochs in groups.items():
            if m == 1:
                u = du * np.arange(n_u)
                f = np.exp(-(0.25 + u * u) / (2.0 * s * s)).astype(complex)
            else:
                d = mean_density(m, s, step)
                f = moments(d, du, n_u)
                defect += sum(epochs) * abs(1.0 - float(d.f.sum() * step))
            for e in epochs:
                prod = prod * f ** e
        loud = np.nonzero(np.abs(prod) >= TAIL_LEVEL)[0]
        cut = int(loud[-1]) + 2 if loud.size else 2
        value = formula14(prod[:cut], du, 1)
        values.append((value.tv, value.tail + defect))
    (coarse, _), (fine, fine_err) = values
    return fine, abs(fine - coarse) + fine_err


def _log1p_chi2(runs) -> float:
    """ln(1 + chi^2) of the product pair = sum_s E_s ln(1 + (e^{1/sigma_s^2} - 1)/M_s) (eq. 9, a product)."""
    return sum(e * log1p_b_over_m(s, m) for m, e, s in runs)


def closed_form_sigma_product(stages, lam: float) -> float:
    """The shared sigma with U(c) = lambda for the product's chi-square c (Theorem 3.3 holds for any
    pair; 1 + c multiplies over independent stages), by bisection: a feasible sigma, not rounded."""
    level = math.log1p(c_lambda(lam))
    at = shared_sigma_runs(stages)
    lo, hi = 1e-3, 1.0
    while _log1p_chi2(at(hi)) > level:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _log1p_chi2(at(mid)) > level:
            lo = mid
        else:
            hi = mid
    return hi


def gdp_limit_sigma_product(stages, lam: float) -> float:
    """The GDP limit (B.3) of the product: mu^2 = sum_s (E_s / M_s)(e^{1/sigma^2} - 1). Not a bound."""
    z = float(ndtri(0.5 + 0.5 * lam))
    ratio = sum(s.epochs / s.steps for s in stages)
    return math.log1p(4.0 * z * z / ratio) ** -0.5


@dataclass(frozen=True)
class Product:
    """The numerics of a run in stages: the pair prod_s (P_{M_s}^{E_s}, Q_{M_s}^{E_s}) (Theorem 4.1 with a product),
    its exact TV at the stages' sigmas and its exact shared sigma. product_of picks OneStage for a run of one stage."""
    stages: tuple                                # Stage values, or (M_s, E_s, sigma_s) runs (pick)
    suffix: ClassVar[str] = " (stages)"          # a method's name says its pair is a product

    def pick(self, one, several):
        """several(stages): the product's numerics (OneStage: one(stage), a block's)."""
        return several(self.stages)

    def exact_tv(self, check: bool = True) -> _exact.ExactTV:
        """d_TV of the product, each stage at its sigma: closed form (all M_s = 1), the bound, or (14) on the product
        (route laplace, checked by logconv or laplace')."""
        runs = sigma_runs(self.stages)
        if all(m == 1 for m, _, _ in runs):
            return _exact.ExactTV(tv_m1_product(runs), 1e-15, "closed-form M=1")
        gap = one_minus_tv_bound_product(runs)
        if gap <= _exact.ONE_LEVEL:
            return _exact.ExactTV(1.0, max(gap, sys.float_info.min),
                                  "bound 1 - TV <= prod_s (sqrt(M_s) e^{-1/(8 sigma_s^2)})^{E_s}")
        low = min(s for m, _, s in runs if m > 1)
        if low < _exact.MIN_SIGMA:
            raise NumericsUnreliableError(f"the exact TV is computed for sigma >= {_exact.MIN_SIGMA}; a stage has "
                                          f"sigma = {low:g} and 1 - TV <= {gap:.1e}")
        first = tv_laplace_product(runs)
        error, method = first.error, "laplace"
        if check:
            if logconv_product_affordable(runs):
                tv2, err2 = tv_logconv_product(runs)
                method += "+logconv"
            else:
                other = tv_laplace_product(runs, SECOND)
                tv2, err2 = other.tv, other.error
                method += "+laplace'"
            error += max(0.0, abs(first.tv - tv2) - first.error - err2)
        if not (math.isfinite(first.tv) and error <= _exact.MAX_ERROR):
            raise NumericsUnreliableError(f"the exact TV of the stages {','.join(map(str, self.stages))} is not "
                                          f"reliable (error estimate {error:.1e})")
        return _exact.ExactTV(min(1.0, max(0.0, first.tv)), error, method + self.suffix)

    def exact_sigma(self, lam: float, resolution) -> str:
        """The least grid sigma shared by every stage with exact TV <= lam (exact_sigma_product)."""
        memo: dict[float, float] = {}
        at = shared_sigma_runs(self.stages)

        def f(sigma: float) -> float:
            if sigma not in memo:
                runs = at(sigma)
                if all(m == 1 for m, _, _ in runs):
                    tv = tv_m1_product(runs)
                elif one_minus_tv_bound_product(runs) <= _exact.ONE_LEVEL:
                    tv = 1.0
                else:
                    if sigma < _exact.MIN_SIGMA:
                        raise NumericsUnreliableError(f"the exact sigma lies below {_exact.MIN_SIGMA}")
                    r = tv_laplace_product(runs)
                    if r.error > _exact.MAX_ERROR:
                        raise NumericsUnreliableError(f"the exact TV at sigma={sigma:g} is not reliable "
                                                      f"(error estimate {r.error:.1e})")
                    tv = r.tv
                memo[sigma] = tv - lam
            return memo[sigma]

        closed = closed_form_sigma_product(self.stages, lam) * (1 + 1e-12)
        lo, hi = _exact.bracket(f, min(gdp_limit_sigma_product(self.stages, lam), closed), closed)
        res = search_step(resolution, lo)
        step = float(res)
        root = brentq(f, lo, hi, xtol=0.05 * step, rtol=1e-15)
        k = math.ceil(root / step)
        while f(step * (k - 1)) <= 0:
            k -= 1
        while f(step * k) > 0:
            k += 1
        return decimal_str(res * k)


@dataclass(frozen=True)
class OneStage(Product):
    """A run of one stage: a block's pair (P_M^E, Q_M^E), computed as certifier.numerics.exact computes a block's
    (the same numbers and method names as the block)."""
    suffix: ClassVar[str] = ""

    def pick(self, one, several):
        """one(stage): a block's numerics."""
        return one(*self.stages)

    def exact_tv(self, check: bool = True) -> _exact.ExactTV:
        ((m, e, s),) = sigma_runs(self.stages)
        return _exact.exact_tv(m, e, s, check=check)

    def exact_sigma(self, lam: float, resolution) -> str:
        ((m, e),) = [(s.steps, s.epochs) for s in self.stages]
        return _exact.exact_sigma(m, e, lam, resolution=resolution)


def product_of(stages) -> Product:
    """The numerics of a list of stages (Stage values or runs): a block's for one stage (OneStage), else the
    product's; the one place the number of stages picks them (the TV, the shared sigma, the profile's routes)."""
    return OneStage(tuple(stages)) if len(stages) == 1 else Product(tuple(stages))


def exact_tv_product(stages, check: bool = True) -> _exact.ExactTV:
    """d_TV of the run in stages (Theorem 4.1 with prod_s F_s^{E_s}), each stage with its sigma."""
    return product_of(parse_stage_list(stages, sigma_per_stage=True)).exact_tv(check)


def exact_sigma_product(stages, lam, resolution="1e-6") -> str:
    """Least sigma on the resolution grid, shared by every stage, whose exact TV is <= lambda.

    TV decreases in the shared sigma (each factor's pair is a garbling of the one at smaller
    sigma, C.4), so the search of certifier.numerics.exact applies: bracket from the GDP limit,
    never above the closed form (feasible), Brent, round UP to the grid, check the point below.
    """
    stages = parse_stage_list(stages, sigma_per_stage=False)
    lam = float(lam)
    if not 0.0 < lam < 1.0:
        raise ParameterError(f"target lambda must lie strictly between 0 and 1, got {lam!r}")
    search_step(resolution, 1.0)            # a bad resolution is refused before any evaluation
    return product_of(stages).exact_sigma(lam, resolution)

# the pieces of the product line, shared with certifier.numerics.stages_profile (dp and tpr of stages)
line_groups, stage_line, line_product, u_guess_product = _groups, _line, _product, _u_guess
