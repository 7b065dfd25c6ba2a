"""The exact privacy profile, trade-off curve and exact sigma for the target kinds dp and tpr.

Kinds (docs/targets.md):
  tv   d_TV(P, Q) <= lambda                                   (certifier.exact, unchanged)
  dp   max(delta_{Q||P}(eps), delta_{P||Q}(eps)) <= delta     ((eps, delta)-DP in both directions, B.4)
  tpr  1 - T(P, Q)(alpha) <= beta                              (every test with FPR alpha has TPR <= beta)
for the pair (P_M^E, Q_M^E) of (6) (fixed-bins: the one-epoch pair at sigma / sqrt(E)).

`exact_privacy` evaluates them at a sigma with an error estimate and a second route (as
certifier.exact.exact_tv does for the TV); `exact_sigma_dp` / `exact_sigma_tpr` return the least
sigma on the resolution grid meeting the target. Every quantity is monotone in sigma (the pair at
a larger sigma is a post-processing of the pair at a smaller one), so the feasible sigma form a
half-line and the grid search is a bisection. Floating point, not a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr, ndtri

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import pair_routes
from certifier.numerics.exact import MIN_SIGMA, one_minus_tv_bound, validate_cell
from certifier.numerics.laplace_moments import Discretization
from certifier.numerics.profile import Route, Value
from certifier.numerics.saddle import decided
from certifier.numerics.schemes import reduce
from certifier.numerics.tv_laplace import u_guess
from certifier.params import decimal_str
from certifier.resolution import search_step

MAX_ERROR = 1e-7        # an evaluation whose estimate exceeds this (and 1 % of the value) is refused
ONE_LEVEL = 1e-17       # E_P Lambda^{1/2} below this: every quantity is 1 within it
SEARCH_REL_ERROR = 1e-2  # the sigma search refuses values whose error exceeds 1 % of the target
QUICK = Discretization(nodes=5)  # the search's steering evaluations far from the target (Curve._quick)
QUICK_MARGIN = 1e-3      # ... kept when |value - target| > this share of the target (and 100 x their error)
NEAR_WIDTH = 5e-3        # ... not tried inside a bracket this narrow (relative width in sigma)
NEAR_VALUE = 0.1         # ... nor right after a value within this share of the target (steered searches)
EPS_REL_ERROR = 1e-4    # eps(delta) whose error exceeds this (relative, or absolute below 1) is refused


# ---------------------------------------------------------------- M = 1 and tiny sigma

def isf(alpha: float) -> float:
    return -float(ndtri(alpha))


def gaussian_delta(eps: float, mu: float) -> float:
    """delta(eps) of N(0,1) vs N(mu,1): Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (symmetric),
    formed as Phi(a) (1 - e^{eps + ln Phi(b) - ln Phi(a)}) so that it keeps its relative accuracy in the
    tails (the plain difference loses every digit once delta is below 1e-16 of Phi(a))."""
    a, b = -eps / mu + mu / 2.0, -eps / mu - mu / 2.0
    la, lb = float(log_ndtr(a)), float(log_ndtr(b))
    return float(math.exp(la) * -math.expm1(eps + lb - la))


def gaussian_tpr(alpha: float, mu: float) -> float:
    """1 - T(alpha) = 1 - Phi(Phi^-1(1 - alpha) - mu) (Dong et al., G_mu)."""
    return float(ndtr(mu - isf(alpha)))


def _one_digit_up(x: float) -> str:
    """x rounded up to one significant digit (a refusal's resolvable target: 1.3e-12 reads 2e-12, not 1e-12)."""
    if not (math.isfinite(x) and x > 0):
        return f"{x:.0e}"
    exp = math.floor(math.log10(x))
    digit = math.ceil(x / 10.0 ** exp * (1.0 - 1e-12))
    if digit >= 10:
        digit, exp = 1, exp + 1
    return f"{digit}e{exp:+03d}"


@dataclass(frozen=True)
class GaussianLine:
    """M = 1: the pair is N(0, I_E) vs N(t 1, I_E), i.e. the Gaussian shift mu = sqrt(E)/sigma."""
    mu: float

    def g(self, s: float) -> float:
        mu = self.mu
        return float(ndtr(s / mu - mu / 2.0) + math.exp(s) * ndtr(-s / mu - mu / 2.0))

    def floor_error(self, s: float) -> float:
        return 1e-15 * max(1.0, math.exp(s))

    def dqp(self, eps: float) -> float:
        return gaussian_delta(eps, self.mu)

    def dpq(self, eps: float) -> float:
        return gaussian_delta(eps, self.mu)

    def delta_error(self, eps: float, value: float) -> float:
        """The closed form's error: relative (log_ndtr and expm1 keep the digits; measured <= 1e-13
        against 50-digit arithmetic down to delta = 1e-12 and up to eps = 20)."""
        return 1e-12 * abs(value) + 1e-300

    def tpr(self, alpha: float) -> tuple[float, float]:
        return gaussian_tpr(alpha, self.mu), math.nan


@dataclass(frozen=True)
class OneLine:
    """Tiny sigma: G(e^s) <= e^{s/2} E Lambda^{1/2} = e^{s/2} b (min{x, K} <= sqrt(xK)), b below
    ONE_LEVEL; so both deltas are 1 - O(e^{|eps|/2} b) and 1 - T(alpha) >= 1 - b^2/(4 alpha)."""
    b: float

    def g(self, s: float) -> float:
        return 0.0

    def floor_error(self, s: float) -> float:
        return self.b * math.exp(0.5 * abs(s))

    def dqp(self, eps: float) -> float:
        return 1.0

    def dpq(self, eps: float) -> float:
        return 1.0

    def tpr(self, alpha: float) -> tuple[float, float]:
        return 1.0, 0.0


def route_at(steps: int, epochs: int, sigma: float, check: bool = True,
             u_hint: float | None = None) -> tuple[Route, Route | None]:
    """The primary route and (check=True) the second one for the pair at (M, E, sigma)."""
    if steps == 1:
        return Route("closed-form M=1", GaussianLine(math.sqrt(epochs) / sigma)), None
    b = one_minus_tv_bound(steps, epochs, sigma)
    if sigma < MIN_SIGMA:
        raise NumericsUnreliableError(f"the exact privacy profile is computed for sigma >= {MIN_SIGMA}; at sigma = "
                                 f"{sigma:g} E Lambda^(1/2) <= (sqrt(M) e^(-1/(8 sigma^2)))^E = {b:.1e}")
    if b <= ONE_LEVEL:
        return Route("bound E Lambda^{1/2} <= (sqrt(M) e^{-1/(8 sigma^2)})^E", OneLine(b)), None
    first = _primary(steps, epochs, sigma, u_hint)
    return first, (pair_routes.second(steps, epochs, sigma, first) if check else None)


_PRIMARY: dict = {}   # (M, E, sigma to 12 digits) -> the primary route, the last few only
PRIMARY_CACHE = 8


def _primary(steps: int, epochs: int, sigma: float, u_hint: float | None) -> Route:
    """The primary route, reused for the same (M, E, sigma): the exact-sigma search's last point is the
    grid point its caller then evaluates with the second route (1 ulp apart at most: 1e-6 k vs the
    decimal's float). Any valid line serves: a hinted one only reaches further in u."""
    key = (steps, epochs, float(f"{sigma:.12g}"))
    if key not in _PRIMARY:
        if len(_PRIMARY) >= PRIMARY_CACHE:
            _PRIMARY.pop(next(iter(_PRIMARY)))
        _PRIMARY[key] = pair_routes.primary(steps, epochs, sigma, u_hint)
    return _PRIMARY[key]


def checked(first: Value, other: Value | None) -> Value:
    """error_1 + the disagreement beyond both estimates (certifier.exact's rule)."""
    if other is None:
        return first
    return Value(first.value, first.error + max(0.0, abs(first.value - other.value) - first.error - other.error))


# ---------------------------------------------------------------- evaluation

@dataclass(frozen=True)
class PrivacyProfile:
    """Exact (numerical) quantities of the pair at one sigma, each a Value(value, error)."""
    steps: int
    epochs: int
    sigma: float
    method: str
    tv: Value
    epsilon: dict      # delta -> eps(delta): least eps >= 0 with both hockey-sticks <= delta
    delta: dict        # eps -> max(delta_{Q||P}(eps), delta_{P||Q}(eps))
    tpr: dict          # alpha -> 1 - T(alpha)


def check_unit(name: str, x: float) -> float:
    x = float(x)
    if not (0.0 < x < 1.0):
        raise ParameterError(f"{name} must lie strictly between 0 and 1, got {x!r}")
    return x


def check_eps(eps) -> float:
    e = float(eps)
    if not (math.isfinite(e) and 0.0 <= e <= 100.0):
        raise ParameterError(f"epsilon must lie in [0, 100], got {eps!r}")
    return e


def exact_privacy(steps: int, epochs: int, sigma, *, deltas=(), epsilons=(), fprs=(),
                  check: bool = True) -> PrivacyProfile:
    """eps at each delta, delta at each eps, and the TPR at each FPR of the pair, with error estimates.

    With check=True a second route runs and every error grows by any disagreement beyond the two
    estimates. Raises NumericsUnreliableError when an estimate exceeds MAX_ERROR (and 1 % of its value)."""
    s = validate_cell(steps, epochs, sigma)
    deltas = [check_unit("delta", d) for d in deltas]
    epsilons = [check_eps(e) for e in epsilons]
    fprs = [check_unit("false-positive rate", a) for a in fprs]
    first, other = route_at(steps, epochs, s, check)
    method = first.name + ("+" + other.name if other is not None else "")
    tv = checked(first.tv(), other.tv() if other else None)
    eps_at = {d: checked(first.epsilon(d), other.epsilon(d) if other else None) for d in deltas}
    delta_at = {e: checked(first.delta(e), other.delta(e) if other else None) for e in epsilons}
    tpr_at = {a: checked(first.tpr(a), other.tpr(a) if other else None) for a in fprs}
    for name, v in [("TV", tv)] + [(f"delta({e:g})", v) for e, v in delta_at.items()] + \
            [(f"TPR({a:g})", v) for a, v in tpr_at.items()]:
        if not (math.isfinite(v.value) and (v.error <= MAX_ERROR or v.error <= 0.01 * abs(v.value))):
            raise NumericsUnreliableError(f"the exact {name} at M={steps}, E={epochs}, sigma={s:g} is not reliable "
                                     f"(error estimate {v.error:.1e})")
    for d, v in eps_at.items():  # (P1) carries e^{eps/2} x the line's error: large eps loses digits
        if not (math.isfinite(v.value) and v.error <= EPS_REL_ERROR * max(1.0, v.value)):
            raise NumericsUnreliableError(f"eps at delta={d:g} (about {v.value:.3g}) at M={steps}, E={epochs}, "
                                     f"sigma={s:g} is not reliable (error estimate {v.error:.1e}): the profile "
                                     "is computed to eps of about 25 at delta = 1e-5")
    return PrivacyProfile(steps, epochs, s, method, tv, eps_at, delta_at, tpr_at)


# ---------------------------------------------------------------- the exact sigma

class Curve:
    """sigma -> value - target on the primary route, cached, with the laplace u-range carried along."""

    def __init__(self, steps: int, epochs: int, scale2: int, functional, target: float, what: str,
                 mu_of=None, jump: bool = False):
        self.steps, self.epochs, self.scale2 = steps, epochs, scale2
        self.functional, self.target, self.what = functional, target, what
        self.mu_of = mu_of  # value -> the Gaussian shift mu with that value (steering only), or None
        self.jump = jump    # mu_of is the one-big-step model's (mu = 1/s), not the GDP limit's
        self.first_slope = 1.0 if jump else FIRST_SLOPE
        self.mu_target = None if mu_of is None else mu_of(target)
        self.u_hint = None
        self.u_seen: dict[float, float] = {}   # pair's sigma -> where its moment line decayed (laplace)
        self.values: dict[float, float] = {}
        self.raw: dict[float, float] = {}
        self.errors: dict[float, float] = {}   # sigma -> the value's error estimate
        self.last: float | None = None        # the latest sigma evaluated

    def __call__(self, sigma: float) -> float:
        if sigma not in self.values:
            s = sigma / math.sqrt(self.scale2)
            hint = self._hint(s)
            route, v = self._quick(s, hint)
            if v is None:                     # near the target (or no quick line): the primary route
                route = self.route(s, hint)
                v = self.functional(route)
            known = decided(v.value, v.error, self.target)   # the side of the target is known
            if not (math.isfinite(v.value) and (v.error <= SEARCH_REL_ERROR * self.target or known)):
                resolved = _one_digit_up(v.error / SEARCH_REL_ERROR)
                raise NumericsUnreliableError(f"{self.what} at sigma={s:g} is not reliable (error estimate "
                                              f"{v.error:.1e}; a target of about {resolved} or more is resolved here)")
            if route.u_max:
                self.u_hint = 1.25 * route.u_max
                self.u_seen[s] = route.u_max
            self.values[sigma] = v.value - self.target
            self.raw[sigma] = v.value
            self.errors[sigma] = v.error
            self.last = sigma
        return self.values[sigma]

    def undecided(self, sigma: float) -> bool:
        """The evaluated value at sigma lies within 3 times its estimate of the target (saddle.decided)."""
        return not decided(self.raw[sigma], self.errors[sigma], self.target)

    def in_noise(self) -> bool:
        """The highest sigma evaluated that misses and the lowest that meets both lie within 3 estimates of the
        target, and NOISE_STOP evaluations in all: what is left between them is the values' noise."""
        misses = [x for x, v in self.values.items() if v > 0]
        meets = [x for x, v in self.values.items() if v <= 0]
        return bool(misses and meets) and self.undecided(max(misses)) and self.undecided(min(meets)) and \
            sum(self.undecided(x) for x in self.values) >= NOISE_STOP

    def _quick(self, s: float, hint: float | None) -> tuple[Route | None, Value | None]:
        """Far from the target, the search only needs the sign and a rough size of value - target: the
        moment line on the QUICK discretization (fewer nodes per strip: about half the time, its own
        coarse-sum error estimate). Kept only when |value - target| exceeds QUICK_MARGIN of the target and
        100 times that estimate; otherwise (None, None) and the caller computes the primary route, so every
        point near the target -- the answer and the point below it -- is the primary route's."""
        if type(self).route is not Curve.route or self.steps < 2 or s < MIN_SIGMA or self._near(s):
            return None, None
        if one_minus_tv_bound(self.steps, self.epochs, s) <= ONE_LEVEL or pair_routes.light(self.steps, self.epochs, s):
            return None, None    # light: the moment line is long (a hinted one too), the density serves
        try:
            # the quick line's own value only: a tail it cannot decide is the primary route's (no tilted line twice)
            route = replace(pair_routes.laplace_route(self.steps, self.epochs, s, hint, QUICK), factors=None)
            v = self.functional(route)
        except NumericsUnreliableError:
            return None, None
        if math.isfinite(v.value) and abs(v.value - self.target) > max(QUICK_MARGIN * self.target, 100.0 * v.error):
            return route, v
        return None, None

    def _near(self, s: float) -> bool:
        """s lies between an evaluated sigma that misses and one that meets, and they are within
        NEAR_WIDTH of each other or both within 20 QUICK_MARGIN of the target: the quick line would
        most likely be computed for nothing (the search closes in; the primary follows)."""
        if self.mu_of is not None and self.last is not None and \
                abs(self.raw[self.last] / self.target - 1.0) < NEAR_VALUE:
            return True   # the secant from a point this close lands within QUICK_MARGIN (measured)
        below = [x for x, v in self.values.items() if x < s and v > 0]
        above = [x for x, v in self.values.items() if x > s and v <= 0]
        if not below or not above:
            return False
        lo, hi = max(below), min(above)
        gaps = (abs(math.log(max(self.raw[x], 1e-300) / self.target)) for x in (lo, hi))
        return hi / lo - 1.0 < NEAR_WIDTH or max(gaps) < 20.0 * QUICK_MARGIN

    def _hint(self, s: float) -> float | None:
        """Where the moment line at s will have decayed: the nearest evaluated sigma's u, scaled by the
        model u_guess (tv_laplace) from there to s, with 20 % to spare (a line that must grow is computed
        twice, a longer one costs in proportion). None until a laplace line was computed."""
        if not self.u_seen or self.steps < 2:   # M = 1: closed form; stages (steps 0): their own hint
            return self.u_hint
        near = min(self.u_seen, key=lambda x: abs(math.log(x / s)))
        try:
            ratio = u_guess(self.steps, self.epochs, s) / u_guess(self.steps, self.epochs, near)
        except (ValueError, OverflowError, ZeroDivisionError):
            return self.u_hint
        return 1.2 * self.u_seen[near] * ratio if math.isfinite(ratio) and ratio > 0 else self.u_hint

    def route(self, s: float, u_hint: float | None) -> Route:
        """The primary route at the pair's sigma s (a subclass serves other pairs)."""
        if s < MIN_SIGMA and self.steps > 1:
            raise NumericsUnreliableError(f"the exact sigma for {self.what} lies below {MIN_SIGMA} "
                                          f"(M={self.steps}, E={self.epochs})")
        return route_at(self.steps, self.epochs, s, check=False, u_hint=u_hint)[0]

    def log_gap(self, sigma: float) -> float:
        """ln(value / target), nearly linear in ln sigma, with the sign of self(sigma) (<= 0: meets)."""
        gap = self(sigma)
        g = math.log(max(self.raw[sigma], 1e-300) / self.target)
        return max(g, 1e-300) if gap > 0 else min(g, 0.0)

    # The search steers on a pair of coordinates (x, y) in which the curve is nearly a line. With mu_of:
    # x = ln(e^{1/s^2} - 1) (s the pair's sigma) and y = ln mu(value) - ln mu(target), mu(v) the Gaussian
    # shift with that value: in the GDP limit (B.3) mu^2 = (E/M)(e^{1/s^2} - 1), so y = x/2 + const
    # exactly, and away from it (E = 1, large M) the slope still changes little (ln(value/target)
    # against ln sigma bends: its slope went from -20 to -33 over the bracket at (10^7, 1, eps 1)).
    # Steering only: the answer is certified by the two grid points' values alone.

    def coord(self, sigma: float) -> float:
        if self.mu_of is None:
            return math.log(sigma)
        if self.jump:   # x = ln(1/s): the one-big-step model's mu = 1/s makes y = x + const
            return 0.5 * math.log(self.scale2) - math.log(sigma)
        inv = self.scale2 / (sigma * sigma)  # 1 / s^2
        return inv + math.log(-math.expm1(-inv))

    def sigma_at(self, x: float) -> float:
        """The inverse of coord."""
        if self.mu_of is None:
            return math.exp(x)
        if self.jump:
            return math.sqrt(self.scale2) * math.exp(-x)
        inv = x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))  # ln(1 + e^x)
        return math.sqrt(self.scale2 / inv)

    def steer_gap(self, sigma: float) -> float:
        """y at sigma, with the sign of self(sigma) (> 0: misses)."""
        if self.mu_of is None:
            return self.log_gap(sigma)
        gap = self(sigma)
        g = math.log(self.mu_of(self.raw[sigma]) / self.mu_target)
        return max(g, 1e-300) if gap > 0 else min(g, 0.0)


def _steering(f):
    """(coord, sigma_at, gap, steered) of a curve: Curve's coordinates, or ln sigma and log_gap for any
    object with __call__ and log_gap only."""
    if isinstance(f, Curve):
        return f.coord, f.sigma_at, f.steer_gap, f.mu_of is not None
    return math.log, math.exp, f.log_gap, False


def _bracket(f: Curve, seed: float) -> tuple[float, float]:
    """(lo, hi) with f(lo) > 0 >= f(hi), by secant steps on the steering coordinates (f.coord,
    f.steer_gap: nearly a line), aimed 5 % beyond the root, each step a factor in [1.01, 2] of sigma
    from the last point (the GDP-limit seed lies 0.1 - 25 % below the exact sigma at E = 1, closer for
    more epochs). With mu_of the first step is the GDP model's (slope 1/2); else 3 % in sigma."""
    coord, sigma_at, gap, steered = _steering(f)
    s0 = seed
    x0, g0 = coord(s0), gap(s0)
    if steered:
        x1 = x0 - 1.05 * g0 / f.first_slope
        s1 = _clamp_step(s0, sigma_at(x1) if math.isfinite(x1) else s0, g0 > 0)
    else:
        s1 = s0 * math.exp(0.03 if g0 > 0 else -0.03)
    for _ in range(60):
        g1 = gap(s1)
        if (g0 > 0) != (g1 > 0):
            lo, hi = sorted((s0, s1))
            return lo, hi
        x1 = coord(s1)
        slope = (g1 - g0) / (x1 - x0) if x1 != x0 else 0.0
        # g decreases in sigma; x decreases in sigma with mu_of, increases without
        right = slope > 0 if steered else slope < 0
        target = sigma_at(x1 - 1.05 * g1 / slope) if right and g1 != 0 else math.nan
        s2 = _clamp_step(s1, target, g1 > 0)
        s0, x0, g0, s1 = s1, x1, g1, s2
        if s1 > 1e6:
            raise NumericsUnreliableError(f"no sigma below 1e6 meets {f.what}")
    raise NumericsUnreliableError(f"could not bracket the sigma for {f.what}")


FIRST_SLOPE = 0.5  # the first step: the GDP limit's slope dy/dx (measured 0.09 - 0.5 at E = 1, 0.5 at E >= 10)
JUMP_EPS = 2.0     # one epoch, dp: from this eps the one-big-step seed (below it the larger of it and the GDP one's)
JUMP_FPR = 1e-3    # one epoch, tpr: up to this FPR the one-big-step seed (within 0.1 %; 2 - 5 % off at FPR 0.1)
SECANT = True
NOISE_STOP = 4     # evaluations within 3 estimates of the target before the search stops inside its noise


def _clamp_step(s: float, proposal: float, up: bool) -> float:
    """The proposal, moved to a factor in [1.01, 2] from s in the direction up (0.3 in ln sigma when
    the proposal is unusable)."""
    step = math.log(proposal / s) if math.isfinite(proposal) and proposal > 0 else (0.3 if up else -0.3)
    step = math.copysign(min(max(abs(step), 0.01), math.log(2.0)), 1.0 if up else -1.0)
    return s * math.exp(step)


def grid_search(f: Curve, seed: float, resolution) -> str:
    """The least grid index k with f(k res) <= 0 and f((k-1) res) > 0, both evaluated (or k = 1).

    Regula falsi on the steering coordinates (Curve.coord, Curve.steer_gap: nearly a line) with every point ON the grid:
    the index bracket (a misses, b meets; at the start the float bracket's floor and ceiling, by
    monotonicity) shrinks at each evaluation to the estimate's grid point, so the last two
    evaluations are usually the answer and the point below it (no separate walk). An end kept twice
    has its g halved (Illinois); after four steps that did not halve the bracket comes a bisection
    step. An evaluation that contradicts an end implied by monotonicity moves the bracket (a walk).
    Where both ends and NOISE_STOP evaluations in all lie within 3 estimates of the target, the value's noise
    spans the bracket: the search stops at its meeting end (bisecting on would follow the round-off)."""
    search_step(resolution, 1.0)            # a bad resolution is refused before any evaluation
    coord, sigma_at, gap, _ = _steering(f)
    lo, hi = _bracket(f, seed)
    in_noise = getattr(f, "in_noise", lambda: False)   # a curve without error estimates never stops in its noise
    res = search_step(resolution, lo)
    step = float(res)
    b = max(1, math.ceil(hi / step))
    a = min(max(0, math.floor(lo / step)), b - 1)
    pts = {"lo": (coord(lo), gap(lo)), "hi": (coord(hi), gap(hi))}
    seen: dict[int, bool] = {}  # evaluated grid indices -> meets
    last, slow = None, 0
    recent = [pts["lo"], pts["hi"]]  # the steering points in the order evaluated (the last two: secant)
    for _ in range(200):
        if b - a == 1 and b in seen and (a == 0 or a in seen):
            return decimal_str(res * b)
        if b in seen and in_noise():
            return decimal_str(res * b)
        if b - a == 1:  # one cell left: evaluate the end still implied
            k = b if b not in seen else a
        else:
            top = b - 1 if b in seen else b
            k = _secant_index(sigma_at, recent[-2], recent[-1], step) if SECANT else None
            if k is None or not a < k <= top or slow >= 2:  # regula falsi on the bracket's ends
                (x0, g0), (x1, g1) = pts["lo"], pts["hi"]
                x = x0 - g0 * (x1 - x0) / (g1 - g0) if g1 != g0 else 0.5 * (x0 + x1)
                k = math.ceil(sigma_at(x) / step - 1e-9) if slow < 4 else (a + b) // 2
            k = min(max(k, a + 1), top)
        width = b - a
        meets = f(step * k) <= 0
        seen[k] = meets
        if meets:
            b = k
            a = min(a, b - 1)   # a implied miss that met: walk down
        else:
            a = k
            b = max(b, a + 1)   # an implied meet that missed: walk up
        side = "hi" if meets else "lo"
        pts[side] = (coord(step * k), gap(step * k))
        recent.append(pts[side])
        if last == side:  # the other end kept twice: Illinois
            other = "lo" if meets else "hi"
            pts[other] = (pts[other][0], 0.5 * pts[other][1])
        last = side
        slow = slow + 1 if b - a > width // 2 else 0
    raise NumericsUnreliableError(f"the grid search for {f.what} did not settle")


def _secant_index(sigma_at, p0: tuple, p1: tuple, step: float) -> int | None:
    """The grid index at the secant root through the two latest steering points (None if flat)."""
    (x0, g0), (x1, g1) = p0, p1
    if g1 == g0 or x1 == x0:
        return None
    x = x1 - g1 * (x1 - x0) / (g1 - g0)
    try:
        sigma = sigma_at(x)
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    return math.ceil(sigma / step - 1e-9) if math.isfinite(sigma) else None


def _reduce(steps: int, epochs: int, scheme: str | None) -> tuple[int, int, int]:
    r = reduce(scheme or "random-allocation", steps, epochs)
    return r.steps, r.epochs, r.scale2


def gdp_mu_for_delta(eps: float, delta: float) -> float:
    """mu with gaussian_delta(eps, mu) = delta (the GDP limit's seed, Theorem 3.5)."""
    return brentq(lambda m: gaussian_delta(eps, m) - delta, 1e-6, 80.0, xtol=1e-12)


MU_RANGE = (1e-6, 80.0)  # the Gaussian shifts the steering coordinates use (clamped beyond)


def mu_for_delta(eps: float, value: float) -> float:
    """The Gaussian shift with delta(eps) = value, clamped to MU_RANGE (steering the search only)."""
    lo, hi = MU_RANGE
    if value <= gaussian_delta(eps, lo):
        return lo
    if value >= gaussian_delta(eps, hi):
        return hi
    return brentq(lambda m: gaussian_delta(eps, m) - value, lo, hi, xtol=1e-12)


def mu_for_tpr(alpha: float, value: float) -> float:
    """The Gaussian shift with 1 - T(alpha) = value (Phi^-1(value) + Phi^-1(1 - alpha)), clamped to MU_RANGE."""
    mu = float(ndtri(min(max(value, 1e-300), 1.0 - 1e-16))) + isf(alpha)
    return min(max(mu, MU_RANGE[0]), MU_RANGE[1])


def _gdp_sigma(steps: int, epochs: int, mu: float) -> float:
    """mu^2 = (E/M)(e^{1/sigma^2} - 1) solved for sigma (B.3, a limit, not a bound); M = 1: sqrt(E)/mu."""
    if steps == 1:
        return math.sqrt(epochs) / mu
    return math.log1p(mu * mu * steps / epochs) ** -0.5


def jump_eps(steps: int, eps: float) -> float:
    """The one-big-step model of one epoch (certifier.numerics.one_jump): L_M ~ 1 + (Y - 1)/M for the one large
    factor Y, so delta_{Q||P}(eps) ~ the Gaussian shift 1/s's delta at ln(1 + M (e^eps - 1)) (steering only)."""
    return math.log1p(steps * math.expm1(eps))


def jump_q(steps: int, alpha: float) -> float:
    """The one-big-step model's FPR per step: 1 - (1 - q)^M = alpha."""
    return -math.expm1(math.log1p(-alpha) / steps)


def exact_sigma_dp(steps: int, epochs: int, epsilon, delta, resolution="1e-6", scheme: str | None = None) -> str:
    """Least sigma on the resolution grid with max(delta_{Q||P}, delta_{P||Q})(eps) <= delta, as a decimal.

    Steered by the GDP limit (B.3), or at one epoch of M >= 2 steps by the one-big-step model where its seed is
    the better (every eps >= JUMP_EPS; below it where it lies above the GDP seed: both err low at E = 1)."""
    validate_cell(steps, epochs, 1.0)
    eps, dlt = check_eps(epsilon), check_unit("delta", delta)
    m, e, scale2 = _reduce(steps, epochs, scheme)
    seed = math.sqrt(scale2) * _gdp_sigma(m, e, gdp_mu_for_delta(eps, dlt))
    mu_of, jump = (lambda v: mu_for_delta(eps, v)), False
    if e == 1 and m >= 2:
        e_big = jump_eps(m, eps)
        big = math.sqrt(scale2) / mu_for_delta(e_big, dlt)
        if eps >= JUMP_EPS or big > seed:
            seed, mu_of, jump = big, (lambda v: mu_for_delta(e_big, v)), True
    f = Curve(m, e, scale2, lambda r: r.delta_for(eps, dlt), dlt, f"delta({eps:g}) <= {dlt:g}",
              mu_of=mu_of, jump=jump)
    return grid_search(f, seed, resolution)


def exact_sigma_tpr(steps: int, epochs: int, fpr, tpr, resolution="1e-6", scheme: str | None = None) -> str:
    """Least sigma on the resolution grid with 1 - T(alpha) <= beta, as a decimal."""
    validate_cell(steps, epochs, 1.0)
    alpha, beta = check_unit("false-positive rate", fpr), check_unit("true-positive rate", tpr)
    if beta <= alpha:
        raise ParameterError(f"the TPR target must exceed the FPR (a coin with bias alpha has TPR = alpha); "
                             f"got fpr={alpha:g}, tpr={beta:g}")
    m, e, scale2 = _reduce(steps, epochs, scheme)
    if e == 1 and m >= 2 and alpha <= JUMP_FPR:   # one epoch: the one-big-step model (TPR ~ alpha + the big step's)
        q = jump_q(m, alpha)
        mu_of = lambda v: min(max(isf(q) - isf(max(v - alpha, 1e-300)), MU_RANGE[0]), MU_RANGE[1])  # noqa: E731
        f = Curve(m, e, scale2, lambda r: r.tpr_for(alpha, beta), beta, f"TPR({alpha:g}) <= {beta:g}",
                  mu_of=mu_of, jump=True)
        return grid_search(f, math.sqrt(scale2) / mu_of(beta), resolution)
    f = Curve(m, e, scale2, lambda r: r.tpr_for(alpha, beta), beta, f"TPR({alpha:g}) <= {beta:g}",
              mu_of=lambda v: mu_for_tpr(alpha, v))
    seed = math.sqrt(scale2) * _gdp_sigma(m, e, isf(alpha) - isf(beta))
    return grid_search(f, seed, resolution)


def exact_privacy_scheme(steps: int, epochs: int, sigma, scheme: str | None = None, **kw) -> PrivacyProfile:
    """exact_privacy of the scheme's pair (fixed-bins: the one-epoch pair at sigma / sqrt(E))."""
    m, e, scale2 = _reduce(steps, epochs, scheme)
    p = exact_privacy(m, e, float(sigma) / math.sqrt(scale2), **kw)
    if scale2 == 1:
        return p
    return PrivacyProfile(steps, epochs, float(sigma), f"{p.method} on (M, 1, sigma/sqrt({scale2}))",
                          p.tv, p.epsilon, p.delta, p.tpr)


__all__ = ["PrivacyProfile", "exact_privacy", "exact_privacy_scheme", "exact_sigma_dp", "exact_sigma_tpr",
           "gaussian_delta", "gaussian_tpr"]
