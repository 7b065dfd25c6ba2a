"""The hockey-stick divergences of one or more epochs in the far tail, where the tilted line and the direct sum keep
only a few digits: the big-step routes, for many steps.

At E = 1 the tilted line's integrand decays slowly in u (one epoch has no power E to damp it) and the direct sum
on the one-epoch density (certifier.numerics.density_moments) stops at the density's round-off, about 1e-14: at
delta = 1e-12 the primary route's estimate is 0.2 - 15 % of the value (measured at M = 2 ... 1000, eps 0.5 - 4).
At E = 2 with many steps the saddle point lies beyond (T1)/(T2)'s range c <= 2.9 and the one-epoch density is not
formed (its heavy tail makes the grid long): the tilted line at c = 2.9 is e^{phi(2.9) - phi(c*)} above delta and
its u-cut and round-off are 10 % - 10^6 of delta at delta = 1e-12 (M >= 10^3). Where the route's estimate exceeds
SWITCH of the value it asks this module, which keeps the better of the two estimates:

  * delta_{Q||P}: the upper tail carried by one big step in closed form, certifier.numerics.one_jump (E = 1,
    relative errors 1e-7 - 1e-3 at delta = 1e-12, docs/exact.md §9) and certifier.numerics.few_epochs_jump (E >= 2,
    about 2e-3 where one big step carries the tail: the terms with two big steps are left to the estimate);
  * delta_{P||Q}: the interval [0, B], B a Chernoff bound on the lower tail, which big steps only lift
    (one_jump.delta_pq_bound on the Laplace transform at E = 1, certifier.numerics.negative_moments at E >= 2);
  * the TPR at E = 1: one_jump's likelihood-ratio test.

Each is tried only where its level lies beyond the bulk of L_M (checked in closed form before any transform is
formed). One epoch of fewer steps (3 <= M < MANY_STEPS), where the big step is not alone, takes both divergences
from the positive lattice of certifier.numerics.few_steps_tails instead (relative digits, 1e-4 of delta or better).
Floating point, not a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from certifier.errors import NumericsUnreliableError
from certifier.numerics import few_epochs_jump, few_steps_tails, negative_moments, one_jump
from certifier.numerics.profile import Value

SWITCH = 5e-3       # a tail whose estimate exceeds this share of it is tried on the big-step routes
MANY_STEPS = 30     # from this many steps (fewer: the big step is not alone; its small-step band is long)
FEW_STEPS = 3       # one epoch from this many steps to MANY_STEPS: the few-steps lattice (M = 2: its one integral)
EPOCHS = range(1, few_epochs_jump.EPOCHS.stop)   # the epochs served


@dataclass(frozen=True)
class BigStepTails:
    """The better tails of E in EPOCHS epochs of `steps` steps at `sigma`."""
    steps: int
    epochs: int
    sigma: float
    switch = SWITCH

    def delta(self, side: str, eps: float, bar: float = math.inf) -> Value | None:
        """delta_{Q||P}(eps) (side "qp") on the one-big-step route, delta_{P||Q}(eps) ("pq") as half its Chernoff
        bound with the other half as the estimate, or None where they do not serve (a level inside the bulk of L_M);
        one epoch of few steps on the few-steps lattice (None where it would be too long). bar: the estimate the
        caller holds (few_epochs_jump declines, before its sums, where its estimate could not be below it)."""
        if self.epochs == 1 and FEW_STEPS <= self.steps < MANY_STEPS:
            t = _tried(lambda: few_steps_tails.delta(self.steps, self.sigma, eps, side))
            return None if t is None else Value(*t)
        if self.steps < MANY_STEPS or self.epochs not in EPOCHS:
            return None
        if side == "pq":
            b = _tried(lambda: one_jump.delta_pq_bound(self.steps, self.sigma, eps) if self.epochs == 1 else
                       negative_moments.delta_pq_bound(self.steps, self.sigma, self.epochs, eps))
            return None if b is None else Value(0.5 * b, 0.5 * b)
        if not one_jump.beyond_bulk(self.steps, self.sigma, eps,
                                    one_jump.KINK_SDS if self.epochs == 1 else few_epochs_jump.KINK_SDS):
            return None
        t = _tried(lambda: one_jump.delta_qp(self.steps, self.sigma, eps) if self.epochs == 1 else
                   few_epochs_jump.delta_qp(self.steps, self.sigma, self.epochs, eps, bar))
        return None if t is None else Value(t.value, t.error)

    def tpr(self, alpha: float) -> Value | None:
        """1 - T(alpha) on the one-big-step route (its likelihood-ratio test at FPR alpha; one epoch), or None."""
        if self.steps < MANY_STEPS or self.epochs != 1:
            return None
        t = _tried(lambda: one_jump.tpr(self.steps, self.sigma, alpha))
        return None if t is None else Value(t.value, t.error)


def _tried(fn):
    """fn(), or None where the route refuses or its arithmetic fails (an overflow far from the route's regime, e.g.
    sigma in the hundreds: quietly, its value or estimate then not finite)."""
    try:
        with np.errstate(all="ignore"):
            r = fn()
    except (NumericsUnreliableError, ValueError, OverflowError, FloatingPointError):
        return None
    parts = (r.value, r.error) if isinstance(r, one_jump.TailEstimate) else r if isinstance(r, tuple) else (r,)
    return r if all(math.isfinite(float(x)) for x in parts) else None
