"""A run of DP-SGD as one value: a tuple of stages (M_s, E_s, sigma_s or None), in the spirit of
dp_accounting's composed events. A block (M steps per epoch, E epochs, one scheme) is a run of one stage;
a run given in stages (format v5, random allocation only) keeps that form even with one stage.

Every exact-sigma and numerical-value question is asked of a (run, target) pair: `exact_sigma` below
and the target's own `search` / `value` (certifier.targets).

Which form a run was given in (a stage list, or a block's arguments) is read in one place, `given_form`: by every
face from its arguments, and by every reader of a claim from its `stages`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import ClassVar

from certifier.claim import RANDOM_ALLOCATION
from certifier.errors import ParameterError
from certifier.numerics.stages import MAX_STAGES, Stage, parse_stage_list
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.numerics.targets import exact_privacy_scheme
from certifier.params import parse_sigma
from certifier.resolution import AUTO, issued

OWN_SIGMAS_MISSING = " or a sigma per stage (100x5@1.2,400x5@1.5)"   # a face's "give sigma" refusal, its tail


class BlockForm:
    """A run given as a block's arguments (steps, epochs or iterations, scheme): no stage list."""

    def pick(self, block, staged):
        """block(): the face's reading of a block."""
        return block()

    def shape(self, block, staged):
        """The face's value for a block."""
        return block


@dataclass(frozen=True)
class StagedForm:
    """A run given as a stage list, in any spelling its face takes (text, pairs, Stage values, a claim's objects)."""
    stages: object

    def pick(self, block, staged):
        """staged(stages): the face's reading of the stage list as given."""
        return staged(self.stages)

    def shape(self, block, staged):
        """The face's value for a run in stages."""
        return staged


BLOCK_FORM = BlockForm()


def given_form(stages, beside=(), mixed: str = "") -> BlockForm | StagedForm:
    """The form a run was given in, the one place it is read: a stage list (`stages` not None) or a block. beside:
    the block's arguments as given, refused beside a stage list with `mixed` (the face's one line)."""
    if stages is None:
        return BLOCK_FORM
    if any(x is not None for x in beside):
        raise ParameterError(mixed)
    return StagedForm(stages)


@dataclass(frozen=True)
class Run:
    """stages: the run's Stage values in order; scheme and iterations (fixed bins) for a block. Made by Run.block
    (a Block) or Run.composed (a run in stages: SharedSigma or OwnSigmas): what differs between them is theirs.
    staged: the run was given in stages (its certificate is format v5, its numerics the product of the stages)."""
    stages: tuple[Stage, ...]
    scheme: str = RANDOM_ALLOCATION
    iterations: int | None = None

    @classmethod
    def block(cls, steps: int, epochs: int, scheme: str = RANDOM_ALLOCATION, iterations: int | None = None,
              sigma=None) -> Run:
        """M steps per epoch for E epochs under `scheme` (one stage), at `sigma` (exact decimal) if given."""
        return Block((Stage(steps, epochs, sigma),), scheme, iterations)

    @classmethod
    def composed(cls, spec, sigma_per_stage: bool | None = None) -> Run:
        """A run in stages: '100x5,400x5', '100x5@1.2,...', Stage values or (M, E[, sigma]) tuples."""
        return Staged.of(parse_stage_list(spec, sigma_per_stage))

    @classmethod
    def in_sequence(cls, blocks, too_many=None) -> Run:
        """Blocks (M, E[, sigma]) of random allocation one after the other: the block when one, else the run in stages.
        too_many(count): the caller's exception for more than MAX_STAGES blocks, raised before any parsing."""
        if too_many is not None and len(blocks) > MAX_STAGES:
            raise too_many(len(blocks))
        parsed = parse_stage_list(blocks)
        return Block(parsed) if len(blocks) == 1 else Staged.of(parsed)

    @classmethod
    def of_claim(cls, claim) -> Run:
        """The run a claim names, its sigmas left out: its stages (M_s, E_s), or its block (scheme, iterations)."""
        return given_form(claim.stages or None).pick(       # a block's claim has no stages: ()
            lambda: Run.block(claim.steps, claim.epochs, claim.scheme, claim.iterations),
            lambda listed: Run.composed([s[:2] for s in listed]))

    @property
    def steps(self) -> int:
        return self.stages[0].steps

    @property
    def epochs(self) -> int:
        """E of a block; the total number of epochs of a run in stages."""
        return sum(s.epochs for s in self.stages)

    def at(self, sigma) -> Run:
        """The run with every stage at `sigma` (exact decimal text or number)."""
        return self.remade(tuple(s.with_sigma(sigma) for s in self.stages))

    def sigma_float(self) -> float:
        if self.sigma is None:
            raise ParameterError("the run has no single sigma")
        return float(parse_sigma(self.sigma))

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
    staged: ClassVar[bool] = False
    sigma_per_stage: ClassVar[bool] = False
    one_sided_reason: ClassVar[str | None] = None

    def remade(self, stages: tuple) -> Run:
        """The block with these stages (its one stage at another sigma)."""
        return replace(self, stages=stages)

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

    def with_sigma(self, sigma, flag: str = "sigma=", missing: str = OWN_SIGMAS_MISSING) -> Run:
        """The block at `sigma` (exact decimal text), or at its own sigma when `sigma` is None; ParameterError in one
        line when neither is given (flag: the face's name of sigma)."""
        if sigma is not None:
            return self.at(sigma)
        if self.sigma is None:
            raise ParameterError(f"give {flag}")
        return self


@dataclass(frozen=True)
class Staged(Run):
    """A run given in stages (format v5, random allocation only), even with one stage: the product of the stages'
    pairs, at one shared sigma (SharedSigma) or at each stage's own (OwnSigmas)."""
    staged: ClassVar[bool] = True

    @staticmethod
    def of(stages: tuple[Stage, ...]) -> Staged:
        """The run in stages of these parsed stages (all with a sigma or none: parse_stage_list)."""
        return OwnSigmas(stages) if stages[0].sigma is not None else SharedSigma(stages)

    def remade(self, stages: tuple) -> Run:
        """The run in stages of these stages (a sigma on every stage makes it OwnSigmas)."""
        return Staged.of(stages)

    @property
    def sigma(self) -> str | None:
        """A run in stages has no one sigma of its own (its stages carry it)."""
        return None

    def pick(self, block, staged):
        """staged(stages): the product of the stages' pairs (Run.pick)."""
        return staged(self.stages)

    def __str__(self) -> str:
        return ",".join(map(str, self.stages))


@dataclass(frozen=True)
class SharedSigma(Staged):
    """A run in stages at one sigma shared by its stages (given beside them, or searched)."""
    sigma_per_stage: ClassVar[bool] = False
    one_sided_reason: ClassVar[str | None] = None

    def where(self, sigma: str | None) -> str:
        """Where a certify call looked, in words: the shared sigma and the stages."""
        return f"sigma {sigma} (stages {self})"

    def stages_for_certificate(self) -> tuple:
        """The API Certificate's `stages`: ((M_s, E_s), ...)."""
        return tuple((s.steps, s.epochs) for s in self.stages)

    def refuse_shared(self, sigma, flag: str = "sigma=") -> None:
        """A shared sigma beside stages without their own is what the run takes."""

    def with_sigma(self, sigma, flag: str = "sigma=", missing: str = OWN_SIGMAS_MISSING) -> Run:
        """The run at `sigma` shared by its stages; ParameterError in one line without one (flag: the face's name of
        sigma, missing: its words for the stages' own)."""
        if sigma is None:
            raise ParameterError(f"give {flag}" + missing)
        return self.at(sigma)


@dataclass(frozen=True)
class OwnSigmas(Staged):
    """A run in stages each at its own sigma: one-sided, no single sigma to step down."""
    sigma_per_stage: ClassVar[bool] = True
    one_sided_reason: ClassVar[str | None] = "a sigma per stage: no single sigma to step down"

    def where(self, sigma: str | None) -> str:
        """Where a certify call looked, in words: each stage's sigma."""
        return f"each stage's sigma (stages {self})"

    def stages_for_certificate(self) -> tuple:
        """The API Certificate's `stages`: ((M_s, E_s, sigma_s), ...)."""
        return tuple((s.steps, s.epochs, Decimal(s.sigma)) for s in self.stages)

    def refuse_shared(self, sigma, flag: str = "sigma=") -> None:
        """ParameterError in one line when a sigma is given beside the stages' own (flag: the face's name of it)."""
        if sigma is not None:
            raise ParameterError(f"the stages carry their sigma already: drop {flag}")

    def with_sigma(self, sigma, flag: str = "sigma=", missing: str = OWN_SIGMAS_MISSING) -> Run:
        """The run at its stages' own sigmas; ParameterError in one line when a shared sigma is given too."""
        self.refuse_shared(sigma, flag)
        return self


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
