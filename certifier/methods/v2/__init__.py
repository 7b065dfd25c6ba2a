"""Method v2 (docs/method-v2.md): the multiscale lattice with moves, its upper bound (certifier.bounds.upper_v2,
stages_v2 for a run in stages) and lower bound (certifier.bounds.lower_v2, stages_lower); its planner (floats
only): plan (the grid, its loss model with the calibrated k_scale and its cost model)."""
from __future__ import annotations

from certifier.bounds import lower_v2, upper_v2
from certifier.methods.base import BOTH, LOWER, UPPER, BoundMethod

UPPER_V2 = BoundMethod(
    upper_v2.METHOD_NAME, upper_v2.METHOD_VERSION, UPPER, 3, BOTH, upper_v2.UpperV2.from_json,
    lambda m, c: m.to_json(), lambda m, c: m.validate(),
    lambda c, s, m, progress=None: upper_v2.rounding_bound_v2(*c.pair(), c.t2_at(s), m, progress=progress))
LOWER_V2 = BoundMethod(
    lower_v2.METHOD_NAME, lower_v2.METHOD_VERSION, LOWER, 3, BOTH, lower_v2.method_from_json,
    lambda m, c: lower_v2.method_json(m), lambda m, c: m.validate(),
    # a kind pays e^eps per deleted P-mass: delete by the replay's rule (the tight value the replay accepts)
    lambda c, s, m, progress=None: lower_v2.lower_bound_v2(*c.pair(), c.t2_at(s), m, progress=progress,
                                                           replay_trims=bool(c.kind)))
