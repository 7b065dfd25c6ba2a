"""`sigmacert certify --stages` and `sigmacert.certify(stages=...)` with a target kind or a sigma per stage.

Small cells only (stages 4x1,8x1): a per-stage-sigma tv certificate (one-sided by construction) through
both faces and the independent verifier, a one-sided dp certificate through the CLI, and the one-line
refusals (exit 2) of malformed per-stage sigmas. The two-sided dp/tpr certificates and their forgeries
are tests/verifier/format/test_v5_kinds.py.
"""
import json

import pytest

import sigmacert
from certifier.certificate.keys import keygen
from certifier.numerics.stages import exact_tv_product
from sigmacert.cli import main


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    keygen(str(d))
    return d / "private.pem", d / "public.pem"


def test_api_certify_with_a_sigma_per_stage_is_one_sided_and_verifies(keys):
    private, public = keys
    cert = sigmacert.certify(stages=[sigmacert.Stage(4, 1, sigma="1.2"), (8, 1, "1.5")], target="0.3", key=private)
    assert not cert.two_sided and cert.sigma is None and cert.sigma_low is None and cert.steps is None
    assert [tuple(map(str, s)) for s in cert.stages] == [("4", "1", "1.2"), ("8", "1", "1.5")]
    exact = exact_tv_product([(4, 1, "1.2"), (8, 1, "1.5")])
    assert exact.tv + exact.error <= float(cert.bound) <= 0.3 and cert.epochs == 2
    v = sigmacert.verify(cert, public)
    assert v.accepted, (v.reason, v.detail)
    same = sigmacert.certify(stages="4x1@1.2,8x1@1.5", target="0.3")     # the string form: the same bound
    assert same.bound == cert.bound and same.envelope is None


def test_cli_certify_per_stage_sigma_says_one_sided(keys, tmp_path, capsys):
    private, public = keys
    out = tmp_path / "own.json"
    argv = ["certify", "--stages", "4x1@1.2,8x1@1.5", "--target", "0.3", "--key", str(private), "-o", str(out),
            "--quiet"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "one-sided: the sigmas are given per stage" in text and "at each stage's sigma" in text
    assert main(["certify", *argv[1:], "--force", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["certified"] and obj["sigma_per_stage"] and not obj["two_sided"] and obj["sigma"] is None
    assert obj["stages"] == [{"steps": 4, "epochs": 1, "sigma": "1.2"}, {"steps": 8, "epochs": 1, "sigma": "1.5"}]
    assert obj["one_sided_reason"]
    assert sigmacert.verify(str(out), public).accepted


def test_cli_certify_stages_dp_target_one_sided(keys, tmp_path, capsys):
    private, public = keys
    out = tmp_path / "dp.json"
    assert main(["certify", "--stages", "4x1,8x1", "--epsilon", "0.5", "--delta", "0.1", "--one-sided",
                 "--key", str(private), "-o", str(out), "--json", "--quiet"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["certified"] and obj["kind"] == "dp" and obj["kind_params"] == {"epsilon": "0.5", "delta": "0.1"}
    assert float(obj["bound"]) <= 0.1 and obj["value_exact"] <= float(obj["bound"])
    v = sigmacert.verify(str(out), public)
    assert v.accepted and v.claim["kind"] == {"name": "dp", "epsilon": "0.5"}, (v.reason, v.detail)


@pytest.mark.parametrize("extra", [
    ["--stages", "4x1@1.2,8x1"],                    # @ on some stages only
    ["--stages", "4x1@0,8x1@1.5"],                  # sigma <= 0
    ["--stages", "4x1@-1,8x1@1.5"],
    ["--stages", "4x1@abc,8x1@1.5"],                # not a decimal
    ["--stages", "4x1@1e,8x1@1.5"],
    ["--stages", "4x1@,8x1@1.5"],
    ["--stages", "4x1@1.2,8x1@1.5", "--sigma", "1.3"],       # a shared sigma beside the stages' own
    ["--stages", "4x1@1.2,8x1@1.5", "--two-sided"],          # per-stage sigmas are one-sided only
    ["--stages", "4x1,8x1", "--steps", "4"],
    ["--stages", "4x1,8x1", "--epsilon", "1"],               # half a dp target
])
def test_cli_certify_bad_stages_one_line_exit_2(keys, tmp_path, capsys, extra):
    private, _ = keys
    argv = ["certify", *extra, "--key", str(private), "-o", str(tmp_path / "x.json")]
    if "--epsilon" not in extra:
        argv += ["--target", "0.3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sigmacert: error:"), err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("kwargs", [
    dict(stages=[(4, 1, "1.2"), (8, 1)], target="0.3"),
    dict(stages=[(4, 1, "1.2"), (8, 1, "0")], target="0.3"),
    dict(stages=[(4, 1, "1.2"), (8, 1, "x")], target="0.3"),
    dict(stages=[(4, 1, "1.2")], target="0.3", sigma="1.2"),
])
def test_api_certify_bad_per_stage_sigmas(kwargs):
    with pytest.raises(sigmacert.ParameterError):
        sigmacert.certify(**kwargs)


def test_api_certify_a_dp_target_with_a_sigma_per_stage_verifies(keys):
    private, public = keys
    cert = sigmacert.certify(stages="4x1@1.2,8x1@1.5", epsilon=1, delta="0.1", key=private)
    assert cert.kind == "dp" and cert.kind_params == {"epsilon": "1", "delta": "0.1"} and not cert.two_sided
    delta = sigmacert.exact_privacy(stages="4x1@1.2,8x1@1.5", epsilon=1).delta
    exact = next(iter(delta.values()))
    assert exact.value + exact.error <= float(cert.bound) <= 0.1
    v = sigmacert.verify(cert, public)
    assert v.accepted and v.claim["kind"] == {"name": "dp", "epsilon": "1"}, (v.reason, v.detail)
    assert "sigma" not in v.claim and all("sigma" in s for s in v.claim["stages"])
