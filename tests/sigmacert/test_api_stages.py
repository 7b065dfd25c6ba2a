"""Stages on the face: sigmacert.exact_tv / exact_sigma with stages=, and `--stages` on the CLI."""
import json

import pytest

import sigmacert
from sigmacert.cli import main


def test_api_stages_split_equals_block():
    whole = sigmacert.exact_tv(100, 10, "1.426215")
    parts = sigmacert.exact_tv(stages=[(100, 3), (100, 7)], sigma="1.426215")
    assert abs(whole.tv - parts.tv) <= 1e-9


def test_api_stage_values_and_per_stage_sigma():
    a = sigmacert.exact_tv(stages=[sigmacert.Stage(100, 5, "1.2"), (400, 5, 1.5)])
    b = sigmacert.exact_tv(stages="100x5@1.2,400x5@1.5")
    assert a.tv == b.tv and 0.0 < a.tv < 1.0


def test_api_exact_sigma_stages():
    assert str(sigmacert.exact_sigma(stages=[(100, 5), (100, 5)], target="0.1")) == "1.426215"


@pytest.mark.parametrize("kwargs", [
    dict(stages=[(100, 5)], steps=100, sigma="1"),
    dict(stages=[(100, 5, "1")], sigma="1"),
    dict(stages=[(100, 5)]),
    dict(stages=[(100, 5)], sigma="1", scheme="fixed-bins"),
    dict(stages=[], sigma="1"),
])
def test_api_bad_stage_calls(kwargs):
    with pytest.raises(sigmacert.ParameterError):
        sigmacert.exact_tv(**kwargs)


def test_cli_sigma_stages_json(capsys):
    assert main(["sigma", "--stages", "100x4,100x6", "-l", "0.1", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["exact"] == "1.426215" and [s["epochs"] for s in obj["stages"]] == [4, 6]


def test_cli_tv_stages_json(capsys):
    assert main(["tv", "--stages", "100x3@1.426215,100x7@1.426215", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert abs(obj["tv_exact"] - sigmacert.exact_tv(100, 10, "1.426215").tv) <= 1e-9


@pytest.mark.parametrize("argv", [
    ["tv", "--stages", "100x5,,400x5"], ["tv", "--stages", "100x"], ["tv", "--stages", "100x5@1.2,400x5"],
    ["tv", "--stages", "100x5@1.2", "--sigma", "1"], ["tv", "--stages", "100x5"],
    ["sigma", "--stages", "100x5@1.2", "-l", "0.1"], ["sigma", "--stages", "100x5", "-M", "3", "-l", "0.1"],
    ["sigma", "-l", "0.1"], ["tv", "--stages", "100x5@0"],
])
def test_cli_malformed_stages_one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sigmacert: error:")


def test_cli_stages_with_a_dp_target_gives_the_shared_sigma(capsys):
    """dp and tpr with --stages: the sigma the stages numerics give (tests/sigmacert/test_api_stages_kinds.py)."""
    assert main(["sigma", "--stages", "100x4,100x6", "--epsilon", "1", "--delta", "1e-5", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["kind"] == "dp" and obj["exact"] == str(sigmacert.exact_sigma(100, 10, epsilon=1, delta=1e-5))


def test_api_stages_with_half_a_target_kind_is_refused():
    with pytest.raises(sigmacert.ParameterError, match="epsilon needs delta"):
        sigmacert.exact_sigma(stages=[(100, 5)], epsilon=1)
    with pytest.raises(sigmacert.ParameterError, match="exactly one target"):
        sigmacert.exact_sigma(stages=[(100, 5)], target="0.1", epsilon=1, delta=1e-5)
