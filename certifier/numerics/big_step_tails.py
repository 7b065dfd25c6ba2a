"""One epoch's hockey-stick divergences in the far tail, where the tilted line and the direct sum keep only a
few digits: the one-big-step route, for many steps.

At E = 1 the tilted line's integrand decays slowly in u (one epoch has no power E to damp it) and the direct sum
on the one-epoch density (certifier.numerics.density_moments) stops at the density's round-off, about 1e-14: at
delta = 1e-12 the primary route's estimate is 0.2 - 15 % of the value (measured at M = 2 ... 1000, eps 0.5 - 4).
Where it exceeds SWITCH of the value the route asks this module for the better of

  * certifier.numerics.one_jump (M >= MANY_STEPS; delta_{Q||P} only): the upper tail carried by one big step in
    closed form, relative errors 1e-7 - 1e-3 at delta = 1e-12 (docs/exact.md §9);
  * the ln-L lattice moment line of route "logconv" (M <= FEW_STEPS, where it is affordable): errors 4e-4 - 3e-3
    of delta there, both directions;

and keeps whichever estimate is smaller (the route's own included). Floating point, not a certificate.
"""
from __future__ import annotations

from dataclasses import dataclass

from certifier.errors import NumericsUnreliableError
from certifier.numerics import one_jump
from certifier.numerics.profile import Value

SWITCH = 5e-3       # a one-epoch tail whose estimate exceeds this share of it is tried on the routes below
MANY_STEPS = 30     # one_jump from this many steps (fewer: the big step is not alone; its small-step band is long)


@dataclass(frozen=True)
class OneEpochTails:
    """The better tails of one epoch of `steps` steps at `sigma`."""
    steps: int
    sigma: float
    switch = SWITCH

    def delta(self, side: str, eps: float) -> Value | None:
        """delta_{Q||P}(eps) (side "qp") on the one-big-step route, delta_{P||Q}(eps) ("pq") as half its Chernoff
        bound with the other half as the estimate (one_jump.delta_pq_bound: the lower tail, which big steps only
        lift), or None where they do not serve (few steps, a level inside the bulk of L_M: checked before any
        transform is formed)."""
        if self.steps < MANY_STEPS:
            return None
        if side == "pq":
            b = _tried(lambda: one_jump.delta_pq_bound(self.steps, self.sigma, eps))
            return None if b is None else Value(0.5 * b, 0.5 * b)
        if not one_jump.beyond_bulk(self.steps, self.sigma, eps):
            return None
        t = _tried(lambda: one_jump.delta_qp(self.steps, self.sigma, eps))
        return None if t is None else Value(t.value, t.error)

    def tpr(self, alpha: float) -> Value | None:
        """1 - T(alpha) on the one-big-step route (its likelihood-ratio test at FPR alpha), or None."""
        if self.steps < MANY_STEPS:
            return None
        t = _tried(lambda: one_jump.tpr(self.steps, self.sigma, alpha))
        return None if t is None else Value(t.value, t.error)


def _tried(fn):
    """fn(), or None where the route refuses or its arithmetic fails."""
    try:
        return fn()
    except (NumericsUnreliableError, ValueError, OverflowError, FloatingPointError):
        return None
