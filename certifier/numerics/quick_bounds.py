"""Proven closed-form bounds for the dp and tpr kinds, and the sigma they give (docs/targets.md §4).

Integer moments of the one-epoch likelihood ratio. With E Y^k = e^{k(k-1)t^2/2} (Y lognormal,
Section 3) and the multinomial expansion of L_M^q = M^{-q} (sum_j Y_j)^q over the partitions
lambda of q into l <= M parts (m_i parts of size i):

    F_M(q) = E L_M^q = M^{-q} sum_lambda  M!/(M-l)!/prod_i m_i!  *  q!/prod_j lambda_j!
                                          * exp(t^2/2 * sum_j lambda_j (lambda_j - 1)),           (R1)

so E_P Lambda^q = F_M(q)^E (Theorem 4.1); q = 2 is 1 + (e^{t^2} - 1)/M, the chi-square of (9).

  * TPR (Proposition B.2): every test with FPR alpha <= 1/2 has TPR <= alpha + sqrt(c_E alpha(1-alpha)).
  * delta_{Q||P}(eps) = E_P (Lambda - K)_+ with K = e^eps; (x - K)_+ <= x^q K^{1-q} (q-1)^{q-1}/q^q
    (the tangent from the origin touches x^q at x = qK/(q-1)), so
        delta_{Q||P}(eps) <= F_M(q)^E e^{(1-q) eps} (q-1)^{q-1} / q^q      for every integer q >= 2 (R2)
    (the RDP-to-DP conversion of Canonne, Kamath and Steinke, Prop. 12, with D_q = E ln F_M(q)/(q-1)).
  * T(alpha): every test has TPR <= delta_{Q||P}(eps') + e^{eps'} FPR, so with B_i the bound (R2)
    at eps'_i,  1 - T(alpha) <= min_i B_i + e^{eps'_i} alpha                                     (R3)
    (a min over finitely many eps' is still a bound), usually far below Proposition B.2's.
(R2) bounds one direction only: delta_{P||Q} needs D_q(P||Q) = ln E_P Lambda^{1-q}/(q-1), a
negative moment of L_M without a closed form; docs/targets.md §4 says what is known about it.
Each bound decreases in sigma: F_M(q)^E - 1 (q >= 2) is the f-divergence E_P g(Lambda) with the
convex g(x) = x^q - 1, and the pair at a larger sigma is a post-processing of the pair at a
smaller one (docs/targets.md §2). The sigma is the least grid point where the float (R2)/(R3)
evaluation of the bound meets the target.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from certifier.errors import ParameterError
from certifier.numerics.closed_form import c_E
from certifier.params import decimal_str, parse_positive_decimal

Q_MAX = 40           # orders q tried in (R2)


def _partitions(q: int, largest: int | None = None, parts: int | None = None):
    """Partitions of q as non-increasing tuples, with at most `parts` parts (default: any number)."""
    largest = q if largest is None else largest
    parts = q if parts is None else parts
    if q == 0:
        yield ()
        return
    if parts == 0:
        return
    for first in range(min(q, largest), 0, -1):
        if first * parts < q:  # parts of size <= first cannot fill q any more
            return
        for rest in _partitions(q - first, first, parts - 1):
            yield (first,) + rest


SMALL_CAP = 8   # at most this many parts: enumerate them; more: filter the full table (enumerated once)


@lru_cache(maxsize=256)
def _partition_table(q: int, cap: int) -> tuple[tuple[int, int, int], ...]:
    """(a, l, c) over the partitions of q into l <= cap parts, grouped by (a, l): c = sum of
    q!/(prod_j lambda_j! prod_i m_i!) (set partitions of a q-set of that block type, an integer).
    Independent of M: every M >= q shares the full table, a larger cap is read off it."""
    if SMALL_CAP < cap < q:
        return tuple(row for row in _partition_table(q, q) if row[1] <= cap)
    out: dict[tuple[int, int], int] = {}
    fq = math.factorial(q)
    for lam in _partitions(q, parts=cap):
        c = fq
        for part in lam:
            c //= math.factorial(part)
        for size in set(lam):
            c //= math.factorial(lam.count(size))
        key = (sum(part * (part - 1) for part in lam), len(lam))
        out[key] = out.get(key, 0) + c
    return tuple((a, l, c) for (a, l), c in sorted(out.items()))


@lru_cache(maxsize=256)
def moment_coefficients(steps: int, q: int) -> tuple[tuple[int, int], ...]:
    """(a, C) with F_M(q) = M^{-q} sum C e^{a t^2/2} (R1); exact integers, grouped by a:
    C = sum_l M!/(M-l)! c(a, l) (l <= M parts: M!/(M-l)! vanishes beyond)."""
    out: dict[int, int] = {}
    for a, parts, c in _partition_table(q, min(q, steps)):
        out[a] = out.get(a, 0) + math.perm(steps, parts) * c
    return tuple(sorted(out.items()))


def log_moment(steps: int, q: int, sigma: float) -> float:
    """ln F_M(q) by (R1), as a log-sum of positive terms (no cancellation)."""
    t2 = 1.0 / (sigma * sigma)
    terms = [math.log(c) + 0.5 * a * t2 for a, c in moment_coefficients(steps, q)]
    top = max(terms)
    return top + math.log(sum(math.exp(x - top) for x in terms)) - q * math.log(steps)


def _log_r2(steps: int, epochs: int, sigma: float, q: int, eps) -> float:
    """ln of (R2) at order q (eps a float or an array)."""
    return epochs * log_moment(steps, q, sigma) + (1 - q) * eps + (q - 1) * math.log(q - 1) - q * math.log(q)


def delta_qp_bound(steps: int, epochs: int, sigma: float, eps: float) -> tuple[float, int]:
    """min over q of (R2), with the minimising q. ln (R2) is convex in q (ln F_M(q) is a cumulant
    generating function of ln L_M; (q-1) ln(q-1) - q ln q has second derivative 1/(q-1) - 1/q > 0), so
    the first increase ends the search: the orders beyond (and their partitions, the costly part of
    (R1)) are never needed."""
    best, last = (math.inf, 0), math.inf
    for q in range(2, Q_MAX + 1):
        log_b = _log_r2(steps, epochs, sigma, q, eps)
        best = min(best, (math.exp(min(log_b, 0.0)), q))
        if log_b > last:
            break
        last = log_b
    return best


EPS_LINES = np.linspace(-3.0, 30.0, 166)  # the eps' of the lines behind the lower bound on T (step 0.2)


def _lines(steps: int, epochs: int, sigma: float, eps_lines=EPS_LINES) -> tuple[np.ndarray, np.ndarray]:
    """(K_i, B_i): K_i = e^{eps'_i} and B_i >= delta_{Q||P}(eps'_i) by (R2), min over q, capped at 1
    (each line's ln (R2) is convex in q: the orders stop once every line has passed its minimum)."""
    best = np.full(eps_lines.size, np.inf)
    last = np.full(eps_lines.size, np.inf)
    for q in range(2, Q_MAX + 1):
        log_b = _log_r2(steps, epochs, sigma, q, eps_lines)
        best = np.minimum(best, log_b)
        if np.all(log_b > last):
            break
        last = log_b
    return np.exp(eps_lines), np.exp(np.minimum(best, 0.0))


def tradeoff_lower(steps: int, epochs: int, sigma: float, alpha: np.ndarray, eps_lines=EPS_LINES) -> np.ndarray:
    """f(alpha) = max(0, max_i 1 - B_i - K_i alpha) <= T(P, Q)(alpha), the complement of (R3)."""
    k, b = _lines(steps, epochs, sigma, eps_lines)
    return np.maximum(0.0, (1.0 - b[None, :] - np.outer(alpha, k)).max(axis=1))


def rdp_tpr_bound(steps: int, epochs: int, sigma: float, alpha: float) -> float:
    """1 - f(alpha) of (R3): min over the lines of B_i + K_i alpha. A line with K_i alpha >= 1 gives
    1 - B_i - K_i alpha <= 0, never above the max(0, .): only the lines with K_i < 1/alpha are needed."""
    lines = EPS_LINES[EPS_LINES < math.log(1.0 / alpha)]
    if lines.size == 0:
        return 1.0
    return float(1.0 - tradeoff_lower(steps, epochs, sigma, np.array([alpha]), lines)[0])


def chi2_tpr_bound(steps: int, epochs: int, sigma: float, alpha: float) -> float:
    """alpha + sqrt(c_E alpha (1 - alpha)) (Proposition B.2; alpha <= 1/2)."""
    c = c_E(steps, epochs, sigma)
    return min(1.0, alpha + math.sqrt(c * alpha * (1.0 - alpha))) if math.isfinite(c) else 1.0


def tpr_bound_sigma(steps: int, epochs: int, fpr: float, tpr: float, resolution="1e-6", scale2: int = 1) -> str:
    """The least grid sigma with c_E <= (beta - alpha)^2 / (alpha (1 - alpha)) (Prop. B.2 solved for
    sigma as Corollary 3.4 solves U(c_E) = lambda), rounded up and re-checked in floats.
    scale2 = E for the fixed-bins pair (M, 1, sigma / sqrt(E)), whose epochs argument is 1."""
    if not (0.0 < fpr <= 0.5 and fpr < tpr < 1.0):
        raise ParameterError("Proposition B.2 needs 0 < fpr <= 1/2 and fpr < tpr < 1")
    c_star = (tpr - fpr) ** 2 / (fpr * (1.0 - fpr))
    per_epoch = math.expm1(math.log1p(c_star) / epochs)
    sigma = math.sqrt(scale2) * math.log1p(steps * per_epoch) ** -0.5
    root = math.sqrt(scale2)
    return _round_up(lambda s: chi2_tpr_bound(steps, epochs, s / root, fpr) <= tpr, sigma, resolution)


# deliberate: _grid_bisect and _round_up below share a shape (parse the grid, walk k) but not a search
def _grid_bisect(ok, seed: float, resolution) -> str:
    """The least grid point k res with ok(k res), for ok monotone (False below, True above)."""
    res = parse_positive_decimal("resolution", resolution)
    step = float(res)
    hi = max(1, math.ceil(seed / step))
    while not ok(step * hi):
        hi = math.ceil(hi * 1.1)  # far above the answer (R2) needs many orders: grow gently
        if hi * step > 1e6:
            raise ParameterError("no sigma below 1e6 meets the bound")
    lo = hi
    while lo > 1 and ok(step * lo):
        lo = max(1, lo // 2)
    if ok(step * lo):
        return decimal_str(res * lo)
    while hi - lo > 1:  # invariant: lo misses, hi meets
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(step * mid) else (mid, hi)
    return decimal_str(res * hi)


def _r2_terms(log_f, q: int, eps):
    """ln of (R2) at order q from ln E_P Lambda^q = log_f(q)."""
    return log_f(q) + (1 - q) * eps + (q - 1) * math.log(q - 1) - q * math.log(q)


def _meets_r2(log_f, eps: float, delta: float) -> bool:
    last = math.inf
    for q in range(2, Q_MAX + 1):
        log_b = _r2_terms(log_f, q, eps)
        if math.exp(min(log_b, 0.0)) <= delta:
            return True
        if log_b > last:  # convex in q: past the minimum
            return False
        last = log_b
    return False


def _meets_r3(log_f, alpha: float, beta: float) -> bool:
    lines = EPS_LINES[EPS_LINES < math.log(1.0 / alpha)]
    if lines.size == 0:
        return beta >= 1.0
    k = np.exp(lines)
    best = np.full(lines.size, np.inf)
    last = np.full(lines.size, np.inf)
    for q in range(2, Q_MAX + 1):
        log_b = _r2_terms(log_f, q, lines)
        best = np.minimum(best, log_b)
        # 1 - max(0, max_i 1 - B_i - K_i alpha) = min(1, min_i B_i + K_i alpha)
        if min(1.0, float((np.exp(np.minimum(best, 0.0)) + k * alpha).min())) <= beta:
            return True
        if np.all(log_b > last):
            return False
        last = log_b
    return False


def r2_meets(steps: int, epochs: int, sigma: float, eps: float, delta: float) -> bool:
    """delta_qp_bound(...)[0] <= delta, stopping at the first order that meets it (or at the convex
    minimum, which misses): the same verdict without the orders beyond."""
    return _meets_r2(lambda q: epochs * log_moment(steps, q, sigma), eps, delta)


def r3_meets(steps: int, epochs: int, sigma: float, alpha: float, beta: float) -> bool:
    """rdp_tpr_bound(...) <= beta, stopping at the first order where a line meets it (or once every
    line has passed its convex minimum): the same verdict without the orders beyond."""
    return _meets_r3(lambda q: epochs * log_moment(steps, q, sigma), alpha, beta)


def _log_f(stages, sigma: float):
    """ln E_P Lambda^q = sum_s E_s ln F_{M_s}(q) of a run [(M_s, E_s)] at one sigma (Theorem 4.1 with a product;
    a block is one stage)."""
    return lambda q: sum(e * log_moment(m, q, sigma) for m, e in stages)


def rdp_sigma(stages, eps: float, delta: float, resolution="1e-6", seed: float = 1.0, scale2: int = 1) -> str:
    """The least grid sigma where (R2) <= delta for a run [(M_s, E_s)] at one sigma (a block: one stage; scale2:
    the scheme's factor of t^2): a proven bound on delta_{Q||P}(eps) only (the sum of convex log-moments is
    convex in q)."""
    root = math.sqrt(scale2)
    return _grid_bisect(lambda s: _meets_r2(_log_f(stages, s / root), eps, delta), seed, resolution)


def rdp_tpr_sigma(stages, fpr: float, tpr: float, resolution="1e-6", seed: float = 1.0, scale2: int = 1) -> str:
    """The least grid sigma where (R3) <= beta for a run [(M_s, E_s)] at one sigma: a proven TPR bound (usually
    far below Prop. B.2's)."""
    root = math.sqrt(scale2)
    return _grid_bisect(lambda s: _meets_r3(_log_f(stages, s / root), fpr, tpr), seed, resolution)


def _round_up(ok, sigma: float, resolution) -> str:
    """The least grid point k res >= about sigma with ok(k res), walking up (and down while ok)."""
    res = parse_positive_decimal("resolution", resolution)
    step = float(res)
    k = max(1, math.ceil(sigma / step))
    while not ok(step * k):
        k += 1
    while k > 1 and ok(step * (k - 1)):
        k -= 1
    return decimal_str(res * k)
