"""Format v6 (an audit of a claim at its sigma): spec-built certificates, accepted and forged.

The fixtures follow docs/certificate.md "Format v6" with the verifier's own replays only (no certifier code): the
upper side lemma-c5-rounding v1 and the lower side data-processing-lower v1, both at the claimed sigma; the kind's
values at the claim from the replayed b_k (Lemma C.5) and the replayed pmfs (data processing); the eps interval by
bisection on those bounds. Every forgery is re-signed with the test key, so only the checks or the replay refuse it.
"""
from __future__ import annotations

import copy
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import fmpq
from helpers import ball, dec
from verifier_fixtures import LOWER_METHOD, METHOD, canonical, sign_statement, smallest_step

from verifier import kinds, methods
from verifier.core import round_up, verify_bytes
from verifier.format.schema import typed
from verifier.format.strict import working_prec
from verifier.format.v3 import CLAIM as CLAIM_SCHEMA
from verifier.replay.slack import upper_end

KEY = Ed25519PrivateKey.generate()
STATEMENT_DP = ("max(delta_Q||P({e}), delta_P||Q({e})) <= target for the pair (P_M^E, Q_M^E), so the run is "
                "({e}, target)-DP under zero-out adjacency (Appendix B.4)")
RUN = {"mechanism": "dp-sgd/random-allocation", "adjacency": "zero-out", "steps": 12, "epochs": 3, "sigma": "1.5",
       "scheme": "random-allocation"}
M_UP = dict(METHOD, cap="64", truncation="192", k_minus=-3000, k_plus=3000)
DELTA, GRID = fmpq(1, 10**5), fmpq(1, 10**4)


def _replays():
    c = typed({**RUN, "target": "0.00001", "statement": "x"}, CLAIM_SCHEMA, "claim")
    from verifier.format.v1 import SCHEMA
    from verifier.format.v2 import SCHEMA_V2
    m = typed(M_UP, SCHEMA["method"], "m")
    lm = typed(LOWER_METHOD, SCHEMA_V2["lower"]["method"], "lm")
    up = methods.upper(M_UP, c)
    rp = up.replay(c, m)
    lr = methods.lower(LOWER_METHOD, c).replay(c, c["sigma"], lm)
    return rp, up.deltas(rp, m), lr


RP, DELTAS_AT, LR = _replays()


def _up(eps):
    with working_prec(200):
        return max(upper_end(d) for d in DELTAS_AT(eps))


def _low(eps):
    return kinds.dp_lower(LR.pmfs, eps)


# the certified interval: eps_hi the least grid point the upper side proves, eps_lo the largest the lower side does
J_HI = smallest_step(lambda j: _up(j * GRID) <= DELTA, 2**24)
J_LO = smallest_step(lambda j: not _low(j * GRID) > DELTA, 2**24) - 1
assert J_LO < J_HI


def audit_predicate(eps: str) -> dict:
    """The v6 predicate of the claim (eps, 1e-5)-DP at (12, 3, 1.5), its verdict from the replayed values."""
    e = fmpq(*[int(x) for x in (eps.replace(".", ""), 10 ** len(eps.split(".")[1]))])
    up, low = _up(e), _low(e)
    verdict = "HOLDS" if up <= DELTA else "FALSE" if low > DELTA else "TOO CLOSE"
    enc = {k: ({kk: ball(vv) for kk, vv in v.items()} if isinstance(v, dict) else ball(v))
           for k, v in RP.enclosures.items()}
    return {
        "claim": {**RUN, "target": "0.00001", "kind": {"name": "dp", "epsilon": eps},
                  "statement": STATEMENT_DP.format(e=eps), "source": "a model card"},
        "audit": {"verdict": verdict, "quantity": "epsilon",
                  "interval": {"lower": dec(J_LO * GRID), "upper": dec(J_HI * GRID)}},
        "method": copy.deepcopy(M_UP), "enclosures": enc, "bound": round_up(RP.bound, 10),
        "upper": {"value": round_up(up, 10)},
        "lower": {"method": copy.deepcopy(LOWER_METHOD), "tv_lower": round_up(LR.bound, 10, up=False),
                  "enclosures": {"W_A": ball(LR.W_A), "U_A": ball(LR.U_A), "deleted_p": ball(LR.deficit)},
                  "value": round_up(max(low, fmpq(0)), 10, up=False)},
        "numerics": {"value": "n/a", "error": "n/a"},
        "software": {"sigmacert": "0.1.0", "python-flint": "0.9.0", "flint": "3.6.0"},
        "issued_at": "2026-12-05T06:00:00Z",
        "timings": {"upper": "0.1", "lower": "0.1", "interval": "0.1", "total": "0.3"},
    }


def verify(pred: dict):
    st = {"_type": "https://in-toto.io/Statement/v1",
          "subject": [{"name": "claim", "digest": {"sha256": hashlib.sha256(canonical(pred["claim"])).hexdigest()}}],
          "predicateType": "https://sigmacert.dev/certificate/v6", "predicate": pred}
    return verify_bytes(sign_statement(st, KEY), [KEY.public_key()])


HOLDS_EPS = dec((J_HI + 100) * GRID)
FALSE_EPS = dec((J_LO - 100) * GRID)


@pytest.mark.parametrize("eps, verdict", [(HOLDS_EPS, "HOLDS"), (FALSE_EPS, "FALSE")])
def test_spec_built_audit_accepted(eps, verdict):
    p = audit_predicate(eps)
    assert p["audit"]["verdict"] == verdict
    res = verify(p)
    assert res.accepted, res.detail
    assert verdict in res.detail


def test_too_close_accepted_and_forged_verdicts_refused():
    """A claim inside the interval: TOO CLOSE is what the replay gives; HOLDS or FALSE for it is refused."""
    inside = dec(((J_LO + J_HI) // 2) * GRID)
    p = audit_predicate(inside)
    if p["audit"]["verdict"] != "TOO CLOSE":
        pytest.skip("the grid's interval has no point that neither side decides")  # pragma: no cover
    assert verify(p).accepted
    for forged in ("HOLDS", "FALSE"):
        q = copy.deepcopy(p)
        q["audit"]["verdict"] = forged
        res = verify(q)
        assert not res.accepted and res.reason.startswith("audit-"), res.reason


def test_forged_verdict_refused():
    p = audit_predicate(HOLDS_EPS)
    p["audit"]["verdict"] = "FALSE"
    res = verify(p)
    assert not res.accepted and res.reason == "audit-false-not-above-claim"
    p["audit"]["verdict"] = "TOO CLOSE"
    assert verify(p).reason == "audit-verdict-mismatch"


def test_false_whose_lower_side_does_not_exceed_the_claim_refused():
    """A FALSE verdict with a forged lower value above delta: the replay's lower value is far below it."""
    p = audit_predicate(HOLDS_EPS)
    p["audit"]["verdict"] = "FALSE"
    p["lower"]["value"] = "0.00002"
    p["upper"]["value"] = "0.00003"
    res = verify(p)
    assert not res.accepted and res.reason in ("audit-lower-value-below", "audit-upper-value-exceeds"), res.reason


@pytest.mark.parametrize("end, shift, reason", [("upper", -20, "audit-interval-upper"),
                                                 ("lower", +20, "audit-interval-lower")])
def test_forged_interval_end_refused(end, shift, reason):
    p = audit_predicate(HOLDS_EPS)
    j = (J_HI if end == "upper" else J_LO) + shift
    p["audit"]["interval"][end] = dec(j * GRID)
    res = verify(p)
    assert not res.accepted and res.reason == reason, (res.reason, res.detail)


def test_one_step_narrower_interval_refused():
    """The ends are the tightest on the grid: one step inward on either side is not proven."""
    for end, j in (("upper", J_HI - 1), ("lower", J_LO + 1)):
        p = audit_predicate(HOLDS_EPS)
        p["audit"]["interval"][end] = dec(j * GRID)
        assert not verify(p).accepted


def test_forged_upper_value_refused():
    p = audit_predicate(HOLDS_EPS)
    p["upper"]["value"] = round_up(fmpq(1, 10**7), 10)        # below the replayed value (and the lower one)
    p["lower"]["value"] = "0"
    res = verify(p)
    assert not res.accepted and res.reason == "audit-upper-value-exceeds"


def test_statement_and_quantity_checked():
    p = audit_predicate(HOLDS_EPS)
    p["claim"]["statement"] = "anything"
    assert verify(p).reason == "claim-statement"
    p = audit_predicate(HOLDS_EPS)
    p["audit"]["quantity"] = "tv"
    assert verify(p).reason == "audit-quantity"
    p = audit_predicate(HOLDS_EPS)
    p["audit"]["verdict"] = "MAYBE"
    assert verify(p).reason == "audit-verdict-unknown"
