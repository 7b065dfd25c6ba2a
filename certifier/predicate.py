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
from certifier.claim import RANDOM_ALLOCATION, Claim

SEARCH_RESOLUTION = "1e-6"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_version(claim: Claim, method_version: int, low: dict | None, rows) -> int:
    """The least format version that expresses this certificate."""
    if claim.scheme != RANDOM_ALLOCATION or method_version != 1:
        return 3
    if low is None and rows is None:
        return 1
    if low is not None and rows is not None and low["version"] == 1:
        return 2
    return 3


def _lower_json(low: dict, claim: Claim) -> dict:
    L = low["result"]
    if low["version"] == 1:
        method = L.method.to_json(claim.steps)
    else:
        from certifier.lower_ms import METHOD_NAME, METHOD_VERSION
        method = {**low["method"].to_json(), "name": METHOD_NAME, "version": METHOD_VERSION}
        method.pop("trim_shift")
    return {"sigma_low": low["sigma_low"], "target": claim.to_json(3)["target"], "method": method,
            "tv_lower": L.tv_lower, "enclosures": L.enclosures}


def build(claim: Claim, meth, res, low: dict | None, rows, tv, tv_err, total: float) -> dict:
    """The predicate for a successful upper bound `res` with method `meth` (plus optional lower side and rows)."""
    from certifier.closed_form import closed_form_sigma
    mv = 2 if hasattr(meth, "mantissa_bits") else 1
    version = format_version(claim, mv, low, rows)
    M, E = claim.pair()
    try:
        cfs = f"{closed_form_sigma(M, E, float(claim.target)) * (claim.epochs ** 0.5 if E != claim.epochs else 1):.6f}"
    except (ValueError, ArithmeticError, OverflowError):
        cfs = "n/a"
    pred = {
        "claim": claim.to_json(version),
        "method": meth.to_json() if mv == 2 else meth.to_json(claim.steps),
        "enclosures": res.enclosures,
        "bound": res.bound,
        "numerics": {"tv_exact": "n/a" if tv is None else f"{tv:.12g}",
                     "tv_error": "n/a" if tv_err is None else f"{tv_err:.3g}",
                     "closed_form_sigma": cfs, "search_resolution": SEARCH_RESOLUTION},
        "software": {"sigmacert": __version__, "python-flint": flint.__version__, "flint": flint.__FLINT_VERSION__},
        "issued_at": _now(),
        "timings": {k: res.timings[k] for k in ("step_i", "step_ii", "step_iii", "step_iv", "total")},
    }
    if low is not None and version >= 2:
        pred["lower"] = _lower_json(low, claim)
    if rows is not None and version >= 2:
        pred["privacy"], pred["tpr"] = rows
    return pred
