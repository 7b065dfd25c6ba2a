"""Audits of a claim about a run in stages at one shared sigma: verdicts and certified intervals against the
stages' numerics, the signed format-v6 certificate with the v5 claim and its replay, forgeries, bad input, the
bulk CSV's stages column."""
import json
import types

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import sigmacert
from certifier.certificate.envelope import sign_certificate
from certifier.errors import ParameterError
from certifier.numerics.stages import Stage
from certifier.numerics.stages_profile import exact_privacy_product
from sigmacert.audits.bulk import run_bulk
from verifier.core import verify_bytes

STAGES, SIGMA = "50x4,200x2", "1.330068"      # the exact shared sigma of (1, 1e-5)-DP for these stages
KEY = Ed25519PrivateKey.generate()


def _numerics(**kw):
    return exact_privacy_product([Stage(50, 4, SIGMA), Stage(200, 2, SIGMA)], check=False, **kw)


@pytest.fixture(scope="module")
def pair():
    return (sigmacert.audit(stages=STAGES, sigma=SIGMA, epsilon="1.01", delta="1e-5", key=KEY),
            sigmacert.audit(stages=STAGES, sigma=SIGMA, epsilon="0.99", delta="1e-5", key=KEY))


def test_dp_claims_hold_and_fail_with_an_interval_around_the_numerics(pair):
    holds, false = pair
    num = _numerics(deltas=[1e-5]).epsilon[1e-5].value
    assert holds.verdict == "HOLDS" and false.verdict == "FALSE"
    for a in pair:
        lo, hi = map(float, a.interval)
        assert lo < num < hi and a.relative_width <= 1e-3
        assert a.stages == ((50, 4), (200, 2)) and a.epochs == 6
        assert "stages 50x4,200x2" in a.claim and a.as_dict()["stages"] == [[50, 4], [200, 2]]
    assert float(false.fix_sigma) > float(SIGMA) and holds.fix_sigma is None
    assert [s for s in holds.predicate["claim"]["stages"]] == [{"steps": 50, "epochs": 4}, {"steps": 200, "epochs": 2}]
    assert "steps" not in holds.predicate["claim"] and holds.predicate["method"]["version"] == 2


def test_certificates_verify_and_forgeries_are_refused(pair):
    holds, false = pair
    for a in pair:
        res = verify_bytes(a.envelope, [KEY.public_key()])
        assert res.accepted and "stages 50x4,200x2" in res.detail, res.detail
    forged = [("verdict", "FALSE", holds, "audit-"), ("upper", str(holds.interval[0]), holds, "audit-interval"),
              ("stages", [{"steps": 50, "epochs": 4}, {"steps": 200, "epochs": 1}], holds, ""),
              ("stage sigma", None, holds, "claim-stages-sigma")]
    for what, value, a, code in forged:
        pred = json.loads(json.dumps(dict(a.predicate)))
        if what == "verdict":
            pred["audit"]["verdict"] = value
        elif what == "upper":
            pred["audit"]["interval"]["upper"] = value
        elif what == "stages":
            pred["claim"]["stages"] = value
        else:
            sigma = pred["claim"].pop("sigma")
            pred["claim"]["stages"] = [{**s, "sigma": sigma} for s in pred["claim"]["stages"]]
        res = verify_bytes(sign_certificate(pred, KEY), [KEY.public_key()])
        assert not res.accepted and res.reason.startswith(code), (what, res.reason, res.detail)


def test_tpr_interval_and_a_small_tv_run():
    """TPR at FPR 0.001 of the same run: the interval holds the numerical TPR; TV of a small run in stages: the
    interval holds the numerical TV and a claim 5 % below it is FALSE."""
    t = sigmacert.audit(stages=STAGES, sigma=SIGMA, fpr="0.001", tpr="0.0025", key=KEY)
    val = _numerics(fprs=[0.001]).tpr[0.001].value
    assert t.verdict == "HOLDS" and float(t.interval[0]) <= val <= float(t.interval[1])
    assert verify_bytes(t.envelope, [KEY.public_key()]).accepted
    tv = sigmacert.audit(stages="4x2,8x1", sigma="2", target="0.2")
    num = exact_privacy_product([Stage(4, 2, "2"), Stage(8, 1, "2")], check=False).tv.value
    assert float(tv.interval[0]) <= num <= float(tv.interval[1])
    assert tv.verdict == ("HOLDS" if num < 0.2 else "FALSE")
    low = sigmacert.audit(stages="4x2,8x1", sigma="2", target=f"{num * 0.95:.6f}")
    assert low.verdict == "FALSE"


@pytest.mark.parametrize("kw, msg", [
    (dict(stages=STAGES, steps=50, epochs=4), "either stages or steps"),
    (dict(stages=STAGES, scheme="fixed-bins"), "random allocation only"),
    (dict(stages="50x4@1.3,200x2@1.4"), "sigma"),
    (dict(stages="50x4,"), "stages must look like"),
])
def test_bad_stages(kw, msg):
    with pytest.raises(ParameterError, match=msg):
        sigmacert.audit(sigma=SIGMA, epsilon="1", delta="1e-5", **kw)


def test_bulk_stages_column(tmp_path):
    """The claims CSV's stages column (quoted with commas, or with semicolons) audits the run in stages."""
    csv = tmp_path / "claims.csv"
    csv.write_text('stages,sigma,epsilon,delta,source\n"50x4,200x2",1.330068,1.01,1e-5,quoted\n'
                   "50x4;200x2,1.330068,0.99,1e-5,semicolons\n")
    args = types.SimpleNamespace(claims=str(csv), out_dir=str(tmp_path / "out"), key=None, width="0.001",
                                 scheduler=None, json=True, quiet=True)
    assert run_bulk(args) == 0
    rows = json.loads((tmp_path / "out" / "index.json").read_text())["rows"]
    assert [r["verdict"] for r in rows] == ["HOLDS", "FALSE"]
    assert rows[0]["interval"] == rows[1]["interval"]


def test_report_of_an_audit_in_stages(pair):
    """The report of an audit of a run in stages: accepted, the verdict first, the stages in words and in the
    title, the interval on the profile."""
    from sigmacert.report import render
    false = pair[1]
    r = render(false.envelope, KEY.public_key())
    assert r.accepted and set(r.svgs) == {"profile-audit"}
    body = r.html[r.html.index("<body>"):]
    assert body.index(">FALSE<") < body.index("The claim: the run is (0.99, 0.00001)-differentially private")
    assert "a run in stages 50x4,200x2" in body and "stages 50x4,200x2" in r.html[:r.html.index("<body>")]
    lo, hi = false.interval
    assert f"[{lo}, {hi}]" in body
