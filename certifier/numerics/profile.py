"""The privacy profile delta(eps) and the trade-off curve T(alpha) of (P_M^E, Q_M^E), numerically.

With Lambda = dQ/dP of E epochs (Theorem 4.1) and G(K) = E_P min{Lambda, K}:

    delta_{Q||P}(eps) = E_P (Lambda - e^eps)_+   = 1 - G(e^eps)            (B.4, E_P Lambda = 1)
    delta_{P||Q}(eps) = E_P (1 - e^eps Lambda)_+ = 1 - e^eps G(e^-eps)
    1 - T(alpha)      = min_K [1 - G(K) + K alpha]                          (Neyman-Pearson)

(every test with FPR alpha has TPR <= Q(S) - K P(S) + K alpha <= 1 - G(K) + K alpha, with
equality at the likelihood-ratio test whose threshold K has P_P(Lambda > K) = alpha). G comes
from the moment line as formula (14) does at K = 1: min{x, K} = K min{x/K, 1} and
E_P (Lambda/K)^q = F_M(q)^E K^{-q}, so

    G(e^s) = (1/pi) int_0^inf Re[F_M(1/2 + iu)^E e^{s(1/2 - iu)}] / (u^2 + 1/4) du.      (P1)

The integrand is analytic for |Im u| < 1/2 and bounded by e^{s/2 + 0.45|s|} |u^2 + 1/4|^{-1} on
|Im u| = 0.45, so the trapezoid's aliasing bound of certifier.tv_laplace carries over with that
factor. Each line (route) gives G, hence every functional; a route's error for a functional is
its per-node floor (cut tails, round-off, mass defect) plus the change to its coarse sums.
Floating point with a-posteriori estimates, not a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from certifier.errors import NumericsUnreliableError
from certifier.numerics.saddle import decided, tail_delta, tail_delta_second
from certifier.numerics.tv_laplace import ALIASING, STRIP

S_LOW = -60.0   # ln K searched for the Neyman-Pearson threshold: K in [e^-60, 1/alpha]


@dataclass(frozen=True)
class MomentLineE:
    """F_M(1/2 + i u_j)^E, u_j = j du, with a per-node error floor, a scalar defect and the tail."""
    du: float
    fe: np.ndarray
    floor: np.ndarray | None = None  # per-node bound/estimate of |error of fe|
    defect: float = 0.0              # error of G in units of e^{s/2} (e.g. E x the missing mass)
    tail: float = 0.0                # |F^E| at the last node: beyond, as if it stayed there

    @property
    def weight(self) -> np.ndarray:
        u = self.du * np.arange(self.fe.size)
        w = np.full(self.fe.size, self.du / math.pi) / (u * u + 0.25)
        w[0] *= 0.5
        return w

    def g(self, s: float) -> float:
        """(P1) by the trapezoid."""
        u = self.du * np.arange(self.fe.size)
        return math.exp(0.5 * s) * float(self.weight @ np.real(self.fe * np.exp(-1j * s * u)))

    def floor_error(self, s: float) -> float:
        """|G - g| from the floor, the defect, the tail and the aliasing of the trapezoid."""
        u_last = max(self.du * (self.fe.size - 1), self.du)
        e = self.defect + self.tail * (2.0 / math.pi) * math.atan(1.0 / (2.0 * u_last))
        if self.floor is not None:
            e += float(self.weight @ self.floor)
        return math.exp(0.5 * s) * e + ALIASING * math.exp(0.5 * s + STRIP * abs(s))

    def dqp(self, eps: float) -> float:
        return 1.0 - self.g(eps)

    def dpq(self, eps: float) -> float:
        return 1.0 - math.exp(eps) * self.g(-eps)

    def tpr(self, alpha: float) -> tuple[float, float]:
        """(1 - T(alpha), ln K at the minimum)."""
        return _np_min(self.g, alpha)


def _np_min(g, alpha: float) -> tuple[float, float]:
    """min over s of 1 - G(e^s) + e^s alpha (unimodal in s: convex in K = e^s); the minimiser
    has P_P(Lambda > K) = alpha <= 1/K (Markov), so s <= ln(1/alpha)."""
    h = lambda s: 1.0 - g(s) + math.exp(s) * alpha  # noqa: E731
    hi = math.log(1.0 / alpha) + 1e-9
    r = minimize_scalar(h, bounds=(S_LOW, hi), method="bounded", options={"xatol": 1e-10})
    best = min((float(r.fun), float(r.x)), (h(hi), hi), (h(S_LOW), S_LOW))
    return min(1.0, best[0]), best[1]


@dataclass(frozen=True)
class DensityLine:
    """The density of ln Lambda on a grid (route vfft, C.4): the same functionals as sums over it,
    each with the kink correction of Euler-Maclaurin: a function whose derivative jumps by J at
    s0 = s_j + theta h has integral = sum h g(s_k) + J f(s0) h^2 B2(theta) / 2, B2(x) = x^2 - x + 1/6
    (at theta = 0 this is C.4's h^2 f(0)/12 for the TV)."""
    density: object            # certifier.numerics.tv_vfft.LogLambdaDensity
    defect: float = 0.0
    missing: float = 0.0       # the grid's missing P-mass |1 - mass| (E epochs), where no closed-form cuts are known
    epochs: int = 0            # > 0: the density's closed-form cuts per epoch (`density.cuts`) times this, instead

    @property
    def cut(self) -> tuple[float, float] | None:
        """(P-mass, Q-mass) the grids cut or move over E epochs, bounded in closed form; None where not known."""
        cuts = getattr(self.density, "cuts", None) if self.epochs else None
        return None if cuts is None else (self.epochs * cuts[0], self.epochs * cuts[1])

    @property
    def mass_defect(self) -> float:
        """P-mass cut or moved: the closed-form bound where known, else the grid's missing mass."""
        cut = self.cut
        return self.missing if cut is None else cut[0]

    def _masses(self):
        # signed: the round-off's negative samples offset its positive ones; clipped, the tail sums took only the
        # positive half of the noise (at M = 10, E = 1, delta(1) ~ 1e-12 read 1.5 % high, beyond its estimate)
        p = self.density.f * self.density.h
        return p, np.exp(self.density.s)

    def _kink(self, s0: float, jump: float) -> float:
        d = self.density
        x = (s0 - float(d.s[0])) / d.h
        j = int(math.floor(x))
        if not 0 <= j < d.s.size - 1:
            return 0.0
        theta = x - j
        f0 = (1.0 - theta) * d.f[j] + theta * d.f[j + 1]
        return jump * float(f0) * d.h * d.h * (theta * theta - theta + 1.0 / 6.0) / 2.0

    def g(self, s: float) -> float:
        p, x = self._masses()
        k = math.exp(s)
        return float(p @ np.minimum(x, k)) + self._kink(s, -k)   # min{e^s, K}: slope e^s = K -> 0

    def floor_error(self, s: float) -> float:
        return self.defect * max(1.0, math.exp(s))

    def delta_floor(self, side: str, eps: float) -> float:
        """The floor of a hockey-stick sum: the mass the grids cut or move weighed by its largest weight, plus the
        samples' round-off (the largest negative sample, at least 1e-16 of the peak) summed as independent errors,
        10 (sum_k w_k^2)^{1/2} over the functional's weights w_k (as the density line of
        certifier.numerics.density_moments): only the samples the functional weighs count (a tail's few, where
        delta is tiny). The line's defect (its round-off as mass: 10 times the negative mass of the whole grid,
        and 1e-12) was 1e-13 - 1e-12 there.

        With `cut` (route vfft) the mass is bounded in closed form (certifier.numerics.tv_vfft.grid_cuts, E
        epochs): delta_{P||Q}'s weight (1 - e^eps Lambda)_+ is at most 1 wherever the P-mass went;
        delta_{Q||P}'s (Lambda - e^eps)_+ is at most Lambda, so a mass cut or moved weighs at most its Q-mass.
        The E-fold composition's own wrap (`wrap`) is added. The one-epoch normalisation |1 - mass1| is
        not: beyond these bounds it is the samples' round-off (and the spline's, which the second grid sees) spread
        over the whole grid, whose share in a tail sum the round-off term already holds. Without `cut` (the M = 2
        lattice): the grid's missing P-mass times e^eps and its Q-normalisation |1 - sum f e^s h| as before."""
        d = self.density
        x, a = np.exp(d.s), math.exp(eps)
        noise = max(-float(d.f.min()), 1e-16 * float(d.f.max())) * d.h
        cut = self.cut
        if side == "qp":
            weights = float(np.linalg.norm(np.clip(x - a, 0.0, None)))
            if cut is not None:
                return cut[1] + self.wrap("qp") + 10.0 * noise * weights
            q_defect = abs(1.0 - float(d.f @ x) * d.h)
            return self.missing * a + q_defect + 10.0 * noise * weights
        weights = float(np.linalg.norm(np.clip(1.0 - a * x, 0.0, None)))
        if cut is not None:
            return cut[0] + self.wrap("pq") + 10.0 * noise * weights
        return self.missing + 10.0 * noise * weights

    def wrap(self, side: str) -> float:
        """An estimate of what the E-fold periodic composition wraps: the sum of E epochs beyond one end of the
        ln-Lambda grid lands at the other. Its mass shows in the grid's outer 1/64 at each end: the wrapped mass lands
        there, and a tail that decays by more than a factor 2 over a 64th of the period (the composed density is
        Gaussian-like there: the grid spans 24 of its sd) has less mass beyond the end than in that band. Weighed as
        the floor's weights are, P-mass (pq) and Q-mass e^s f (qp); signed sums (the round-off of the band's samples
        largely cancels and is held by the round-off term). A Chernoff bound on ln Lambda would need moments of order
        ~ 1/v (hundreds to thousands) of L_M, which no closed form gives."""
        if self.epochs == 1:   # one epoch is not composed: the grid's ends hold its own tails, nothing wrapped
            return 0.0
        d = self.density
        band = max(d.s.size // 64, 1)
        mass = d.f * d.h if side == "pq" else d.f * np.exp(d.s) * d.h
        return abs(float(mass[:band].sum())) + abs(float(mass[-band:].sum()))

    def dqp(self, eps: float) -> float:
        p, x = self._masses()
        k = math.exp(eps)
        return float(p @ np.clip(x - k, 0.0, None)) + self._kink(eps, k)   # slope 0 -> K

    def dpq(self, eps: float) -> float:
        p, x = self._masses()
        return float(p @ np.clip(1.0 - math.exp(eps) * x, 0.0, None)) + self._kink(-eps, 1.0)  # -1 -> 0

    def tpr(self, alpha: float) -> tuple[float, float]:
        return _np_min(self.g, alpha)


@dataclass(frozen=True)
class Value:
    """A number with an error estimate (numerical, not certified)."""
    value: float
    error: float

    def __post_init__(self):
        object.__setattr__(self, "value", float(self.value))
        object.__setattr__(self, "error", float(self.error))


TAIL_SWITCH = 1e-7   # a delta whose line error exceeds this share of it is taken from the tilted line
DENSITY_SWITCH = 5e-3   # ... and from the pair's ln-Lambda density where the tilted line's still exceeds this share


@dataclass
class Route:
    """A primary line and its coarse variants: value from `main`, error = main's floor + the largest
    change to a variant (a-posteriori: the coarse rule's error over-estimates the fine one's).

    With `factors` (the pair's blocks, certifier.numerics.saddle.Factor), a hockey-stick divergence
    whose error on this line exceeds TAIL_SWITCH of its value is computed on the tilted line instead
    (certifier.numerics.saddle: relative accuracy in the tails); `second_tails` picks that route's check."""
    name: str
    main: object
    variants: tuple = ()
    u_max: float | None = None  # the laplace route's u-range, a hint for a nearby sigma
    factors: tuple | None = None
    second_tails: bool = False
    big_step: object | None = None    # far tails of many steps, or one epoch of few (numerics.big_step_tails), or None
    density: object | None = None     # a zero-argument callable: the pair's ln-Lambda density route, or None
    _cache: dict = field(default_factory=dict)

    def _tail(self, side: str, eps: float, line: Value, decide: float | None = None) -> Value:
        """decide: a search's target (saddle.tail_delta: no fallback line where the tilted line decides the side)."""
        if self.factors is None or line.error <= TAIL_SWITCH * abs(line.value):
            return line
        key = ("tail", side, eps)
        if decide is not None and key not in self._cache:
            key = ("tail", side, eps, decide)
        if key not in self._cache:
            try:
                if self.second_tails:
                    t = tail_delta_second(self.factors, eps, side)
                else:
                    # the Q||P line follows the 1/2-line's reach in u (a light bulk decays late); the P||Q
                    # line cannot afford a long u-range (its ray turns less), it grows from its own width
                    t = tail_delta(self.factors, eps, side, u_hint=self.u_max if side == "qp" else None,
                                   decide=decide)
                v = Value(t.value, t.error)
            except (NumericsUnreliableError, ValueError, OverflowError, FloatingPointError):
                v = line
            v = v if v.error < line.error else line
            # the last resorts, in turn, while the estimate is still wide and the side of a target undecided; each
            # is handed the estimate it must beat (a resort whose estimate cannot be below it may decline early)
            resorts = [(self.big_step.switch, lambda bar: self.big_step.delta(side, eps, bar))] if self.big_step else []
            resorts += [(DENSITY_SWITCH, lambda bar: self._density_delta(side, eps))] if self.density else []
            for switch, other in resorts:
                if v.error > switch * abs(v.value) and not (decide is not None and decided(v.value, v.error, decide)):
                    w = other(v.error)
                    v = w if w is not None and w.error < v.error else v
            self._cache[key] = v
        return self._cache[key]

    def _density_delta(self, side: str, eps: float) -> Value | None:
        """A hockey-stick divergence on the pair's ln-Lambda density (route vfft, formed on first use), or None.
        Light tails at small eps and delta: the density's sums carry only their samples' round-off where the
        tilted line's saddle point lies far out (c in the tens) and its own round-off floor is lifted by L^c."""
        route = self.density()
        if route is None:
            return None
        return route.delta_qp_line(eps) if side == "qp" else route.delta_pq_line(eps)

    def _combine(self, key, fn, s_err) -> Value:
        if key not in self._cache:
            v = fn(self.main)
            if key[0] in ("qp", "pq") and hasattr(self.main, "delta_error"):   # a closed form's own error
                self._cache[key] = Value(v, self.main.delta_error(key[1], v))
                return self._cache[key]
            if key[0] in ("qp", "pq") and hasattr(self.main, "delta_floor"):   # a density's hockey-stick floor
                floor = self.main.delta_floor(key[0], key[1])
            else:
                floor = self.main.floor_error(s_err(v))
            err = floor + max((abs(fn(x) - v) for x in self.variants), default=0.0)
            self._cache[key] = Value(v, err)
        return self._cache[key]

    def _pq_extra(self, eps: float) -> float:
        """delta_{P||Q} = 1 - e^eps G(e^-eps) on a moment line carries the error of G at -eps times e^eps (a
        closed form's error and a density's hockey-stick floor already hold theirs)."""
        if hasattr(self.main, "delta_error") or hasattr(self.main, "delta_floor"):
            return 0.0
        return (math.exp(eps) - 1.0) * self.main.floor_error(-eps)

    def delta_qp(self, eps: float, decide: float | None = None) -> Value:
        return self._tail("qp", eps, self.delta_qp_line(eps), decide)

    def delta_pq(self, eps: float, decide: float | None = None) -> Value:
        # 1 - e^eps G(e^-eps): the error of G at -eps times e^eps
        v = self._combine(("pq", eps), lambda x: x.dpq(eps), lambda v: -eps)
        extra = self._pq_extra(eps)
        return self._tail("pq", eps, Value(v.value, v.error + extra), decide)

    def delta_qp_line(self, eps: float) -> Value:
        """delta_{Q||P}(eps) on this line only (no tilted line)."""
        return self._combine(("qp", eps), lambda x: x.dqp(eps), lambda v: eps)

    def delta_pq_line(self, eps: float) -> Value:
        """delta_{P||Q}(eps) on this line only (no tilted line)."""
        v = self._combine(("pq", eps), lambda x: x.dpq(eps), lambda v: -eps)
        extra = self._pq_extra(eps)
        return Value(v.value, v.error + extra)

    def delta_for(self, eps: float, target: float) -> Value:
        """delta(eps) as far as a search against `target` needs it: the 1/2-line's value where it decides
        the side of the target beyond 3 times its error (and that error is within 1 % of the target),
        else delta(eps) (the tilted line where the 1/2-line is not accurate)."""
        a = self.delta_qp_line(eps)
        b = self.delta_pq_line(eps)
        hi = max(a.value, b.value)
        err = max(a.error, b.error)
        if err <= 0.01 * target and decided(hi, err, target):
            return Value(min(1.0, max(0.0, hi)), err)
        return self.delta(eps, target)

    def delta(self, eps: float, decide: float | None = None) -> Value:
        """max of the two directions (both-ways (eps, delta)-DP), its error the half-width of the interval
        the true max lies in; the smaller direction is not taken to the tilted line where its 1/2-line
        upper end is below the other's lower end. decide: a search's target (each side's tilted line is then
        as accurate as deciding its side of the target needs: the max is decided when both sides are)."""
        a = self.delta_qp(eps, decide)
        b = self.delta_pq_line(eps)
        if b.value + b.error > a.value - a.error:
            b = self.delta_pq(eps, decide)
        value = max(a.value, b.value)
        # the true max lies in [max(a - e_a, b - e_b), max(a + e_a, b + e_b)]
        err = max(max(a.value + a.error, b.value + b.error) - value, value - max(a.value - a.error, b.value - b.error))
        return Value(min(1.0, max(0.0, value)), err)  # round-off may dip below 0

    def tpr_line(self, alpha: float) -> tuple[Value, float]:
        """1 - T(alpha) on this line only, and the ln K of its minimum."""
        key = ("tpr", alpha)
        if key not in self._cache:
            v, s = self.main.tpr(alpha)
            err = self.main.floor_error(s if math.isfinite(s) else 0.0)
            err += max((abs(x.tpr(alpha)[0] - v) for x in self.variants), default=0.0)
            self._cache[key] = (Value(v, err), s)
        return self._cache[key]

    def tpr(self, alpha: float, decide: float | None = None) -> Value:
        """1 - T(alpha): the largest TPR of a test with FPR alpha. Where the line's error exceeds TAIL_SWITCH
        of it, min over s of delta_{Q||P}(s) + e^s alpha with delta on the tilted line (tilted_tpr).
        decide: a search's target (tilted_tpr stops once its value's side of it is decided)."""
        line, s = self.tpr_line(alpha)
        if self.factors is None or line.error <= TAIL_SWITCH * abs(line.value) or not math.isfinite(s):
            return line
        key = ("tpr-tail", alpha)
        if decide is not None and key not in self._cache:
            key = ("tpr-tail", alpha, decide)
        if key not in self._cache:
            try:
                v = self.tilted_tpr(alpha, s, decide=decide)
            except (NumericsUnreliableError, ValueError, OverflowError, FloatingPointError):
                v = line
            v = v if v.error < line.error else line
            if self.big_step is not None and v.error > self.big_step.switch * abs(v.value) and \
                    not (decide is not None and decided(v.value, v.error, decide)):
                w = self.big_step.tpr(alpha)
                v = w if w is not None and w.error < v.error else v
            self._cache[key] = v
        return self._cache[key]

    def tpr_for(self, alpha: float, target: float) -> Value:
        """1 - T(alpha) as far as a search against `target` needs it (as delta_for)."""
        line, _ = self.tpr_line(alpha)
        if line.error <= 0.01 * target and decided(line.value, line.error, target):
            return line
        return self.tpr(alpha, target)

    def tilted_tpr(self, alpha: float, s0: float, step: float = 0.05, rounds: int = 6,
                   decide: float | None = None) -> Value:
        """min over s of h(s) = delta_{Q||P}(s) + e^s alpha (Neyman-Pearson), delta on the tilted line: a
        parabola through h at s and s +- step, a move to its vertex (at most 2 steps), the step shrunk 4-fold
        once the vertex lies within it; until the parabola's minimum is within 1e-7 of the least value.
        Any s gives an upper end (h >= 1 - T(alpha)); the estimate adds the tilted line's error there and
        the gap between the least value and the last parabola's minimum (what a better s could gain).
        decide: a search's target: each delta's line as accurate as deciding h's side needs (tail_delta), and
        the walk stops once the value's side of the target lies beyond 3 times its estimate (Curve's rule)."""
        tails = {}

        def h(x: float) -> float:
            if x not in tails:
                t = tail_delta_second(self.factors, x, "qp") if self.second_tails else \
                    tail_delta(self.factors, x, "qp", decide=None if decide is None else decide - math.exp(x) * alpha)
                tails[x] = (t.value + math.exp(x) * alpha, t.error)
            return tails[x][0]

        def result(low: float) -> Value:
            best = min(tails, key=lambda x: tails[x][0])
            value, err = tails[best]
            gap = value - low if math.isfinite(low) else value
            return Value(min(1.0, value), err + max(0.0, gap, 1e-7 * value))   # 1e-7: the stopping rule

        s, low = s0, -math.inf
        for _ in range(rounds):
            if decide is not None and tails:
                v = result(low)
                if decided(v.value, v.error, decide):
                    return v
            ys = [h(s - step), h(s), h(s + step)]
            den = ys[0] - 2.0 * ys[1] + ys[2]
            if not den > 0:   # not convex at this scale: walk downhill
                s = s - step if ys[0] < ys[2] else s + step
                low = -math.inf
                continue
            move = 0.5 * step * (ys[0] - ys[2]) / den
            low = ys[1] - (ys[0] - ys[2]) ** 2 / (8.0 * den)
            best = min(tails.values())[0]
            if abs(move) <= step:
                if best - low <= 1e-7 * best:
                    h(s + move)
                    break
                s, step = s + move, step / 4.0
            else:
                s = s + math.copysign(2.0 * step, move)
        return result(low)

    def tv(self) -> Value:
        return self.delta_qp(0.0)

    def epsilon(self, delta: float) -> Value:
        """Least eps >= 0 with both hockey-stick divergences <= delta (each decreases in eps)."""
        # the 1/2-line's value where it decides the side of delta (delta_for): the tilted line near the root only
        f = lambda e: self.delta_for(e, delta).value - delta  # noqa: E731
        if f(0.0) <= 0:
            return Value(0.0, 0.0)
        hi = 1.0
        while f(hi) > 0:
            hi *= 2.0
            if hi > 512:
                raise NumericsUnreliableError(f"eps at delta = {delta:g} exceeds 512")
        eps = brentq(f, 0.0 if hi == 1.0 else hi / 2.0, hi, xtol=1e-12, rtol=1e-14)
        d = self.delta(eps)
        h = max(1e-6, 1e-4 * eps)
        slope = abs(self.delta(eps + h).value - self.delta(max(0.0, eps - h)).value) / (eps + h - max(0.0, eps - h))
        return Value(eps, d.error / slope if slope > 0 else math.inf)
