"""What differs between a block and a run in stages when certify runs (its Shape): the checks and the sigma
(a block: the stated domain and the exact sigma with its domain refusal; stages: one shared sigma, or a sigma per
stage, one-sided), the claim at sigma, the methods' searches (certifier.methods.auto) and the predicate's format
(v1-v4; v5 for stages). `shape_of(run)` is the one place certify asks a run's shape."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flint import fmpq

from certifier.certificate import predicate as pred_
from certifier.certificate.stages import build_v5, stages_claim
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.domain import check_block, check_sigma
from certifier.errors import ParameterError
from certifier.exact_sigma import exact_sigma
from certifier.methods.auto import SEARCHES, STAGED_SEARCHES, forced_method
from certifier.params import decimal_str, parse_sigma
from certifier.resolution import round_up
from certifier.run import Run
from certifier.targets import TargetKind, of_kind


@dataclass(frozen=True)
class Shape:
    """What differs between a block and a run in stages: its checks and sigma, its claim, its searches and its
    predicate's format (v1-v4; v5 for stages)."""
    setup: Callable
    claim: Callable
    searches: tuple
    build: Callable


def block_setup(run: Run, target_kind: TargetKind, target: fmpq, sigma, named, two_sided, method, grid, say):
    """A block's checks and sigma: (sigma, sigma steps to spare, the forced search or None)."""
    # the stated domain (certifier.domain: the run's M, E and the Target's own intervals), before any computation
    if not 0 < target < 1:
        raise ParameterError(f"the {target_kind.name} target must lie strictly between 0 and 1, got "
                             f"{decimal_str(target)}")
    check_block(run.steps, run.epochs)
    stated = of_kind(target_kind.name, dict(target_kind.params), target)
    stated.check_domain(certify=True)
    probe = Claim(run.scheme, run.steps, run.epochs, sigma or fmpq(1), target, run.iterations)
    forced = forced_method(method, run.scheme)
    given = sigma is not None
    if sigma is None:
        say("exact sigma", 0.0)
        sigma = exact_sigma(target_kind, probe, target)
        say("exact sigma", 1.0)
    check_sigma(probe.sigma_of_pair(float(sigma)), *probe.pair(), stated, given)
    return sigma, (0 if given or grid else 1), forced


def staged_setup(run: Run, target_kind: TargetKind, target: fmpq, sigma, named, two_sided, method, grid, say):
    """A run in stages' checks and sigma (one shared, or each stage's own: sigma None, one-sided)."""
    own = run.sigma_per_stage
    if not isinstance(target, fmpq) or not 0 < target < 1:
        raise ParameterError(f"the {target_kind.name} target must be an exact rational strictly between 0 and 1, "
                             f"got {target!r}")
    if own and sigma is not None:
        raise ParameterError("the stages carry their sigma already: give no shared sigma")
    if own and two_sided:
        raise ParameterError("a sigma per stage is certified one-sided only (no single sigma to step down for the "
                             "lower side)")
    refuse_staged_options(None, None, run.scheme, method, target_kind.name, run.iterations, tuple(grid.values()))
    forced = forced_method(method, run.scheme, STAGED_SEARCHES)
    given = sigma is not None
    if sigma is None and not own:
        say("exact sigma", 0.0)
        sigma = round_up(target_kind.exact_sigma(stages_claim(stage_tuples(run), fmpq(1), target, named), target))
    if not own and (not isinstance(sigma, fmpq) or sigma <= 0):
        raise ParameterError("sigma must be a positive exact rational")
    return sigma, (0 if given or own else 1), forced


def stage_tuples(run: Run) -> tuple[tuple, ...]:
    """((M_s, E_s), ...) or, with a sigma per stage, ((M_s, E_s, sigma_s exact), ...)."""
    return tuple((s.steps, s.epochs) if s.sigma is None else (s.steps, s.epochs, parse_sigma(s.sigma))
                 for s in run.stages)


def refuse_staged_options(steps, epochs, scheme, method, kind_name, iterations, grid) -> None:
    """For a face that accepts stages beside certify's options: a run in stages has no steps/epochs of its
    own, random allocation, method v2 and automatic grids (any target kind); anything else is a one-line
    refusal."""
    if steps is not None or epochs is not None:
        raise ParameterError("give either stages or steps and epochs, not both")
    if scheme != RANDOM_ALLOCATION or iterations is not None:
        raise ParameterError("a run in stages is certified for random allocation only (not fixed bins)")
    if method not in ("auto", "v2"):
        raise ParameterError(f"a run in stages is certified with method v2 only, not {method!r}")
    if any(g is not None for g in grid):
        raise ParameterError("a run in stages takes no user grid (h, eta, cap): its grid is planned per stage")


def block_claim(run: Run, sigma, target, named):
    """A block's claim at sigma, and the Outcome's steps and stages (M, None)."""
    return Claim(run.scheme, run.steps, run.epochs, sigma, target, run.iterations, named), run.steps, None


def staged_claim(run: Run, sigma, target, named):
    """A run in stages' claim at sigma (None: each stage's own), and the Outcome's steps and stages (None, the
    stages as [M_s, E_s(, sigma_s)])."""
    stages = stage_tuples(run)
    shown = [[s[0], s[1], *([decimal_str(s[2])] if len(s) == 3 else [])] for s in stages]
    return stages_claim(stages, sigma, target, named), None, shown


BLOCK = Shape(block_setup, block_claim, SEARCHES, pred_.build)

STAGED = Shape(staged_setup, staged_claim, STAGED_SEARCHES, build_v5)


def shape_of(run: Run) -> Shape:
    """The run's shape (the one place certify asks it)."""
    return run.pick(lambda steps, epochs, scheme: BLOCK, lambda stages: STAGED)


def run_of(claim: Claim) -> Run:
    """The run a (stated) claim names: stages at one shared sigma, or a block."""
    return Run.of_claim(claim)
