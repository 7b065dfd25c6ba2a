"""A run of DP-SGD as one value: a tuple of stages (M_s, E_s, sigma_s or None), in the spirit of
dp_accounting's composed events. A block (M steps per epoch, E epochs, one scheme) is a run of one stage;
a run given in stages (format v5, random allocation only) keeps that form even with one stage.

Every exact-sigma and numerical-value question is asked of a (run, target) pair: `exact_sigma` below
and the target's own `search` / `value` (certifier.targets).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import ClassVar

from certifier.claim import RANDOM_ALLOCATION
from certifier.errors import ParameterError
from certifier.numerics.stages import Stage, parse_stage_list
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.numerics.targets import exact_privacy_scheme
from certifier.params import parse_sigma
from certifier.resolution import AUTO, issued


@dataclass(frozen=True)
class Run:
    """stages: the run's Stage values in order; scheme and iterations (fixed bins) for a block; staged:
    the run was given in stages (its certificate is format v5, its numerics the product of the stages).
    Run(...) makes a Block, Run(..., staged=True) a Staged run: what differs between them is theirs."""
    stages: tuple[Stage, ...]
    scheme: str = RANDOM_ALLOCATION
    iterations: int | None = None
    staged: bool = False

    def __new__(cls, *args, **kwargs):
        if cls is Run:                           # the one place a run's shape is read
            cls = Staged if kwargs.get("staged", args[3] if len(args) > 3 else False) else Block
        return object.__new__(cls)

    @classmethod
    def block(cls, steps: int, epochs: int, scheme: str = RANDOM_ALLOCATION, iterations: int | None = None,
              sigma=None) -> Run:
        """M steps per epoch for E epochs under `scheme` (one stage), at `sigma` (exact decimal) if given."""
        return Run((Stage(steps, epochs, sigma),), scheme, iterations)

    @classmethod
    def composed(cls, spec, sigma_per_stage: bool | None = None) -> Run:
        """A run in stages: '100x5,400x5', '100x5@1.2,...', Stage values or (M, E[, sigma]) tuples."""
        return Run(parse_stage_list(spec, sigma_per_stage), staged=True)

    @classmethod
    def of_claim(cls, claim) -> Run:
        """The run a claim names, its sigmas left out: its stages (M_s, E_s), or its block (scheme, iterations)."""
        if claim.stages:
            return Run.composed([s[:2] for s in claim.stages])
        return Run.block(claim.steps, claim.epochs, claim.scheme, claim.iterations)

    @property
    def steps(self) -> int:
        return self.stages[0].steps

    @property
    def epochs(self) -> int:
        """E of a block; the total number of epochs of a run in stages."""
        return sum(s.epochs for s in self.stages)

    def at(self, sigma) -> Run:
        """The run with every stage at `sigma` (exact decimal text or number)."""
        return replace(self, stages=tuple(s.with_sigma(sigma) for s in self.stages))

    def sigma_float(self) -> float:
        if self.sigma is None:
            raise ParameterError("the run has no single sigma")
        return float(parse_sigma(self.sigma))

    def with_sigma(self, sigma, flag: str = "sigma=") -> Run:
        """The run at `sigma` (exact decimal text) shared by its stages, or at its stages' own sigmas when `sigma`
        is None; ParameterError in one line when both or neither are given (flag: the face's name of sigma)."""
        self.refuse_shared(sigma, flag)
        if sigma is not None:
            return self.at(sigma)
        if self.stages[0].sigma is None:
            raise ParameterError(f"give {flag}" + self.MISSING_SIGMA)
        return self

    def to_json(self) -> dict:
        """The run in a face's JSON: steps, epochs, scheme (iterations when given) of a block; a run in stages its
        stage list (a stage's sigma only when it has its own) and scheme."""
        def block(m, e, scheme):
            return {"steps": m, "epochs": e, "scheme": scheme,
                    **({} if self.iterations is None else {"iterations": self.iterations})}
        return self.pick(block, lambda stages: {"stages": [
            {"steps": s.steps, "epochs": s.epochs, **({} if s.sigma is None else {"sigma": s.sigma})} for s in stages],
            "scheme": self.scheme})


@dataclass(frozen=True)
class Block(Run):
    """M steps per epoch for E epochs under one scheme (one stage): the scheme's pair."""
    sigma_per_stage: ClassVar[bool] = False
    one_sided_reason: ClassVar[str | None] = None
    MISSING_SIGMA: ClassVar[str] = ""

    @property
    def sigma(self) -> str | None:
        """The one sigma of the block (exact decimal text), or None."""
        return self.stages[0].sigma

    def pick(self, block, staged):
        """The run's shape decides its numerics, here only: block(steps, epochs, scheme) for a block (the scheme's
        pair), staged(stages) for a run in stages (the product of the stages' pairs)."""
        return block(self.steps, self.epochs, self.scheme)

    def where(self, sigma: str | None) -> str:
        """Where a certify call looked, in words (a refusal's tail): the sigma and the run."""
        return f"sigma {sigma} (M={self.steps}, E={self.epochs}, {self.scheme})"

    def stages_for_certificate(self) -> tuple:
        """The API Certificate's `stages`: () for a block."""
        return ()

    def __str__(self) -> str:
        return f"M={self.steps} E={self.epochs} ({self.scheme})"

    def refuse_shared(self, sigma, flag: str = "sigma=") -> None:
        """A block's sigma is never given twice."""


@dataclass(frozen=True)
class Staged(Run):
    """A run given in stages (format v5, random allocation only), even with one stage: the product of the stages'
    pairs, at one shared sigma or at each stage's own."""
    MISSING_SIGMA: ClassVar[str] = " or a sigma per stage (100x5@1.2,400x5@1.5)"

    @property
    def sigma_per_stage(self) -> bool:
        return self.stages[0].sigma is not None

    @property
    def sigma(self) -> str | None:
        """A run in stages has no one sigma of its own (its stages carry it)."""
        return None

    def pick(self, block, staged):
        """staged(stages): the product of the stages' pairs (Run.pick)."""
        return staged(self.stages)

    def where(self, sigma: str | None) -> str:
        at = "each stage's sigma" if self.sigma_per_stage else f"sigma {sigma}"
        return f"{at} (stages {','.join(map(str, self.stages))})"

    def stages_for_certificate(self) -> tuple:
        """The API Certificate's `stages`: ((M_s, E_s), ...) or ((M_s, E_s, sigma_s), ...)."""
        return tuple((s.steps, s.epochs, *([Decimal(s.sigma)] if self.sigma_per_stage else [])) for s in self.stages)

    def __str__(self) -> str:
        return ",".join(map(str, self.stages))

    @property
    def one_sided_reason(self) -> str | None:
        """Why this run's certificate is one-sided whatever is asked (a sigma per stage), or None."""
        return "a sigma per stage: no single sigma to step down" if self.sigma_per_stage else None

    def refuse_shared(self, sigma, flag: str = "sigma=") -> None:
        """ParameterError in one line when a sigma is given beside the stages' own (flag: the face's name of it)."""
        if self.sigma_per_stage and sigma is not None:
            raise ParameterError(f"the stages carry their sigma already: drop {flag}")

def exact_sigma(run: Run, target, resolution: str = "auto") -> str:
    """The least sigma on the grid meeting the target for the run (numerical), as a decimal. "auto":
    res(sigma) of certifier.resolution (1e-6 below 10, six significant digits above), what certify issues."""
    if resolution == AUTO:
        return issued(target.search(run, AUTO))
    return target.search(run, resolution)


def privacy(run: Run, *, deltas=(), epsilons=(), fprs=(), check: bool = True):
    """eps at each delta, delta at each eps and the TPR at each FPR (floats) of the run's pair at its sigma(s),
    with the exact TV (certifier.numerics.targets / stages_profile; numerical, with error estimates)."""
    kw = {"deltas": deltas, "epsilons": epsilons, "fprs": fprs, "check": check}
    return run.pick(lambda m, e, scheme: exact_privacy_scheme(m, e, run.sigma_float(), scheme, **kw),
                    lambda stages: exact_privacy_product(stages, **kw))
