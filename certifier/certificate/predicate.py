"""The certificate's predicate (docs/certificate.md §3, docs/two-sided.md, docs/method-v2.md §3).

Format versions: v1 (upper bound, method lemma-c5-rounding v1, random allocation), v2 (v1 plus the
lower side and the privacy/TPR rows, all three), v3 (claim with `scheme`; method v1 or v2; the
lower side and the rows each optional). A certificate is written in the least version that
expresses it, so the cells v1 and v2 covered keep their format.
"""
from __future__ import annotations

import datetime as _dt

import flint

from certifier import __version__
from certifier.certificate.claim import RANDOM_ALLOCATION, Claim
from certifier.params import decimal_str
from certifier.resolution import FLOOR, sigma_resolution

SEARCH_RESOLUTION = "1e-6"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _resolution_text(sigma) -> str:
    """numerics.search_resolution: "1e-6" as every earlier certificate has it, else res(sigma) in decimals."""
    res = sigma_resolution(sigma)
    return SEARCH_RESOLUTION if res == FLOOR else decimal_str(res)


def format_version(claim: Claim, method_json: dict, low: dict | None, rows, missing: dict | None = None) -> int:
    """The least format version that expresses this certificate (v2 knows neither a sigma resolution other
    than 1e-6 nor rows left out with a reason)."""
    v1_method = method_json["name"] == "lemma-c5-rounding" and method_json["version"] == 1
    if claim.scheme != RANDOM_ALLOCATION or not v1_method or missing:
        return 3
    if low is not None and sigma_resolution(claim.sigma) != FLOOR:
        return 3
    if low is None and rows is None:
        return 1
    if low is not None and rows is not None and low["method"]["version"] == 1:
        return 2
    return 3


def build(claim: Claim, method_json: dict, res, low: dict | None, rows, tv, tv_err,
          missing: dict | None = None) -> dict:
    """The predicate for a successful upper bound `res` (its method's JSON `method_json`), with the optional
    lower side (the `lower` object: sigma_low, method, tv_lower, enclosures), (privacy, tpr) rows and the
    rows left out with their reasons (`missing`: {"privacy"|"tpr": {key: reason}}, format v3)."""
    from certifier.numerics.closed_form import closed_form_sigma
    version = format_version(claim, method_json, low, rows, missing)
    M, E = claim.pair()
    try:
        scale = claim.epochs ** 0.5 if E != claim.epochs else 1.0      # fixed bins: sigma of the pair x sqrt(E)
        cfs = f"{closed_form_sigma(M, E, float(claim.target)) * scale:.6f}"
    except (ValueError, ArithmeticError, OverflowError):
        cfs = "n/a"
    pred = {
        "claim": claim.to_json(version),
        "method": method_json,
        "enclosures": res.enclosures,
        "bound": res.bound,
        "numerics": {"tv_exact": "n/a" if tv is None else f"{tv:.12g}",
                     "tv_error": "n/a" if tv_err is None else f"{tv_err:.3g}",
                     "closed_form_sigma": cfs, "search_resolution": _resolution_text(claim.sigma)},
        "software": {"sigmacert": __version__, "python-flint": flint.__version__, "flint": flint.__FLINT_VERSION__},
        "issued_at": _now(),
        "timings": {k: res.timings[k] for k in ("step_i", "step_ii", "step_iii", "step_iv", "total")},
    }
    if low is not None and version >= 2:
        pred["lower"] = {"sigma_low": low["sigma_low"], "target": decimal_str(claim.target),
                         "method": low["method"], "tv_lower": low["tv_lower"], "enclosures": low["enclosures"]}
        if version >= 3:                     # two-sided.md §1: sigma_low = sigma - k resolution, k in {1, 2}
            pred["lower"]["resolution"] = decimal_str(sigma_resolution(claim.sigma))
    if rows is not None and version >= 2:
        pred["privacy"], pred["tpr"] = rows
        if missing and version >= 3:
            pred["rows_not_certified"] = {"privacy": missing.get("privacy", {}), "tpr": missing.get("tpr", {})}
    return pred
