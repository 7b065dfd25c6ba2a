"""Sampling schemes and the fixed-bins reduction (docs/integrations.md).

random-allocation  Algorithm 1 (Section 2): every epoch re-allocates each record to one of the M steps;
                   the pair is (P_M^(x)E, Q_M^(x)E) of (6).
fixed-bins         jax_privacy's BallsInBinsSampling: each record draws ONE bin j for the whole run and
                   joins every round i = j (mod M); with E rounds per bin the pair is
                   P = N(0, I_EM) against Q = (1/M) sum_j N(t 1_{bin j}, I_EM), t = 1/sigma.

Reduction (docs/integrations.md, proofs row 16): the per-bin sums S_j = sum_e x_{j,e} / sqrt(E) are
sufficient, N(0, 1) under P and N(t sqrt(E) e_J, I_M) under Q given the bin J, and the rest of the
observation has the same law under P and Q.  So the fixed-bins pair is the one-epoch pair at t sqrt(E):

    TV_fixed(M, E, sigma) = TV(M, 1, sigma / sqrt(E)),

and the same holds for every f-divergence, hockey-stick divergence and trade-off curve.  A run whose
iterations are not a multiple of M observes a sub-vector of the run with E = ceil(iterations / M)
rounds per bin; dropping coordinates is data processing, so that E gives a valid bound.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction

from flint import fmpq

from certifier.claim import FIXED_BINS, RANDOM_ALLOCATION, SCHEMES
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import closed_form as cf
from certifier.numerics import exact as _exact
from certifier.params import decimal_str, parse_positive_decimal
from certifier.resolution import search_step

DEFAULT_SCHEME = RANDOM_ALLOCATION
SIGMA_GRID = Decimal("0.000001")  # the grid every printed noise multiplier lies on
MAX_GRID_WALK = 10_000  # grid points the fixed-bins search may walk when the numerics disagree


def parse_scheme(text) -> str:
    """A scheme name, or ParameterError listing the known ones."""
    s = str(text).strip().lower() if text is not None else DEFAULT_SCHEME
    if s not in SCHEMES:
        raise ParameterError(f"scheme must be one of {', '.join(SCHEMES)}; got {text!r}")
    return s


def epochs_for_iterations(iterations: int, steps: int) -> int:
    """E = ceil(iterations / M): every bin appears at most E times (data processing covers the rest)."""
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ParameterError(f"iterations must be a positive integer, got {iterations!r}")
    if steps < 1:
        raise ParameterError("steps M must be at least 1")
    return -(-iterations // steps)


def resolve_epochs(steps: int, epochs: int | None, scheme: str, iterations: int | None) -> int:
    """E of a run given as epochs, or (fixed-bins only) as iterations T: E = ceil(T / M); both must agree."""
    if iterations is None:
        if epochs is None:
            raise ParameterError("give epochs E (or, for the fixed-bins scheme, iterations)")
        return epochs
    if parse_scheme(scheme) != FIXED_BINS:
        raise ParameterError("iterations are taken only for the fixed-bins scheme; give epochs E")
    e = epochs_for_iterations(iterations, steps)
    if epochs is not None and epochs != e:
        raise ParameterError(f"epochs {epochs} disagree with iterations {iterations}: "
                             f"ceil({iterations}/{steps}) = {e}")
    return e


@dataclass(frozen=True)
class Reduced:
    """The random-allocation pair with the same distance: (steps, epochs) at sigma / sqrt(scale2).

    scale2 is an exact integer (E for fixed-bins, 1 for random allocation), so the reduced
    t^2 = scale2 / sigma^2 stays an exact rational for a decimal sigma."""
    steps: int
    epochs: int
    scale2: int

    def sigma(self, sigma: float) -> float:
        return float(sigma) / math.sqrt(self.scale2)

    def t2(self, sigma: fmpq) -> fmpq:
        """t'^2 = scale2 / sigma^2, exact."""
        return fmpq(self.scale2) / (sigma * sigma)


def reduce(scheme: str, steps: int, epochs: int) -> Reduced:
    """The reduction above: fixed-bins (M, E, sigma) -> random allocation (M, 1, sigma / sqrt(E))."""
    scheme = parse_scheme(scheme)
    if scheme == FIXED_BINS:
        return Reduced(steps, 1, epochs)
    return Reduced(steps, epochs, 1)


def exact_tv(steps: int, epochs: int, sigma, scheme: str = DEFAULT_SCHEME, check: bool = True) -> _exact.ExactTV:
    """d_TV of the scheme's pair (Theorem 4.1 on the reduced pair), with an error estimate."""
    r = reduce(scheme, steps, epochs)
    res = _exact.exact_tv(r.steps, r.epochs, r.sigma(sigma), check=check)
    if r.scale2 == 1:
        return res
    return _exact.ExactTV(res.tv, res.error, f"{res.method} on (M, 1, sigma/sqrt({r.scale2}))")


def chi2(steps: int, epochs: int, sigma, scheme: str = DEFAULT_SCHEME) -> float:
    """Chi-square of the scheme's pair: c_E (eq. 9); fixed-bins: (e^(E/sigma^2) - 1)/M."""
    r = reduce(scheme, steps, epochs)
    return cf.c_E(r.steps, r.epochs, r.sigma(sigma))


def tv_bound(steps: int, epochs: int, sigma, scheme: str = DEFAULT_SCHEME) -> float:
    """U(chi^2) of Theorem 3.3 for the scheme's pair."""
    r = reduce(scheme, steps, epochs)
    return cf.tv_bound(r.steps, r.epochs, r.sigma(sigma))


def closed_form_sigma(steps: int, epochs: int, lam: float, scheme: str = DEFAULT_SCHEME) -> float:
    """Corollary 3.4 for the scheme; fixed-bins: sqrt(E) * sigma(M, 1, lambda) (docs/integrations.md)."""
    r = reduce(scheme, steps, epochs)
    return math.sqrt(r.scale2) * cf.closed_form_sigma(r.steps, r.epochs, lam)


def closed_form_sigma_up(steps: int, epochs: int, lam, scheme: str = DEFAULT_SCHEME) -> Decimal:
    """Corollary 3.4 for the scheme, rounded UP to SIGMA_GRID: the one decimal every face prints.

    The least grid point at or above the (float) closed form whose U(chi^2) (Theorem 3.3, float
    evaluation) is <= lambda, the comparison done exactly. lam is exact (an fmpq, a Decimal, a
    Fraction or a decimal string) and is never read through a binary float."""
    target = Fraction(str(lam))
    s = closed_form_sigma(steps, epochs, float(target), scheme)
    with localcontext() as ctx:
        ctx.prec = 60
        up = Decimal(repr(s)).quantize(SIGMA_GRID, rounding=ROUND_CEILING)
        for _ in range(MAX_GRID_WALK):  # rounding up only adds noise; walk if the float evaluation disagrees
            if Fraction(tv_bound(steps, epochs, float(up), scheme)) <= target:
                return up
            up += SIGMA_GRID
    raise NumericsUnreliableError("the closed-form sigma could not be rounded up to a grid point meeting the target")


def gdp_limit_sigma(steps: int, epochs: int, lam: float, scheme: str = DEFAULT_SCHEME) -> float:
    """The GDP-limit multiplier of B.3 on the reduced pair (a limit, NOT a bound)."""
    r = reduce(scheme, steps, epochs)
    return math.sqrt(r.scale2) * cf.gdp_limit_sigma(r.steps, r.epochs, lam)


def exact_sigma(steps: int, epochs: int, lam, scheme: str = DEFAULT_SCHEME, resolution="1e-6") -> str:
    """Least sigma on the resolution grid whose exact TV for the scheme is <= lambda (C.4), as a decimal.

    Fixed-bins: sigma_lambda = sqrt(E) * sigma_lambda(M, 1), and the one-epoch grid answer s1 has
    s1 - res < sigma_lambda(M, 1) <= s1.  So the answer lies in [sqrt(E)(s1 - res), sqrt(E) s1];
    we bisect the grid there on TV(M, 1, k res / sqrt(E)) itself, keeping "k_lo misses, k_hi meets"."""
    r = reduce(scheme, steps, epochs)
    if r.scale2 == 1:
        return _exact.exact_sigma(steps, epochs, lam, resolution=resolution)
    res = search_step(resolution, 0.0)     # AUTO: the finest grid, 1e-6 (issued rounds the answer up)
    s1 = parse_positive_decimal("sigma", _exact.exact_sigma(r.steps, 1, lam, resolution=decimal_str(res)))
    root, lam_f = math.sqrt(r.scale2), float(lam)
    memo: dict[int, bool] = {}

    def meets(k: int) -> bool:  # TV(M, 1, k res / sqrt(E)) <= lambda, each grid point computed once
        if k not in memo:
            memo[k] = _exact.exact_tv(r.steps, 1, float(res * k) / root, check=False).tv <= lam_f
        return memo[k]

    lo = max(1, math.floor(root * float((s1 - res) / res)))
    hi = max(lo + 1, math.ceil(root * float(s1 / res)))
    for _ in range(MAX_GRID_WALK):  # numerics that disagree with the bracket: walk, never guess
        if meets(hi):
            break
        lo, hi = hi, hi + 1
    for _ in range(MAX_GRID_WALK):
        if not meets(lo):
            break
        if lo == 1:
            raise NumericsUnreliableError("the fixed-bins sigma search found no grid point that misses the target")
        lo, hi = max(1, 2 * lo - hi), lo
    if not meets(hi) or meets(lo):
        raise NumericsUnreliableError("the fixed-bins sigma search could not bracket the target")
    while hi - lo > 1:  # invariant: lo misses the target, hi meets it
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return decimal_str(res * hi)
