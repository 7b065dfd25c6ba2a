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
from certifier.claim import SCHEME_RULES, Claim
from certifier.errors import NumericsUnreliableError
from certifier.methods import LOWER, UPPER, of_json
from certifier.numerics.schemes import closed_form_sigma_up
from certifier.params import decimal_str
from certifier.resolution import FLOOR, sigma_resolution

SEARCH_RESOLUTION = "1e-6"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


# (lower side present, rows present) -> the least format recording them: v2 has both or neither
PARTS_FORMAT = {(False, False): 1, (True, True): 2, (True, False): 3, (False, True): 3}


def _resolution_text(sigma) -> str:
    """numerics.search_resolution: "1e-6" as every earlier certificate has it, else res(sigma) in decimals."""
    res = sigma_resolution(sigma)
    return SEARCH_RESOLUTION if res == FLOOR else decimal_str(res)


def format_version(claim: Claim, method_json: dict, low: dict | None, rows, missing: dict | None = None) -> int:
    """The least format version that expresses this certificate: the largest of what its scheme, its
    methods (certifier.methods) and its optional parts each need (v2 knows neither a sigma resolution
    other than 1e-6 nor rows left out with a reason)."""
    needs = [SCHEME_RULES[claim.scheme].least_format, of_json(method_json, UPPER).least_format,
             PARTS_FORMAT[(low is not None, rows is not None)]]
    needs += [of_json(low["method"], LOWER).least_format] if low is not None else []
    needs += [3] if missing or (low is not None and sigma_resolution(claim.sigma) != FLOOR) else []
    needs += [4] if claim.kind else []           # a target kind other than tv (format v4)
    needs += [3] if "above_cap" in method_json else []   # method v1's optional key (method-v2.md §7)
    needs += [3] if "band_low" in method_json or (low is not None and "band_low" in low["method"]) else []  # §8
    needs += [3] if "tail_factor" in method_json or (low is not None and "tail_factor" in low["method"]) \
        else []                                   # method v1's two-scale partial sums (method-v2.md §9)
    return max(needs)


def build(claim: Claim, method_json: dict, res, low: dict | None, rows, tv, tv_err,
          missing: dict | None = None, kind_upper: dict | None = None) -> dict:
    """The predicate for a successful upper bound `res` (its method's JSON `method_json`), with the optional
    lower side (the `lower` object: sigma_low, method, tv_lower, enclosures), (privacy, tpr) rows and the
    rows left out with their reasons (`missing`: {"privacy"|"tpr": {key: reason}}, format v3). Format v4
    (a target kind other than tv) adds `upper` (kind_upper: `bound`, the kind's certified upper value; tpr
    also the `epsilon` it used), the lower side's `bound_lower`, and the kind's numerics (`value`, `error`;
    the TV ones are n/a)."""
    version = format_version(claim, method_json, low, rows, missing)
    try:  # Corollary 3.4 rounded up to 1e-6, the decimal every face prints
        cfs = "n/a" if claim.kind else str(closed_form_sigma_up(claim.steps, claim.epochs, claim.target, claim.scheme))
    except (ValueError, ArithmeticError, OverflowError, NumericsUnreliableError):
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
    if version >= 4:
        pred["numerics"].update({"tv_exact": "n/a", "tv_error": "n/a", "value": pred["numerics"]["tv_exact"],
                                 "error": pred["numerics"]["tv_error"]})
        pred["upper"] = dict(kind_upper)
    if low is not None:
        pred["lower"] = {"sigma_low": low["sigma_low"], "target": decimal_str(claim.target),
                         "method": low["method"], "tv_lower": low["tv_lower"], "enclosures": low["enclosures"]}
        if version >= 4:
            pred["lower"]["bound_lower"] = low["bound_lower"]
        if version >= 3:                     # two-sided.md §1: sigma_low = sigma - k resolution, k in {1, 2}
            pred["lower"]["resolution"] = decimal_str(sigma_resolution(claim.sigma))
    if rows is not None:
        pred["privacy"], pred["tpr"] = rows
        if missing and version >= 3:
            pred["rows_not_certified"] = {"privacy": missing.get("privacy", {}), "tpr": missing.get("tpr", {})}
    return pred
