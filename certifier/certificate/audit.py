"""The audit certificate's predicate (format v6, docs/certificate.md "Format v6"; docs/audit.md).

The claim as stated (the run, its kind and target, the v4 statement of that kind, and where the claim comes
from), the verdict and the certified interval, and both sides at the claimed sigma: the upper side as v4
records it (`method`, `enclosures`, `bound` the grid's TV bound; `upper.value` the kind's upper value at the
claim, tpr also `upper.epsilon`) and `lower` (the lower method, its enclosures, `tv_lower` and the kind's lower
`value` at the claim). The least format recording it: no
earlier format has a verdict, a lower side at sigma itself or an upper side that need not meet the target.
"""
from __future__ import annotations

import datetime as _dt

import flint

from certifier import __version__
from certifier.certificate.stages import STAGES_FORMAT, stages_claim_json

VERSION = 6


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def build(outcome) -> dict:
    """The v6 predicate of a certifier.audit.AuditOutcome."""
    st = outcome.stated
    run = st.run.pick(lambda m, e, scheme: st.claim().to_json(4),         # v4's claim of a block
                      lambda stages: stages_claim_json(st.claim(), STAGES_FORMAT))   # v5's claim of the stages
    claim = {**run, "source": st.source}
    audit = {"verdict": outcome.verdict, "quantity": outcome.quantity,
             "interval": {"lower": outcome.interval[0], "upper": outcome.interval[1]}}
    if outcome.fix_sigma is not None:
        audit["fix_sigma"] = outcome.fix_sigma
    up = dict(outcome.upper)
    upper = {k: up[k] for k in ("value", "epsilon") if k in up}
    return {
        "claim": claim,
        "audit": audit,
        "method": up["method"],
        "enclosures": up["enclosures"],
        "bound": up["bound"],
        "upper": upper,
        "lower": dict(outcome.lower),
        "numerics": {"value": f"{outcome.numerical:.12g}", "error": f"{outcome.numerical_error:.3g}"},
        "software": {"sigmacert": __version__, "python-flint": flint.__version__, "flint": flint.__FLINT_VERSION__},
        "issued_at": _now(),
        "timings": {k: str(v) for k, v in outcome.seconds.items()},
    }
