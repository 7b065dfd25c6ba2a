"""Format v6 (docs/certificate.md "Format v6", docs/audit.md): an audit of a claim at the sigma it states.

claim: the run as v3/v4 write it (scheme, steps, epochs, sigma, target; fixed bins also iterations), kind
{"name": "tv"} or v4's dp / tpr kind, the kind's statement, and `source` (text). audit: verdict (HOLDS / FALSE /
TOO CLOSE), quantity (epsilon for dp, tv, tpr), interval {lower, upper}, and for FALSE optionally fix_sigma
(numerical, not checked beyond fix_sigma > sigma). The upper side at sigma as v3/v4 record it (method, enclosures,
bound: the grid's TV bound, not compared with the target) and upper.value (the kind's upper value at the claim; tpr
also upper.epsilon); lower: the lower method at sigma itself, its enclosures, tv_lower and value (the kind's lower
value at the claim). Exact schema, then static checks; the replay is audit.py.
"""
from __future__ import annotations

from flint import fmpq

from . import v3, v4
from .schema import SD, D, S
from .schema import typed as typed_as
from .strict import Reject

PREDICATE_TYPE_V6 = "https://sigmacert.dev/certificate/v6"
VERDICTS = ("HOLDS", "FALSE", "TOO CLOSE")
QUANTITY = {"tv": "tv", "dp": "epsilon", "tpr": "tpr"}
KINDS = {"tv": {"name": S}, **v4.KINDS}
UPPER = {"tv": {"value": D}, "dp": {"value": D}, "tpr": {"value": D, "epsilon": SD}}
TIMINGS = {k: S for k in ("upper", "lower", "interval", "total")}
V1 = (("lemma-c5-rounding", 1), ("data-processing-lower", 1))   # v4: methods v1 run on fixed bins' pair too


def _get(obj, key):
    return obj.get(key) if isinstance(obj, dict) else None


def schema(raw) -> dict:
    """v3's schemas of the two methods and their enclosures, the audit's claim, verdict, interval, values."""
    claim = _get(raw, "claim")
    name = _get(_get(claim, "kind"), "name")
    if name not in KINDS:
        raise Reject("claim-kind-unknown", f"claim.kind {name!r} is not one of {sorted(KINDS)}")
    if not isinstance(_get(raw, "lower"), dict):
        raise Reject("schema-missing-field", "an audit records its lower side (predicate.lower)")
    view = {"claim": {k: v for k, v in claim.items() if k not in ("kind", "source")}, "method": raw.get("method"),
            "lower": {"method": _get(raw["lower"], "method")}}
    sch3 = v3.schema(view)
    audit = {"verdict": S, "quantity": S, "interval": {"lower": D, "upper": D}}
    if isinstance(_get(raw, "audit"), dict) and "fix_sigma" in raw["audit"]:
        audit["fix_sigma"] = D
    return {"claim": {**sch3["claim"], "kind": KINDS[name], "source": S}, "audit": audit,
            "method": sch3["method"], "enclosures": sch3["enclosures"], "bound": D, "upper": UPPER[name],
            "lower": {"method": sch3["lower"]["method"], "enclosures": sch3["lower"]["enclosures"], "tv_lower": D,
                      "value": D},
            "numerics": {"value": S, "error": S}, "software": {"sigmacert": S, "python-flint": S, "flint": S},
            "issued_at": S, "timings": TIMINGS}


def typed(raw) -> dict:
    return typed_as(raw, schema(raw), "predicate")


def statement(c: dict) -> str:
    """The claim's statement: the scheme's (tv) or the kind's for the scheme's pair (v4)."""
    if c["kind"]["name"] == "tv":
        return v3.SCHEMES[c["scheme"]][1]
    return v4.statement(c["kind"], c["scheme"])


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


def check(p: dict) -> None:
    """Static checks of a typed v6 predicate (before any replay)."""
    c, a, kind = p["claim"], p["audit"], p["claim"]["kind"]
    if kind["name"] != "tv":
        v4.check_parameter(kind)
    if c["statement"] != statement(c):
        raise Reject("claim-statement", f"claim.statement is not the statement of kind {kind['name']!r}")
    if len(c["source"]) > 500:
        raise Reject("claim-invalid", "claim.source is longer than 500 characters")
    view = {**p, "bound": c["target"], "claim": {**c, "statement": v3.SCHEMES[c["scheme"]][1]}}
    v3.check_claim(view["claim"])
    m, lm = p["method"], p["lower"]["method"]
    if kind["name"] != "tv" and (m["name"], m["version"]) not in v4.KIND_UPPER_METHODS:
        raise Reject("method-kind", f"method {m['name']!r} v{m['version']} does not certify kind {kind['name']!r}")
    if kind["name"] != "tv" and (lm["name"], lm["version"]) not in v4.KIND_LOWER_METHODS:
        raise Reject("lower-method-kind", f"lower method {lm['name']!r} v{lm['version']} does not certify kind "
                     f"{kind['name']!r}")
    _rules(v3.UPPER, (m["name"], m["version"]), view)
    _rules(v3.LOWER, (lm["name"], lm["version"]), view)
    if a["verdict"] not in VERDICTS:
        raise Reject("audit-verdict-unknown", f"audit.verdict {a['verdict']!r} is not one of {list(VERDICTS)}")
    if a["quantity"] != QUANTITY[kind["name"]]:
        raise Reject("audit-quantity", f"audit.quantity of kind {kind['name']!r} is {QUANTITY[kind['name']]!r}")
    lo, hi = a["interval"]["lower"], a["interval"]["upper"]
    if not lo <= hi or hi > (100 if kind["name"] == "dp" else 1):
        raise Reject("audit-interval-invalid", "need interval.lower <= interval.upper within the quantity's range")
    up, low = p["upper"]["value"], p["lower"]["value"]
    if low > up or up > 1 and kind["name"] != "dp":
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
