"""Format v5 (docs/compose.md §3-4): a run in stages. The claim has no `steps` and `epochs` but
`stages`: [{"steps": M_s, "epochs": E_s}, ...] (the run's order) and one `sigma`, or a `sigma` on every
stage and none in the claim (then no lower side); random allocation; kind tv, or dp / tpr with the v4
additions (claim.kind's parameter, `upper`, lower.bound_lower, numerics value/error; format/v4.py). The
upper method is lemma-c5-rounding v2 on one grid (its enclosure: O), the lower side (optional)
data-processing-lower v2, the rows as in v3. Exact schema, then static checks."""
from __future__ import annotations

from . import v4
from .schema import B, D, I, S
from .schema import typed as typed_as
from .strict import Reject
from .v1 import ADJACENCY, MECHANISM
from .v2 import check_lower, check_rows
from .v3 import RANDOM_ALLOCATION, check_method_v2
from .v3 import schema as schema_v3

CLAIM_STAGES = {"mechanism": S, "adjacency": S, "stages": [{"steps": I, "epochs": I}], "sigma": D, "target": D,
                "statement": S, "scheme": S, "kind": {"name": S}}
CLAIM_STAGES_SIGMA = {**{k: v for k, v in CLAIM_STAGES.items() if k != "sigma"},
                      "stages": [{"steps": I, "epochs": I, "sigma": D}]}
ENCLOSURES_STAGES = {"O": B}
UPPER, LOWER = ("lemma-c5-rounding", 2), ("data-processing-lower", 2)
MAX_STAGES, MAX_STEPS, MAX_EPOCHS = 64, 10**7, 10**5   # the epochs limit is on the run's total


def shape(claim) -> str:
    """The one reading of a claim's shape (the raw or typed claim, or None): "stages" for a run in stages (it lists
    `stages`), else "block". Schemas, replays and cost models are tables keyed by it."""
    return "stages" if isinstance(claim, dict) and "stages" in claim else "block"


def _name(obj) -> tuple:
    return (obj.get("name"), obj.get("version")) if isinstance(obj, dict) else (None, None)


SIGMA_MIXED = "give a sigma on every stage and none in the claim, or one claim.sigma and none on the stages"


class Sigmas:
    """How a claim in stages states its sigma (read once by `sigmas`): its schema, statements and rules."""
    claim: dict
    statement: str
    pair: str

    def check(self, claim: dict, raw: dict) -> None:
        """This form's rules of a raw claim (and its predicate `raw`)."""

    def values(self, c: dict) -> list:
        """The sigmas of a typed claim."""
        raise NotImplementedError

    def audited(self) -> None:
        """An audit states one sigma: Reject when this form has none."""


class OneSigma(Sigmas):
    """One claim.sigma the stages share (none on a stage)."""
    claim = CLAIM_STAGES
    statement = ("TV(prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) <= target for the stages (M_s, E_s) in the order "
                 "listed, at one sigma, so every membership-inference test has accuracy <= 1/2 + target/2")
    pair = ("the pair (prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) of the stages (M_s, E_s) in the order listed, at "
            "one sigma")

    def check(self, claim: dict, raw: dict) -> None:
        st = claim["stages"]
        if isinstance(st, list) and any(isinstance(s, dict) and "sigma" in s for s in st):
            raise Reject("claim-stages-sigma-mixed", SIGMA_MIXED)

    def values(self, c: dict) -> list:
        return [c["sigma"]]


class SigmaPerStage(Sigmas):
    """A sigma on every stage and none in the claim: certified one-sided, never audited."""
    claim = CLAIM_STAGES_SIGMA
    statement = ("TV(prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) <= target for the stages (M_s, E_s, sigma_s) in the "
                 "order listed, each at its own sigma, so every membership-inference test has accuracy <= 1/2 + "
                 "target/2")
    pair = ("the pair (prod_s P_{M_s}^{E_s}, prod_s Q_{M_s}^{E_s}) of the stages (M_s, E_s, sigma_s) in the order "
            "listed, each at its own sigma")

    def check(self, claim: dict, raw: dict) -> None:
        if "sigma" in claim:
            raise Reject("claim-stages-sigma-mixed", SIGMA_MIXED)
        if "lower" in raw:
            raise Reject("lower-per-stage-sigma", "a sigma per stage is certified one-sided only (no single sigma to "
                         "step down)")

    def values(self, c: dict) -> list:
        return [s["sigma"] for s in c["stages"]]

    def audited(self) -> None:
        raise Reject("claim-stages-sigma", "an audit states one sigma: a run with a sigma per stage is not audited")


ONE_SIGMA, SIGMA_PER_STAGE = OneSigma(), SigmaPerStage()


def sigmas(claim) -> Sigmas:
    """The one reading of a claim's sigma form (raw or typed claim, or None): a sigma on every stage, else one."""
    st = claim.get("stages") if isinstance(claim, dict) else None
    own = isinstance(st, list) and bool(st) and all(isinstance(s, dict) and "sigma" in s for s in st)
    return SIGMA_PER_STAGE if own else ONE_SIGMA


def _kind_name(raw) -> str:
    kind = _dict(_dict(raw).get("claim")).get("kind")
    return kind.get("name") if isinstance(kind, dict) else None


def _no_counts(claim: dict) -> None:
    if "steps" in claim or "epochs" in claim:
        raise Reject("claim-stages-mixed", "a claim in stages has no steps/epochs of its own (give stages only)")


def _block_claim(claim: dict) -> None:
    """Format v5 of a claim without stages (a block's): refused."""
    _no_counts(claim)
    raise Reject("claim-stages-missing", "a format-v5 claim needs stages")


def _stages_claim(claim: dict) -> None:
    """Format v5 of a claim in stages: none of a block's counts, at least one stage, random allocation."""
    _no_counts(claim)
    run = claim["stages"]
    if run == []:
        raise Reject("claim-stages-empty", "claim.stages is empty: a run needs at least one stage")
    if claim.get("scheme") != RANDOM_ALLOCATION:
        raise Reject("claim-scheme", f"a run in stages is random allocation only, not {claim.get('scheme')!r}")


V5_CLAIM = {"block": _block_claim, "stages": _stages_claim}   # format v5's rules of a raw claim, by its shape


def schema(raw) -> dict:
    """The v3 schema (v4's for a dp / tpr kind) with the stages' claim and enclosures; one-line rejections
    for what v5 refuses."""
    claim = raw.get("claim") if isinstance(raw, dict) else None
    form = sigmas(claim)
    if isinstance(claim, dict):
        V5_CLAIM[shape(claim)](claim)
        form.check(claim, raw)
    if _name(raw.get("method") if isinstance(raw, dict) else None) != UPPER:
        raise Reject("method-unknown", "a run in stages is certified by lemma-c5-rounding v2 only")
    if isinstance(raw, dict) and "lower" in raw and _name(_dict(raw["lower"]).get("method")) != LOWER:
        raise Reject("lower-method-unknown", "a run in stages has its lower side by data-processing-lower v2 only")
    name = _kind_name(raw)
    sch = schema_v3(raw) if name == "tv" else v4.schema(raw)      # v4 rejects an unknown kind
    for side in (sch, sch.get("lower", {})):                       # one lattice for every level (no §10)
        if "method" in side:
            side["method"] = {k: v for k, v in side["method"].items() if k != "level_bits"}
    sch.update(claim={**form.claim, "kind": v4.KINDS.get(name, {"name": S})}, enclosures=ENCLOSURES_STAGES)
    return sch


def _dict(x) -> dict:
    return x if isinstance(x, dict) else {}


def typed(raw) -> dict:
    return typed_as(raw, schema(raw), "predicate")


def block(c: dict) -> dict:
    """The claim as the per-block checks and the cost fences see it: the largest M, the total E."""
    return {"scheme": RANDOM_ALLOCATION, "steps": max(s["steps"] for s in c["stages"]),
            "epochs": sum(s["epochs"] for s in c["stages"]), "sigma": c.get("sigma"), "target": c["target"]}


# a typed claim's run as its list of stages ({steps, epochs, ...}), by its shape: a block is a run of one stage
RUN = {"block": lambda c: [{"steps": c["steps"], "epochs": c["epochs"]}], "stages": lambda c: c["stages"]}


def statement(c: dict) -> str:
    """The statement a claim in stages must carry: its kind's, for the stages' pair."""
    form, kind = sigmas(c), c["kind"]
    if kind["name"] in v4.KIND_TEXT:
        return v4.KIND_TEXT[kind["name"]].format(pair=form.pair, **kind)
    return form.statement


def _block_where(claim: dict) -> str:
    return f"at sigma {claim['sigma']}, M={claim['steps']}, E={claim['epochs']}"


def _stages_where(claim: dict) -> str:
    run = ",".join(f"{s['steps']}x{s['epochs']}" + (f"@{s['sigma']}" if "sigma" in s else "")
                   for s in claim["stages"])
    return (f"at sigma {claim['sigma']}, " if "sigma" in claim else "at each stage's own sigma, ") + f"stages {run}"


WHERE = {"block": _block_where, "stages": _stages_where}


def where(claim: dict) -> str:
    """'at sigma S, M=.., E=..' of one block, or the stages' run (each stage's sigma when it has one)."""
    return WHERE[shape(claim)](claim)


def check_claim(c: dict) -> None:
    if c["mechanism"] != MECHANISM or c["adjacency"] != ADJACENCY:
        raise Reject("claim-mechanism", f"mechanism/adjacency {c['mechanism']!r}/{c['adjacency']!r} are not "
                     f"{MECHANISM!r}/{ADJACENCY!r}")
    if c["kind"]["name"] in v4.KINDS:
        v4.check_parameter(c["kind"])
    elif c["kind"] != {"name": "tv"}:
        raise Reject("claim-kind", f"claim.kind {c['kind']!r} is not a kind of a run in stages")
    if c["statement"] != statement(c):
        raise Reject("claim-statement", "claim.statement is not the statement of a run in stages of its kind")
    st = c["stages"]
    if len(st) > MAX_STAGES:
        raise Reject("claim-stages-too-many", f"{len(st)} stages > {MAX_STAGES}")
    if any(s["steps"] < 1 or s["epochs"] < 1 for s in st):
        raise Reject("claim-invalid", "every stage needs steps >= 1 and epochs >= 1")
    if max(s["steps"] for s in st) > MAX_STEPS or sum(s["epochs"] for s in st) > MAX_EPOCHS:
        raise Reject("method-too-expensive", f"stages beyond the verifier's limits (M <= {MAX_STEPS}, total E <= "
                     f"{MAX_EPOCHS})")
    if any(x <= 0 for x in sigmas(c).values(c)) or not 0 < c["target"] < 1:
        raise Reject("claim-invalid", "need sigma > 0, 0 < target < 1")


def check(p: dict) -> None:
    """Static checks of a typed v5 predicate (before any replay)."""
    c = p["claim"]
    check_claim(c)
    check_method_v2(p["method"], block(c), "method-invalid")
    kind = c["kind"]["name"] != "tv"
    bound = p["upper"]["bound"] if kind else p["bound"]      # a kind's `bound` is the grid's TV bound
    if bound > c["target"]:
        raise Reject("bound-above-target", f"recorded bound {bound} > target {c['target']}")
    if kind and "epsilon" in p["upper"] and abs(p["upper"]["epsilon"]) > 100:
        raise Reject("upper-invalid", "upper.epsilon is outside [-100, 100]")
    if "lower" in p:
        check_method_v2(p["lower"]["method"], block(c), "lower-method-invalid")
        (v4.check_lower_numbers if kind else check_lower)(p)
    if "privacy" in p:
        check_rows(p)
