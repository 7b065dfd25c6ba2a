"""Read a jax_privacy batch-selection strategy as a sigmacert run (extra `jax`; docs/integrations.md).

jax_privacy's `batch_selection.BallsInBinsSampling(iterations, cycle_length)` gives each example one
bin j in [0, cycle_length), drawn uniformly and independently, and puts it in every round i with
i = j (mod cycle_length): sigmacert's fixed-bins scheme with M = cycle_length bins and
E = ceil(iterations / M) rounds per bin (a bin seen fewer times is a sub-run: data processing).
Other strategies (Poisson, cyclic Poisson, b-min-sep, fixed batches) are different mechanisms and
are refused rather than guessed at.
"""
from __future__ import annotations

from dataclasses import dataclass

from certifier.errors import ParameterError
from certifier.numerics.schemes import FIXED_BINS, epochs_for_iterations


@dataclass(frozen=True)
class StrategyRun:
    """The run a strategy describes: scheme, M, E and the iterations it was given."""
    scheme: str
    steps: int
    epochs: int
    iterations: int


def _balls_in_bins_class():
    try:
        from jax_privacy.batch_selection import BallsInBinsSampling
    except ImportError as err:
        raise ParameterError("reading a jax_privacy strategy needs the extra: pip install 'sigmacert[jax]' "
                             f"({err})") from None
    return BallsInBinsSampling


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"BallsInBinsSampling.{name} must be a positive integer, got {value!r}")
    return value


def strategy_run(strategy) -> StrategyRun:
    """The fixed-bins run of a jax_privacy BallsInBinsSampling; ParameterError for anything else."""
    if not isinstance(strategy, _balls_in_bins_class()):
        raise ParameterError(f"sigmacert certifies jax_privacy's BallsInBinsSampling (fixed bins); "
                             f"{type(strategy).__name__} is a different sampling mechanism")
    steps = _count("cycle_length", strategy.cycle_length)
    iterations = _count("iterations", strategy.iterations)
    return StrategyRun(FIXED_BINS, steps, epochs_for_iterations(iterations, steps), iterations)
