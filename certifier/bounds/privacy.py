"""Certified hockey-stick divergences, (eps, delta) and TPR at FPR from the v1 masses b_k (docs/two-sided.md §2-3).

With Lambda = dQ/dP (E_P Lambda = 1):
    delta_{Q||P}(eps) = 1 - E_P min{Lambda, e^eps},   delta_{P||Q}(eps) = 1 - E_P min{1, e^eps Lambda}.
Both minima are concave in each epoch factor, so Lemma C.5 (two-point roundings
and deletions only lower the expectation) gives, for the fixed-point masses b_k
of step (iv) of lemma-c5-rounding at Lambda = e^{k eta} (lower bounds, units 2^-F):

    delta_{Q||P}(eps) <= 1 - sum_k b_k min{e^{k eta}, e^eps}
    delta_{P||Q}(eps) <= 1 - sum_k b_k min{1, e^{eps + k eta}}.

Each right-hand side is evaluated as an arb ball from exact integers (`dqp_ball`,
`dpq_ball`); the certified numbers are upper ends of those balls. Floats only
locate the grid point to check. Every test with FPR alpha has
TPR <= e^eps alpha + delta_{Q||P}(eps) for every eps (gamma = e^eps).
"""
from __future__ import annotations

import math

import numpy as np
from flint import arb, arb_poly, fmpq, fmpz_poly

from certifier.bounds.fixedpoint import Poly, arb_exact, arb_str, round_up_sig, working_prec
from certifier.errors import NumericsUnreliableError
from certifier.params import decimal_str, parse_decimal

EPSILON_GRID = "0.0001"
DELTAS = ("1e-05", "1e-06")           # keys: str(float) of delta
ALPHAS = ("0.1", "0.01", "0.001")     # keys: str(float) of alpha
EPS_MAX = 100.0                       # the largest eps searched (the format allows up to 100)
EPS_RANGE = (-10.0, 30.0)             # eps = ln gamma searched for the TPR bound
MAX_STEPS = 64                        # grid steps walked when floats mislocate


class Masses:
    """The b_k as exact integers (units 2^-F) with float copies for locating grid points."""

    def __init__(self, b: Poly, eta: fmpq, F: int, prec: int = 128):
        self.b, self.eta, self.F, self.prec = b, eta, F, max(prec, 128)
        self.n = b.poly.length()
        bf = np.array([float(x) for x in b.poly.coeffs()]) / 2.0**F if self.n else np.zeros(0)
        self.x = (b.off + np.arange(self.n)) * float(eta)          # k eta
        self.bf = bf
        with np.errstate(over="ignore"):
            be = bf * np.exp(self.x)
        # suffix sums (index i: sum over j >= i) and prefix sums (sum over j < i)
        self.suf_b = np.concatenate([np.cumsum(bf[::-1])[::-1], [0.0]])
        self.suf_be = np.concatenate([np.cumsum(be[::-1])[::-1], [0.0]])
        self.pre_b = np.concatenate([[0.0], np.cumsum(bf)])
        self.pre_be = np.concatenate([[0.0], np.cumsum(be)])
        self.qdef = 1.0 - self.pre_be[-1]          # Q mass not represented (deletions, floors)
        self.pdef = 1.0 - self.pre_b[-1]

    # ------------------------------------------------------------------ floats (locate only)
    def dqp_float(self, eps: np.ndarray) -> np.ndarray:
        """sum_{k eta > eps} b_k (e^{k eta} - e^eps) + (1 - sum b_k e^{k eta}), vectorised."""
        i = np.searchsorted(self.x, eps, side="right")               # first index with k eta > eps
        return self.suf_be[i] - np.exp(eps) * self.suf_b[i] + self.qdef

    def dpq_float(self, eps: np.ndarray) -> np.ndarray:
        """sum_{k eta < -eps} b_k (1 - e^{eps + k eta}) + (1 - sum b_k), vectorised."""
        i = np.searchsorted(self.x, -eps, side="left")               # indices < i have k eta < -eps
        return self.pre_b[i] - np.exp(eps) * self.pre_be[i] + self.pdef

    # ------------------------------------------------------------------ balls (certified)
    def _partial(self, lo: int, hi: int, weighted: bool) -> arb:
        """A ball containing sum_{lo <= k < hi} b_k (e^{k eta} if weighted) 2^-F (k absolute)."""
        a, z = max(lo - self.b.off, 0), min(hi - self.b.off, self.n)
        if z <= a:
            return arb(0)
        part = self.b.poly.truncate(z).right_shift(a) if a else self.b.poly.truncate(z)
        if not weighted:
            return arb(int(part(1))) / arb(2) ** self.F
        eta = arb_exact(self.eta)
        return arb_poly(part)(eta.exp()) * (eta * (self.b.off + a)).exp() / arb(2) ** self.F

    def dqp_ball(self, eps: fmpq) -> arb:
        """A ball containing 1 - sum_k b_k min{e^{k eta}, e^eps}: an upper bound on delta_{Q||P}(eps)."""
        with working_prec(self.prec):
            k1 = int((eps / self.eta).floor())                      # k eta <= eps  <=>  k <= k1
            lo_part = self._partial(self.b.off, k1 + 1, True)
            hi_mass = self._partial(k1 + 1, self.b.off + self.n, False)
            return arb(1) - lo_part - arb_exact(eps).exp() * hi_mass

    def dpq_ball(self, eps: fmpq) -> arb:
        """A ball containing 1 - sum_k b_k min{1, e^{eps + k eta}}: an upper bound on delta_{P||Q}(eps)."""
        with working_prec(self.prec):
            k2 = int((-eps / self.eta).ceil())                      # k eta >= -eps  <=>  k >= k2
            top = self._partial(k2, self.b.off + self.n, False)
            low = self._partial(self.b.off, k2, True)
            return arb(1) - top - arb_exact(eps).exp() * low


def _ok(ms: Masses, eps: fmpq, delta: fmpq) -> tuple[bool, arb, arb]:
    """Whether both certified upper bounds at eps are <= delta (upper ends of the balls)."""
    a, b = ms.dqp_ball(eps), ms.dpq_ball(eps)
    d = arb_exact(delta)
    return bool(a.upper() <= d and b.upper() <= d), a, b


def epsilon_at_delta(ms: Masses, delta: fmpq, grid: fmpq) -> dict:
    """The smallest eps = j grid (j >= 0) whose certified hockey-stick bounds are both <= delta."""
    g, dl = float(grid), float(delta)
    js = np.arange(0, int(math.ceil(EPS_MAX / g)) + 1)
    vals = np.maximum(ms.dqp_float(js * g), ms.dpq_float(js * g))
    good = np.flatnonzero(vals <= dl)
    if good.size == 0:
        raise NumericsUnreliableError(f"no eps <= {EPS_MAX:g} reaches delta {decimal_str(delta)}")
    j = int(good[0])
    for _ in range(MAX_STEPS):                                  # certify upward from the float guess
        ok, a, b = _ok(ms, grid * j, delta)
        if ok:
            break
        j += 1
    else:
        raise NumericsUnreliableError("certified eps not found near the numerical one; refine the grid")
    while j > 0:                                                # and make it the smallest certified one
        ok2, a2, b2 = _ok(ms, grid * (j - 1), delta)
        if not ok2:
            break
        j, a, b = j - 1, a2, b2
    return {"epsilon": decimal_str(grid * j), "delta_qp": arb_str(a), "delta_pq": arb_str(b)}


def tpr_at_fpr(ms: Masses, alpha: fmpq, grid: fmpq) -> dict:
    """min over eps on the grid of upper(e^eps alpha + delta_{Q||P}(eps)): a certified TPR bound."""
    g, al = float(grid), float(alpha)
    js = np.arange(int(EPS_RANGE[0] / g), int(EPS_RANGE[1] / g) + 1)
    eps = js * g
    with np.errstate(over="ignore"):
        vals = np.exp(eps) * al + ms.dqp_float(eps)
    j = int(js[int(np.argmin(vals))])
    e = grid * j
    with working_prec(ms.prec):
        ball = arb_exact(e).exp() * arb_exact(alpha) + ms.dqp_ball(e)
    return {"tpr": round_up_sig(ball, 10), "epsilon": decimal_str(e)}


def privacy_rows(b: Poly, eta: fmpq, F: int, prec: int = 128, grid: str = EPSILON_GRID) -> tuple[dict, dict]:
    """The `privacy` and `tpr` objects of a v2 predicate from the step-(iv) masses b."""
    ms = Masses(b, eta, F, prec)
    gq = parse_decimal("epsilon_grid", grid)
    eps = {k: epsilon_at_delta(ms, parse_decimal("delta", k), gq) for k in DELTAS}
    tpr = {k: tpr_at_fpr(ms, parse_decimal("alpha", k), gq) for k in ALPHAS}
    return {"epsilon_grid": grid, "epsilon_at_delta": eps}, tpr


class RoundedLaw:
    """The certified rounded law of Lambda: P-mass b_k 2^-F at Lambda = e^{k eta}, k = off, off + 1, ...

    The b_k are the step-(iv) masses after Lemma C.5's roundings, moves and recorded deletions
    (exact integers, lower bounds). Under P they sum to 1 - p_missing, under Q (mass b_k e^{k eta})
    to 1 - q_missing; a dominating pair puts each missing mass at privacy loss +infinity
    (docs/compose.md). Both hockey-stick bounds of this module are this law's divergences.
    """

    def __init__(self, b: Poly, eta: fmpq, F: int):
        self.off, self.eta, self.F = b.off, eta, F
        self.masses = [int(c) for c in b.poly.coeffs()] if b.poly.length() else []

    def __len__(self) -> int:
        return len(self.masses)

    def privacy_rows(self, prec: int = 128) -> tuple[dict, dict]:
        """The certified (eps, delta) and TPR rows of this law (the certificate's `privacy`, `tpr`)."""
        return privacy_rows(Poly(self.off, fmpz_poly(self.masses)), self.eta, self.F, prec)

    def p_mass(self) -> fmpq:
        """sum_k b_k 2^-F, exact."""
        return fmpq(sum(self.masses), 1 << self.F)


def rounded_law(b: Poly, eta: fmpq, F: int) -> RoundedLaw:
    """The public view of an upper bound's step-(iv) masses (UpperResult.b) as a law of Lambda."""
    return RoundedLaw(b, eta, F)


def privacy_rows_partial(b: Poly, eta: fmpq, F: int, prec: int = 128,
                         grid: str = EPSILON_GRID) -> tuple[dict, dict, dict]:
    """`privacy_rows`, row by row: (privacy, tpr, not_certified) where not_certified maps "privacy" and
    "tpr" to {row key: reason} for the rows that could not be certified (docs/two-sided.md §4)."""
    gq = parse_decimal("epsilon_grid", grid)
    eps, tpr, missing = {}, {}, {"privacy": {}, "tpr": {}}
    try:
        ms = Masses(b, eta, F, prec)
    except (ArithmeticError, ValueError, OverflowError) as err:
        reason = f"the masses could not be read: {err}"
        return ({"epsilon_grid": grid, "epsilon_at_delta": {}}, {},
                {"privacy": dict.fromkeys(DELTAS, reason), "tpr": dict.fromkeys(ALPHAS, reason)})
    for k in DELTAS:
        try:
            eps[k] = epsilon_at_delta(ms, parse_decimal("delta", k), gq)
        except (NumericsUnreliableError, ArithmeticError, ValueError) as err:
            missing["privacy"][k] = str(err) or type(err).__name__
    for k in ALPHAS:
        try:
            tpr[k] = tpr_at_fpr(ms, parse_decimal("alpha", k), gq)
        except (ArithmeticError, ValueError) as err:
            missing["tpr"][k] = str(err) or type(err).__name__
    return {"epsilon_grid": grid, "epsilon_at_delta": eps}, tpr, {k: v for k, v in missing.items() if v}
