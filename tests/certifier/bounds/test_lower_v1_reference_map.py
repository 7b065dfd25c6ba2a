"""Lower method v1's bucket map (c): the verifier replays the certifier's reference map first
(docs/two-sided.md §1 (c)), so its bound is the certifier's to within the replay slack (two-scale too), and the
certifier records its bound less that slack (docs/verifier.md, "What is accepted exactly").
At (2, 10^4, 0.001) the verifier's index-by-index map alone replayed 4.4e-12 below the certifier's
bound, more than the 10-digit rounding of tv_lower left, and a correct certificate was rejected."""
from __future__ import annotations

import base64
import json

import pytest
from helpers import sign_and_verify

from certifier.bounds.lower_v1 import LowerV1, replay_slack
from certifier.certify import certify
from certifier.params import parse_decimal

D = lambda s: parse_decimal("x", s)  # noqa: E731


# (100, 100, 0.1): a two-scale lower map whose tail reaches buckets below the body's range; the body's
# indices before its first reliable one are in the body's least bucket (the certifier clamps each part to
# its own range), not in b_min: the verifier's reference map put them in b_min and replayed 2.7e-9 lower
@pytest.fixture(scope="module", params=[(4, 3, "0.2"), (2, 40, "0.01"), (16, 2, "0.05"), (100, 100, "0.1")])
def cell(request):
    M, E, lam = request.param
    out = certify(M, E, D(lam), two_sided=True, method="v1")
    assert out.success and out.two_sided
    lo = out.predicate["lower"]
    assert (lo["method"]["name"], lo["method"]["version"]) == ("data-processing-lower", 1)
    assert M < 100 or lo["method"].get("tail_factor", 0) >= 2          # the two-scale cell is one
    return M, E, out


def _replay(predicate):
    """The verifier's replay of the lower side, under its reference map (and `other`, index by index)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from certifier.certificate.envelope import sign_certificate
    from verifier import methods as vm
    from verifier.core import parse_statement
    env = json.loads(sign_certificate(predicate, Ed25519PrivateKey.generate()))
    _, p = parse_statement(base64.b64decode(env["payload"]), None)
    c, lo = p["claim"], p["lower"]
    return vm.lower(lo["method"], c).replay(c, lo["sigma_low"], lo["method"])


def test_the_reference_map_replays_the_certifiers_bound_to_the_slack(cell):
    M, E, out = cell
    lo = out.predicate["lower"]
    slack = replay_slack(M, E, LowerV1.from_json(lo["method"]))
    enc = lo["enclosures"]
    from flint import arb
    ours = arb(enc["W_A"]) - arb(enc["U_A"]) - arb(enc["deleted_p"])   # the certifier's, before the slack
    lr = _replay(out.predicate)
    mine = arb(lr.bound.p) / arb(lr.bound.q)
    assert (ours - mine).abs_lower() <= arb(slack.p) / arb(slack.q)      # the same map: within the slack
    assert lr.bound >= D(lo["tv_lower"]) > D(out.target)
    # the certifier recorded its bound less the slack: a replay that lands up to the slack lower still reaches it
    assert D(lo["tv_lower"]) <= D(str(ours.mid().str(30, radius=False))) - slack + D("1e-25")
    assert lr.other is not None and lr.other().other is None     # the index-by-index map, tried once


def test_the_verifier_reaches_up_to_the_better_map_and_no_further(cell):
    """Any fixed map gives a valid bound: a tv_lower up to the better of our two replays (and within the
    recorded enclosures) is accepted; one 1e-25 above is refused."""
    import copy

    from flint import arb

    from certifier.bounds.fixedpoint import round_down_sig
    M, E, out = cell
    lr = _replay(out.predicate)
    enc = out.predicate["lower"]["enclosures"]
    with_radius = (arb(enc["W_A"]) - arb(enc["U_A"]) - arb(enc["deleted_p"])).lower()
    best = max(lr.bound, lr.other().bound)
    top = min(best, D(with_radius.str(40, radius=False)) - D("1e-35"))
    p = copy.deepcopy(out.predicate)
    p["lower"]["tv_lower"] = round_down_sig(top, 30)
    assert D(p["lower"]["tv_lower"]) >= D(out.predicate["lower"]["tv_lower"])
    r = sign_and_verify(p)
    assert r.accepted, (r.reason, r.detail)
    p["lower"]["tv_lower"] = round_down_sig(best + D("1e-25"), 40)
    r = sign_and_verify(p)
    assert not r.accepted and r.reason in ("lower-replay-below-recorded", "lower-inconsistent"), (r.reason, r.detail)
