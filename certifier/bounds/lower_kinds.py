"""Certified LOWER bounds on the hockey-stick divergences and the TPR at an FPR, by data processing.

The lower methods (certifier.bounds.lower_v1, lower_v2) end with a fixed map T of the run's output
and exact integer pmfs U (P side) and W (Q side) of its image, units 2^-F, every integer a LOWER
bound on the true mass at its index; deleted_p = 1 - sum U, deleted_q = 1 - sum W (exact).
Data processing (Appendix B.4; the trade-off curve of T#P, T#Q lies above that of P, Q, (7)):

    delta_{Q||P}(eps) >= Q(T in A) - e^eps P(T in A) >= W(A) - e^eps (U(A) + deleted_p),
    delta_{P||Q}(eps) >= U(A') - e^eps (W(A') + deleted_q)          for any sets A, A';

and for a randomized test phi of the image with sum_k phi_k U_k <= alpha - deleted_p,
E_P phi <= sum phi_k U_k + deleted_p <= alpha and E_Q phi >= sum phi_k W_k, so
1 - T(P, Q)(alpha) >= sum phi_k W_k (phi in Neyman-Pearson order of W/U, the last cell fractional).
Every bound is an exact rational: e^eps enters as a rational UPPER end of its arb ball.
"""
from __future__ import annotations

from flint import fmpq

from certifier.bounds.fixedpoint import arb_exact, working_prec


def exp_upper(eps: fmpq, prec: int = 200) -> fmpq:
    """A rational >= e^eps: the upper end of an arb ball for it."""
    with working_prec(prec):
        man, exp = arb_exact(eps).exp().upper().man_exp()
    man, exp = int(man), int(exp)
    return fmpq(man * 2**exp) if exp >= 0 else fmpq(man, 2**-exp)


def _hockey_stick(X: list[int], Y: list[int], F: int, c: fmpq) -> fmpq:
    """max over A of Y(A) - c (X(A) + 1 - sum X), A = {Y > c X} (units 2^-F in, exact rational out).

    With c = a/b in lowest terms, y > c x iff b y > a x, and the sum over A is (b Y(A) - a X(A)) / b:
    one pass of integer products (no rational per cell)."""
    a, b = int(c.p), int(c.q)
    deleted = (1 << F) - sum(X)
    ya = xa = 0
    for x, y in zip(X, Y):
        if b * y > a * x:
            ya, xa = ya + y, xa + x
    return fmpq(b * ya - a * (xa + deleted), b << F)


def delta_qp_lower(pmfs: tuple, eps: fmpq) -> fmpq:
    """A lower bound on delta_{Q||P}(eps) (Appendix B.4) from the processed pmfs (U, W, F)."""
    U, W, F = pmfs
    return _hockey_stick(U, W, F, exp_upper(eps))


def delta_pq_lower(pmfs: tuple, eps: fmpq) -> fmpq:
    """A lower bound on delta_{P||Q}(eps) (Appendix B.4) from the processed pmfs (U, W, F)."""
    U, W, F = pmfs
    return _hockey_stick(W, U, F, exp_upper(eps))


def dp_lower(pmfs: tuple, eps: fmpq) -> fmpq:
    """A lower bound on max(delta_{Q||P}(eps), delta_{P||Q}(eps)): the max of the two above."""
    return max(delta_qp_lower(pmfs, eps), delta_pq_lower(pmfs, eps))


def tpr_lower(pmfs: tuple, alpha: fmpq) -> fmpq:
    """A lower bound on 1 - T(P, Q)(alpha) ((7)): the Neyman-Pearson test of the processed pair with
    P-budget alpha - deleted_p (exact rational; 0 when the budget is negative)."""
    U, W, F = pmfs
    budget = alpha * (1 << F) - ((1 << F) - sum(U))          # units 2^-F
    if budget < 0:
        return fmpq(0)
    # cells with U = 0 first (infinite ratio), then W/U decreasing; the order only affects tightness
    cells = sorted((k for k in range(len(U)) if W[k] > 0), key=lambda k: (U[k] > 0, -W[k] / U[k] if U[k] else 0))
    got, left = fmpq(0), budget
    for k in cells:
        if U[k] <= left:
            got, left = got + W[k], left - U[k]
        else:
            got += W[k] * left / U[k]                        # the fractional last cell: phi_k = left / U_k
            break
    return got / (1 << F)

