"""Lower method v2 for a target kind deletes by the replay's own trim rule (certifier.bounds.lower_v2,
replay_trims): its pmfs are then at most the independent replay's, so the recorded kind value is never
above the replayed one, and it is as tight as the replay (before, at (100, 10, eps 4) it was 2.7e-10
below, most of the lower margin). TV keeps the first rule (the same certificates)."""
from __future__ import annotations

import base64
import json

import pytest
from flint import fmpq
from helpers import sign_and_verify

from certifier import methods as mt
from certifier.bounds import lower_kinds
from certifier.bounds.lower_v2 import lower_bound_v2, method_from_json
from certifier.certify import certify
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.params import parse_decimal

D = lambda s: parse_decimal("x", s)
EPS = "4"


@pytest.fixture(scope="module")
def cell():
    out = certify(4, 3, D("0.001"), kind_name="dp", kind_params={"epsilon": EPS}, two_sided=True)
    assert out.success and out.two_sided
    lo = out.predicate["lower"]
    assert (lo["method"]["name"], lo["method"]["version"]) == ("data-processing-lower", 2)
    return out


def _replay(predicate):
    """The verifier's replay of the lower side (its pmfs in units 2^-(F+4))."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from certifier.certificate.envelope import sign_certificate
    from verifier import methods as vm
    from verifier.core import parse_statement
    env = json.loads(sign_certificate(predicate, Ed25519PrivateKey.generate()))
    _, p = parse_statement(base64.b64decode(env["payload"]), None)
    c, lo = p["claim"], p["lower"]
    return vm.lower(lo["method"], c).replay(c, lo["sigma_low"], lo["method"])


def test_the_recorded_kind_lower_value_is_the_replayed_one_to_its_rounding(cell):
    r = sign_and_verify(cell.predicate)
    assert r.accepted, (r.reason, r.detail)
    recorded, replayed = D(cell.bound_lower), D(r.derived["lower"])
    assert recorded <= replayed                               # the verifier's rule: its own >= the recorded
    assert replayed - recorded <= recorded * D("1e-9")        # 10 significant digits recorded, nothing lost


@pytest.fixture(scope="module")
def maps(cell):
    """(method, sigma_low, first rule's result, replay_trims' result) on the certificate's lower grid."""
    lo = cell.predicate["lower"]
    m, s_low = method_from_json(lo["method"]), D(lo["sigma_low"])
    t2 = 1 / (s_low * s_low)
    return m, s_low, lower_bound_v2(4, 3, t2, m), lower_bound_v2(4, 3, t2, m, replay_trims=True)


def test_replay_trims_dominate_the_replays_deletions_and_close_the_gap(cell, maps):
    _, _, first, tight = maps                                  # first: the TV rule, trim/2 per end
    eps = D(EPS)
    rep = _replay(cell.predicate)
    v_first, v_tight, v_rep = (lower_kinds.dp_lower(x.pmfs, eps) for x in (first, tight, rep))
    assert v_first <= v_tight <= v_rep                         # both valid: never above the replay
    assert v_rep - v_tight < D("1e-18")                        # floors only (2^-F against 2^-(F+4))
    assert v_rep - v_first > D("1e-13")                        # the first rule's extra deletions, times e^4
    deleted = lambda x: 1 - fmpq(sum(x.pmfs[0]), 2 ** x.pmfs[2])
    assert deleted(tight) >= deleted(rep)                      # we delete at least what the replay deletes
    assert deleted(first) > 4 * deleted(tight)
    assert D(cell.bound_lower) <= v_tight                      # what was recorded is the tight rule's value


def test_a_tv_claim_keeps_the_first_rule(cell, maps):
    m, s_low, first, tight = maps
    assert first.exact < tight.exact                           # the two rules differ at this cell
    tv_claim = Claim(RANDOM_ALLOCATION, 4, 3, D(cell.sigma), D("0.5"))
    kind_claim = Claim(RANDOM_ALLOCATION, 4, 3, D(cell.sigma), D("0.001"), kind=(("name", "dp"), ("epsilon", EPS)))
    assert mt.LOWER_V2.run(tv_claim, s_low, m).exact == first.exact
    assert mt.LOWER_V2.run(kind_claim, s_low, m).exact == tight.exact
