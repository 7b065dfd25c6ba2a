"""Automatic parameters for method v2 (certifier.bounds.upper_v2, certifier.bounds.lower_v2): error and cost models.

Error model (docs/method-v2.md §5). A mean-preserving rounding that adds relative variance rho to
an epoch factor L lowers E min{1, Lambda} by about rho f(0)/2, f the density of ln Lambda at 0
(V(L) = E min{1, L P} has V'' = -f_P(1/L)/L^3, so the loss is rho E_L[f_{ln P}(-ln L)]/2). The
multiscale lattice keeps rho = C_RHO/N^2 per epoch, the log grid eta^2/6. With K = E f(0)/2:

    loss ~ K (C_RHO / N^2 + eta^2/6) + moves + deletions,

f(0) taken from the Gaussian pair with the same TV (s = 2 Phi^{-1}((1 + TV)/2), f(0) = phi(s/2)/s),
which is exact at M = 1 and matched TV to within a factor 2 of the measured loss at heavy-tailed
cells. Moves (values above the cap or the top octave moved down to it) cost only when the other
epochs pull Lambda back below 1; deletions below e^{k_minus eta} cost at most their Q-mass.
The cost model counts erfc evaluations (step i), octave products (step ii), log cells (step iii)
and the products of step (iv); `choose_v2` picks the cheapest (n, eta) within the budget.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, replace

import numpy as np
from flint import fmpq, fmpz_poly
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr, ndtri

from certifier.bounds.privacy import Masses
from certifier.bounds.upper_v2 import UpperV2
from certifier.errors import CannotCertifyError
from certifier.methods.v1.plan import KindWeights, Plan
from certifier.params import parse_decimal

C_RHO = 0.3             # relative variance per epoch from the sums, times N^2 (measured 0.16-0.28 at M = 100)
Y_SHARE = 0.25          # share of the budget for the rounding of the steps themselves (step i)
MOVE_SHARE = 0.02       # share of the budget for moves (cap, top octave) and deletions (k_minus)
SMALL_SHARE = 0.05      # share for the absolute lattice of octave 0 (values below N h)
# Costs in units of REF, the time of one product of fmpz_polys of lengths 2^13 and 2^14 with 80-bit
# coefficients on this machine (`ref_seconds`, CPU seconds of this process: the time budget is CPU seconds, and
# a wall clock at load 11 on 2 cores read it 6x slower, refusing grids that take a fifth of the limit).
# Measured at M = 1..10^4 (ratios of step times to REF, each within a factor 2 of the model).
REF_POINT = 1.5e-3      # step (i): two arb erfc per grid point
REF_OCTAVE = 2.0        # step (ii): one octave product at N = 8192 (scales as N log N)
REF_CELL = 5e-4         # step (iii): per log-grid cell (its edge and the cell's sums)
REF_COEFF = 3e-5        # step (iv): per output coefficient of a product
LOWER_FACTOR = 3.0      # the lower side: three sums per level, two powers
Q_MOVED = 1e-9          # with privacy rows: the Q-mass moved down by the cap and the top octave
MAX_TOP = 200           # the largest top_octave docs/method-v2.md allows
EPS_CEILING = 99.0      # the rows search eps <= 100 (certifier.privacy.EPS_MAX): no range beyond it
TRIM_MAX = fmpq(1, 10**14)  # the trim per sum or product
LOWER_TRIM_SHARE = 0.01  # share of the budget for the trims (both sides), and for the lower side's floors
TRIM_KEEP = 0.05         # ... where TRIM_MAX costs more than this share of it (else TRIM_MAX stays)


@dataclass
class CellModel:
    """Floats describing one cell (M, E, t^2) for the models (informative only)."""
    steps: int
    epochs: int
    t2: float
    s: float            # sd of the Gaussian pair with the same TV
    K: float            # E f(0)/2

    @classmethod
    def at(cls, steps: int, epochs: int, t2: float, tv: float | None) -> "CellModel":
        if tv is None or not 0 < tv < 1:
            b = math.expm1(min(t2, 700.0))
            s = math.sqrt(epochs * math.log1p(b / steps))
        else:
            s = max(2.0 * float(ndtri(0.5 + 0.5 * tv)), 1e-6)
        f0 = math.exp(-s * s / 8) / (math.sqrt(2 * math.pi) * s)
        return cls(steps, epochs, t2, s, 0.5 * epochs * f0)

    @property
    def t(self) -> float:
        return math.sqrt(self.t2)

    def G0(self, y: float) -> float:
        """Pr(Y > y)."""
        return float(ndtr(-(math.log(y) + self.t2 / 2) / self.t))

    def G1(self, y: float) -> float:
        """Pr_Q(Y > y) = E_P[Y; Y > y] (the shifted coordinate's tail)."""
        return float(ndtr(-(math.log(y) - self.t2 / 2) / self.t))

    def Gm1(self, y: float) -> float:
        """E[Y; Y < y] (the partial mean below y)."""
        return float(ndtr((math.log(y) - self.t2 / 2) / self.t))

    def pull_below(self, x: float) -> float:
        """Pr that the other E - 1 epochs pull a factor e^x of Lambda below 1 (Gaussian pair)."""
        if self.epochs == 1:
            return 1.0 if x < 0 else 0.0
        s1 = self.s / math.sqrt(self.epochs)
        mean, sd = -(self.epochs - 1) * s1 * s1 / 2, math.sqrt(self.epochs - 1) * s1
        return float(ndtr((-x - mean) / sd))

    def move_cost(self, top: float, kink: float = 0.0) -> float:
        """Loss of moving every partial sum (or step) above `top` down to it (all E epochs), in P-mass whose
        Lambda the move takes below e^kink (the functional's kink: 0 for TV, eps for delta_{Q||P}(eps))."""
        return self.epochs * self.steps * self.G0(top) * self.pull_below(math.log(top / self.steps) - kink)


_REF: list = []
REF_IDLE = 0.0098       # ref_seconds() on an idle core of the reference machine (the v1 planner's constants are for it)


def idle_seconds(predicted: float) -> float:
    """A predicted time rescaled to an idle core of the reference machine, comparable with methods.v1.plan's."""
    return predicted * REF_IDLE / ref_seconds()



def ref_seconds() -> float:
    """CPU seconds of one reference product (fmpz_poly 2^13 x 2^14, 80-bit coefficients) on this machine."""
    if not _REF:
        rng = random.Random(0)
        a = fmpz_poly([rng.getrandbits(80) for _ in range(1 << 13)])
        b = fmpz_poly([rng.getrandbits(80) for _ in range(1 << 14)])
        best = math.inf
        for _ in range(3):
            t0 = time.process_time()
            a * b
            best = min(best, time.process_time() - t0)
        _REF.append(best)
    return _REF[0]


OCC_Z = 11.0            # a block sum's polys span about +-OCC_Z sd (beyond, the trims delete the masses)
OCC_MIN = 1.0 / 64      # ... and at least this share of an octave (the model's floor)
OCC_T = 0.25            # ... where one step is nearly Gaussian (t <= OCC_T, sigma >= 4): a heavier Y's sums reach
                        # further right than +-OCC_Z sd, and the octave model stands


def occupied_share(cm: CellModel, block: int) -> float:
    """The share of one octave that a sum of `block` steps fills: +-OCC_Z sd (sd sqrt(block Var Y), E Y = 1) of a
    value between 2^k and 2^(k+1) in octave k, at least OCC_MIN (> 1: more than one octave); inf (the octave
    model) where one step is heavy-tailed (t > OCC_T)."""
    if cm.t > OCC_T:
        return math.inf
    return max(OCC_Z * 3 * math.sqrt(math.expm1(min(cm.t2, 700.0)) / block), OCC_MIN)


def _level_products(cm: CellModel, steps: int, Nh: float, top: int) -> list[float]:
    """Octave products of step (ii) on each level's lattice (method-v2.md §10): the squaring that forms B_i
    (level i >= 1, at the octaves of B_{i-1}) and the two of A (+) B_i at a set bit i but the first; a block of
    2^i steps occupies the octaves from a quarter of its typical value to the top octave or where its tail
    mass falls below 2^-80, or (a narrow sum, sd sqrt(2^i Var Y) of a value 2^i..2^(i+1) in its octave) the
    share 3 OCC_Z sqrt(Var Y / 2^i) of one octave: at (2345, 3751, sigma 37.84) the full octaves predicted
    118 s for a step (ii) that took 2.2 s."""
    z = float(ndtri(1 - 1e-24 / steps))
    x_max = math.exp(min(cm.t * z - cm.t2 / 2, 700.0))         # one step beyond this: mass < 1e-24 / M
    s1 = cm.s / math.sqrt(cm.epochs)
    y_typ = math.exp(-s1 * s1 / 2)
    nbits = steps.bit_length()
    first = (steps & -steps).bit_length() - 1                    # the lowest set bit starts A: no sum

    def width(i):
        lo = _octave_of(max(Nh, (1 << i) * y_typ / 4), Nh)
        hi = min(top, _octave_of(max(min(x_max * (1 << i), 1e300), Nh), Nh) + 1)
        # a narrow block sum (large sigma) fills only +-OCC_Z sd of one octave: its polys are that long
        return min(max(1, hi - lo + 1), occupied_share(cm, 1 << i))
    return [(width(i - 1) if i else 0) + 2 * width(i) * bool((steps >> i) & 1 and i != first) for i in range(nbits)]


def level_weights(cm: CellModel, steps: int) -> list[float]:
    """The rounding variance of each level of step (ii), relative to the whole at one lattice (method-v2.md
    §10): the (+) that forms a block of 2^i steps rounds a value v (E v^2 = 2^i v1 + 4^i, v1 the variance of
    one step's body, Y <= M) onto the relative spacing 1/N_i, and the epoch holds floor(M / 2^i) such blocks;
    A (+) B_i at a set bit rounds the a = M mod 2^(i+1) steps of A + B_i once. Level 0 forms nothing."""
    v1 = max(math.exp(cm.t2) * float(ndtr((math.log(steps) - 1.5 * cm.t2) / cm.t)) - 1.0, 0.0) if cm.t2 < 700 else 0.0
    first = (steps & -steps).bit_length() - 1
    w = []
    for i in range(steps.bit_length()):
        blocks = (steps >> i) * ((1 << i) * v1 + 4.0**i) if i else 0.0
        a = steps & ((2 << i) - 1)
        acc = a * v1 + float(a) ** 2 if (steps >> i) & 1 and i != first else 0.0
        w.append(blocks + acc)
    total = sum(w) or 1.0
    return [x / total for x in w]


def level_bits(weights: list[float], products: list[float], n: int, floor_bits: int, ratio: float) -> list[int]:
    """Mantissa bits per level, non-decreasing up to n at the top: the levels are coarsened a bit at a time,
    the one that saves the most octave-product time (~ products_i 2^n_i) per unit of added variance
    (weights_i 4^(n - n_i), weights summing to 1) first, while the variance stays <= ratio times that of the
    uniform lattice; level 0 keeps >= floor_bits (step (i)'s grid lies on its lattice)."""
    L = len(weights) - 1
    c = [0] * (L + 1)
    var = 1.0
    while True:
        best = None
        for i in range(L):                       # the top level stays at n
            if n - c[i] - 1 < floor_bits or (i and c[i] + 1 > c[i - 1]):
                continue
            add = weights[i] * 3 * 4.0 ** c[i]
            if var + add > ratio:
                continue
            gain = (products[i] + 1e-9) * 2.0 ** -(c[i] + 1) / (add + 1e-300)
            if best is None or gain > best[0]:
                best = (gain, i, add)
        if best is None:
            return [n - x for x in c]
        c[best[1]] += 1
        var += best[2]


def _nice(x: float) -> str:
    """The largest decimal m 10^k <= x with m in {1, 2, 5} (exact text)."""
    k = math.floor(math.log10(x))
    for m in (5, 2, 1):
        if m * 10.0**k <= x:
            return f"{m}e{k}"
    return f"1e{k}"


def _octave_of(value: float, Nh: float) -> int:
    """The octave whose range contains `value` (0 below 2 N h)."""
    return max(0, math.floor(math.log2(value) - math.log2(Nh))) if value >= 2 * Nh else 0


KINK_SUB = 16          # sub-cells per octave for a kind's conditional kink weight (its density varies within one)


def kink_weight(cm: CellModel, lo: float, hi: float, kink: float) -> float:
    """A kind's loss, per unit of relative variance of one step's rounding, from the steps in (lo, hi): the
    whole run's (E epochs of M steps) sum of Pr(Y in a sub-cell) (y/(y + S))^2 f^Q(kink | Y = y)/2, with
    ln Lambda given Y = y about ln((y + S)/M) plus a Gaussian rest (mean -s^2/2, sd s, the pair with the
    same TV) and f^Q = e^kink f^P. A step so large that it alone takes Lambda to the kink (at (10^6, 100,
    eps 2, delta 1e-10), Y/M ~ e^2) weighs with the density of the rest there, ~1/s, not with the
    unconditional density at the kink (~1e-10 of the bulk's): the common K cannot price it."""
    s1 = cm.s / math.sqrt(cm.epochs)
    S = cm.steps * math.exp(-s1 * s1 / 2)
    sd, mean = max(cm.s, 1e-9), -cm.s * cm.s / 2
    total = 0.0
    edges = [lo + (hi - lo) * i / KINK_SUB for i in range(KINK_SUB + 1)] if lo > 0 else \
        [hi * i / KINK_SUB for i in range(KINK_SUB + 1)]
    for a, b in zip(edges, edges[1:]):
        p = max(cm.G0(a) - cm.G0(b), 0.0) if a > 0 else 1.0 - cm.G0(b)
        if p <= 0:
            continue
        y = 0.5 * (a + b)
        z = (kink - math.log((y + S) / cm.steps) - mean) / sd
        f_q = math.exp(kink - 0.5 * z * z) / (math.sqrt(2 * math.pi) * sd)
        total += p * (y / (y + S)) ** 2 * f_q / 2
    return cm.epochs * cm.steps * total


def _y_bits(cm: CellModel, n: int, Nh: float, K_y: int, allowed: float,
            y_scale: float = 1.0, kink: float | None = None) -> tuple[list[int], float]:
    """Mantissa bits of the step-(i) grid per octave, the fewest points whose predicted loss is <= allowed.

    A step Y in octave k rounded with spacing d_k = 2^k N h 2^-b_k adds about d_k^2/6 to the variance of
    its epoch sum S >= max(Y, the typical sum), i.e. the relative variance M p_k d_k^2 / (6 max(Y, S)^2)
    to L over the M steps (p_k = Pr(Y in octave k)); the loss is K times it. Minimising sum_k 2^b_k subject to it
    gives 2^b_k proportional to (p_k 4^k)^(1/3); the common factor is found by bisection.
    Returns (bits, predicted loss).
    """
    s1 = cm.s / math.sqrt(cm.epochs)
    S_typ = cm.steps * math.exp(-s1 * s1 / 2)                # typical epoch sum
    w = []
    for k in range(K_y + 1):
        lo, hi = (0.0, 2 * Nh) if k == 0 else (Nh * 2**k, Nh * 2 ** (k + 1))
        p = max((1 - cm.G0(hi)) - (0.0 if lo == 0 else 1 - cm.G0(lo)), 0.0)     # Pr(lo < Y < hi)
        y = max(lo, Nh)                                      # relative to S >= max(Y, the rest of the sum)
        w.append(y_scale * cm.K * cm.steps * p * (Nh * 2**k / max(y, S_typ)) ** 2 / 6)  # loss at 1 point per octave
        if kink is not None and k > 0:                       # a kind: the steps that alone reach its kink
            w[-1] += kink_weight(cm, lo, hi, kink) * (Nh * 2**k / max(y, Nh)) ** 2 / 6
    bits = lambda a: [min(n, max(2, round(math.log2(max(a * (x ** (1 / 3)), 1e-300))))) if x > 0 else 2
                      for x in w]
    loss = lambda bs: sum(x * 4.0 ** -b for x, b in zip(w, bs))
    lo_a, hi_a = 1e-12, 1e12
    for _ in range(80):
        mid = math.sqrt(lo_a * hi_a)
        lo_a, hi_a = (mid, hi_a) if loss(bits(mid)) > allowed else (lo_a, mid)
    bs = bits(hi_a)
    return bs, loss(bs)


_Y_BITS: dict = {}


def plan_v2(steps: int, epochs: int, t2: fmpq, budget: float, tv: float | None, *, n: int, eta: str,
            need_eps: float = 0.0, prec: int = 100, k_scale: float = 1.0,
            weights: KindWeights | None = None, y_scale: float = 1.0, lower: bool = False,
            level_ratio: float = 1.0) -> Plan:
    """The method-v2 parameters for mantissa bits n and log-grid spacing eta, with predicted loss and time.

    lower=True plans the lower method (data-processing-lower v2): every mass its map loses is lost in
    full (deleted_p on the P side, W on the Q side), and a deficit of a block of 2^i steps reaches the
    epoch up to M/2^i times and the E epochs E times, so its trim and fixed point are sized against
    the budget (`lower_deletions`).

    k_scale multiplies K (E f(0)/2) where a calibration run measured the loss (see `calibrate`).
    weights: a target kind's loss model (methods.v1.plan.KindWeights, docs/targets.md §8; budget in the kind's
    units, tv the pair's TV): every rounding term (K) scaled by `curvature`, the moves by `deletion`.
    y_scale multiplies step (i)'s term on top of k_scale (a calibration that measured it apart, see
    `calibrate_terms`).
    level_ratio > 1 coarsens the lower levels of step (ii) (`level_bits`, method-v2.md §10) while the
    lattice's rounding variance stays <= level_ratio times that of one lattice at n bits.
    """
    need_eps = min(need_eps, EPS_CEILING)
    cm = CellModel.at(steps, epochs, float(t2), tv)
    cm.K *= k_scale
    dfac = 1.0                                  # what a moved unit of P-mass costs against TV
    if weights is not None:
        cm.K *= weights.curvature
        dfac = weights.deletion
    # a kind pays where a move takes Lambda below its kink e^eps (dfac = e^eps), far more often than below 1
    move_cost = lambda y: cm.move_cost(y, math.log(dfac)) * dfac
    N = 1 << n
    share = MOVE_SHARE * budget
    # octave 0 spacing h: values below N h sit on an absolute lattice; their rounding variance,
    # about M h E[Y; Y < N h] per epoch sum, must cost at most SMALL_SHARE of the budget
    s1 = cm.s / math.sqrt(epochs)
    S_typ = steps * math.exp(-s1 * s1 / 2)
    # with privacy rows the epoch value 0 (every step rounded to 0) must be rare: it pays
    # min{1, e^eps Lambda} = 0 instead of up to e^eps h, which the rows at large eps would feel
    zero_ok = lambda h: need_eps == 0 or (1 - cm.G0(h)) ** steps <= Q_MOVED
    h = 1.0
    while h > 1e-30:
        small = cm.K * steps * h * cm.Gm1(N * h) / S_typ**2
        if small <= SMALL_SHARE * budget and N * h <= S_typ / 4 and zero_ok(h):
            break
        h /= 2
    hs = _nice(h)
    h = float(parse_decimal("h", hs))
    Nh = N * h
    # top of the partial sums and the cap on Y: the smallest octave boundaries whose moves are cheap
    q_tail = (lambda y: epochs * steps * cm.G1(y)) if need_eps > 0 else (lambda y: 0.0)   # Q-mass moved
    # ... and the top octave ends at least twice above the epoch sums 8 sd of ln L above their typical value
    # (it ends between top_val/2 and top_val): move_cost prices the tail of one step, and a top octave below the
    # sums themselves moves every epoch value down (at (10^6, 10^4, 0.1) a fine h at n = 15 put its end at
    # 2.7e5 < M and the lower bound came out 0)
    top_val = max(2 * Nh, 4 * S_typ * math.exp(8 * s1))
    while (move_cost(top_val) > share / 2 or q_tail(top_val) > Q_MOVED) and top_val < 1e300:
        top_val *= 2
    cap = 2 * Nh
    while (move_cost(cap) > share / 2 or q_tail(cap) > Q_MOVED) and cap < top_val:
        cap *= 2
    K_y = min(max(0, _octave_of(cap, Nh) - 1), MAX_TOP - 1)          # the format: len(y bits) <= top <= 200
    top = min(max(K_y + 1, _octave_of(top_val, Nh) - 1), MAX_TOP)   # what lies above is moved (and costed)
    # a kind whose kink lies above the bulk (e^eps > 1): its far steps weigh by their own density there (at the
    # kink 0 of TV, and of identity weights, the common K prices the bulk as before)
    kink = math.log(dfac) if weights is not None and dfac > 1 else None
    key = (steps, epochs, cm.t2, cm.s, cm.K, n, Nh, K_y, Y_SHARE * budget, y_scale, kink)
    if key not in _Y_BITS:              # the same for every eta and level ratio of choose_v2's search
        if len(_Y_BITS) > 4096:
            _Y_BITS.clear()
        _Y_BITS[key] = _y_bits(cm, n, Nh, K_y, Y_SHARE * budget, y_scale, kink)
    y_bits, y_loss = list(_Y_BITS[key][0]), _Y_BITS[key][1]
    if not zero_ok(h * (1 << (n - y_bits[0]))):
        y_bits[0] = n                           # the first grid point above 0 is h (see zero_ok)
    eq = parse_decimal("eta", eta)
    ev = float(eq)
    # L < a deleted: Q-mass <= a per epoch, and e^eps a for the rows up to eps = need_eps
    k_minus = math.floor(_ln_k_minus(cm, share / 2, need_eps) / ev)
    k_plus = math.ceil(math.log(2 ** (top + 1) * Nh / steps) / ev) + 1       # above every partial sum
    mean_rest = (epochs - 1) * s1 * s1 / 2
    k_top = math.ceil(max(mean_rest + 8 * cm.s, need_eps + 8 * cm.s + cm.s**2 / 2, 1.0) / ev)
    if epochs == 1:
        k_top = max(k_top, k_plus)              # no product follows: a clamp below k_plus would only move Q-mass
    shift = parse_decimal("shift", str(math.ceil(need_eps))) if need_eps > 0 else fmpq(0)
    # a mass unit 2^-F at Lambda = e^x weighs e^x 2^-F under Q: where the rows need Lambda up to
    # e^(k_top eta), the fixed point must resolve Q-masses there to ~1e-20
    bits = max(80, math.ceil((min(k_top * ev, epochs * (k_plus * ev)) + 46) / math.log(2))) if need_eps > 0 else 80
    if t2 < fmpq(1, 100):                   # sigma > 10: 2^-80 floors lose a visible part of a small TV
        bits = max(bits, 128)
    # trims (and the lower side's floors) sized against the budget; a kind pays `deletion` (e.g. e^eps)
    # per unit of deleted P-mass
    if lower:
        trim, bits, del_loss = lower_deletions(steps, epochs, n, top, budget / dfac, bits)
    else:
        trim, del_loss = upper_trim(steps, epochs, budget / dfac, tv)
        bits, del_loss["fixed_point"] = upper_floors(steps, epochs, n, top, budget / dfac, bits)
    del_loss = {k: v * dfac for k, v in del_loss.items()}
    products = _level_products(cm, steps, Nh, top)
    wl = level_weights(cm, steps)
    nb = level_bits(wl, products, n, max(y_bits), level_ratio) if level_ratio > 1 else [n] * len(wl)
    lattice_var = sum(w * 4.0 ** (n - b) for w, b in zip(wl, nb))
    method = UpperV2(h=parse_decimal("h", hs), mantissa_bits=n, y_mantissa_bits=tuple(y_bits), top_octave=top,
                      eta=eq, k_minus=k_minus, k_plus=k_plus, k_top=k_top, prec=max(prec, bits + 20),
                      fixed_point_bits=min(bits, 1024), trim=trim, trim_shift=shift,
                      level_bits=tuple(nb) if min(nb) < n else None)
    method.validate()
    loss = {"lattice": cm.K * C_RHO * lattice_var / N**2 if steps > 1 else 0.0, "step_i": y_loss,
            "log_grid": cm.K * ev * ev / 6,
            "small": cm.K * steps * h * cm.Gm1(Nh) / S_typ**2,
            "moves": move_cost(2 ** (K_y + 1) * Nh) + move_cost(2 ** (top + 1) * Nh),
            "k_minus": _k_minus_loss(cm, k_minus * ev, need_eps), **del_loss}
    points = sum((2 if k == 0 else 1) << b for k, b in enumerate(y_bits))
    n_oct = max(1, top - _octave_of(max(S_typ / 8, Nh), Nh) + 1)
    L_lo = max(math.exp(k_minus * ev), Nh / steps, S_typ / steps * math.exp(-6 * s1))
    cells = max(1.0, math.log(2 ** (top + 1) * Nh / steps / L_lo) / ev)
    span = max(1.0, min(epochs * cells, k_top + (cm.s**2 / 2 + 8 * cm.s) / ev))
    # a narrow ln Lambda (large sigma) occupies about +-OCC_Z s of the log grid, however far k_top and the top
    # octave reach (at (2345, 3751, sigma 37.84) k_top priced step (iv) 4x over its 11.4 s); so does one epoch
    if cm.t <= OCC_T:
        span = min(span, max(2 * OCC_Z * cm.s / ev, 1.0))
        cells = min(cells, max(2 * OCC_Z * s1 / ev, 1.0))
    n_oct = min(n_oct, occupied_share(cm, steps))
    ref = ref_seconds()
    iv = 2 * epochs.bit_length() * span * REF_COEFF * (1 + math.log2(max(span, 2)) / 20)
    sums = LOWER_FACTOR if lower else 1.0        # the lower map forms the P and the Q side (three sums per level)
    secs = {"step_i": points * REF_POINT * ref,
            "step_ii": sums * sum(p * (1 << b) * b for p, b in zip(products, nb)) * REF_OCTAVE * ref / (8192 * 13),
            "step_iii": (cells + n_oct * N / 10) * REF_CELL * ref, "step_iv": sums * (iv if epochs > 1 else 0.0) * ref}
    return Plan(method, sum(loss.values()), sum(secs.values()), budget,
                  {"loss": loss, "seconds": secs, "octaves": n_oct, "points": points, "K": cm.K, "k_scale": k_scale,
                   "y_scale": y_scale})


def _ln_k_minus(cm: CellModel, allowed: float, need_eps: float) -> float:
    """ln of the epoch value a below which step (iii) deletes (or the lower map clamps): the largest a (on a
    0.25 grid of ln a) whose deleted Q-mass, E e^need_eps a Pr_P(L < a), is at most `allowed`. L >= Y_i / M for
    every step i, so Pr_P(L < a) <= Pr(Y < M a)^M. The bound a <= allowed / (E e^need_eps) alone put k_minus at
    ln a = -66 at (2, 10^4, sigma 64.5), where L lies within 1 +- 0.05: a verifier fences the epoch product at
    E (k_top - k_minus) (10^11 at eta 5e-6: rejected as too expensive) and the planner priced that span."""
    plain = math.log(allowed / cm.epochs) - need_eps
    x = 0.0
    while x > plain:
        if _k_minus_loss(cm, x, need_eps) <= allowed:
            return x
        x -= 0.25
    return plain


def _k_minus_loss(cm: CellModel, x: float, need_eps: float) -> float:
    """E e^need_eps a Pr(Y < M a)^M at a = e^x: the Q-mass step (iii) deletes below a (see _ln_k_minus)."""
    ln_pr = cm.steps * float(log_ndtr((math.log(cm.steps) + x + cm.t2 / 2) / cm.t))
    return math.exp(min(math.log(cm.epochs) + need_eps + x + ln_pr, 700.0))


def _sized_trim(want: float) -> fmpq:
    """TRIM_MAX where it costs at most TRIM_KEEP / LOWER_TRIM_SHARE times `want` (the grids of the usual cells
    keep it), else the largest nice decimal <= want."""
    return TRIM_MAX if want * TRIM_KEEP / LOWER_TRIM_SHARE >= float(TRIM_MAX) else parse_decimal("trim", _nice(want))


def upper_trim(steps: int, epochs: int, budget: float, tv: float | None) -> tuple[fmpq, dict]:
    """(trim, its predicted loss) for the upper method v2.

    A trim deletes P-mass at the lowest values of a block's sum; the path keeps its share of the
    payoff E min{1, Lambda} = 1 - TV (the block's low values barely move the epoch value), and as on
    the lower side (`lower_deletions`) a block's deficit reaches the epoch up to M/2^i times and Lambda E
    times: about E (2M + log2 M) (trim/2) (1 - TV). At (10^7, 10^4, 0.999) a trim of 10^-14 would lose
    ~10^-6 against a margin of ~10^-7. Step (iv) adds at most trim per product (200 trims). The trim
    gets LOWER_TRIM_SHARE of the budget where TRIM_MAX would cost more than TRIM_KEEP of it."""
    w = 1.0 if tv is None or not 0 < tv < 1 else max(1.0 - tv, 1e-12)
    ops = epochs * (2 * steps + steps.bit_length())
    trim = _sized_trim(LOWER_TRIM_SHARE * budget * 2 / (ops * w))
    return trim, {"trim": ops * float(trim) / 2 * w + 200 * float(trim)}


def upper_floors(steps: int, epochs: int, n: int, top: int, budget: float, bits: int) -> tuple[int, float]:
    """(fixed_point_bits, the floors' predicted loss) for the upper method v2: the floors of an octave product
    lose < 1 unit 2^-F per output coefficient (at most 2N (top + 1)), and a block's deficit reaches the epoch
    up to M/2^i times and Lambda E times, as for the trims (`upper_trim`); they get LOWER_TRIM_SHARE of the
    budget. Priced against the margin, not absolutely: at (10^6, 100, delta 1e-10) 80 bits may lose 1e-10
    this way, the whole target."""
    ops = epochs * (2 * steps + steps.bit_length())
    width = (2 << n) * (top + 1)
    bits = max(bits, math.ceil(math.log2(ops * width / (LOWER_TRIM_SHARE * budget))))
    return bits, ops * width * 2.0 ** -bits / 2


def lower_deletions(steps: int, epochs: int, n: int, top: int, budget: float, bits: int) -> tuple[fmpq, int, dict]:
    """(trim, fixed_point_bits, their predicted loss) for the lower method v2.

    The lower map loses every deleted or floored mass in full. A deficit d of a block of 2^i steps
    (a trim after its sum, <= trim/2, or the floors of its octave products, < 1 unit 2^-F per output
    coefficient, at most 2N (top + 1) of them) reaches the epoch sum up to M/2^i times (once per set
    bit above i, times 2^(j-i)), so the epoch's deficit is at most (2M + log2 M) d; it reaches U^E
    and W^E E times each. At (10^4, 10^4, 0.999) trims of 10^-14 lost 2.4e-7 this way against a
    margin of 2.7e-8 (the tries' grids did not matter). The trim and the floors get
    LOWER_TRIM_SHARE of the budget each (the trim stays TRIM_MAX where that costs at most TRIM_KEEP)."""
    ops = 2 * epochs * (2 * steps + steps.bit_length())           # both sides
    trim = _sized_trim(LOWER_TRIM_SHARE * budget / ops * 2)       # trim/2 per sum
    width = (2 << n) * (top + 1)
    bits = max(bits, math.ceil(math.log2(ops * width / (LOWER_TRIM_SHARE * budget))))
    loss = {"trim": ops * float(trim) / 2 + 4 * epochs.bit_length() * float(trim),
            "fixed_point": ops * width * 2.0 ** -bits / 2}
    return trim, bits, loss


LEVEL_RATIOS = (1.0, 2.0, 4.0)   # the lattice variance the level schedule may add, times one lattice's (§10)
ETAS = ("1e-6", "2e-6", "5e-6", "1e-5", "2e-5", "5e-5", "1e-4", "2e-4", "5e-4", "1e-3", "2e-3")


ETAS_FINE = ("1e-7", "2e-7", "5e-7")     # only where ETAS fit nothing (small lambda: the sd of ln Lambda ~ lambda)


def choose_v2(steps: int, epochs: int, t2: fmpq, budget: float, tv: float | None, *, need_eps: float = 0.0,
              prec: int = 100, k_scale: float = 1.0, weights: KindWeights | None = None,
              y_scale: float = 1.0, lower: bool = False) -> Plan:
    """The cheapest (by the cost model) method-v2 parameters whose predicted loss is <= budget (weights: a
    target kind's loss model, y_scale step (i)'s own calibration factor, lower the lower method; see plan_v2)."""
    passes = [(ETAS, range(6, 23)), (ETAS_FINE, range(6, 23))]
    if float(t2) <= OCC_T**2:           # a narrow sum (sigma >= 4) where nothing else fits: the format's 23, 24 bits
        passes.append((ETAS + ETAS_FINE, range(23, 25)))     # (stages at sigma 896: the lower margin 2.6e-12)
    for etas, ns in passes:
        best = None
        for n in ns:
            for eta in etas:
                for ratio in LEVEL_RATIOS:
                    p = plan_v2(steps, epochs, t2, budget, tv, n=n, eta=eta, need_eps=need_eps, prec=prec,
                                k_scale=k_scale, weights=weights, y_scale=y_scale, lower=lower, level_ratio=ratio)
                    if p.predicted_loss <= budget and (best is None or p.predicted_seconds < best.predicted_seconds):
                        best = p
        if best is not None:
            return best
    raise CannotCertifyError(f"no method-v2 grid fits the margin {budget:.2g} (mantissa up to "
                             f"{max(passes[-1][1])} bits, eta down to 1e-7); a larger sigma gives a larger margin")


def coarse(plan: Plan, steps: int, epochs: int, t2: fmpq, tv: float | None, drop: int = 2) -> Plan:
    """The same grid `drop` mantissa bits coarser and 2^drop times wider log cells (same octaves, cap, top):
    a calibration run at about 4^-drop of the loss model's K-part and a fraction of the time."""
    m = plan.method
    n = max(6, m.mantissa_bits - drop)
    d = m.mantissa_bits - n
    eta = m.eta * (1 << d)
    ev = float(eta)
    ys = tuple(max(2, b - d) for b in m.y_mantissa_bits)
    r = float(m.eta) / ev
    lb = None if m.level_bits is None else _at_least(tuple(b - d for b in m.level_bits), max(ys))
    method = UpperV2(h=m.h * (1 << d), mantissa_bits=n, y_mantissa_bits=ys, top_octave=m.top_octave, eta=eta,
                      k_minus=math.floor(m.k_minus * r), k_plus=math.ceil(m.k_plus * r),
                      k_top=math.ceil(m.k_top * r), prec=m.prec, fixed_point_bits=m.fixed_point_bits, trim=m.trim,
                      trim_shift=m.trim_shift, level_bits=lb)
    lo = plan.detail["loss"]
    kpart = (lo["lattice"] + lo["log_grid"] + lo["step_i"]) * 4**d + lo["small"] * (1 << d)
    fixed = lo["moves"] + lo["k_minus"] + lo["trim"] + lo.get("fixed_point", 0.0)
    return Plan(method, kpart + fixed, plan.predicted_seconds / 4 ** d, plan.budget,
                  {**plan.detail, "kpart": kpart, "fixed": fixed, "step_i_coarse": lo["step_i"] * 4**d})


def finer_steps(method: UpperV2, bits: int = 2) -> UpperV2:
    """The same grid with `bits` more mantissa bits in every octave of step (i) (at most the lattice's):
    step (i)'s predicted loss falls 4^bits-fold, every other term stays."""
    ys = tuple(min(b + bits, method.mantissa_bits) for b in method.y_mantissa_bits)
    lb = None if method.level_bits is None else _at_least(method.level_bits, max(ys))
    return replace(method, y_mantissa_bits=ys, level_bits=lb)


def _at_least(level_bits: tuple, floor_bits: int) -> tuple | None:
    """level_bits raised to >= floor_bits (level 0 must hold step (i)'s grid); None where all are the top's."""
    lb = tuple(max(b, floor_bits) for b in level_bits)
    return None if min(lb) == lb[-1] else lb


Y_SCALE_MAX = 200.0     # step (i)'s own calibration factor is measured, not guessed: a wider clamp than k_scale's


def scales_from(coarse_plan: Plan, measured: float, measured_finer: float) -> tuple[float, float]:
    """(k_scale, y_scale) from two runs on the coarse grid: as planned (loss `measured`) and with two more
    mantissa bits in step (i) (`measured_finer`, finer_steps). Step (i)'s share of the loss is
    (measured - measured_finer) 16/15 (its term falls 16-fold), the rest belongs to the other K-terms:
    each is set against its own prediction (a kind's kink in the far tail weighs the rounding of large steps
    far more than the model's per-octave weights; measured 86x at (100, 10, eps 4), the rest 0.8x).
    y_scale >= 1: step (i) never weighs less than under the common factor k_scale."""
    d = coarse_plan.detail
    y_pred = d["step_i_coarse"]            # already with the plan's k_scale and y_scale
    y_meas = max(measured - measured_finer, 0.0) * 16 / 15
    rest_pred = d["kpart"] - y_pred
    if not (y_pred > 0 and rest_pred > 0):
        return k_scale_from(coarse_plan, measured), 1.0
    k = d["k_scale"] * min(20.0, max(0.25, (measured - y_meas - d["fixed"]) / rest_pred))
    y_total = d["k_scale"] * d.get("y_scale", 1.0) * min(Y_SCALE_MAX, max(0.25, y_meas / y_pred))
    return k, max(1.0, y_total / k)


def k_scale_from(coarse_plan: Plan, measured_loss: float) -> float:
    """How much the K-part of the loss model under-(>1) or over-(<1) estimates, from a calibration run."""
    d = coarse_plan.detail
    return d["k_scale"] * min(20.0, max(0.25, (measured_loss - d["fixed"]) / d["kpart"]))


def eps_gaussian(tv: float, delta: float = 1e-6) -> float:
    """eps at which the Gaussian pair with the same TV (mu = s) has hockey-stick divergence delta."""
    mu = max(2.0 * float(ndtri(0.5 + 0.5 * tv)), 1e-6)
    d = lambda e: float(ndtr(-e / mu + mu / 2) - math.exp(e) * ndtr(-e / mu - mu / 2)) - delta
    return brentq(d, 0.0, 200.0) if d(0.0) > 0 else 0.0


def eps_tail(steps: int, epochs: int, t2: float, delta: float = 1e-6) -> float:
    """eps from the lognormal tail of the shifted step (heavy tails, where the Gaussian guess fails): under Q
    one step per epoch has ln Y ~ N(t^2/2, t^2), and L >= Y/M; the Q-quantile of ln(1 + Y/M) at delta/E."""
    t = math.sqrt(t2)
    z = float(ndtri(1.0 - delta / epochs))
    return math.log1p(math.exp(min(t2 / 2 + t * z, 700.0)) / steps)


def eps_estimate(b, eta: fmpq, F: int, delta: float = 1e-6) -> float:
    """A float estimate of the eps at which both hockey-stick bounds from the masses b reach delta."""

    ms = Masses(b, eta, F)
    eps = np.arange(0.0, 100.0, 0.01)
    vals = np.maximum(ms.dqp_float(eps), ms.dpq_float(eps))
    ok = np.flatnonzero(vals <= delta)
    return float(eps[ok[0]]) if ok.size else 100.0
