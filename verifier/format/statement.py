"""in-toto Statement v1 and the tv-certificate/v1 predicate: exact schema (spec §2-§3)."""
from __future__ import annotations

import hashlib
import re

from flint import arb, fmpq

from .strict import Reject, canonical, decimal, load_json, working_prec

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://sigmacert.dev/tv-certificate/v1"
PREDICATE_TYPE_V2 = "https://sigmacert.dev/tv-certificate/v2"
PREDICATE_TYPE_V3 = "https://sigmacert.dev/tv-certificate/v3"
MECHANISM, ADJACENCY = "dp-sgd/random-allocation", "zero-out"
STATEMENT = ("TV(P_M^E, Q_M^E) <= target, so every membership-inference test "
             "has accuracy <= 1/2 + target/2")
D, I, B, S, N, SD = "decimal", "int", "ball", "str", "number", "signed decimal"
BALLS = lambda *names: {n: B for n in names}
SCHEMA = {
    "claim": {"mechanism": S, "adjacency": S, "steps": I, "epochs": I, "sigma": D,
              "target": D, "statement": S},
    "method": {"name": S, "version": I, "h": D, "tail_start": D, "tail_step": D, "cap": D,
               "truncation": D, "lattice_schedule": [I], "eta": D, "k_minus": I,
               "k_plus": I, "prec": I, "fixed_point_bits": I, "trim": D},
    "enclosures": {"O": B, "mass": BALLS("step_i", "step_ii", "step_iii", "step_iv"),
                   "deleted": BALLS("cap", "truncation", "trim", "log_grid", "fixed_point")},
    "bound": D,
    "numerics": {"tv_exact": S, "tv_error": S, "closed_form_sigma": S, "search_resolution": S},
    "software": {"sigmacert": S, "python-flint": S, "flint": S},
    "issued_at": S,
    "timings": {"step_i": N, "step_ii": N, "step_iii": N, "step_iv": N, "total": N},
}


class Rows:  # an object whose keys are checked later (check_v2) and values follow `row`
    def __init__(self, row):
        self.row = row


SCHEMA_V2 = {**SCHEMA,  # docs/two-sided.md
             "lower": {"sigma_low": D, "target": D,
                       "method": {"name": S, "version": I, "h": D, "cap": D, "eta": D, "b_min": I,
                                  "b_max": I, "lattice_schedule": [I], "prec": I,
                                  "fixed_point_bits": I, "trim": D},
                       "tv_lower": D, "enclosures": BALLS("W_A", "U_A", "deleted_p")},
             "privacy": {"epsilon_grid": D,
                         "epsilon_at_delta": Rows({"epsilon": D, "delta_qp": B, "delta_pq": B})},
             "tpr": Rows({"tpr": D, "epsilon": SD})}  # the minimising epsilon may be negative
DELTAS, ALPHAS = ("1e-05", "1e-06"), ("0.1", "0.01", "0.001")
MAX_RADIUS = arb(2) ** -40  # docs/certificate.md §3: every recorded ball is this narrow


def _typed(v, t, path):
    """Check v against schema t; return it with decimals as fmpq and balls as arb."""
    if isinstance(t, Rows):
        if not isinstance(v, dict):
            raise Reject("schema-type", f"{path} must be an object")
        return {k: _typed(x, t.row, f"{path}.{k}") for k, x in v.items()}
    if isinstance(t, dict):
        if not isinstance(v, dict):
            raise Reject("schema-type", f"{path} must be an object")
        for k in v:
            if k not in t:
                raise Reject("schema-unknown-field", f"unknown field {path}.{k}")
        for k in t:
            if k not in v:
                raise Reject("schema-missing-field", f"missing field {path}.{k}")
        return {k: _typed(v[k], t[k], f"{path}.{k}") for k in t}
    if isinstance(t, list):
        if not isinstance(v, list) or not v:
            raise Reject("schema-type", f"{path} must be a non-empty list")
        return [_typed(x, t[0], f"{path}[{i}]") for i, x in enumerate(v)]
    ok = {I: isinstance(v, int) and not isinstance(v, bool), S: isinstance(v, str),
          N: isinstance(v, (int, float)) and not isinstance(v, bool), D: True, SD: True, B: isinstance(v, str)}[t]
    if not ok:
        raise Reject("schema-type", f"{path} must be of type {t}, got {type(v).__name__}")
    if t == D:
        return decimal(v, path)
    if t == SD:
        neg = isinstance(v, str) and v.startswith("-")
        return -decimal(v[1:], path) if neg else decimal(v, path)
    if t == B:
        x = None
        if len(v) <= 256 and not re.search(r"[eE][+-]?[0-9]{5}", v):  # no huge exponents
            try:
                with working_prec(400):  # parse recorded balls without widening them
                    x = arb(v)
            except (ValueError, TypeError):
                pass
        if x is None or not x.is_finite():
            raise Reject("schema-type", f"{path} is not a finite arb ball string: {v!r}")
        return x
    return v


def _is_int(q: fmpq) -> bool:
    return q.q == 1


def parse_statement(payload: bytes, subject_digest: str | None = None):
    """Parse and check the Statement; return (raw predicate, typed predicate)."""
    st = load_json(payload, "payload")
    if not isinstance(st, dict) or set(st) != {"_type", "subject", "predicateType", "predicate"}:
        raise Reject("statement-fields", "Statement must have exactly _type, subject, predicateType, predicate")
    if payload not in (canonical(st), canonical(st, ascii_only=True)):
        raise Reject("payload-not-canonical", "payload is not canonical JSON (sorted keys, no spaces)")
    if st["_type"] != STATEMENT_TYPE:
        raise Reject("statement-type", f"_type {st['_type']!r} != {STATEMENT_TYPE!r}")
    if st["predicateType"] not in (PREDICATE_TYPE, PREDICATE_TYPE_V2, PREDICATE_TYPE_V3):
        raise Reject("predicate-type", f"unknown predicateType {st['predicateType']!r}")
    subj = st["subject"]
    if (not isinstance(subj, list) or not subj or any(
            not isinstance(s, dict) or set(s) != {"name", "digest"} or not isinstance(s["name"], str)
            or not isinstance(s["digest"], dict) or set(s["digest"]) != {"sha256"}
            or not isinstance(s["digest"]["sha256"], str)
            or not re.fullmatch(r"[0-9a-f]{64}", s["digest"]["sha256"]) for s in subj)):
        raise Reject("statement-fields", "subject must be a list of {name, digest: {sha256: 64 hex}}")
    raw = st["predicate"]
    v2, v3 = st["predicateType"] == PREDICATE_TYPE_V2, st["predicateType"] == PREDICATE_TYPE_V3
    if v3:
        from .v3 import typed  # format v3 (docs/method-v2.md §3); it builds on this module
        pred = typed(raw)
    else:
        pred = _typed(raw, SCHEMA_V2 if v2 else SCHEMA, "predicate")
    digests = {s["digest"]["sha256"] for s in subj}
    if subject_digest is not None and subject_digest not in digests:
        raise Reject("subject-digest", "no subject has the SHA-256 of the given --subject file")
    claim_digest = hashlib.sha256(canonical(raw["claim"])).hexdigest()
    for s in subj:
        if s["name"] == "claim" and s["digest"]["sha256"] != claim_digest:
            raise Reject("subject-digest", "subject 'claim' digest != SHA-256 of canonical predicate.claim")
    check_balls(pred)
    if v3:
        from .v3 import check_v3
        check_v3(pred)
        return raw, pred
    check_claim_and_method(pred)
    if v2:
        check_v2(pred)
    return raw, pred


def _balls(x, path):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _balls(v, f"{path}.{k}")
    elif isinstance(x, arb):
        yield path, x


def check_balls(p):
    """Every recorded ball is a mass or a probability: radius <= 2^-40 and a point in [0, 1].
    `bound` is at least the upper end of 1 - O (certificate.md §3)."""
    for path, x in _balls(p, "predicate"):
        if x.rad() > MAX_RADIUS:
            raise Reject("enclosure-too-wide", f"{path} = {x.str(5, radius=True)} has radius above 2^-40")
        if x < 0 or x > 1:
            raise Reject("enclosure-out-of-range", f"{path} = {x.str(5, radius=True)} is outside [0, 1]")
    e = p["enclosures"]
    with working_prec(400):
        tv, what = (e["TV"], "TV") if "TV" in e else (1 - e["O"], "1 - O")  # gaussian-shift records TV
        if tv.upper() > arb(p["bound"]):
            raise Reject("bound-inconsistent", f"recorded bound {p['bound']} is below the upper end of {what} "
                         f"from the recorded enclosures ({tv.str(20, radius=True)})")


def _common(m, M):
    """Checks shared by the upper and the lower method: lattice schedule, precision, trim."""
    g, bad = m["lattice_schedule"], []
    if len(g) != M.bit_length() or g[0] != 1 or g[-1] > 2**20 or any(b < a or b % a for a, b in zip(g, g[1:])):
        bad.append("lattice_schedule needs floor(log2 M)+1 entries, g_0 = 1, each a multiple "
                   "of the previous, at most 2^20")
    if not (8 <= m["prec"] <= 4096 and 8 <= m["fixed_point_bits"] <= 1024 and m["trim"] < 1):
        bad.append("need 8 <= prec <= 4096, 8 <= fixed_point_bits <= 1024, trim < 1")
    return bad


def check_v2(p):
    """Static checks of the v2 additions (before any replay)."""
    check_lower_v1(p)
    check_lower(p)
    check_rows(p)


def check_lower_v1(p):
    """The lower method v1 (docs/two-sided.md §1)."""
    c, m = p["claim"], p["lower"]["method"]
    if m["name"] != "data-processing-lower" or m["version"] != 1:
        raise Reject("lower-method-unknown", f"lower method {m['name']!r} v{m['version']} is not "
                     "data-processing-lower v1")
    bad = _common(m, c["steps"])
    if not (m["h"] > 0 and m["cap"] > 0 and _is_int(m["cap"] / m["h"]) and m["eta"] > 0
            and m["b_min"] < m["b_max"]):
        bad.append("need h > 0, cap a positive multiple of h, eta > 0, b_min < b_max")
    if bad:
        raise Reject("lower-method-invalid", "; ".join(bad))


def check_lower(p):
    """The lower side's numbers against the claim and against each other (any lower method)."""
    c, lo = p["claim"], p["lower"]
    if not 0 < lo["sigma_low"] < c["sigma"]:
        raise Reject("lower-sigma-not-below", f"need 0 < sigma_low < sigma, got sigma_low "
                     f"{lo['sigma_low']} and sigma {c['sigma']}")
    if lo["target"] != c["target"]:
        raise Reject("lower-target", "lower.target differs from claim.target")
    if "resolution" in lo:  # two-sided.md §1: sigma_low = sigma - k res(sigma), k in {1, 2}
        res = lo["resolution"]
        if res != resolution_of(c["sigma"]) or lo["sigma_low"] not in (c["sigma"] - res, c["sigma"] - 2 * res):
            raise Reject("lower-resolution", f"need resolution = res(sigma) = {resolution_of(c['sigma'])} and "
                         f"sigma_low = sigma - k resolution (k = 1, 2); got resolution {res}, sigma_low "
                         f"{lo['sigma_low']}")
    if lo["tv_lower"] <= c["target"]:
        raise Reject("lower-recorded-not-above-target", f"recorded tv_lower {lo['tv_lower']} <= target")
    e = lo["enclosures"]
    with working_prec(400):
        low = e["TV"] if "TV" in e else e["W_A"] - e["U_A"] - e["deleted_p"]  # gaussian-shift: TV itself
        if low.lower() < arb(lo["tv_lower"]):
            raise Reject("lower-inconsistent", "tv_lower is above the lower end of the recorded enclosures")


def resolution_of(sigma: fmpq) -> fmpq:
    """res(sigma) of two-sided.md §5: 1e-6 below 10, else 10^(d - 6), d the number of integer digits."""
    if sigma < 10:
        return fmpq(1, 10**6)
    d = 2
    while sigma >= fmpq(10) ** d:
        d += 1
    return fmpq(10) ** (d - 6) if d >= 6 else fmpq(1, 10 ** (6 - d))


def check_rows(p):
    """The privacy and TPR rows: keys, grids, recorded deltas within their delta; a row may be left out
    only with a recorded reason (rows_not_certified, format v3)."""
    gone = p.get("rows_not_certified", {"privacy": {}, "tpr": {}})
    for name, rows, keys in (("privacy", p["privacy"]["epsilon_at_delta"], DELTAS), ("tpr", p["tpr"], ALPHAS)):
        if set(rows) - set(keys) or set(gone[name]) - set(keys):
            raise Reject(f"{name}-grid", f"{name} rows {sorted((set(rows) | set(gone[name])) - set(keys))} are "
                         f"not in {list(keys)}")
        if set(rows) & set(gone[name]):
            raise Reject("rows-not-certified-conflict", f"{name} rows {sorted(set(rows) & set(gone[name]))} are "
                         "both certified and recorded as not certified")
        if set(keys) - set(rows) - set(gone[name]):
            raise Reject("schema-missing-row", f"{name} rows {sorted(set(keys) - set(rows) - set(gone[name]))} are "
                         "missing (a row may be left out only with its reason in rows_not_certified)")
        if any(not r.strip() for r in gone[name].values()):
            raise Reject("rows-not-certified-reason", f"a {name} row is left out without a reason")
    grid = p["privacy"]["epsilon_grid"]
    for d, row in p["privacy"]["epsilon_at_delta"].items():
        if not (grid > 0 and _is_int(row["epsilon"] / grid) and row["epsilon"] <= 100):
            raise Reject("privacy-grid", f"epsilon {row['epsilon']} at delta {d} is not a multiple of "
                         f"epsilon_grid {grid} in [0, 100]")
        with working_prec(400):
            if any(row[k].upper() > arb(decimal(d, "delta")) for k in ("delta_qp", "delta_pq")):
                raise Reject("privacy-inconsistent", f"a recorded delta at epsilon {row['epsilon']} exceeds {d}")
    if any(abs(r["epsilon"]) > 100 for r in p["tpr"].values()):
        raise Reject("tpr-grid", "a TPR row's epsilon is outside [-100, 100]")


def check_claim_and_method(p):
    c, m = p["claim"], p["method"]
    if c["mechanism"] != MECHANISM or c["adjacency"] != ADJACENCY:
        raise Reject("claim-mechanism", f"mechanism/adjacency {c['mechanism']!r}/{c['adjacency']!r} not supported")
    if c["statement"] != STATEMENT:
        raise Reject("claim-statement", "claim.statement is not the v1 statement text")
    if c["steps"] < 1 or c["epochs"] < 1 or c["sigma"] <= 0 or not 0 < c["target"] < 1:
        raise Reject("claim-invalid", "need steps >= 1, epochs >= 1, sigma > 0, 0 < target < 1")
    if m["name"] != "lemma-c5-rounding" or m["version"] != 1:
        raise Reject("method-unknown", f"method {m['name']!r} v{m['version']} is not lemma-c5-rounding v1")
    h, ts, st, cap = m["h"], m["tail_start"], m["tail_step"], m["cap"]
    bad = []
    if not (h > 0 and 0 < ts <= cap and _is_int(ts / h) and _is_int(cap / h)):
        bad.append("need h > 0, 0 < tail_start <= cap, both multiples of h")
    elif ts < cap and not (st > 0 and _is_int(st / h) and _is_int((cap - ts) / st)):
        bad.append("need tail_step > 0 a multiple of h dividing cap - tail_start")
    if not (m["truncation"] > 0 and m["eta"] > 0 and m["k_minus"] < m["k_plus"]):
        bad.append("need truncation > 0, eta > 0, k_minus < k_plus")
    bad += _common(m, c["steps"])
    if bad:
        raise Reject("method-invalid", "; ".join(bad))
    if p["bound"] > c["target"]:
        raise Reject("bound-above-target", f"recorded bound {p['bound']} > target {c['target']}")
