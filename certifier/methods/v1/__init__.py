"""Method v1 (Appendix C.5 as in the paper): the uniform lattice, its upper bound (certifier.bounds.upper_v1) and
lower bound (certifier.bounds.lower_v1); its planners (floats only): plan (the grid and its loss and cost
models), band (the banded grid, docs/method-v2.md §8) and two_scale_plan (two-scale partial sums, §9)."""
from __future__ import annotations

from certifier.bounds import lower_v1, upper_v1
from certifier.methods.base import BOTH, LOWER, UPPER, BoundMethod

# method v1 on the claim's pair (M, E of step (iv), t^2): fixed bins only for a target kind (format v4)
UPPER_V1 = BoundMethod(
    upper_v1.METHOD_NAME, upper_v1.METHOD_VERSION, UPPER, 1, BOTH, upper_v1.UpperV1.from_json,
    lambda m, c: m.to_json(c.steps), lambda m, c: m.validate(c.steps),
    lambda c, s, m, progress=None: upper_v1.rounding_bound(*c.pair(), s, m, progress=progress, t2=c.t2_at(s)))
LOWER_V1 = BoundMethod(
    lower_v1.METHOD_NAME, lower_v1.METHOD_VERSION, LOWER, 2, BOTH, lower_v1.LowerV1.from_json,
    lambda m, c: m.to_json(c.steps), lambda m, c: m.validate(c.steps),
    lambda c, s, m, progress=None: lower_v1.lower_bound(*c.pair(), s, m, progress=progress, t2=c.t2_at(s)))
