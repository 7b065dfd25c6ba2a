"""Format v3 (docs/method-v2.md §3-§4): the claim names its sampling scheme; the upper method is
`lemma-c5-rounding` v1 (random allocation only) or v2; `lower` (method v1 or v2) is optional,
and so are the privacy and TPR rows (both or neither).  Exact schema, then static checks."""
from __future__ import annotations

from flint import fmpq

from . import gaussian_shift as gs
from .schema import BALLS, B, D, I, Rows, S, is_int
from .schema import typed as typed_as
from .strict import Reject
from .v1 import ADJACENCY, MECHANISM, SCHEMA, STATEMENT, check_claim_and_method
from .v2 import SCHEMA_V2, check_lower, check_lower_v1, check_rows

PREDICATE_TYPE_V3 = "https://sigmacert.dev/tv-certificate/v3"

RANDOM_ALLOCATION, FIXED_BINS = "random-allocation", "fixed-bins"
STATEMENT_FB = ("TV(P_M, Q_M) at sigma/sqrt(E) <= target, where E = ceil(iterations/M) rounds per bin "
                "(bins seen fewer times are covered by data processing), so every membership-inference "
                "test has accuracy <= 1/2 + target/2")
SCHEMES = {RANDOM_ALLOCATION: (MECHANISM, STATEMENT), FIXED_BINS: ("dp-sgd/fixed-bins", STATEMENT_FB)}

CLAIM = {**SCHEMA["claim"], "scheme": S}
CLAIM_FIXED_BINS = {**CLAIM, "iterations": I}
METHOD_V2 = {"name": S, "version": I, "h": D, "mantissa_bits": I, "y_mantissa_bits": [I], "top_octave": I,
             "cap": D, "eta": D, "k_minus": I, "k_plus": I, "k_top": I, "prec": I, "fixed_point_bits": I,
             "trim": D, "trim_shift": D}
ENCLOSURES_V2 = {"O": B, "mass": {k: B for k in ("step_i", "step_ii", "step_iii", "step_iv")},
                 "deleted": {k: B for k in ("trim", "log_grid", "fixed_point")},
                 "moved": {k: B for k in ("cap", "top_octave", "k_plus", "k_top")}}
LOWER_METHOD_V2 = {k: v for k, v in METHOD_V2.items() if k != "trim_shift"}
# work limits of method v2 (denial of service): lattice points 2N(T+1), grid points of (i),
# log-grid cells, and the length of the step (iv) products
LIMITS_V2 = {"lattice points": 5 * 10**8, "grid points": 2 * 10**8, "log-grid cells": 10**9,
             "epoch product length": 10**11}  # outer fences only: the cost model decides first


def _get(obj, key):
    return obj.get(key) if isinstance(obj, dict) else None


def _bound_at_most_target(p: dict) -> None:
    if p["bound"] > p["claim"]["target"]:
        raise Reject("bound-above-target", f"recorded bound {p['bound']} > target {p['claim']['target']}")


def _random_allocation_only(label: str):
    def check(c: dict) -> None:
        if c["scheme"] != RANDOM_ALLOCATION:
            raise Reject("method-scheme", f"{label} covers random allocation only")
    return check


def _check_upper_v1(p: dict) -> None:
    _random_allocation_only("method lemma-c5-rounding v1")(p["claim"])
    check_claim_and_method(p)  # the v1 claim and method rules, and bound <= target
    above = p["method"].get("above_cap")
    if above is not None and above != "moved":  # method-v2.md §7: the one allowed value
        raise Reject("method-invalid", f"method.above_cap must be 'moved' when present, got {above!r}")
    _check_band(p["method"], p["method"]["tail_start"], "method-invalid")
    if "tail_factor" in p["method"]:
        _check_two_scale(p["method"], p["claim"]["steps"], "method-invalid")
    if "tail_factor" in p["method"] and "band_low" in p["method"]:
        raise Reject("method-invalid", "band_low and tail_factor do not go together (method-v2.md §8, §9)")


def _check_band(m: dict, top, code: str) -> None:
    """method-v2.md §8: an optional band_low, a multiple of h with 0 < band_low < top (the upper
    method's tail_start, the lower method's cap)."""
    lo = m.get("band_low")
    if lo is not None and not (0 < lo < top and is_int(lo / m["h"])):
        raise Reject(code, f"band_low {lo} must be a multiple of h with 0 < band_low < {top}")


def _check_two_scale(m: dict, M: int, code: str) -> None:
    """method-v2.md §9: 2 <= tail_factor <= 1024; tail_splits 2(n + 1) integers in [0, 10^12], n the top
    bit of M; a slot with no split (the lowest set bit's and the last product's A) is 0."""
    n = M.bit_length() - 1
    R, s = m["tail_factor"], m["tail_splits"]
    if not 2 <= R <= 1024 or len(s) != 2 * (n + 1) or any(not 0 <= x <= 10**12 for x in s):
        raise Reject(code, f"need 2 <= tail_factor <= 1024 and tail_splits of {2 * (n + 1)} "
                     "integers in [0, 10^12]")
    bits = [i for i in range(n + 1) if (M >> i) & 1]
    used = {2 * i + 1 for i in bits[1:-1]}
    if any(s[k] for k in range(1, 2 * (n + 1), 2) if k not in used):
        raise Reject(code, "tail_splits: the A slots of bits with no product, and of the last "
                     "product, must be 0")


# method v1 with "above_cap": "moved" (method-v2.md §7): the mass above the cap is moved, not deleted
METHOD_V1_MOVED = {**SCHEMA["method"], "above_cap": S}
ENCLOSURES_V1_MOVED = {**SCHEMA["enclosures"], "deleted": BALLS("truncation", "trim", "log_grid", "fixed_point"),
                       "moved": BALLS("cap")}


def _with_band(method: dict, enclosures: dict | None = None):
    """method-v2.md §8: the schemas of a method v1 object with "band_low" (and the upper side's
    enclosures with deleted.band, the mass of Y below the band)."""
    out = {**method, "band_low": D}
    if enclosures is None:
        return out
    return out, {**enclosures, "deleted": {**enclosures["deleted"], "band": B}}
# method v1 with two-scale partial sums in step (ii) (method-v2.md §9): both keys, or neither
TWO_SCALE = {"tail_factor": I, "tail_splits": [I]}
# method v2 with a lattice per level of step (ii) (method-v2.md §10)
LEVELS = {"level_bits": [I]}


def _check_lower_v1(p: dict) -> None:
    _random_allocation_only("lower method data-processing-lower v1")(p["claim"])
    check_lower_v1(p)
    _check_band(p["lower"]["method"], p["lower"]["method"]["cap"], "lower-method-invalid")
    if "tail_factor" in p["lower"]["method"] and "band_low" in p["lower"]["method"]:
        raise Reject("lower-method-invalid", "band_low and tail_factor do not go together (method-v2.md §8, §9)")
    lm = p["lower"]["method"]
    if "tail_factor" in lm:
        _check_two_scale(lm, p["claim"]["steps"], "lower-method-invalid")
        R, J0, K = lm["tail_factor"], lm["tail_splits"][0], int(lm["cap"] / lm["h"])
        if J0 % R or J0 > K // R * R:
            raise Reject("lower-method-invalid", "lower tail_splits[0] must be a multiple of tail_factor and at "
                         "most floor(cap/(h tail_factor)) tail_factor")


def _check_upper_v2(p: dict) -> None:
    check_method_v2(p["method"], p["claim"], "method-invalid")
    _bound_at_most_target(p)


def _check_gaussian_shift(p: dict) -> None:
    gs.check(p["method"], p["claim"], "method-invalid")
    _bound_at_most_target(p)


# (name, version) -> (method schema, enclosures schema, static checks of the typed predicate)
UPPER = {
    ("lemma-c5-rounding", 1): (SCHEMA["method"], SCHEMA["enclosures"], _check_upper_v1),
    ("lemma-c5-rounding", 2): (METHOD_V2, ENCLOSURES_V2, _check_upper_v2),
    (gs.NAME, 1): (gs.METHOD, gs.ENCLOSURES, _check_gaussian_shift),
}
LOWER = {
    ("data-processing-lower", 1): (SCHEMA_V2["lower"]["method"], SCHEMA_V2["lower"]["enclosures"], _check_lower_v1),
    ("data-processing-lower", 2): (LOWER_METHOD_V2, SCHEMA_V2["lower"]["enclosures"],
                                   lambda p: check_method_v2(p["lower"]["method"], p["claim"], "lower-method-invalid")),
    (gs.NAME, 1): (gs.METHOD, gs.ENCLOSURES,
                   lambda p: gs.check(p["lower"]["method"], p["claim"], "lower-method-invalid")),
}
UNKNOWN_UPPER = "is not lemma-c5-rounding v1 or v2 or gaussian-shift v1"
UNKNOWN_LOWER = "is not data-processing-lower v1 or v2 or gaussian-shift v1"


def schema(raw) -> dict:
    """The exact schema of a v3 predicate, chosen by the raw claim's scheme and the methods'
    names and versions (which must then have their own schema's types)."""
    claim, method, lower = _get(raw, "claim"), _get(raw, "method"), _get(raw, "lower")
    scheme = _get(claim, "scheme")
    if isinstance(claim, dict) and "scheme" in claim and scheme not in SCHEMES:
        raise Reject("claim-scheme", f"claim.scheme {scheme!r} is not one of {sorted(SCHEMES)}")
    sch = {**SCHEMA, "claim": CLAIM_FIXED_BINS if scheme == FIXED_BINS else CLAIM}
    version = (_get(method, "name"), _get(method, "version"))
    if isinstance(method, dict) and version not in UPPER:
        raise Reject("method-unknown", f"method {version[0]!r} v{version[1]} {UNKNOWN_UPPER}")
    method_schema, enclosures_schema, _ = UPPER.get(version, UPPER[("lemma-c5-rounding", 1)])
    sch.update(method=method_schema, enclosures=enclosures_schema)
    if version == ("lemma-c5-rounding", 1) and isinstance(method, dict) and "above_cap" in method:
        sch.update(method=METHOD_V1_MOVED, enclosures=ENCLOSURES_V1_MOVED)
    if version == ("lemma-c5-rounding", 1) and isinstance(method, dict) and "band_low" in method:
        banded = _with_band(sch["method"], sch["enclosures"])
        sch.update(method=banded[0], enclosures=banded[1])
    if version == ("lemma-c5-rounding", 1) and isinstance(method, dict) and (
            "tail_factor" in method or "tail_splits" in method):  # method-v2.md §9: both keys or neither
        sch.update(method={**sch["method"], **TWO_SCALE})
    if version == ("lemma-c5-rounding", 2) and isinstance(method, dict) and "level_bits" in method:
        sch.update(method={**sch["method"], **LEVELS})  # method-v2.md §10
    if isinstance(raw, dict) and "lower" in raw:
        lv = (_get(_get(lower, "method"), "name"), _get(_get(lower, "method"), "version"))
        if isinstance(_get(lower, "method"), dict) and lv not in LOWER:
            raise Reject("lower-method-unknown", f"lower method {lv[0]!r} v{lv[1]} {UNKNOWN_LOWER}")
        method_schema, enclosures_schema, _ = LOWER.get(lv, LOWER[("data-processing-lower", 1)])
        if lv == ("data-processing-lower", 1) and "band_low" in _get(lower, "method"):
            method_schema = _with_band(method_schema)
        lm = _get(lower, "method")
        if lv == ("data-processing-lower", 1) and isinstance(lm, dict) and ("tail_factor" in lm or "tail_splits" in lm):
            method_schema = {**method_schema, **TWO_SCALE}  # method-v2.md §9: both keys or neither
        if lv == ("data-processing-lower", 2) and isinstance(lm, dict) and "level_bits" in lm:
            method_schema = {**method_schema, **LEVELS}  # method-v2.md §10
        sch["lower"] = {**SCHEMA_V2["lower"], "method": method_schema, "enclosures": enclosures_schema}
        if isinstance(lower, dict) and "resolution" in lower:  # two-sided.md §1: optional in v3
            sch["lower"] = {**sch["lower"], "resolution": D}
    rows = [k for k in ("privacy", "tpr") if isinstance(raw, dict) and k in raw]
    if len(rows) == 1:
        raise Reject("schema-missing-field", f"predicate has {rows[0]} without "
                     f"{({'privacy', 'tpr'} - set(rows)).pop()} (the rows go together)")
    for k in rows:
        sch[k] = SCHEMA_V2[k]
    if isinstance(raw, dict) and "rows_not_certified" in raw:  # two-sided.md §4: rows left out, with reasons
        if not rows:
            raise Reject("schema-missing-field", "predicate has rows_not_certified without privacy and tpr")
        sch["rows_not_certified"] = {"privacy": Rows(S), "tpr": Rows(S)}
    return sch


def typed(raw) -> dict:
    return typed_as(raw, schema(raw), "predicate")


def check_v3(p: dict) -> None:
    """Static checks of a typed v3 predicate (before any replay)."""
    m = p["method"]
    check_claim(p["claim"])
    UPPER[(m["name"], m["version"])][2](p)
    if "lower" in p:
        lm = p["lower"]["method"]
        LOWER[(lm["name"], lm["version"])][2](p)
        check_lower(p)
    if "privacy" in p:
        check_rows(p)


def check_claim(c: dict) -> None:
    """method-v2.md §3: mechanism and statement of the scheme; fixed bins: E = ceil(iterations/M)."""
    mechanism, statement = SCHEMES[c["scheme"]]
    if c["mechanism"] != mechanism or c["adjacency"] != ADJACENCY:
        raise Reject("claim-mechanism", f"mechanism/adjacency {c['mechanism']!r}/{c['adjacency']!r} do not "
                     f"match scheme {c['scheme']!r}")
    if c["statement"] != statement:
        raise Reject("claim-statement", f"claim.statement is not the statement of scheme {c['scheme']!r}")
    if c["steps"] < 1 or c["epochs"] < 1 or c["sigma"] <= 0 or not 0 < c["target"] < 1:
        raise Reject("claim-invalid", "need steps >= 1, epochs >= 1, sigma > 0, 0 < target < 1")
    if c["scheme"] == FIXED_BINS and not (c["iterations"] >= 1 and c["epochs"] == -(-c["iterations"] // c["steps"])):
        raise Reject("claim-iterations", f"fixed bins need iterations >= 1 and epochs = ceil(iterations/steps); got "
                     f"iterations {c['iterations']}, steps {c['steps']}, epochs {c['epochs']}")


def check_method_v2(m: dict, c: dict, code: str) -> None:
    """method-v2.md §2 (parameters) for the upper method, §4 for the lower one (no trim_shift)."""
    n, yb, T = m["mantissa_bits"], m["y_mantissa_bits"], m["top_octave"]
    bad = []
    if not (1 <= n <= 24 and all(0 <= b <= n for b in yb) and len(yb) <= T <= 200):
        bad.append("need 1 <= mantissa_bits <= 24, 0 <= y_mantissa_bits[k] <= mantissa_bits and "
                   "len(y_mantissa_bits) <= top_octave <= 200")
    if not (m["h"] > 0 and m["eta"] > 0 and m["k_minus"] < 0 <= m["k_top"] and m["k_minus"] < m["k_plus"]):
        bad.append("need h > 0, eta > 0, k_minus < 0 <= k_top, k_minus < k_plus")
    if not (m["trim"] <= fmpq(1, 1000) and ("trim_shift" not in m or m["trim_shift"] <= 100)):
        bad.append("need 0 <= trim <= 0.001, 0 <= trim_shift <= 100")
    if not (32 <= m["prec"] <= 4096 and 32 <= m["fixed_point_bits"] <= 1024):
        bad.append("need 32 <= prec <= 4096, 32 <= fixed_point_bits <= 1024")
    if not bad and m["cap"] != 2 ** (len(yb) + n) * m["h"]:
        bad.append(f"cap must be 2^(K+1) N h = {2 ** (len(yb) + n) * m['h']}")
    lb = m.get("level_bits")
    if not bad and lb is not None and not (
            len(lb) == c["steps"].bit_length() and max(yb) <= lb[0] and lb[-1] == n
            and all(a <= b for a, b in zip(lb, lb[1:]))):
        bad.append(f"level_bits must be {c['steps'].bit_length()} integers (floor(log2 M) + 1) with "
                   "max(y_mantissa_bits) <= level_bits[0] <= ... <= level_bits[-1] = mantissa_bits")
    if bad:
        raise Reject(code, "; ".join(bad))
    E = 1 if c["scheme"] == FIXED_BINS else c["epochs"]
    work = {"lattice points": 2 ** (n + 1) * (T + 1), "grid points": sum(2**b for b in yb) + 2**yb[0],
            "log-grid cells": m["k_plus"] - m["k_minus"],
            "epoch product length": min(m["k_top"], E * m["k_plus"]) - E * m["k_minus"]}
    for k, v in work.items():
        if v > LIMITS_V2[k] or c["steps"] > 10**7 or c["epochs"] > 10**5:
            raise Reject("method-too-expensive", f"{k} {v} or M, E beyond the verifier's limits")
    if m["eta"] > 1:  # cell edges M e^{j eta}/h are integers of about 1.44 j eta bits
        raise Reject("method-too-expensive", f"eta {m['eta']} > 1")
