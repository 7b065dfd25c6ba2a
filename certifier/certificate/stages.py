"""The claim and predicate of a run in stages: format v5 (docs/compose.md §3-4).

Format v5 is the v3 layout (tv) or the v4 layout (dp, tpr: claim.kind, `upper`, lower.bound_lower, the
kind's numerics) with, in the claim, no `steps` and `epochs` but `stages`: [{"steps": M_s, "epochs": E_s},
...] in the order of the run, and either one shared `sigma` or a `sigma` on every stage (then no
claim.sigma, and no lower side: there is no single sigma to step down), random allocation only. The
predicate type is PREDICATE_TYPE_V5 (certifier.certificate.envelope).
"""
from __future__ import annotations

from dataclasses import dataclass

from flint import fmpq

from certifier.certificate import predicate as pred_
from certifier.claim import KIND_TEXT, RANDOM_ALLOCATION, Claim
from certifier.errors import ParameterError
from certifier.params import StageTally, decimal_str
from certifier.resolution import sigma_resolution

STAGES_FORMAT = 5
STAGES_TEXT = ("TV(prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) <= target for the stages (M_s, E_s) in the order "
               "listed, at one sigma, so every membership-inference test has accuracy <= 1/2 + target/2")
STAGES_SIGMA_TEXT = ("TV(prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) <= target for the stages (M_s, E_s, sigma_s) "
                     "in the order listed, each at its own sigma, so every membership-inference test has "
                     "accuracy <= 1/2 + target/2")
# the pair a dp / tpr claim in stages is about (KIND_TEXT's {pair}); key: a sigma per stage
STAGES_PAIR = {False: "the pair (prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) of the stages (M_s, E_s) in the "
                      "order listed, at one sigma",
               True: "the pair (prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) of the stages (M_s, E_s, sigma_s) in "
                     "the order listed, each at its own sigma"}


@dataclass(frozen=True)
class StagesClaim(Claim):
    """A claim about a run in stages: ((M_s, E_s), ...) at one sigma, or ((M_s, E_s, sigma_s), ...) with sigma None;
    steps/epochs hold the first M and the total E. Made by stages_claim; its claim object is format v5's."""
    stages: tuple = ()

    def to_json(self, version: int) -> dict:
        """The v5 `claim` object (stages_claim_json)."""
        return stages_claim_json(self, version)


def per_stage(claim: Claim) -> bool:
    """The stages carry their own sigma: ((M_s, E_s, sigma_s), ...)."""
    return bool(claim.stages) and len(claim.stages[0]) == 3


def stages_claim(stages, sigma, target, kind: tuple = ()) -> StagesClaim:
    """A claim in stages ((M_s, E_s), ...) at one sigma, or ((M_s, E_s, sigma_s), ...) with sigma None;
    steps/epochs hold the first M and the total E. kind: as Claim.kind (() for tv)."""
    stages = tuple((int(s[0]), int(s[1]), *s[2:]) for s in stages)
    tally = StageTally.of(len(s) == 3 for s in stages)                  # at least one stage
    own = [s[2] for s in stages if len(s) == 3]
    if tally.mixed or tally.every and (sigma is not None or not all(isinstance(x, fmpq) and x > 0 for x in own)):
        raise ParameterError("give a positive exact sigma on every stage (and no shared sigma), or one shared sigma")
    return StagesClaim(RANDOM_ALLOCATION, stages[0][0], sum(s[1] for s in stages), sigma, target, None, kind,
                       stages=stages)


def runs_at(claim: Claim, sigma) -> list[tuple[int, int, str]]:
    """(M_s, E_s, sigma_s as exact decimal text): each stage's own sigma, else `sigma` shared (numerics)."""
    return [(s[0], s[1], decimal_str(s[2] if len(s) == 3 else sigma)) for s in claim.stages]



def statement(claim: Claim) -> str:
    """The claim's statement: the kind's text (tv: the stages' TV text) for the stages' pair."""
    named = dict(claim.kind)
    text = KIND_TEXT.get(named.get("name"))                 # a kind other than tv (KIND_TEXT: dp, tpr)
    if text is not None:
        return text.format(pair=STAGES_PAIR[per_stage(claim)], **named)
    return STAGES_SIGMA_TEXT if per_stage(claim) else STAGES_TEXT


def stages_claim_json(claim: Claim, version: int) -> dict:
    """The v5 `claim` object: stages instead of steps and epochs; a sigma per stage or one shared."""
    if version < STAGES_FORMAT or claim.scheme != RANDOM_ALLOCATION:
        raise ParameterError("a claim in stages needs format v5 and random allocation")
    own = per_stage(claim)
    stages = [{"steps": s[0], "epochs": s[1], **({"sigma": decimal_str(s[2])} if own else {})} for s in claim.stages]
    shared = {} if own else {"sigma": decimal_str(claim.sigma)}
    return {"mechanism": "dp-sgd/" + RANDOM_ALLOCATION, "adjacency": "zero-out", "stages": stages, **shared,
            "target": decimal_str(claim.target), "statement": statement(claim), "scheme": RANDOM_ALLOCATION,
            "kind": dict(claim.kind) or {"name": "tv"}}


def build_v5(claim: Claim, method_json: dict, res, low: dict | None, rows, tv, tv_err,
                 missing: dict | None = None, kind_upper: dict | None = None) -> dict:
    """The v5 predicate: the v3 layout (v4 for a dp / tpr kind: certifier.certificate.predicate.build) with
    the stages' claim."""
    own = per_stage(claim)
    base = Claim(RANDOM_ALLOCATION, 2, 1, fmpq(1) if own else claim.sigma, claim.target, None, claim.kind)
    pred = pred_.build(base, method_json, res, low, rows, tv, tv_err, missing=missing, kind_upper=kind_upper)
    pred["claim"] = claim.to_json(STAGES_FORMAT)
    pred["numerics"]["closed_form_sigma"] = "n/a"
    if own:
        pred["numerics"]["search_resolution"] = "n/a"          # no sigma was searched
    if low is not None:
        pred["lower"]["resolution"] = decimal_str(sigma_resolution(claim.sigma))
    if missing:
        pred["rows_not_certified"] = {"privacy": missing.get("privacy", {}), "tpr": missing.get("tpr", {})}
    return pred
