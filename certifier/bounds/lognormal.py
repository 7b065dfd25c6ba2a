"""The law of one coordinate's likelihood ratio Y = exp(tX - t^2/2), X ~ N(0, 1), in balls.

Under P: Pr(Y <= y) = F0(y) = Phi((ln y + t^2/2)/t); the shifted coordinate (dQ_1/dP_1 = Y) has
Pr_Q(Y <= y) = F1(y) = E_P[Y 1{Y <= y}] = Phi((ln y - t^2/2)/t) (Appendix C.5, step (i)).
We keep the doubled tails e0(y) = 2(1 - F0(y)) = erfc((ln y + t^2/2)/(t sqrt 2)) and
e1(y) = 2(1 - F1(y)) as FLINT erfc balls; e0(0) = e1(0) = 2. The parameter is t^2 (an exact
rational: 1/sigma^2, or E/sigma^2 for the fixed-bins scheme), so no square root of sigma is
ever rounded.
"""
from __future__ import annotations

from collections.abc import Iterator

from flint import arb, fmpq

from certifier.bounds.fixedpoint import arb_exact, working_prec


def tails_along(t2: fmpq, points, unit: fmpq, prec: int) -> Iterator[tuple[int, arb, arb]]:
    """(p, e0(p u), e1(p u)) for each integer point p >= 0 in turn (u = `unit`): balls, at prec bits."""
    with working_prec(prec):
        t = arb_exact(t2).sqrt()
        c = arb_exact(t2) / 2                      # t^2/2
        s = 1 / (t * arb(2).sqrt())                # erfc(x / sqrt 2) = 2 Phi(-x)
        lnu = arb_exact(unit).log()
        log = arb.log
        for p in points:
            if p == 0:
                yield p, arb(2), arb(2)
                continue
            lb = log(arb(p)) + lnu
            yield p, ((lb + c) * s).erfc(), ((lb - c) * s).erfc()


def doubled_tails(t2: fmpq, points: list[int], unit: fmpq, prec: int) -> tuple[list[arb], list[arb]]:
    """Balls containing e0(p u) and e1(p u) for each integer point p >= 0 (u = `unit`)."""
    e0, e1 = [], []
    for _, a, b in tails_along(t2, points, unit, prec):
        e0.append(a)
        e1.append(b)
    return e0, e1


def masses_along(tails, unit: fmpq) -> Iterator[tuple[arb, arb]]:
    """(doubled mass, e0) at each point in turn of the (p, e0, e1) `tails` (tails_along): two_point_masses one cell
    at a time, the last point's mass without Y above it."""
    inv_u = arb(unit.q) / arb(unit.p)
    carry, last = arb(0), None
    for b, e0b, e1b in tails:
        if last is not None:
            a, e0a, e1a = last
            mm = e0a - e0b
            mu = (e1a - e1b) * inv_u
            down = (mm * b - mu) / (b - a)
            yield carry + down, e0a
            carry = mm - down
        last = (b, e0b, e1b)
    yield carry, last[1]


def two_point_masses(e0: list[arb], e1: list[arb], points: list[int], unit: fmpq) -> list[arb]:
    """Doubled masses the two-point rounding of Lemma C.5 puts at each point (Y below the last point).

    A cell (a u, b u] of mass m = F0(b u) - F0(a u) and partial mean mu = F1(b u) - F1(a u) sends
    (b m - mu/u)/(b - a) to a and the rest to b (docs/certificate.md §4 (i)); e0, e1 from
    `doubled_tails`, so every ball holds twice the mass. Y above the last point is not included.
    """
    return [m for m, _ in masses_along(zip(points, e0, e1), unit)]


def floor_cell_masses(e: list[arb]) -> list[arb]:
    """Doubled masses of the floor map onto the points: cell [x_i, x_{i+1}) -> x_i, [x_last, inf) -> x_last.

    With e = e0 these are P-masses, with e = e1 the masses under the shifted law (dQ_1/dP_1 = Y).
    """
    return [e[i] - e[i + 1] for i in range(len(e) - 1)] + [e[-1]]
