"""`sigmacert certify` and `sigmacert.certify` with the dp and tpr target kinds: the flags of `sigma`, one
kind per call, routing through sigmacert.api.issue to the certifier with the kind, one-line refusals.
Certificates of these kinds are format v4 (claim.kind), two-sided by default, and the independent
verifier accepts them.
"""
from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

import sigmacert
from certifier.certificate.keys import keygen
from certifier.numerics.targets import exact_privacy
from certifier.run import Run
from sigmacert import kinds
from sigmacert.cli import main

# small cells: the upper side takes a few seconds here
DP_CELL = ("-M", "10", "-E", "2", "--epsilon", "0.5", "--delta", "1e-4")
TPR_CELL = ("-M", "10", "-E", "2", "--fpr", "0.001", "--tpr", "0.002")


@pytest.fixture(scope="module")
def keydir(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    keygen(str(d / "k"))
    return d / "k"


def _certify(capsys, keydir, out, *extra):
    rc = main(["certify", "--key", str(keydir / "private.pem"), "-o", str(out), "--quiet", "--json", *extra])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("args,match", [
    (("--epsilon", "1"), "epsilon needs delta"),
    (("--delta", "1e-5"), "delta needs epsilon"),
    (("--fpr", "0.001"), "fpr needs tpr"),
    (("--tpr", "0.2"), "tpr needs fpr"),
    ((), "exactly one target"),
    (("--target", "0.1", "--epsilon", "1", "--delta", "1e-5"), "exactly one target"),
    (("--target", "0.1", "--fpr", "0.1", "--tpr", "0.2"), "exactly one target"),
    (("--epsilon", "1", "--delta", "1e-5", "--fpr", "0.1", "--tpr", "0.2"), "exactly one target"),
    (("--epsilon", "1", "--tpr", "0.2"), "exactly one target"),
    (("--epsilon", "1", "--delta", "0"), "delta = 0 lies below the stated domain"),
    (("--epsilon", "1", "--delta", "1"), "delta = 1 lies above the stated domain"),
    (("--epsilon", "-0.1", "--delta", "1e-5"), "epsilon = -0.1 lies below the stated domain, epsilon in [0.01, 20]"),
    (("--epsilon", "101", "--delta", "1e-5"), "epsilon = 101 lies above the stated domain, epsilon in [0.01, 20]"),
    (("--epsilon", "nan", "--delta", "1e-5"), "epsilon must be a decimal"),
    (("--epsilon", "inf", "--delta", "1e-5"), "epsilon must be a decimal"),
    (("--epsilon", "1e999999", "--delta", "1e-5"), "epsilon must be a decimal"),
    (("--epsilon", "1", "--delta", "0x10"), "delta must be a decimal"),
    (("--epsilon", "1", "--delta", ""), "delta"),
    (("--fpr", "0.2", "--tpr", "0.2"), "tpr must exceed fpr"),
    (("--fpr", "0.3", "--tpr", "0.2"), "tpr must exceed fpr"),
    (("--fpr", "0", "--tpr", "0.2"), "fpr = 0 lies below the stated domain, fpr in [1e-8, 0.5]"),
    (("--fpr", "0.1", "--tpr", "1"), "tpr = 1 lies above the stated domain, tpr in (fpr = 0.1, 1)"),
    (("--fpr", "0.1", "--tpr", "0.2\n3"), "tpr must be a decimal"),
])
def test_certify_kind_flags_refused_in_one_line(tmp_path, capsys, keydir, args, match):
    out = tmp_path / "c.json"
    rc, stdout, err = _certify(capsys, keydir, out, "-M", "10", "-E", "2", *args)
    assert rc == 2 and stdout == ""
    assert err.count("\n") == 1 and err.startswith("sigmacert: error: ") and match in err, err
    assert "Traceback" not in err and not out.exists()


def test_certify_kind_checked_before_the_key(tmp_path, capsys):
    """A bad target is named before a missing key is read (no file is touched)."""
    rc = main(["certify", "-M", "10", "-E", "2", "--epsilon", "1", "--key", str(tmp_path / "nope.pem"),
               "-o", str(tmp_path / "c.json"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "epsilon needs delta" in err


def test_certify_dp_one_sided(tmp_path, capsys, keydir, monkeypatch):
    """--one-sided dp: the face hands the certifier kind dp, epsilon and target delta (exact decimals), the
    exact sigma is found on the issuing grid, the certified bound lies between the numerical delta(eps)
    and the target, and the v4 certificate without a lower side verifies."""
    import certifier.questions as questions
    seen = {}
    real = questions.certify_run     # certifier.certify.certify_run, the door's way to a run

    def spy(*a, **kw):
        seen.update(args=a, kw=kw)
        return real(*a, **kw)
    monkeypatch.setattr(questions, "certify_run", spy)
    out = tmp_path / "c.json"
    rc, stdout, err = _certify(capsys, keydir, out, *DP_CELL, "--one-sided")
    assert seen["kw"]["kind_name"] == "dp" and seen["kw"]["kind_params"] == {"epsilon": "0.5"}
    assert str(seen["args"][1]) == "1/10000" and seen["kw"]["two_sided"] is False
    assert rc == 0 and out.exists(), err
    summary = json.loads(stdout)
    bound, sigma = float(summary["bound"]), summary["sigma"]
    assert not summary["two_sided"] and "lower" not in _payload(out)["predicate"]
    assert sigmacert.verify(out, keydir / "public.pem").accepted
    assert sigma == kinds.exact_sigma(Run.block(10, 2), kinds.parse_kind(epsilon="0.5", delta="1e-4"))
    d = exact_privacy(10, 2, float(sigma), epsilons=[0.5]).delta[0.5]
    assert d.value - d.error <= bound <= 1e-4


def test_api_certify_tpr_one_sided(tmp_path):
    """sigmacert.certify(..., fpr=, tpr=, two_sided=False): the upper side is certified, numerically just
    above the exact TPR."""
    keygen(str(tmp_path / "k"))
    c = sigmacert.certify(10, 2, fpr="0.001", tpr="0.002", two_sided=False, key=tmp_path / "k" / "private.pem")
    assert not c.two_sided and c.bound_lower is None
    bound, sigma = float(c.bound), str(c.sigma)
    t = exact_privacy(10, 2, float(sigma), fprs=[1e-3]).tpr[1e-3]
    assert t.value - t.error <= bound <= 0.002
    assert sigma == str(sigmacert.exact_sigma(10, 2, fpr="0.001", tpr="0.002"))


@pytest.mark.parametrize("kw,match", [
    ({}, "exactly one target"),
    ({"epsilon": 1}, "epsilon needs delta"),
    ({"target": "0.1", "epsilon": 1, "delta": "1e-5"}, "exactly one target"),
    ({"epsilon": 1, "delta": "1e-5", "fpr": "0.001", "tpr": "0.002"}, "exactly one target"),
    ({"fpr": "0.01", "tpr": "0.005"}, "tpr must exceed fpr"),
    ({"epsilon": float("nan"), "delta": "1e-5"}, "epsilon"),
    ({"epsilon": True, "delta": "1e-5"}, "epsilon"),
])
def test_api_certify_kind_refusals(kw, match):
    with pytest.raises(sigmacert.ParameterError, match=match.replace("(", r"\(")):
        sigmacert.certify(10, 2, **kw)


def test_certify_fixed_bins_kind_reaches_the_certifier(tmp_path, capsys, keydir):
    """--scheme fixed-bins with a dp kind: parsed and handed on; method v1 on the fixed-bins pair
    (the one-epoch pair at sigma/sqrt(E)) certifies it, format v4, and the verifier accepts it."""
    out = tmp_path / "c.json"
    rc, stdout, err = _certify(capsys, keydir, out, *DP_CELL, "--scheme", "fixed-bins", "--one-sided")
    assert rc == 0, err
    s = json.loads(stdout)
    assert s["kind"] == "dp" and s["scheme"] == "fixed-bins" and float(s["bound"]) <= 1e-4
    c = _payload(out)["predicate"]["claim"]
    assert c["scheme"] == "fixed-bins" and c["kind"] == {"name": "dp", "epsilon": "0.5"}
    assert sigmacert.verify(out, keydir / "public.pem").accepted


def _payload(path):
    env = json.loads(path.read_text())
    return json.loads(base64.b64decode(env["payload"]))


def test_certify_dp_two_sided_v4(tmp_path, capsys, keydir):
    """After the merge: a two-sided dp certificate in format v4 that the independent verifier accepts."""
    out = tmp_path / "c.json"
    rc, stdout, err = _certify(capsys, keydir, out, *DP_CELL)
    assert rc == 0, err
    s = json.loads(stdout)
    assert s["kind"] == "dp" and s["kind_params"] == {"epsilon": "0.5", "delta": "1e-4"} and s["two_sided"]
    stmt = _payload(out)
    assert stmt["predicateType"] == "https://sigmacert.dev/certificate/v4"
    c = stmt["predicate"]["claim"]
    assert c["kind"] == {"name": "dp", "epsilon": "0.5"} and c["target"] == "0.0001"
    sides = kinds.certified_sides(stmt["predicate"])
    assert float(sides["upper"]) <= 1e-4 < float(sides["lower"])
    assert sigmacert.verify(out, keydir / "public.pem").accepted


def test_certify_tpr_two_sided_v4(tmp_path, capsys, keydir):
    out = tmp_path / "c.json"
    rc, stdout, err = _certify(capsys, keydir, out, *TPR_CELL)
    assert rc == 0, err
    stmt = _payload(out)
    c = stmt["predicate"]["claim"]
    assert c["kind"] == {"name": "tpr", "fpr": "0.001"} and c["target"] == "0.002"
    sides = kinds.certified_sides(stmt["predicate"])
    assert float(sides["upper"]) <= 0.002 < float(sides["lower"])
    assert sigmacert.verify(out, keydir / "public.pem").accepted
    assert main(["show", str(out)]) == 0
    assert "every membership test with FPR <= 0.001 has TPR <= 0.002" in capsys.readouterr().out


def test_show_states_a_v4_shaped_dp_claim(tmp_path, capsys, keydir):
    """`show` (no verification) reads the kind from the claim: a v4-shaped dp statement built from the
    committed M=100, E=10 certificate (no real v4 certificate exists before the merge)."""
    from pathlib import Path

    from certifier.certificate.envelope import sign_statement
    from certifier.certificate.keys import load_private
    root = Path(__file__).resolve().parents[3]
    stmt = json.loads(base64.b64decode(json.loads((root / "artifacts/certificates/M100_E10.json").read_text())
                                       ["payload"]))
    p = stmt["predicate"]
    p["claim"].update(kind={"name": "dp", "epsilon": "1"}, target="0.00001", sigma="1.36919")
    p["upper"] = {"bound": "0.000009999953066"}
    p["lower"] = {**p["lower"], "sigma_low": "1.369189", "bound_lower": "0.0000100001"}
    del p["lower"]["tv_lower"]
    stmt["predicateType"] = "https://sigmacert.dev/certificate/v4"
    out = tmp_path / "v4.json"
    out.write_bytes(sign_statement(stmt, load_private(str(keydir / "private.pem"))))
    assert main(["show", str(out), "--json"]) == 0
    flat = json.loads(capsys.readouterr().out)
    assert flat["kind"] == {"name": "dp", "epsilon": "1"} and flat["bound"] == "0.000009999953066"
    assert flat["bound_lower_at_sigma_low"] == "0.0000100001" and flat["tv_lower_at_sigma_low"] is None
    assert main(["show", str(out)]) == 0
    text = capsys.readouterr().out
    assert "max(delta_Q||P, delta_P||Q)(1) <= 0.00001: (1, 0.00001)-DP, both directions" in text
    assert "accuracy <= 1/2" not in text and "1.369189 < the least sigma meeting the target <= 1.36919" in text
    p["claim"]["kind"] = {"name": "renyi"}                   # a kind the face does not know: refused in one line
    out.write_bytes(sign_statement(stmt, load_private(str(keydir / "private.pem"))))
    assert main(["show", str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_api_certify_tpr_two_sided(tmp_path):
    keygen(str(tmp_path / "k"))
    c = sigmacert.certify(10, 2, fpr="0.001", tpr="0.002", key=tmp_path / "k" / "private.pem")
    assert (c.kind, dict(c.kind_params)) == ("tpr", {"fpr": "0.001", "tpr": "0.002"}) and c.two_sided
    assert c.bound <= c.target == Decimal("0.002") < c.bound_lower and c.sigma_low < c.sigma
    assert sigmacert.verify(c, tmp_path / "k" / "public.pem").accepted


def test_certify_dp_below_the_exact_sigma_is_not_certified(tmp_path, capsys, keydir):
    """--sigma below the exact sigma: one grid, the dp bound it reached (not the grid's TV) is reported, it
    lies above the numerical delta(eps) and above the target; no file, exit 1."""
    out = tmp_path / "c.json"
    rc, stdout, err = _certify(capsys, keydir, out, *DP_CELL, "--sigma", "2.7", "--one-sided")
    assert rc == 1 and not out.exists(), err
    s = json.loads(stdout)
    assert s["kind"] == "dp" and s["certified"] is False and s["tv_exact"] is None
    d = exact_privacy(10, 2, 2.7, epsilons=[0.5]).delta[0.5]
    assert abs(s["value_exact"] - d.value) <= 1e-12
    assert float(s["bound"]) >= d.value - d.error and float(s["bound"]) > 1e-4
    assert s["bound"] == s["tries"][-1]["dp_bound"] != s["tries"][-1]["bound"]
    with pytest.raises(sigmacert.CannotCertifyError, match=f"the bound reached, {s['bound']}, exceeds the target"):
        sigmacert.certify(10, 2, epsilon="0.5", delta="1e-4", sigma="2.7", two_sided=False)


def test_a_two_sided_request_that_ends_one_sided_says_why_in_json(tmp_path, capsys, keydir):
    """A given sigma far above the least: the lower side one or two steps down cannot miss the target, so the
    certificate is one-sided and --json's one_sided_reason names why (it was null: only the text said so)."""
    rc, out, err = _certify(capsys, keydir, tmp_path / "c.json", "-M", "10", "-E", "3", "--target", "0.1",
                            "--sigma", "5")
    o = json.loads(out)
    assert rc == 0 and o["certified"] and not o["two_sided"], err
    assert o["one_sided_reason"].startswith("no sigma_low could be certified") and len(o["lower_tries"]) == 2
    rc, out, _ = _certify(capsys, keydir, tmp_path / "d.json", "-M", "10", "-E", "3", "--target", "0.1",
                          "--sigma", "5", "--one-sided")
    assert rc == 0 and json.loads(out)["one_sided_reason"] is None      # asked one-sided: nothing to explain
