"""The privacy rows' slack (docs/two-sided.md §2): two correct replays' hockey-stick bounds at eps differ by up
to e^eps times the slack of O, since both weigh the same masses by up to e^eps times O's weights.

Regression: at M=10, E=1, eps 20, delta 1e-12 (sigma 0.368175, method v2, F = 114) the certifier's delta_{Q||P}
at eps 12.3717 lay 3.8e-23 above the verifier's (F + 4 bits: finer floors at Lambda ~ e^12), beyond O's slack
5.1e-26 but well within e^12.37 times it; the verifier rejected a correct certificate (`privacy-mismatch`).
"""
from __future__ import annotations

import copy
import sys
from fractions import Fraction as Fr
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import arb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from verifier_fixtures import predicate_v2, sign_statement, statement_v2  # noqa: E402

from verifier import methods, verify_bytes  # noqa: E402
from verifier.format.schema import typed as typed_as  # noqa: E402
from verifier.format.strict import working_prec  # noqa: E402
from verifier.format.v1 import SCHEMA  # noqa: E402
from verifier.replay.slack import row_slack, upper_end  # noqa: E402


def _setup():
    p = predicate_v2()
    t = typed_as({k: p[k] for k in ("claim", "method", "enclosures")},
                 {k: SCHEMA[k] for k in ("claim", "method", "enclosures")}, "p")
    c, m = t["claim"], t["method"]
    entry = methods.upper(m, c)
    rp = entry.replay(c, m)
    tol, bad = entry.check(c, m, t["enclosures"], rp)
    assert not bad and tol > 0
    return p, entry, rp, m, tol


def _recorded_qp_below_replay(p, entry, rp, m, by: Fr):
    """p with the delta = 1e-5 row's delta_qp recorded `by` below our replay (a thin ball): a correct certifier
    with finer floors would record such a value."""
    q = copy.deepcopy(p)
    row = q["privacy"]["epsilon_at_delta"]["1e-05"]
    with working_prec(300):
        eps = Fr(row["epsilon"])
        dqp, _ = entry.deltas(rp, m)(typed_eps(eps))
        mid = Fr(int(upper_end(dqp).p), int(upper_end(dqp).q)) - by
        row["delta_qp"] = _ball(mid)
    return q, eps


def typed_eps(eps: Fr):
    from flint import fmpq
    return fmpq(eps.numerator, eps.denominator)


def _ball(x: Fr) -> str:
    with working_prec(300):
        return (arb(x.numerator) / x.denominator).str(40, radius=True)


def test_row_slack_scales_with_e_to_the_eps():
    p, entry, rp, m, tol = _setup()
    eps = Fr(p["privacy"]["epsilon_at_delta"]["1e-05"]["epsilon"])
    assert eps > 1                                         # the window (tol, e^eps tol) is wide
    s = row_slack(tol, typed_eps(eps))
    e = Fr(int(s.p), int(s.q)) / Fr(int(tol.p), int(tol.q))
    assert 2.7 ** float(eps) < e < 2.72 ** float(eps)
    assert row_slack(tol, typed_eps(Fr(0))) == tol


def test_a_recorded_delta_within_e_to_the_eps_times_the_slack_is_accepted():
    p, entry, rp, m, tol = _setup()
    key = Ed25519PrivateKey.generate()
    tol_f = Fr(int(tol.p), int(tol.q))
    q, eps = _recorded_qp_below_replay(p, entry, rp, m, 2 * tol_f)     # beyond O's slack, within e^eps of it
    r = verify_bytes(sign_statement(statement_v2(q), key), [key.public_key()])
    assert r.accepted, (r.reason, r.detail)
    s = row_slack(tol, typed_eps(eps))
    q, _ = _recorded_qp_below_replay(p, entry, rp, m, 3 * Fr(int(s.p), int(s.q)))   # beyond any correct replay
    r = verify_bytes(sign_statement(statement_v2(q), key), [key.public_key()])
    assert r.reason == "privacy-mismatch", (r.reason, r.detail)
