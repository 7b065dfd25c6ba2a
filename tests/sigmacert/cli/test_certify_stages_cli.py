"""`sigmacert certify --stages`: a run in stages at one shared sigma, two-sided, a format-v5 certificate
the independent verifier accepts; everything else a run in stages cannot take is a one-line refusal."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

import sigmacert
from certifier.certificate.keys import keygen
from certifier.numerics.stages import exact_tv_product
from sigmacert.cli import main

ROOT = Path(__file__).resolve().parents[3]

V5 = "https://sigmacert.dev/certificate/v5"


@pytest.fixture(scope="module")
def keydir(tmp_path_factory):
    d = tmp_path_factory.mktemp("k")
    keygen(str(d))
    return d


def test_certify_stages_two_sided_v5_verifies(tmp_path, capsys, keydir):
    out = tmp_path / "c.json"
    rc = main(["certify", "--stages", "4x1,8x1", "--target", "0.3", "--key", str(keydir / "private.pem"),
               "-o", str(out), "--json", "--quiet"])
    stdout, err = capsys.readouterr()
    assert rc == 0, err
    s = json.loads(stdout)
    assert s["certified"] and s["two_sided"] and s["stages"] == [{"steps": 4, "epochs": 1},
                                                                   {"steps": 8, "epochs": 1}]
    exact = exact_tv_product([(4, 1, s["sigma"]), (8, 1, s["sigma"])])
    low = exact_tv_product([(4, 1, s["sigma_low"]), (8, 1, s["sigma_low"])])
    assert exact.tv + exact.error <= float(s["bound"]) <= 0.3 < float(s["tv_lower_at_sigma_low"]) <= low.tv
    stmt = json.loads(base64.b64decode(json.loads(out.read_text())["payload"]))
    assert stmt["predicateType"] == V5 and "steps" not in stmt["predicate"]["claim"]
    assert sigmacert.verify(out, keydir / "public.pem").accepted


@pytest.mark.parametrize("extra,match", [
    (("--steps", "4"), "--stages replaces"),
    (("--epsilon", "1", "--delta", "1e-5"), "exactly one target"),
    (("--h", "0.01"), "no user grid"),
    (("--scheme", "fixed-bins"), "random allocation"),
])
def test_certify_stages_refusals_are_one_line(tmp_path, capsys, keydir, extra, match):
    args = ["certify", "--stages", "4x1,8x1", "--target", "0.3", "--key", str(keydir / "private.pem"),
            "-o", str(tmp_path / "c.json")]
    rc = main(args + list(extra))
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and match in err, err
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("text", ["4x0", "4x1,", "x1", "4x1@1.2,8x1", "4x1@0", ""])
def test_certify_bad_stage_lists(tmp_path, capsys, keydir, text):
    rc = main(["certify", "--stages", text, "--target", "0.3", "--key", str(keydir / "private.pem"),
               "-o", str(tmp_path / "c.json")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err


def test_api_certify_stages_two_sided_verifies(keydir):
    """sigmacert.certify(stages=...): the same run through the Python API, signed, accepted by the verifier."""
    c = sigmacert.certify(stages=[(4, 1), (8, 1)], target="0.3", key=keydir / "private.pem")
    assert c.stages == ((4, 1), (8, 1)) and c.steps is None and c.epochs == 2 and c.two_sided
    assert c.bound <= c.target < c.tv_lower and c.sigma_low < c.sigma
    assert c.predicate["claim"]["stages"] == [{"steps": 4, "epochs": 1}, {"steps": 8, "epochs": 1}]
    assert sigmacert.verify(c, keydir / "public.pem").accepted


@pytest.mark.parametrize("kw,match", [
    ({"steps": 4}, "stages= replaces"),
    ({"scheme": "fixed-bins"}, "random allocation"),
])
def test_api_certify_stages_refusals(kw, match):
    args = {"stages": [(4, 1), (8, 1)], "target": "0.3", **kw}
    with pytest.raises(sigmacert.ParameterError, match=match):
        sigmacert.certify(**args)


def test_show_reads_a_v5_claim(capsys):
    """`sigmacert show` of a run in stages: the claim's statement, the stage list and sigma, and --json with the
    stages and the total epochs (steps is None: there is no single M)."""
    cert = ROOT / "tests" / "data" / "v5" / "stages_4x1_8x1_tv.json"
    assert main(["show", str(cert)]) == 0
    out = capsys.readouterr().out
    assert "stages 4x1,8x1 (M x E, random allocation), sigma=0.942722" in out and "prod_s P_{M_s}" in out
    assert main(["show", "--json", str(cert)]) == 0
    flat = json.loads(capsys.readouterr().out)
    assert flat["steps"] is None and flat["epochs"] == 2 and flat["stages"][1] == {"steps": 8, "epochs": 1}
