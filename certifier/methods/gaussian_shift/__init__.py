"""M = 1: the pair is a Gaussian shift, certified in closed form on both sides (certifier.bounds.gaussian_shift);
no grid to plan."""
from __future__ import annotations

from certifier.bounds import gaussian_shift as gs
from certifier.methods.base import BOTH, LOWER, UPPER, BoundMethod

GAUSSIAN_SHIFT_UPPER = BoundMethod(
    gs.METHOD_NAME, gs.METHOD_VERSION, UPPER, 3, BOTH, gs.GaussianShift.from_json,
    lambda m, c: m.to_json(), lambda m, c: m.validate(),
    lambda c, s, m, progress=None: gs.upper(*c.pair(), c.t2_at(s), m))
GAUSSIAN_SHIFT_LOWER = BoundMethod(
    gs.METHOD_NAME, gs.METHOD_VERSION, LOWER, 3, BOTH, gs.GaussianShift.from_json,
    lambda m, c: m.to_json(), lambda m, c: m.validate(),
    lambda c, s, m, progress=None: gs.lower(*c.pair(), c.t2_at(s), m))
