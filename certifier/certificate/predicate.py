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
from certifier.certificate.claim import SCHEME_RULES, Claim
from certifier.params import decimal_str

SEARCH_RESOLUTION = "1e-6"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


# (lower side present, rows present) -> the least format recording them: v2 has both or neither
PARTS_FORMAT = {(False, False): 1, (True, True): 2, (True, False): 3, (False, True): 3}


def format_version(claim: Claim, method_json: dict, low: dict | None, rows) -> int:
    """The least format version that expresses this certificate: the largest of what its scheme, its
    methods (certifier.methods) and its optional parts each need."""
    from certifier.methods import LOWER, UPPER, of_json
    needs = [SCHEME_RULES[claim.scheme].least_format, of_json(method_json, UPPER).least_format,
             PARTS_FORMAT[(low is not None, rows is not None)]]
    needs += [of_json(low["method"], LOWER).least_format] if low is not None else []
    return max(needs)


def build(claim: Claim, method_json: dict, res, low: dict | None, rows, tv, tv_err) -> dict:
    """The predicate for a successful upper bound `res` (its method's JSON `method_json`), with the optional
    lower side (the `lower` object: sigma_low, method, tv_lower, enclosures) and (privacy, tpr) rows."""
    from certifier.numerics.closed_form import closed_form_sigma
    version = format_version(claim, method_json, low, rows)
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
                     "closed_form_sigma": cfs, "search_resolution": SEARCH_RESOLUTION},
        "software": {"sigmacert": __version__, "python-flint": flint.__version__, "flint": flint.__FLINT_VERSION__},
        "issued_at": _now(),
        "timings": {k: res.timings[k] for k in ("step_i", "step_ii", "step_iii", "step_iv", "total")},
    }
    if low is not None:
        pred["lower"] = {"sigma_low": low["sigma_low"], "target": decimal_str(claim.target),
                         "method": low["method"], "tv_lower": low["tv_lower"], "enclosures": low["enclosures"]}
    if rows is not None:
        pred["privacy"], pred["tpr"] = rows
    return pred
