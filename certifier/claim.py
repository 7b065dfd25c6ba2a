"""The claim a certificate makes, and the Gaussian pair it reduces to (Section 2; docs/method-v2.md §3).

Two sampling schemes:
  * random-allocation (Algorithm 1): every epoch re-draws each record's step; the pair is
    (P_M^E, Q_M^E) at t = 1/sigma (Appendix B.5).
  * fixed-bins (jax_privacy's BallsInBinsSampling): each record keeps ONE bin for the whole run and
    is seen in E rounds; the per-bin sums of the E noisy outputs are sufficient, so the pair is the
    one-epoch pair at sigma/sqrt(E): (P_M, Q_M) with t^2 = E/sigma^2. With `iterations` not a
    multiple of M, bins are seen E or E - 1 times, E = ceil(iterations/M); dropping observations is
    data processing, so the certificate for E covers the run.
Everything downstream is parametrised by the exact rational t^2, never by a rounded sqrt(E).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

from flint import fmpq

from certifier.errors import ParameterError
from certifier.params import decimal_str

RANDOM_ALLOCATION, FIXED_BINS = "random-allocation", "fixed-bins"
SCHEMES = (RANDOM_ALLOCATION, FIXED_BINS)
STATEMENT_TEXT = ("TV(P_M^E, Q_M^E) <= target, so every membership-inference test has accuracy "
                  "<= 1/2 + target/2")
FIXED_BINS_TEXT = ("TV(P_M, Q_M) at sigma/sqrt(E) <= target, where E = ceil(iterations/M) rounds per bin "
                   "(bins seen fewer times are covered by data processing), so every membership-inference "
                   "test has accuracy <= 1/2 + target/2")


@dataclass(frozen=True)
class Scheme:
    """A sampling scheme: the Gaussian pair its claim reduces to and how the claim is written."""
    name: str
    statement: str
    least_format: int                         # the least certificate format that can name it
    rounds: Callable[[int], int]              # E -> the pair's epochs (random allocation: E; fixed bins: 1)
    t2_factor: Callable[[int], int]           # E -> the factor of 1/sigma^2 in the pair's t^2
    extra_json: Callable[["Claim"], dict]     # format v3 fields beyond `scheme`


SCHEME_RULES = {s.name: s for s in (
    Scheme(RANDOM_ALLOCATION, STATEMENT_TEXT, 1, lambda E: E, lambda E: 1, lambda c: {}),
    Scheme(FIXED_BINS, FIXED_BINS_TEXT, 3, lambda E: 1, lambda E: E, lambda c: {
        "iterations": c.iterations if c.iterations is not None else c.steps * c.epochs}),
)}


@dataclass(frozen=True)
class Claim:
    """What a certificate states: the mechanism (scheme, M, E, sigma) and the TV target lambda."""
    scheme: str
    steps: int
    epochs: int
    sigma: fmpq
    target: fmpq
    iterations: int | None = None    # fixed-bins only: the run's number of rounds
    kind: tuple = ()                 # a target kind other than tv: (("name", "dp"), ("epsilon", "1")) (format v4)
    # a block has no stages; a claim about a run in stages is a certifier.certificate.stages.StagesClaim (format v5)
    stages: ClassVar[tuple] = ()

    def __post_init__(self):
        if self.scheme not in SCHEME_RULES:
            raise ParameterError(f"scheme must be one of {', '.join(SCHEMES)}, got {self.scheme!r}")
        if self.scheme == FIXED_BINS and self.iterations is not None:
            if -(-self.iterations // self.steps) != self.epochs:
                raise ParameterError("fixed-bins: epochs must be ceil(iterations / steps)")

    @classmethod
    def fixed_bins(cls, steps: int, iterations: int, sigma: fmpq, target: fmpq) -> "Claim":
        """A fixed-bins claim for a run of `iterations` rounds over `steps` bins (E = ceil(iterations/M))."""
        return cls(FIXED_BINS, steps, -(-iterations // steps), sigma, target, iterations)

    def pair(self) -> tuple[int, int]:
        """(M, E) of the Gaussian pair the certificate bounds."""
        return self.steps, SCHEME_RULES[self.scheme].rounds(self.epochs)

    def t2_at(self, sigma: fmpq) -> fmpq:
        """t^2 of the pair at noise multiplier sigma: 1/sigma^2, or E/sigma^2 for fixed bins."""
        return SCHEME_RULES[self.scheme].t2_factor(self.epochs) / (sigma * sigma)

    def sigma_of_pair(self, sigma: float) -> float:
        """The pair's noise multiplier as a float (numerics only): sigma or sigma/sqrt(E)."""
        factor = SCHEME_RULES[self.scheme].t2_factor(self.epochs)
        return sigma if factor == 1 else sigma / factor ** 0.5

    def to_json(self, version: int) -> dict:
        """The `claim` object of a block (docs/certificate.md §3; version 3 adds scheme and, for fixed bins,
        iterations); a claim in stages writes its own (StagesClaim.to_json, format v5)."""
        rule = SCHEME_RULES[self.scheme]
        if version < rule.least_format:
            raise ParameterError(f"a {self.scheme} claim needs format v{rule.least_format}")
        obj = {"mechanism": "dp-sgd/" + self.scheme, "adjacency": "zero-out", "steps": self.steps,
               "epochs": self.epochs, "sigma": decimal_str(self.sigma), "target": decimal_str(self.target),
               "statement": rule.statement}
        if version >= 3:                          # format v3 names the scheme (docs/method-v2.md §3)
            obj.update({"scheme": self.scheme, **rule.extra_json(self)})
        if version >= 4:                          # format v4 names the target kind and says what it certifies
            named = dict(self.kind) or {"name": "tv"}
            obj.update({"kind": named, "statement": kind_statement(named, self.scheme) or rule.statement})
        return obj


def t2_runs(claim: Claim, sigma) -> list[tuple[int, int, fmpq]]:
    """(M_s, E_s, t_s^2 = 1/sigma_s^2) exact: each stage's own sigma, else `sigma` shared (the bounds)."""
    return [(s[0], s[1], 1 / (x * x)) for s in claim.stages for x in [s[2] if len(s) == 3 else sigma]]


# format v4: what a dp / tpr claim certifies, for the scheme's pair (docs/certificate.md)
PAIR_TEXT = {RANDOM_ALLOCATION: "the pair (P_M^E, Q_M^E)",
             FIXED_BINS: "the pair (P_M, Q_M) at sigma/sqrt(E), E = ceil(iterations/M) rounds per bin"}
KIND_TEXT = {
    "dp": ("max(delta_Q||P({epsilon}), delta_P||Q({epsilon})) <= target for {pair}, so the run is "
           "({epsilon}, target)-DP under zero-out adjacency (Appendix B.4)"),
    "tpr": ("1 - T({fpr}) <= target for {pair}, so every membership-inference test with false-positive rate "
            "<= {fpr} has true-positive rate <= target ((7))"),
}


def kind_statement(kind: dict, scheme: str) -> str | None:
    """The v4 claim's statement for a target kind other than tv (None for tv: the scheme's statement)."""
    text = KIND_TEXT.get(kind["name"])
    return None if text is None else text.format(pair=PAIR_TEXT[scheme], **kind)
