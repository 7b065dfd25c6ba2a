"""The claim and predicate of a run in stages: format v5 (docs/compose.md §4).

Format v5 is the v4 layout (the v3 predicate, the claim naming its kind) with, in the claim, no `steps`
and `epochs` but `stages`: [{"steps": M_s, "epochs": E_s}, ...] in the order of the run, one shared sigma,
random allocation only, kind tv. The predicate type is PREDICATE_TYPE_V5.
"""
from __future__ import annotations

from certifier.certificate.claim import RANDOM_ALLOCATION, Claim
from certifier.errors import ParameterError
from certifier.params import decimal_str

PREDICATE_TYPE_V5 = "https://sigmacert.dev/certificate/v5"
STAGES_FORMAT = 5
STAGES_TEXT = ("TV(prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) <= target for the stages (M_s, E_s) in the order "
               "listed, at one sigma, so every membership-inference test has accuracy <= 1/2 + target/2")


def stages_claim(stages, sigma, target) -> Claim:
    """A claim in stages ((M_s, E_s), ...) at one sigma; steps/epochs hold the first M and the total E."""
    stages = tuple((int(m), int(e)) for m, e in stages)
    if not stages:
        raise ParameterError("at least one stage is needed")
    return Claim(RANDOM_ALLOCATION, stages[0][0], sum(e for _, e in stages), sigma, target, None, stages=stages)


def stages_claim_json(claim: Claim, version: int) -> dict:
    """The v5 `claim` object: stages instead of steps and epochs."""
    if version < STAGES_FORMAT or claim.scheme != RANDOM_ALLOCATION:
        raise ParameterError("a claim in stages needs format v5 and random allocation")
    return {"mechanism": "dp-sgd/" + RANDOM_ALLOCATION, "adjacency": "zero-out",
            "stages": [{"steps": m, "epochs": e} for m, e in claim.stages], "sigma": decimal_str(claim.sigma),
            "target": decimal_str(claim.target), "statement": STAGES_TEXT, "scheme": RANDOM_ALLOCATION,
            "kind": {"name": "tv"}}


def build_stages(claim: Claim, method_json: dict, res, low: dict | None, rows, tv, tv_err,
                 missing: dict | None = None) -> dict:
    """The v5 predicate: the v3 layout (certifier.certificate.predicate.build) with the stages' claim."""
    from certifier.certificate import predicate as pred_
    base = Claim(RANDOM_ALLOCATION, 2, 1, claim.sigma, claim.target)     # v3 layout; its claim is replaced
    pred = pred_.build(base, method_json, res, low, rows, tv, tv_err, missing=missing)
    pred["claim"] = stages_claim_json(claim, STAGES_FORMAT)
    pred["numerics"]["closed_form_sigma"] = "n/a"
    if low is not None:
        from certifier.resolution import sigma_resolution
        pred["lower"]["resolution"] = decimal_str(sigma_resolution(claim.sigma))
    if missing:
        pred["rows_not_certified"] = {"privacy": missing.get("privacy", {}), "tpr": missing.get("tpr", {})}
    return pred
