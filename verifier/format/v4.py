"""Format v4 (docs/certificate.md "Format v4"): the v3 predicate whose claim names a target kind.

claim.kind is {"name": "dp", "epsilon": e} ((e, target)-DP: max(delta_Q||P(e), delta_P||Q(e)) <= target,
Appendix B.4) or {"name": "tpr", "fpr": a} (1 - T(a) <= target, (7)); claim.statement is the kind's text
for the scheme's pair. `upper` = {bound: the kind's certified upper value (<= target)} (tpr: also the
`epsilon` of its bound e^epsilon a + delta_Q||P(epsilon)); `bound` stays the grid's TV bound (not compared
with the target); `lower` adds `bound_lower` (> target). Exact schema, then static checks.
"""
from __future__ import annotations

from flint import fmpq

from . import v3
from .schema import SD, D, S
from .schema import typed as typed_as
from .strict import Reject, decimal
from .v2 import resolution_of

PREDICATE_TYPE_V4 = "https://sigmacert.dev/certificate/v4"

PAIR_TEXT = {v3.RANDOM_ALLOCATION: "the pair (P_M^E, Q_M^E)",
             v3.FIXED_BINS: "the pair (P_M, Q_M) at sigma/sqrt(E), E = ceil(iterations/M) rounds per bin"}
KIND_TEXT = {
    "dp": ("max(delta_Q||P({epsilon}), delta_P||Q({epsilon})) <= target for {pair}, so the run is "
           "({epsilon}, target)-DP under zero-out adjacency (Appendix B.4)"),
    "tpr": ("1 - T({fpr}) <= target for {pair}, so every membership-inference test with false-positive rate "
            "<= {fpr} has true-positive rate <= target ((7))"),
}
KINDS = {"dp": {"name": S, "epsilon": S}, "tpr": {"name": S, "fpr": S}}  # known kinds; parameters: exact decimal text
# each kind's parameter (its key in claim.kind), the range it must lie in, and the words of a refusal
PARAMETER = {"dp": ("epsilon", lambda x: 0 <= x <= 100, "is outside [0, 100]"),
             "tpr": ("fpr", lambda x: 0 < x < 1, "is not strictly between 0 and 1")}
UPPER = {"dp": {"bound": D}, "tpr": {"bound": D, "epsilon": SD}}           # tpr's epsilon may be negative
# the b_k of step (iv), or the closed form of the Gaussian shift (M = 1)
KIND_UPPER_METHODS = {("lemma-c5-rounding", 1), ("lemma-c5-rounding", 2), ("gaussian-shift", 1)}
# U and W of the processed pair, or the closed form (M = 1)
KIND_LOWER_METHODS = {("data-processing-lower", 1), ("data-processing-lower", 2), ("gaussian-shift", 1)}
V1 = ("lemma-c5-rounding", 1), ("data-processing-lower", 1)   # in v4 they also take fixed bins (their pair)


def _get(obj, key):
    return obj.get(key) if isinstance(obj, dict) else None


def _kind_name(raw) -> str:
    kind = _get(_get(raw, "claim"), "kind")
    name = _get(kind, "name")
    if name not in KINDS:
        raise Reject("claim-kind-unknown", f"claim.kind {name!r} is not one of {sorted(KINDS)}")
    return name


def schema(raw) -> dict:
    """The v3 schema of the predicate without its v4 fields, plus claim.kind, upper, lower.bound_lower and
    the kind's numerics (value, error)."""
    name = _kind_name(raw)
    strip = {k: v for k, v in raw.items() if k != "upper"}
    strip["claim"] = {k: v for k, v in raw["claim"].items() if k != "kind"}
    if isinstance(raw.get("lower"), dict):
        strip["lower"] = {k: v for k, v in raw["lower"].items() if k != "bound_lower"}
    sch = dict(v3.schema(strip))
    sch["claim"] = {**sch["claim"], "kind": KINDS[name]}
    sch["numerics"] = {**sch["numerics"], "value": S, "error": S}
    sch["upper"] = UPPER[name]
    if "lower" in sch:
        sch["lower"] = {**sch["lower"], "bound_lower": D}
    return sch


def typed(raw) -> dict:
    return typed_as(raw, schema(raw), "predicate")


def statement(kind: dict, scheme: str) -> str:
    """The claim's statement text of a kind, for the scheme's pair (parameters as recorded)."""
    return KIND_TEXT[kind["name"]].format(pair=PAIR_TEXT[scheme], **kind)


def parameter(kind: dict) -> fmpq:
    """The kind's parameter (dp: epsilon, tpr: fpr) as an exact rational."""
    key = PARAMETER[kind["name"]][0]
    return decimal(kind[key], f"claim.kind.{key}")


def check_parameter(kind: dict) -> None:
    """The kind's parameter lies in its range (dp: epsilon in [0, 100], tpr: fpr in (0, 1))."""
    key, inside, outside = PARAMETER[kind["name"]]
    if not inside(parameter(kind)):
        raise Reject("claim-kind-invalid", f"{key} {kind[key]} {outside}")


def check_v4(p: dict) -> None:
    """Static checks of a typed v4 predicate (before any replay)."""
    c, kind = p["claim"], p["claim"]["kind"]
    check_parameter(kind)
    if c["statement"] != statement(kind, c["scheme"]):
        raise Reject("claim-statement", f"claim.statement is not the statement of kind {kind['name']!r}")
    m = p["method"]
    if (m["name"], m["version"]) not in KIND_UPPER_METHODS:
        raise Reject("method-kind", f"method {m['name']!r} v{m['version']} does not certify kind {kind['name']!r}")
    # the method rules of v3 (its TV bound is not a bound on this kind: compared with nothing here)
    view = {**p, "bound": c["target"], "claim": {**c, "statement": v3.SCHEMES[c["scheme"]][1]}}
    v3.check_claim(view["claim"])
    _method_rules(v3.UPPER, (m["name"], m["version"]), view)
    if p["upper"]["bound"] > c["target"]:
        raise Reject("bound-above-target", f"recorded upper.bound {p['upper']['bound']} > target {c['target']}")
    if "epsilon" in p["upper"] and abs(p["upper"]["epsilon"]) > 100:
        raise Reject("upper-invalid", "upper.epsilon is outside [-100, 100]")
    if "lower" in p:
        _check_lower(p, view)
    if "privacy" in p:
        v3.check_rows(p)


def _method_rules(table: dict, key: tuple, view: dict) -> None:
    """v3's static rules of a method. Methods v1 run on the claim's pair (the one-epoch pair at
    sigma/sqrt(E) in fixed bins, as v2 does): their rules are v3's with the scheme's mechanism and
    statement already checked (v3.check_claim), so they are read as random allocation's."""
    if key in V1 and view["claim"]["scheme"] == v3.FIXED_BINS:
        mechanism, statement = v3.SCHEMES[v3.RANDOM_ALLOCATION]
        view = {**view, "claim": {**view["claim"], "scheme": v3.RANDOM_ALLOCATION, "mechanism": mechanism,
                                  "statement": statement}}
    table[key][2](view)


def _check_lower(p: dict, view: dict) -> None:
    c, lo = p["claim"], p["lower"]
    lm = lo["method"]
    if (lm["name"], lm["version"]) not in KIND_LOWER_METHODS:
        raise Reject("lower-method-kind", f"lower method {lm['name']!r} v{lm['version']} does not certify "
                     f"kind {c['kind']['name']!r}")
    _method_rules(v3.LOWER, (lm["name"], lm["version"]), view)
    check_lower_numbers(p)


def check_lower_numbers(p: dict) -> None:
    """The kind's lower side against its claim (one block or a run in stages): sigma_low, target,
    resolution, bound_lower > target."""
    c, lo = p["claim"], p["lower"]
    if not 0 < lo["sigma_low"] < c["sigma"]:
        raise Reject("lower-sigma-not-below", "need 0 < sigma_low < sigma")
    if lo["target"] != c["target"]:
        raise Reject("lower-target", "lower.target differs from claim.target")
    res = lo.get("resolution")
    if res is None or res != resolution_of(c["sigma"]) or lo["sigma_low"] not in (c["sigma"] - res,
                                                                                   c["sigma"] - 2 * res):
        raise Reject("lower-resolution", f"need resolution = res(sigma) = {resolution_of(c['sigma'])} and "
                     "sigma_low = sigma - k resolution (k = 1, 2)")
    if lo["bound_lower"] <= c["target"]:
        raise Reject("lower-recorded-not-above-target", f"recorded bound_lower {lo['bound_lower']} <= target "
                     f"{c['target']}")
    if lo["tv_lower"] > fmpq(1):
        raise Reject("lower-inconsistent", "tv_lower above 1")
