"""Format v2 (docs/two-sided.md): the v1 predicate plus `lower` (data-processing-lower v1) and the
privacy and TPR rows, all three."""
from __future__ import annotations

from flint import arb, fmpq

from .schema import BALLS, SD, B, D, I, Rows, S, is_int, typed
from .strict import Reject, decimal, working_prec
from .v1 import SCHEMA, check_claim_and_method, schedule_checks

PREDICATE_TYPE_V2 = "https://sigmacert.dev/tv-certificate/v2"
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


def typed_v2(raw) -> dict:
    return typed(raw, SCHEMA_V2, "predicate")


def check_format_v2(p) -> None:
    """The v1 claim and method rules, then the v2 additions (before any replay)."""
    check_claim_and_method(p)
    check_v2(p)


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
    bad = schedule_checks(m, c["steps"])
    if not (m["h"] > 0 and m["cap"] > 0 and is_int(m["cap"] / m["h"]) and m["eta"] > 0
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
        if not (grid > 0 and is_int(row["epsilon"] / grid) and row["epsilon"] <= 100):
            raise Reject("privacy-grid", f"epsilon {row['epsilon']} at delta {d} is not a multiple of "
                         f"epsilon_grid {grid} in [0, 100]")
        with working_prec(400):
            if any(row[k].upper() > arb(decimal(d, "delta")) for k in ("delta_qp", "delta_pq")):
                raise Reject("privacy-inconsistent", f"a recorded delta at epsilon {row['epsilon']} exceeds {d}")
    if any(abs(r["epsilon"]) > 100 for r in p["tpr"].values()):
        raise Reject("tpr-grid", "a TPR row's epsilon is outside [-100, 100]")
