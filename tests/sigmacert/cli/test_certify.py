"""End to end: `sigmacert certify` and `show` on small cells (M <= 20), failures, bad input."""
from __future__ import annotations

import base64
import hashlib
import json
import math

import pytest
from flint import arb
from scipy.special import erf

from certifier.certificate.envelope import load_envelope, verify_envelope
from certifier.certificate.keys import keygen, load_public
from certifier.numerics.exact import exact_tv
from sigmacert.cli import main


@pytest.fixture(scope="module")
def keydir(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    keygen(str(d / "k"))
    return d / "k"


def _certify(capsys, keydir, out, *extra):
    rc = main(["certify", "--key", str(keydir / "private.pem"), "-o", str(out), "--quiet", "--json", *extra])
    cap = capsys.readouterr()
    return rc, (json.loads(cap.out) if cap.out.strip() else None), cap.err


def _statement(path, keydir):
    env = load_envelope(path.read_bytes())
    return verify_envelope(env, load_public(str(keydir / "public.pem")))


def test_certify_small_cell_finds_exact_sigma(tmp_path, capsys, keydir):
    """No --sigma, --one-sided: the exact sigma is found, certified, signed (v1); bound within 1e-7 of the exact TV."""
    out = tmp_path / "c.json"
    rc, summ, err = _certify(capsys, keydir, out, "-M", "10", "-E", "5", "--target", "0.1", "--one-sided")
    assert rc == 0 and err == ""
    assert summ["certified"] and len(summ["tries"]) == 1
    stmt = _statement(out, keydir)
    p = stmt["predicate"]
    assert stmt["predicateType"] == "https://sigmacert.dev/tv-certificate/v1"
    c = p["claim"]
    assert (c["steps"], c["epochs"], c["target"]) == (10, 5, "0.1")
    tv = exact_tv(10, 5, float(c["sigma"])).tv
    b = float(p["bound"])
    assert tv <= b <= 0.1
    assert b - tv <= 1e-7
    # the sigma 1e-6 below misses the target numerically, so this is the exact sigma
    assert exact_tv(10, 5, float(c["sigma"]) - 1e-6).tv > 0.1
    # bound is the upper end of 1 - O rounded up
    assert (1 - arb(p["enclosures"]["O"])).upper() <= arb(p["bound"])
    assert stmt["subject"][0]["name"] == "claim"
    assert set(p) == {"claim", "method", "enclosures", "bound", "numerics", "software", "issued_at", "timings"}
    # show --json: one flat object with the documented keys
    assert main(["show", str(out), "--json"]) == 0
    flat = json.loads(capsys.readouterr().out)
    for k in ("steps", "epochs", "sigma", "target", "bound", "h", "eta", "cap", "prec", "keyid", "issued_at"):
        assert k in flat
    assert flat["bound"] == p["bound"] and flat["verified"] is False
    assert main(["show", str(out)]) == 0
    assert "NOT verified" in capsys.readouterr().out


def test_certify_m1_against_closed_form(tmp_path, capsys, keydir):
    """M = 1: bound >= 2 Phi(sqrt(E)/(2 sigma)) - 1 and within 1e-7 of it; --subject names a file."""
    subj = tmp_path / "model.bin"
    subj.write_bytes(b"weights")
    out = tmp_path / "m1.json"
    rc, summ, _ = _certify(capsys, keydir, out, "-M", "1", "-E", "2", "--target", "0.2",
                           "--sigma", "3.5", "--subject", str(subj))
    assert rc == 0
    tv = erf(math.sqrt(2) / (2 * 3.5 * math.sqrt(2)))
    b = float(summ["bound"])
    assert tv <= b <= tv + 1e-7
    stmt = _statement(out, keydir)
    assert stmt["subject"] == [{"name": "model.bin", "digest": {"sha256": hashlib.sha256(b"weights").hexdigest()}}]


def test_sigma_below_exact_is_not_certified(tmp_path, capsys, keydir):
    """sigma clearly below the exact sigma (2.889659 at M=10, E=5): exit 1, no file, bound printed."""
    out = tmp_path / "no.json"
    rc = main(["certify", "-M", "10", "-E", "5", "--target", "0.1", "--sigma", "2.7",
               "--key", str(keydir / "private.pem"), "-o", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 1
    assert not out.exists()
    assert "NOT certified" in text
    bound = float(text.split("the bound reached, ")[1].split(",")[0])
    assert bound > 0.1
    assert bound >= exact_tv(10, 5, 2.7).tv


@pytest.mark.parametrize("argv", [
    ["certify", "-M", "0", "-E", "5", "--target", "0.1"],
    ["certify", "-M", "10", "-E", "5", "--target", "1.5"],
    ["certify", "-M", "10", "-E", "5", "--target", "0.1", "--sigma", "abc"],
    ["certify", "-M", "10", "-E", "5", "--target", "0.1", "--sigma", "-1"],
    ["certify", "-M", "10", "-E", "5", "--target", "0.1", "--sigma", "3", "--h", "0.001", "--cap", "1.0005"],
    ["certify", "-M", "10", "-E", "5", "--target", "0.1", "--sigma", "3", "--prec", "x"],
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, keydir, argv):
    rc = main(argv + ["--key", str(keydir / "private.pem"), "-o", str(tmp_path / "x.json")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


def test_missing_key_and_bad_certificate(tmp_path, capsys):
    rc = main(["certify", "-M", "10", "-E", "5", "--target", "0.1", "--sigma", "3",
               "--key", str(tmp_path / "nope.pem"), "-o", str(tmp_path / "x.json")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"payloadType": "application/vnd.in-toto+json", "payload": "e30=", "signatures": '
                   '[{"keyid": "00", "sig": ""}]}')
    assert main(["show", str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    bad.write_text("garbage")
    assert main(["show", str(bad), "--json"]) == 2
    assert main(["show", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err


def test_envelope_payload_is_base64_of_canonical_statement(tmp_path, capsys, keydir):
    out = tmp_path / "c2.json"
    rc, _, _ = _certify(capsys, keydir, out, "-M", "4", "-E", "3", "--target", "0.3", "--sigma", "2")
    assert rc == 0
    env = json.loads(out.read_text())
    body = base64.b64decode(env["payload"])
    stmt = json.loads(body)
    assert body == json.dumps(stmt, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    tv = exact_tv(4, 3, 2.0).tv
    assert tv <= float(stmt["predicate"]["bound"]) <= tv + 1e-7


def test_certify_default_is_two_sided_v2_and_show_prints_it(tmp_path, capsys, keydir):
    """Default certify: v2 with lower, privacy, tpr; show --json gains the two-sided keys; show prints the rows."""
    out = tmp_path / "v2.json"
    rc, summ, err = _certify(capsys, keydir, out, "-M", "10", "-E", "5", "--target", "0.1")
    assert rc == 0 and err == "" and summ["two_sided"]
    stmt = _statement(out, keydir)
    assert stmt["predicateType"] == "https://sigmacert.dev/tv-certificate/v2"
    p = stmt["predicate"]
    assert set(p) == {"claim", "method", "enclosures", "bound", "numerics", "software", "issued_at", "timings",
                      "lower", "privacy", "tpr"}
    assert set(p["lower"]) == {"sigma_low", "target", "method", "tv_lower", "enclosures"}
    assert set(p["privacy"]["epsilon_at_delta"]) == {"1e-05", "1e-06"}
    assert set(p["tpr"]) == {"0.1", "0.01", "0.001"}
    assert float(p["lower"]["tv_lower"]) > 0.1 >= float(p["bound"])
    assert main(["show", str(out), "--json"]) == 0
    flat = json.loads(capsys.readouterr().out)
    assert flat["sigma_low"] == p["lower"]["sigma_low"] == summ["sigma_low"]
    assert flat["tv_lower_at_sigma_low"] == p["lower"]["tv_lower"]
    assert flat["epsilon_at_delta"] == {k: v["epsilon"] for k, v in p["privacy"]["epsilon_at_delta"].items()}
    assert flat["tpr_at_fpr"] == {k: v["tpr"] for k, v in p["tpr"].items()}
    assert main(["show", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"{flat['sigma_low']} < sigma_lambda <= {flat['sigma']}" in text
    assert "1e-05" in text and "FPR 0.001" in text
