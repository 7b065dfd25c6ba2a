"""Format v6 (docs/certificate.md "Format v6", docs/audit.md): an audit of a claim at the sigma it states.

claim: the run as v3/v4 write it (scheme, steps, epochs, sigma, target; fixed bins also iterations) or, for a run
in stages, as v5 writes it with one shared sigma (stages [{steps, epochs}, ...], sigma, random allocation; a sigma
per stage is not a claim at one sigma: refused), kind {"name": "tv"} or v4's dp / tpr kind, the kind's statement,
and `source` (text). audit: verdict (HOLDS / FALSE / TOO CLOSE), quantity (epsilon for dp, tv, tpr), interval
{lower, upper}, and for FALSE optionally fix_sigma (numerical, not checked beyond fix_sigma > sigma). The upper side
at sigma as v3/v4/v5 record it (method, enclosures, bound: the grid's TV bound, not compared with the target) and
upper.value (the kind's upper value at the claim; tpr also upper.epsilon); lower: the lower method at sigma itself,
its enclosures, tv_lower and value (the kind's lower value at the claim). Exact schema, then static checks; the
replay is audit.py. What differs between the kinds is the table KINDS (no comparison of kind names).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flint import fmpq

from . import stages, v3, v4
from .schema import SD, D, S
from .schema import typed as typed_as
from .strict import Reject

PREDICATE_TYPE_V6 = "https://sigmacert.dev/certificate/v6"
VERDICTS = ("HOLDS", "FALSE", "TOO CLOSE")
TIMINGS = {k: S for k in ("upper", "lower", "interval", "total")}
V1 = (("lemma-c5-rounding", 1), ("data-processing-lower", 1))   # v4: methods v1 run on fixed bins' pair too


def _any_method(m: dict) -> bool:
    return True


def _kind_method(table: set) -> Callable[[dict], bool]:
    """A dp / tpr kind needs a method whose replay gives its functional (v4's KIND_UPPER / KIND_LOWER_METHODS)."""
    return lambda m: (m["name"], m["version"]) in table


@dataclass(frozen=True)
class AuditKind:
    """What a format-v6 audit of a target kind records and how it is checked statically."""
    schema: dict                       # claim.kind
    quantity: str                      # audit.quantity: the interval's axis
    upper: dict                        # the `upper` object's schema
    top: int                           # the axis and the values lie in [0, top] (probabilities 1; eps 100)
    check: Callable[[dict], None]      # claim.kind's parameter in its range
    statement: Callable[[dict], str]   # a block's claim statement (a run in stages: stages.statement)
    upper_method: Callable[[dict], bool] = _any_method
    lower_method: Callable[[dict], bool] = _any_method


KINDS = {
    "tv": AuditKind({"name": S}, "tv", {"value": D}, 1, lambda kind: None,
                    lambda c: v3.SCHEMES[c["scheme"]][1]),
    **{name: AuditKind(v4.KINDS[name], quantity, {"value": D, **extra}, top, v4.check_parameter,
                       lambda c: v4.statement(c["kind"], c["scheme"]),
                       _kind_method(v4.KIND_UPPER_METHODS), _kind_method(v4.KIND_LOWER_METHODS))
       for name, quantity, extra, top in (("dp", "epsilon", {}, 100), ("tpr", "tpr", {"epsilon": SD}, 1))},
}
QUANTITY = {name: k.quantity for name, k in KINDS.items()}


def _get(obj, key):
    return obj.get(key) if isinstance(obj, dict) else None


def _block_sides(view: dict, claim: dict) -> dict:
    return v3.schema(view)


def _stages_sides(view: dict, claim: dict) -> dict:
    """v5's schemas of a run in stages at one sigma (an audit states one), the claim's kind left to the audit's."""
    stages.sigmas(claim).audited()
    sch = stages.schema({**view, "claim": {**view["claim"], "kind": claim.get("kind")}})
    sch["claim"] = {k: v for k, v in sch["claim"].items() if k != "kind"}
    return sch


SIDES = {"block": _block_sides, "stages": _stages_sides}


def _sides(raw, claim) -> dict:
    """The schemas of the claim, the methods and their enclosures: v3's for a block, v5's for a run in stages."""
    view = {"claim": {k: v for k, v in claim.items() if k not in ("kind", "source")}, "method": raw.get("method"),
            "lower": {"method": _get(raw["lower"], "method")}}
    return SIDES[stages.shape(claim)](view, claim)


def schema(raw) -> dict:
    """The methods' schemas and their enclosures (v3, or v5 for stages), the audit's claim, verdict, interval,
    values."""
    claim = _get(raw, "claim")
    name = _get(_get(claim, "kind"), "name")
    if name not in KINDS:
        raise Reject("claim-kind-unknown", f"claim.kind {name!r} is not one of {sorted(KINDS)}")
    if not isinstance(_get(raw, "lower"), dict):
        raise Reject("schema-missing-field", "an audit records its lower side (predicate.lower)")
    sch = _sides(raw, claim)
    audit = {"verdict": S, "quantity": S, "interval": {"lower": D, "upper": D}}
    if isinstance(_get(raw, "audit"), dict) and "fix_sigma" in raw["audit"]:
        audit["fix_sigma"] = D
    return {"claim": {**sch["claim"], "kind": KINDS[name].schema, "source": S}, "audit": audit,
            "method": sch["method"], "enclosures": sch["enclosures"], "bound": D, "upper": KINDS[name].upper,
            "lower": {"method": sch["lower"]["method"], "enclosures": sch["lower"]["enclosures"], "tv_lower": D,
                      "value": D},
            "numerics": {"value": S, "error": S}, "software": {"sigmacert": S, "python-flint": S, "flint": S},
            "issued_at": S, "timings": TIMINGS}


def typed(raw) -> dict:
    return typed_as(raw, schema(raw), "predicate")


def statement(c: dict) -> str:
    """A block's claim statement: the scheme's (tv) or the kind's for the scheme's pair (v4)."""
    return KINDS[c["kind"]["name"]].statement(c)


def _rules(table: dict, key: tuple, view: dict) -> None:
    """v3's static rules of a method, run on the claim's pair (fixed bins' methods v1 read as random
    allocation's, as v4 reads them)."""
    if key in V1 and view["claim"]["scheme"] == v3.FIXED_BINS:
        mechanism, text = v3.SCHEMES[v3.RANDOM_ALLOCATION]
        view = {**view, "claim": {**view["claim"], "scheme": v3.RANDOM_ALLOCATION, "mechanism": mechanism,
                                  "statement": text}}
    table[key][2](view)


def verdict_of(upper: fmpq, lower: fmpq, target: fmpq) -> str:
    """HOLDS iff the upper value meets the target, FALSE iff the lower value exceeds it, else TOO CLOSE."""
    return "HOLDS" if upper <= target else "FALSE" if lower > target else "TOO CLOSE"


def _block_claim(p: dict) -> None:
    """A block's claim: the kind's statement, v3's claim rules."""
    c = p["claim"]
    if c["statement"] != statement(c):
        raise Reject("claim-statement", f"claim.statement is not the statement of kind {c['kind']['name']!r}")
    v3.check_claim({**c, "statement": v3.SCHEMES[c["scheme"]][1]})


def _block_methods(p: dict) -> None:
    """v3's static rules of both methods on a block's pair."""
    c, m, lm = p["claim"], p["method"], p["lower"]["method"]
    view = {**p, "bound": c["target"], "claim": {**c, "statement": v3.SCHEMES[c["scheme"]][1]}}
    _rules(v3.UPPER, (m["name"], m["version"]), view)
    _rules(v3.LOWER, (lm["name"], lm["version"]), view)


def _stages_claim(p: dict) -> None:
    """A run in stages at one sigma: v5's claim rules (stages, statement, the verifier's limits)."""
    stages.check_claim({k: v for k, v in p["claim"].items() if k != "source"})


def _stages_methods(p: dict) -> None:
    """Method v2's parameters on both sides, for the stages' largest M and total E (as v5)."""
    c = stages.block(p["claim"])
    v3.check_method_v2(p["method"], c, "method-invalid")
    v3.check_method_v2(p["lower"]["method"], c, "lower-method-invalid")


RULES = {"block": (_block_claim, _block_methods), "stages": (_stages_claim, _stages_methods)}   # (claim, methods)


def check(p: dict) -> None:
    """Static checks of a typed v6 predicate (before any replay)."""
    c, a, kind = p["claim"], p["audit"], p["claim"]["kind"]
    rule = KINDS[kind["name"]]
    rule.check(kind)
    if len(c["source"]) > 500:
        raise Reject("claim-invalid", "claim.source is longer than 500 characters")
    claim_rules, method_rules = RULES[stages.shape(c)]
    claim_rules(p)
    m, lm = p["method"], p["lower"]["method"]
    if not rule.upper_method(m):
        raise Reject("method-kind", f"method {m['name']!r} v{m['version']} does not certify kind {kind['name']!r}")
    if not rule.lower_method(lm):
        raise Reject("lower-method-kind", f"lower method {lm['name']!r} v{lm['version']} does not certify kind "
                     f"{kind['name']!r}")
    method_rules(p)
    if a["verdict"] not in VERDICTS:
        raise Reject("audit-verdict-unknown", f"audit.verdict {a['verdict']!r} is not one of {list(VERDICTS)}")
    if a["quantity"] != rule.quantity:
        raise Reject("audit-quantity", f"audit.quantity of kind {kind['name']!r} is {rule.quantity!r}")
    lo, hi = a["interval"]["lower"], a["interval"]["upper"]
    if not lo <= hi or hi > rule.top:
        raise Reject("audit-interval-invalid", "need interval.lower <= interval.upper within the quantity's range")
    up, low = p["upper"]["value"], p["lower"]["value"]
    if low > up or up > 1 and rule.top == 1:
        raise Reject("audit-values-inconsistent", f"lower.value {low} exceeds upper.value {up}")
    if a["verdict"] == "FALSE" and not low > c["target"]:
        raise Reject("audit-false-not-above-claim", f"verdict FALSE but the recorded lower value {low} does not "
                     f"exceed the target {c['target']}")
    if a["verdict"] != verdict_of(up, low, c["target"]):
        raise Reject("audit-verdict-mismatch", f"verdict {a['verdict']} but the recorded values give "
                     f"{verdict_of(up, low, c['target'])}")
    if "fix_sigma" in a and (a["verdict"] != "FALSE" or not a["fix_sigma"] > c["sigma"]):
        raise Reject("audit-fix-sigma", "fix_sigma goes with a FALSE verdict and lies above sigma")
    if "epsilon" in p["upper"] and abs(p["upper"]["epsilon"]) > 100:
        raise Reject("upper-invalid", "upper.epsilon is outside [-100, 100]")
    if p["lower"]["tv_lower"] > 1:
        raise Reject("lower-inconsistent", "tv_lower above 1")
