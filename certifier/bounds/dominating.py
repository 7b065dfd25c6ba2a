"""The certified dominating pair of a rounded law of Lambda, as float PLD masses that keep dominance.

A RoundedLaw (certifier.bounds.privacy) gives P'(k) = b_k 2^-F and Q'(k) = b_k e^{k eta} 2^-F at
Lambda = e^{k eta}, the masses Lemma C.5 left (lower bounds). With the missing masses at loss +inf,

    delta_{Q'||P'}(eps) = 1 - sum_k b_k min{e^{k eta}, e^eps} 2^-F  >= delta_{Q||P}(eps)
    delta_{P'||Q'}(eps) = 1 - sum_k b_k min{1, e^{eps + k eta}} 2^-F  >= delta_{P||Q}(eps)

for every eps (min{Lambda, e^eps} and min{1, e^eps Lambda} are concave: Lemma C.5 only lowers
their expectations). As PLDs: under Q', loss ln(Q'/P') = k eta with mass Q'(k); under P', loss
ln(P'/Q') = -k eta with mass P'(k). A hockey stick is delta(eps) = 1 - sum_L p_L min{1, e^{eps - L}}
(+inf mass included), non-increasing in each p_L and non-decreasing in each loss L, so the float
export rounds every probability DOWN (the shortfall joins the +inf mass, computed exactly) and
every loss UP onto the grid i * interval (i = ceil(loss / interval), exact rationals). The exported
pmf's exact hockey sticks are then >= the certified bounds, for every eps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from flint import arb, fmpq

from certifier.bounds.fixedpoint import arb_exact, working_prec
from certifier.bounds.privacy import RoundedLaw
from certifier.errors import ParameterError


@dataclass(frozen=True)
class DominatingPmf:
    """Losses i * interval (i an int key) with float masses, and the mass at loss +inf."""
    probs: dict[int, float]
    infinity_mass: float
    interval: float


def _float_down(x: arb) -> float:
    """The largest float <= the lower end of x (0.0 below the smallest positive double)."""
    lo = x.lower()
    f = float(lo)
    while f > 0.0 and arb(f) > lo:
        f = math.nextafter(f, 0.0)
    return max(f, 0.0)


def _float_up(q: fmpq) -> float:
    f = float(q)
    while fmpq(*f.as_integer_ratio()) < q:
        f = math.nextafter(f, math.inf)
    return f


def _grid_up(loss: fmpq, interval: fmpq) -> int:
    """ceil(loss / interval): the grid index whose loss is >= the exact loss."""
    return int((loss / interval).ceil())


def _assemble(cells: dict[int, list[arb]], interval: float) -> DominatingPmf:
    probs: dict[int, float] = {}
    total = fmpq(0)
    for i in sorted(cells):
        f = _float_down(sum(cells[i], arb(0)))
        if f > 0.0:
            probs[i] = f
            total += fmpq(*f.as_integer_ratio())
    return DominatingPmf(probs, _float_up(max(fmpq(0), 1 - total)), interval)


def dominating_pmfs(law: RoundedLaw, interval: float = 1e-4, prec: int = 128) -> tuple[DominatingPmf, DominatingPmf]:
    """(Q'||P' with losses k eta, P'||Q' with losses -k eta), each rounded to keep dominance."""
    if not (isinstance(interval, float) and math.isfinite(interval) and interval > 0.0):
        raise ParameterError(f"the loss interval must be a positive float, got {interval!r}")
    dq = fmpq(*interval.as_integer_ratio())  # the exact double dp_accounting multiplies by
    qp: dict[int, list[arb]] = {}
    pq: dict[int, list[arb]] = {}
    with working_prec(max(prec, 128)):
        eta = arb_exact(law.eta)
        unit = arb(2) ** (-law.F)
        for j, n in enumerate(law.masses):
            if n <= 0:
                continue
            k = law.off + j
            p = arb(n) * unit
            qp.setdefault(_grid_up(law.eta * k, dq), []).append(p * (eta * k).exp())
            pq.setdefault(_grid_up(-law.eta * k, dq), []).append(p)
        return _assemble(qp, interval), _assemble(pq, interval)


def hockey_stick(pmf: DominatingPmf, eps: fmpq, prec: int = 128) -> arb:
    """A ball containing the exported pmf's exact delta(eps) = inf + sum_{L > eps} p_L (1 - e^{eps - L})."""
    with working_prec(max(prec, 128)):
        dq = fmpq(*pmf.interval.as_integer_ratio())
        out = arb_exact(fmpq(*pmf.infinity_mass.as_integer_ratio()))
        e = arb_exact(eps)
        for i, p in pmf.probs.items():
            loss = dq * i
            if loss > eps:
                out += arb_exact(fmpq(*p.as_integer_ratio())) * (1 - (e - arb_exact(loss)).exp())
        return out
