"""Automatic grids for the Lemma C.5 certificate: an a-priori error model and a cost model.

Error model. Every rounding of Lemma C.5 is a mean-preserving spread: a value y
in [a, b] goes to a or b with the probabilities that keep its mean, which adds
the variance (b - y)(y - a) <= (b - a)^2/4, on average (b - a)^2/6 when y is
spread evenly over the cell. Let g(x) = min{1, x}; g'' = -delta_1, so adding
independent noise of small variance v to Lambda near 1 lowers E g(Lambda) by
about v f(1)/2, with f the density of Lambda = prod_e L_e at 1 under P. Under
P, ln Lambda is close to N(-s^2/2, s^2) with s^2 = E ln(1 + (e^{1/sigma^2} - 1)/M),
so f(1) = phi(s/2)/s. A spread of variance w of one step Y moves L_e by w/M^2
and Lambda by about as much near Lambda = 1, so with K = E f(1)/2 the loss
1 - O - TV is about

    K [ h^2/(6M)                                    step (i), uniform part
      + q_t d^2/(6M)                                 step (i), tail grid of step d above tail_start
      + sum_i floor(M/2^i) (g_i h)^2 (1 - (g_{i-1}/g_i)^2)/(6 M^2)   step (ii) re-roundings
      + eta^2/6 ]                                    step (iii), the log grid
    + E M Pr(Y > cap) + E M Pr(Y > 7M)             deletions (cap, truncation at 8M)
    + (number of products) trim.

On the Table 4 cell M=100, E=10 at the paper's grid this predicts 1.64e-8 and
the computation gives 1.65e-8. The cost model counts the erfc evaluations of
step (i) and the lengths of the fmpz_poly products of steps (ii) and (iv).
`choose_grid` minimises the predicted time subject to the predicted loss being
at most a safety fraction of the budget min(lambda - TV, 1e-7).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from flint import fmpq
from scipy.special import ndtr

from certifier.bounds.lower_v1 import LowerV1, replay_slack
from certifier.bounds.upper_v1 import BAND_POINTS, CAP_POINTS, UpperV1, make_method
from certifier.errors import CannotCertifyError
from certifier.params import ParameterError, parse_decimal

MANTISSAS = (1, 1.2, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8)
RHOS = (0.0, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
TAIL_SHARE = 0.05      # share of the budget given to the tail grid of step (i)
DELETE_SHARES = (0.01, 0.03, 0.08, 0.15, 0.25)  # candidate shares of the budget for the cap deletion
TRIM = fmpq(1, 10**20)
ROWS_LOSS = 5e-8       # grids with a moved cap: what the move may cost the (eps, delta) rows (5 % of delta = 1e-6)
SEC_PER_POINT = 20e-6  # step (i): two arb erfc + ball arithmetic per grid point (measured)
SEC_PER_COEFF = 7e-7   # fmpz_poly product + floor shift, per output coefficient (measured, shared 2-core box)
SEC_PER_CELL = 4e-6    # step (iii): integer work per log-grid cell (measured)


def nice_values(lo: float, hi: float):
    """Decimal values m * 10^k in [lo, hi] with m in MANTISSAS, as (float, exact decimal string)."""
    out = []
    for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in MANTISSAS:
            v = m * 10.0**k
            if lo <= v <= hi:
                out.append((v, _dec(m, k)))
    return out


def _dec(m, k: int) -> str:
    ms = repr(m) if isinstance(m, float) else str(m)
    return f"{ms}e{k}"


def _q(s: str) -> fmpq:
    return parse_decimal("grid", s)


@dataclass
class Model:
    """Quantities of the error model at one cell (floats; informative only)."""
    steps: int
    epochs: int
    sigma: float
    K: float          # E f(1)/2 (a target kind: E f_kind/2, see KindWeights)
    s: float          # sd of ln Lambda
    sd_y: float       # sd of Y
    kind_tail: bool = False   # the tail grid also weighs the shifted coordinate (a kind's kink sits in the tail)

    @classmethod
    def at(cls, steps: int, epochs: int, sigma: float) -> "Model":
        b = math.expm1(1.0 / sigma**2)
        s = math.sqrt(epochs * math.log1p(b / steps))
        f1 = math.exp(-s * s / 8) / (math.sqrt(2 * math.pi) * s)
        return cls(steps, epochs, sigma, 0.5 * epochs * f1, s, math.sqrt(b))

    def tail(self, y: float) -> float:
        """Pr(Y > y) = Phi(-(ln y + t^2/2)/t)."""
        t = 1.0 / self.sigma
        return float(ndtr(-(math.log(y) + t * t / 2) / t))

    def tail_weight(self, y: float) -> float:
        """The share of steps the tail grid above y rounds, as the loss model counts it: Pr(Y > y); for a
        kind also E[Y 1{Y > y}]/M (the one shifted step of an epoch, weighted by its likelihood ratio)."""
        if not self.kind_tail:
            return self.tail(y)
        t = 1.0 / self.sigma
        return self.tail(y) + float(ndtr(-(math.log(y) - t * t / 2) / t)) / self.steps

    def cap_for(self, loss: float, moved: bool = False) -> float:
        """The smallest y with cap_cost(y) <= loss (bisection on ln y)."""
        lo, hi = 0.0, 50.0
        for _ in range(80):
            mid = (lo + hi) / 2
            if self.cap_cost(math.exp(mid), moved) > loss:
                lo = mid
            else:
                hi = mid
        return math.exp(hi)

    def cap_for_rows(self, loss: float) -> float:
        """The smallest y with E M Pr(Y > y) e^eps_rows <= loss, eps_rows = 5 s + 1 (above eps(1e-6) of the
        Gaussian pair with the same s): moved or deleted, the mass above the cap costs the (eps, delta)
        rows up to e^eps times its P-mass."""
        w = math.exp(5 * self.s + 1)
        lo, hi = 0.0, 50.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.epochs * self.steps * self.tail(math.exp(mid)) * w > loss else (lo, mid)
        return math.exp(hi)

    def cap_cost(self, y: float, moved: bool = False) -> float:
        """Predicted loss of the cap at y: E M Pr(Y > y) when deleted; moved down to y, only the paths
        that the move takes from Lambda >= 1 to below 1 pay (docs/method-v2.md §1)."""
        return self.epochs * self.steps * self.tail(y) * (self.pull_below(y) if moved else 1.0)

    def pull_below(self, y: float) -> float:
        """Pr that the rest pulls Lambda below 1 when one step of an epoch sits at y: the epoch factor is
        at least (y + rest)/M (rest: the other M - 1 steps, 3 sd below their mean), the other E - 1
        epochs' ln Lambda ~ N(-s1^2 (E - 1)/2, s1^2 (E - 1)), s1 = s/sqrt(E)."""
        M, E = self.steps, self.epochs
        rest = max(M - 1 - 3 * math.sqrt(M - 1) * self.sd_y, 0.0)
        x = math.log((y + rest) / M)
        if E == 1:
            return 1.0 if x < 0 else 0.0
        s1 = self.s / math.sqrt(E)
        return float(ndtr((-x - (E - 1) * s1 * s1 / 2) / (math.sqrt(E - 1) * s1)))


def lattice_for(steps: int, rho: float) -> list[int]:
    """g_i: chain of multiples close to (and not above) rho 2^{i/3} (spacing grows like n_i^{-1/3})."""
    n = steps.bit_length() - 1
    g = [1]
    for i in range(1, n + 1):
        target = rho * 2.0 ** (i / 3.0)
        prev = g[-1]
        g.append(prev * max(1, int(target // prev)))
    return g


def lattice_variance(steps: int, g: list[int]) -> float:
    """Sum over re-roundings of (spacing/h)^2 (1 - (g_prev/g)^2)/6, divided by M^2 (units h^2)."""
    tot = 0.0
    for i in range(1, len(g)):
        if g[i] > g[i - 1]:
            tot += (steps >> i) * g[i] ** 2 * (1 - (g[i - 1] / g[i]) ** 2)
    bits = [i for i in range(len(g)) if (steps >> i) & 1]
    ga = g[bits[0]] if bits else 1
    for i in bits[1:]:
        if g[i] > ga:
            tot += g[i] ** 2 * (1 - (ga / g[i]) ** 2)
            ga = g[i]
    return tot / 6.0 / steps**2


@dataclass
class Plan:
    """A chosen grid (a method's parameters) with its predicted loss and time (any method, either side)."""
    method: UpperV1
    predicted_loss: float
    predicted_seconds: float
    budget: float
    detail: dict


@dataclass(frozen=True)
class KindWeights:
    """How a target kind's functional weighs the loss terms (docs/targets.md §8), from the numerics.

    A mean-preserving spread of variance v of one epoch factor lowers E g(Lambda) by about
    (v/2) E[Lambda^2 g''(Lambda)]: for TV (g = min{1, x}) that is (v/2) f(1); for delta_{Q||P}(eps)
    (g = min{x, e^eps}) it is (v/2) e^eps f_ln(eps) = (v/2) f^Q_ln(eps); for delta_{P||Q}(eps)
    (v/2) f^P_ln(-eps), with f_ln the densities of ln Lambda. `curvature` is that density over
    f^P_ln(0) (it scales K, i.e. every rounding term); `deletion` bounds what a unit of deleted
    P-mass costs the functional (e^eps: min{Lambda, e^eps} <= e^eps). Only grids depend on it.
    """
    curvature: float
    deletion: float
    tv: float | None = None     # the pair's TV from the same line (method v2's model reads it; v1 does not)


def _tail_grid(mod: Model, h: float, hs: str, cap_target: float, loss: float):
    """(tail_start, tail_step, cap, points, predicted tail loss) as exact decimals, or a uniform grid."""
    hq = _q(hs)
    best = None
    for ts_f in (4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024):
        if ts_f >= cap_target or ts_f / h > BAND_POINTS:
            break
        q_t = mod.tail_weight(ts_f)
        # K q_t d^2/(6M) <= loss
        d_max = math.sqrt(loss * 6 * mod.steps / (mod.K * q_t)) if q_t > 0 else cap_target
        mult = int(d_max / h)
        if mult < 2:
            continue
        mult = min(mult, int(cap_target / h))
        tsq = hq * int(math.ceil(ts_f / h))
        dq = hq * mult
        nst = int(math.ceil((cap_target - float(tsq)) / float(dq)))
        capq = tsq + dq * max(nst, 1)
        pts = float(tsq) / h + max(nst, 1)
        pl = mod.K * q_t * (mult * h) ** 2 / (6 * mod.steps)
        if best is None or pts < best[3]:
            best = (tsq, dq, capq, pts, pl)
    capq = hq * int(math.ceil(cap_target / h))
    uni = (capq, hq, capq, float(capq) / h, 0.0)
    if best is None or uni[3] <= best[3]:
        return uni
    return best


def predict_seconds(mod: Model, h: float, g: list[int], cap: float, eta: float, points: float) -> float:
    """Predicted time: step (i) points, product lengths of steps (ii)/(iv), log-grid cells."""
    M, E = mod.steps, mod.epochs
    t = points * SEC_PER_POINT
    n = len(g) - 1
    length = lambda i, gg: (cap + (2**i) * (1 + 6 * mod.sd_y / math.sqrt(2**i))) / (gg * h)  # noqa: E731
    for i in range(n):
        t += 2 * length(i, g[i]) * SEC_PER_COEFF                      # B_{i+1} = B_i^2
    for i in range(1, n + 1):
        if (M >> i) & 1:
            t += (length(i, g[i]) + length(n, g[i])) * SEC_PER_COEFF  # A <- A B_i
    L_hi = (cap + M) / M
    L_lo = max(0.02, 1 - 10 * mod.sd_y / math.sqrt(M))
    cells = math.log(L_hi / L_lo) / eta
    t += cells * SEC_PER_CELL + length(n, g[n]) * 2e-6
    span = (12 * mod.s + mod.s**2) / eta
    cur, e = cells, E
    while e > 1:
        cur = min(2 * cur, cur + span)
        t += 2 * cur * SEC_PER_COEFF
        e //= 2
    t += bin(E).count("1") * cur * SEC_PER_COEFF
    return t


LARGE_SIGMA, LARGE_SIGMA_BITS = 10.0, 128   # the lower side's fixed point above this sigma
FLOORS = ((1e-5, 1e-6), (2e-6, 1e-7))   # (h, eta) floors: the usual ones, then finer (large sigma, small lambda)


MOVED_GAIN = 0.85    # a cap that moves the mass above it is chosen when predicted at most this share of the time


def choose_grid(steps: int, epochs: int, sigma: fmpq, budget: float, *, h=None, eta=None, cap=None,
                prec: int = 100, allow_moved: bool = False, weights: KindWeights | None = None,
                lower_cap: float | None = None) -> Plan:
    """The fastest grid (by the cost model) whose predicted loss is at most `budget`; finer h and eta
    (FLOORS) only where the usual ones fit nothing. Any of h, eta, cap fixed by the user is kept as given.
    allow_moved: also consider moving Y > cap down to the cap ("above_cap": "moved", format v3) instead
    of deleting it; taken when predicted at most MOVED_GAIN of the deleting grid's time.
    weights: a target kind's loss model (KindWeights; budget in the kind's units; the cap is deleted).
    lower_cap: rank the grids by the lower map's cost instead (uniform cells up to this cap, lower_seconds).
    """
    moves = (False, True) if allow_moved and not (h or eta or cap) and weights is None else (False,)
    for i, floors in enumerate(FLOORS):
        try:
            plans = []
            for moved in moves:
                try:
                    plans.append(_choose_grid(steps, epochs, sigma, budget, h=h, eta=eta, cap=cap, prec=prec,
                                              floors=floors, moved=moved, weights=weights,
                                              lower_cap=lower_cap))
                except CannotCertifyError:
                    if moved is False and len(moves) == 1:
                        raise
            if not plans:
                raise CannotCertifyError("no grid fits the margin")
            if len(plans) == 2 and plans[1].predicted_seconds > MOVED_GAIN * plans[0].predicted_seconds:
                plans = plans[:1]
            return plans[-1]
        except CannotCertifyError:
            if i == len(FLOORS) - 1 or (h and eta):
                raise
    raise AssertionError("unreachable")


def _choose_grid(steps: int, epochs: int, sigma: fmpq, budget: float, *, h, eta, cap, prec: int,
                 floors: tuple, moved: bool = False, weights: KindWeights | None = None,
                 lower_cap: float | None = None) -> Plan:
    mod = Model.at(steps, epochs, float(sigma))
    dfac = 1.0                            # what a deleted unit of P-mass costs (TV: 1)
    if weights is not None:
        mod = dataclasses.replace(mod, K=mod.K * weights.curvature, kind_tail=True)
        dfac = weights.deletion
    M, E = steps, epochs
    K = mod.K
    n_products = 2 * (steps.bit_length() + epochs.bit_length())
    trim_q = TRIM   # the rows are rounded to their digits with no slack: trims must stay far below them
    fixed = (E * n_products * float(trim_q) + 1e-15) * dfac
    F = 80
    if carried_deficit(M, E, trim_q, 80) > WIDE_SHARE * budget:   # many steps: wide fixed point, tiny trim
        F, trim_q, prec = WIDE_BITS, WIDE_TRIM, max(prec, WIDE_PREC)
        fixed = (carried_deficit(M, E, trim_q, F) + 1e-15) * dfac
    # step (ii) deletes epoch sums above 8M: a single Y above ~7M already loses its mass
    trunc_loss = truncation_loss(M, E, float(sigma)) * dfac
    hs_list = [(float(_q(h)), h)] if h else nice_values(floors[0], 0.05)
    if cap:  # a user cap must be a multiple of h
        hs_list = [(hv, hs) for hv, hs in hs_list if (_q(cap) / _q(hs)).q == 1]
        if not hs_list:
            raise ParameterError(f"cap {cap} is not a multiple of h")
    eta_list = [(float(_q(eta)), eta)] if eta else nice_values(floors[1], 2e-3)
    cands = []
    for share in ((None,) if cap else DELETE_SHARES):
        cap_t = float(_q(cap)) if cap else min(max(mod.cap_for(share * budget / dfac, moved), 2.0), 8.0 * M)
        if moved:   # the rows: a move costs delta(eps) up to e^eps Pr(Y > cap) per step, as a deletion does
            cap_t = min(max(cap_t, mod.cap_for_rows(ROWS_LOSS)), 8.0 * M)
        cap_pred = mod.cap_cost(cap_t, moved) * dfac + trunc_loss
        avail = budget - fixed - cap_pred
        if avail <= 0:
            continue
        tail_loss = TAIL_SHARE * avail
        core = avail - tail_loss
        for hv, hs in hs_list:
            lh = K * hv * hv / (6 * M)
            if (lh >= core or cap_t / hv > CAP_POINTS) and not h:
                continue
            for rho in RHOS:
                g = lattice_for(M, rho) if rho > 0 else [1] * M.bit_length()
                lg = K * hv * hv * lattice_variance(M, g)
                rest = core - lh - lg
                if rest <= 0:
                    if not h:
                        continue
                    rest = 0.1 * (lh + lg)  # the user's h alone exceeds the budget: keep eta modest
                # the coarsest eta that fits the rest of the budget
                cand = [(ev, es) for ev, es in eta_list if K * ev * ev / 6 <= rest] or (eta_list if eta else [])
                if not cand:
                    continue
                ev, es = max(cand)
                points = (min(cap_t, 32) / hv + max(0, cap_t - 32) * 0.1 / hv)  # rough, refined below
                secs = (predict_seconds(mod, hv, g, cap_t, ev, points) if lower_cap is None
                        else lower_seconds(mod, hv, g, lower_cap, ev))
                cands.append((secs, hv, hs, rho, g, ev, es, lh, lg, cap_t, tail_loss))
    if not cands:
        if trunc_loss >= budget:
            raise CannotCertifyError(f"the truncation of step (ii) at 8M alone loses about {trunc_loss:.2g} "
                             f"(> budget {budget:.2g}): Y is too heavy-tailed at this sigma")
        raise CannotCertifyError("no grid fits the margin")
    refused = None
    for cand in sorted(cands, key=lambda c: c[0]):
        _, hv, hs, rho, g, ev, es, lh, lg, cap_t, tail_loss = cand
        if cap:
            capq = _q(cap)
            tsq, dq, pts, pl = capq, _q(hs), float(capq) / hv, 0.0
        else:
            tsq, dq, capq, pts, pl = _tail_grid(mod, hv, hs, cap_t, tail_loss)
        km, kp = _k_range(M, _q(hs), _q(es))
        try:       # the fastest candidate within the method's limits (CAP_POINTS, BAND_POINTS)
            method = make_method(M, h=_q(hs), eta=_q(es), cap=capq, tail_start=tsq, tail_step=dq,
                                 lattice_schedule=g, prec=prec, trim=trim_q, k_minus=km, k_plus=kp,
                                 cap_moved=moved, fixed_point_bits=F)
            break
        except ParameterError as err:
            if h and eta and cap:
                raise
            refused = err
    else:
        raise CannotCertifyError(f"no grid within method v1's limits fits the margin ({refused})")
    le = K * ev * ev / 6
    cap_loss = mod.cap_cost(float(capq), moved) * dfac
    loss = lh + lg + le + pl + cap_loss + fixed + trunc_loss
    secs = predict_seconds(mod, hv, g, float(capq), ev, pts)
    detail = {"step_i": lh, "tail": pl, "lattice": lg, "log_grid": le,
              "cap": cap_loss, "truncation": trunc_loss, "trim": fixed, "rho": rho,
              "points": int(pts), "cap_moved": moved}
    return Plan(method, loss, secs, budget, detail)


WIDE_BITS, WIDE_TRIM = 128, fmpq(1, 10**30)   # fixed point and trim where the carried deficit would cost
WIDE_PREC = WIDE_BITS + 64    # ... and step (i)'s arb precision: below F its balls' radii, floored away at
                              # every point (~2^-prec relative), outweigh the fixed point's floors
WIDE_SHARE = 0.02                            # ... more than this share of the budget at 80 bits and 1e-20
CARRIED_LENGTH = 10**6                       # a product's length for the floors' share (an upper estimate)


def carried_deficit(steps: int, epochs: int, trim: fmpq, bits: int) -> float:
    """What trims and floors of step (ii) may cost: a deficit of a block of 2^i steps reaches the epoch
    M/2^i times and Lambda E times, about 2 M E (trim + length 2^-F) over the binary powering."""
    return 2.0 * steps * epochs * (float(trim) + CARRIED_LENGTH * 2.0 ** -bits)


def _k_range(steps: int, h: fmpq, eta: fmpq) -> tuple[int, int]:
    """k_minus, k_plus wide enough that the log grid deletes only L = 0 (and nothing below h/M or above 8+)."""
    lo = math.log(float(h) / steps) / float(eta)
    hi = math.log(8.0 + 2 * float(h)) / float(eta)
    km0, kp0 = UpperV1.default_k(eta)
    return min(km0, math.floor(lo) - 2), max(kp0, math.ceil(hi) + 2)


def truncation_loss(steps: int, epochs: int, sigma: float) -> float:
    """Predicted mass deleted by the fixed truncation of step (ii) at 8M (about E M Pr(Y > 7M))."""
    return epochs * steps * Model.at(steps, epochs, sigma).tail(7.0 * steps)


def budget(margin: float | None, safety: float, ceiling: float = 1e-7) -> float:
    """safety * min(margin, ceiling): what a bound may lose and still decide the target.

    margin is the numerical distance from the target on the side being proved, less the
    numerics' error: target - TV(sigma) for the upper bound, TV(sigma_low) - target for the lower.
    Without numerics a small default; with a non-positive margin a cheap grid that shows the miss.
    """
    if margin is None:
        return safety * 1e-9
    if margin <= 0:
        return safety * 1e-8
    return safety * min(margin, ceiling)


# ----------------------------------------------------------------------------- the lower side

LOWER_CAP_FACTOR = 0.01   # loss of merging Y >= cap into one cell / (E G1(cap)): measured 2e-3..4e-3
LOWER_CAP_SHARE = 0.05    # share of the budget given to that merge
LOWER_LOSS_RATIO = 0.5    # measured (data-processing loss) / (the v1 model's prediction) at M=10..100
KIND_LOWER_CAP = 4        # a kind's lower cap is at most this times M (an epoch sum above 8M is then ~impossible)


def lower_seconds(mod: Model, h: float, g: list[int], cap: float, eta: float) -> float:
    """Predicted time of the lower map: cap/h cells of step (a), about 2.2 times the v1 products."""
    return cap / h * 16e-6 + 2.2 * predict_seconds(mod, h, g, cap, eta, 0.0)


def lower_cap(mod: Model, budget: float, factor: float = LOWER_CAP_FACTOR) -> float:
    """The smallest y with LOWER_CAP_FACTOR * E * G1(y) <= LOWER_CAP_SHARE * budget (bisection on ln y).

    G1(y) = E[Y 1{Y > y}] = Phi(-(ln y - t^2/2)/t) is the shifted coordinate's chance of
    landing in the merged top cell [cap, inf) of the lower map.
    """
    t = 1.0 / mod.sigma
    g1 = lambda y: float(ndtr(-(math.log(y) - t * t / 2) / t))  # noqa: E731
    lo, hi = 0.0, 50.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if factor * mod.epochs * g1(math.exp(mid)) > LOWER_CAP_SHARE * budget:
            lo = mid
        else:
            hi = mid
    return min(max(math.exp(hi), 2.0), 8.0 * mod.steps)


KIND_RELIABLE_SHARE = 0.01    # a kind's lower v1: share of the budget for the epoch indices its bucket map merges


def _reliable_tail(method, points: float, budget: float):
    """A kind's lower v1 grid with fixed_point_bits so large that its bucket map (lower_v1.bucket_map) keeps
    the far tail apart: indices whose masses are below RELIABLE_UNITS = 2^40 units are clamped into the top
    bucket, and a hockey-stick at a small delta lives in exactly those indices. The merged P-mass, at most
    2^(40-F) per index, is held to KIND_RELIABLE_SHARE of the budget (in P-mass; the kind's e^eps already
    divided out). At (3, 2, eps 1, delta 1e-6) with 80 bits each finer grid lost more (3e-11, 4e-11, 8e-11
    against a margin of 1e-13): finer cells hold less mass each, and more of the tail fell below 2^-40."""
    want = math.ceil(40 + math.log2(max(points, 1.0) / (KIND_RELIABLE_SHARE * max(budget, 1e-300))))
    if want <= method.fixed_point_bits:
        return method
    bits = min(want, 1024)
    return dataclasses.replace(method, fixed_point_bits=bits, prec=max(method.prec, bits + 64))   # as WIDE_PREC


def choose_lower_grid(steps: int, epochs: int, sigma: fmpq, budget: float, prec: int = 100,
                      weights: KindWeights | None = None) -> Plan:
    """A grid for the data-processing lower bound whose predicted loss (TV - bound) is <= budget.

    Loss model: the v1 model's terms (quantisation h, lattice re-quantisation, bucket width
    eta) times LOWER_LOSS_RATIO (a floor map loses about half the variance of a two-point
    rounding), plus the merge of Y >= cap; h, eta, lattice come from choose_grid with the
    budget scaled accordingly; cap from `lower_cap`. Cost: the v1 model with cap/h points in
    step (a) and about twice the products of step (ii).
    weights (a target kind, KindWeights): the kind's loss model for h, eta, lattice; the merged top
    cell costs the kind LOWER_CAP_FACTOR x `deletion` x its Q-mass E G1(cap) (measured at (100, 10,
    eps = 1): 0.0075 E G1(cap) at cap 166), and the cap stays <= KIND_LOWER_CAP M.
    """
    mod = Model.at(steps, epochs, float(sigma))
    merge_factor = LOWER_CAP_FACTOR if weights is None else LOWER_CAP_FACTOR * weights.deletion
    cap_f = lower_cap(mod, budget, merge_factor)
    if weights is not None:          # far below the truncation at 8M: the verifier's own cut there may differ
        cap_f = min(cap_f, KIND_LOWER_CAP * steps)
    plan = choose_grid(steps, epochs, sigma, budget * (1 - LOWER_CAP_SHARE) / LOWER_LOSS_RATIO, prec=prec,
                       weights=weights, lower_cap=None if weights is None else cap_f)
    h = plan.method.h
    cap = h * int(math.ceil(cap_f / float(h)))
    if cap / h > BAND_POINTS:      # the lower map's cells of (a) run to its cap, as a v1 step (i)'s to tail_start
        raise CannotCertifyError(f"the lower cap {float(cap):.4g} is more than {BAND_POINTS:.0e} cells of h = "
                                 f"{float(h):.3g}: no lower grid within method v1's limits")
    method = LowerV1.from_v1(plan.method, cap)
    if float(sigma) >= LARGE_SIGMA:     # measured: at sigma 90-126 the 2^-80 floors lose 10 % of TV
        method = dataclasses.replace(method, fixed_point_bits=LARGE_SIGMA_BITS)
    # the P-side deficit, as upstairs, and the replay slack the bound records (b_min = b_max = 0 until it runs):
    # its width 8M/h makes it 1.1e-7 at M = 10^6, E = 1, h = 0.012 and 80 bits, ~1e-21 at 128
    if max(carried_deficit(steps, epochs, TRIM, 80), float(replay_slack(steps, epochs, method))) > WIDE_SHARE * budget:
        method = dataclasses.replace(method, fixed_point_bits=WIDE_BITS, trim=WIDE_TRIM,
                                     prec=max(method.prec, WIDE_PREC))
    points = float(cap / h)
    if weights is not None:
        method = _reliable_tail(method, points, budget / weights.deletion)
    secs = lower_seconds(mod, float(h), list(plan.method.lattice_schedule), float(cap), float(plan.method.eta))
    t = 1.0 / mod.sigma
    merge = merge_factor * epochs * float(ndtr(-(math.log(float(cap)) - t * t / 2) / t))
    slack = float(replay_slack(steps, epochs, method))
    loss = LOWER_LOSS_RATIO * (plan.predicted_loss - plan.detail["cap"] - plan.detail["tail"]) + merge + slack
    detail = {**{k: v for k, v in plan.detail.items() if k not in ("cap", "tail", "points")},
              "merge": merge, "points": int(points), "replay_slack": slack}
    return Plan(method, loss, secs, budget, detail)
