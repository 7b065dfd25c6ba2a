"""Format v5 (docs/compose.md §4): a run in stages. The claim has no `steps` and `epochs` but
`stages`: [{"steps": M_s, "epochs": E_s}, ...] (the run's order), one sigma, random allocation,
kind tv; the upper method is lemma-c5-rounding v2 on one grid (its enclosure: O), the lower side
(optional) data-processing-lower v2, the rows as in v3. Exact schema, then static checks."""
from __future__ import annotations

from .schema import B, D, I, S
from .schema import typed as typed_as
from .strict import Reject
from .v1 import ADJACENCY, MECHANISM
from .v2 import check_lower, check_rows
from .v3 import RANDOM_ALLOCATION, check_method_v2
from .v3 import schema as schema_v3

STATEMENT_STAGES = ("TV(prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) <= target for the stages (M_s, E_s) in the "
                    "order listed, at one sigma, so every membership-inference test has accuracy <= 1/2 + target/2")
CLAIM_STAGES = {"mechanism": S, "adjacency": S, "stages": [{"steps": I, "epochs": I}], "sigma": D, "target": D,
                "statement": S, "scheme": S, "kind": {"name": S}}
ENCLOSURES_STAGES = {"O": B}
UPPER, LOWER = ("lemma-c5-rounding", 2), ("data-processing-lower", 2)
MAX_STAGES, MAX_STEPS, MAX_EPOCHS = 64, 10**7, 10**5   # the epochs limit is on the run's total


def _name(obj) -> tuple:
    return (obj.get("name"), obj.get("version")) if isinstance(obj, dict) else (None, None)


def schema(raw) -> dict:
    """The v3 schema with the stages' claim and enclosures; one-line rejections for what v5 refuses."""
    claim = raw.get("claim") if isinstance(raw, dict) else None
    if isinstance(claim, dict):
        if "steps" in claim or "epochs" in claim:
            raise Reject("claim-stages-mixed", "a claim in stages has no steps/epochs of its own (give stages only)")
        if "stages" not in claim:
            raise Reject("claim-stages-missing", "a format-v5 claim needs stages")
        if claim["stages"] == []:
            raise Reject("claim-stages-empty", "claim.stages is empty: a run needs at least one stage")
        if claim.get("scheme") != RANDOM_ALLOCATION:
            raise Reject("claim-scheme", f"a run in stages is random allocation only, not {claim.get('scheme')!r}")
    if _name(raw.get("method") if isinstance(raw, dict) else None) != UPPER:
        raise Reject("method-unknown", "a run in stages is certified by lemma-c5-rounding v2 only")
    if isinstance(raw, dict) and "lower" in raw and _name(_dict(raw["lower"]).get("method")) != LOWER:
        raise Reject("lower-method-unknown", "a run in stages has its lower side by data-processing-lower v2 only")
    sch = schema_v3(raw)
    sch.update(claim=CLAIM_STAGES, enclosures=ENCLOSURES_STAGES)
    return sch


def _dict(x) -> dict:
    return x if isinstance(x, dict) else {}


def typed(raw) -> dict:
    return typed_as(raw, schema(raw), "predicate")


def block(c: dict) -> dict:
    """The claim as the per-block checks and the cost fences see it: the largest M, the total E."""
    return {"scheme": RANDOM_ALLOCATION, "steps": max(s["steps"] for s in c["stages"]),
            "epochs": sum(s["epochs"] for s in c["stages"]), "sigma": c["sigma"], "target": c["target"]}


def check_claim(c: dict) -> None:
    if c["mechanism"] != MECHANISM or c["adjacency"] != ADJACENCY:
        raise Reject("claim-mechanism", f"mechanism/adjacency {c['mechanism']!r}/{c['adjacency']!r} are not "
                     f"{MECHANISM!r}/{ADJACENCY!r}")
    if c["statement"] != STATEMENT_STAGES:
        raise Reject("claim-statement", "claim.statement is not the statement of a run in stages")
    if c["kind"] != {"name": "tv"}:
        raise Reject("claim-kind", f"a run in stages is certified for the kind tv only, not {c['kind']!r}")
    st = c["stages"]
    if len(st) > MAX_STAGES:
        raise Reject("claim-stages-too-many", f"{len(st)} stages > {MAX_STAGES}")
    if any(s["steps"] < 1 or s["epochs"] < 1 for s in st):
        raise Reject("claim-invalid", "every stage needs steps >= 1 and epochs >= 1")
    if max(s["steps"] for s in st) > MAX_STEPS or sum(s["epochs"] for s in st) > MAX_EPOCHS:
        raise Reject("method-too-expensive", f"stages beyond the verifier's limits (M <= {MAX_STEPS}, total E <= "
                     f"{MAX_EPOCHS})")
    if c["sigma"] <= 0 or not 0 < c["target"] < 1:
        raise Reject("claim-invalid", "need sigma > 0, 0 < target < 1")


def check(p: dict) -> None:
    """Static checks of a typed v5 predicate (before any replay)."""
    c = p["claim"]
    check_claim(c)
    check_method_v2(p["method"], block(c), "method-invalid")
    if p["bound"] > c["target"]:
        raise Reject("bound-above-target", f"recorded bound {p['bound']} > target {c['target']}")
    if "lower" in p:
        check_method_v2(p["lower"]["method"], block(c), "lower-method-invalid")
        check_lower(p)
    if "privacy" in p:
        check_rows(p)
