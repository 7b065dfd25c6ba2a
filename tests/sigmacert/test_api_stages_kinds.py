"""The dp and tpr target kinds for runs in stages on the face: sigmacert.exact_sigma(stages=, epsilon=, delta=),
exact_privacy(stages=), `sigmacert sigma --stages ... --epsilon --delta | --fpr --tpr` and `sigmacert dp --stages`."""
import json

import pytest

import sigmacert
from certifier.numerics.stages_profile import exact_privacy_product, exact_sigma_dp_product, exact_sigma_tpr_product
from sigmacert.cli import main


def test_api_exact_sigma_stages_dp_and_tpr_match_the_numerics():
    s = sigmacert.exact_sigma(stages=[(100, 5), (400, 5)], epsilon=1, delta=1e-5)
    assert str(s) == exact_sigma_dp_product([(100, 5), (400, 5)], 1.0, 1e-5)
    t = sigmacert.exact_sigma(stages="100x5,400x5", fpr="0.001", tpr="0.002")
    assert str(t) == exact_sigma_tpr_product([(100, 5), (400, 5)], 1e-3, 2e-3)
    # more steps per epoch in the second stage amplify more: less noise than 10 epochs of 100 steps
    assert s < sigmacert.exact_sigma(100, 10, epsilon=1, delta=1e-5)


def test_api_exact_privacy_stages_per_stage_and_shared_sigma():
    a = sigmacert.exact_privacy(stages="100x5@1.2,400x5@1.2", delta=1e-5, epsilon=1, fpr=1e-3)
    b = sigmacert.exact_privacy(stages=[(100, 5), (400, 5)], sigma="1.2", delta=[1e-5], epsilon=[1], fpr=[1e-3])
    assert a.epsilon[1e-5].value == b.epsilon[1e-5].value > 0
    ref = exact_privacy_product([(100, 5, "1.2"), (400, 5, "1.2")], deltas=[1e-5])
    assert a.epsilon[1e-5].value == ref.epsilon[1e-5].value
    whole = sigmacert.exact_privacy(100, 10, "1.426215", delta=1e-5)
    split = sigmacert.exact_privacy(stages=[(100, 3), (100, 7)], sigma="1.426215", delta=1e-5)
    assert abs(whole.epsilon[1e-5].value - split.epsilon[1e-5].value) <= 1e-9 * whole.epsilon[1e-5].value + \
        whole.epsilon[1e-5].error + split.epsilon[1e-5].error


@pytest.mark.parametrize("kwargs,match", [
    (dict(stages=[(100, 5)]), "give sigma"),
    (dict(stages=[(100, 5, "1")], sigma="1"), "drop sigma"),
    (dict(stages=[(100, 5)], sigma="1", steps=100), "replaces steps"),
    (dict(stages=[(100, 5)], sigma="1", scheme="fixed-bins"), "random allocation"),
    (dict(stages=[(100, 5)], sigma="1", delta=2), "delta"),
])
def test_api_bad_exact_privacy_stages(kwargs, match):
    with pytest.raises(sigmacert.ParameterError, match=match):
        sigmacert.exact_privacy(**kwargs)


def test_cli_sigma_stages_dp_and_tpr_json(capsys):
    assert main(["sigma", "--stages", "100x5,400x5", "--epsilon", "1", "--delta", "1e-5", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["exact"] == exact_sigma_dp_product([(100, 5), (400, 5)], 1.0, 1e-5)
    assert obj["value_at_exact"] <= 1e-5 and [s["steps"] for s in obj["stages"]] == [100, 400]
    assert float(obj["quick_bounds"]["rdp_qp"]) > float(obj["exact"])
    assert main(["sigma", "--stages", "100x5,400x5", "--fpr", "0.001", "--tpr", "0.002", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["kind"] == "tpr" and obj["exact"] == exact_sigma_tpr_product([(100, 5), (400, 5)], 1e-3, 2e-3)
    assert main(["sigma", "--stages", "100x5,400x5", "--fpr", "0.001", "--tpr", "0.002"]) == 0
    assert "exact shared sigma" in capsys.readouterr().out


def test_cli_dp_stages(capsys):
    assert main(["dp", "--stages", "100x5@1.2,400x5@1.5", "--delta", "1e-5", "--epsilon", "1", "--fpr", "1e-3",
                 "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    ref = exact_privacy_product([(100, 5, "1.2"), (400, 5, "1.5")], deltas=[1e-5], epsilons=[1.0], fprs=[1e-3])
    assert obj["epsilon_at_delta"][0]["epsilon"] == ref.epsilon[1e-5].value
    assert obj["delta_at_epsilon"][0]["delta"] == ref.delta[1.0].value
    assert obj["tpr_at_fpr"][0]["tpr"] == ref.tpr[1e-3].value
    assert main(["dp", "--stages", "100x5,400x5", "--sigma", "1.2", "--delta", "1e-5"]) == 0
    assert "eps at delta" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["dp", "--stages", "100x5", "--delta", "1e-5"],
    ["dp", "--stages", "100x5@1.2", "--sigma", "1", "--delta", "1e-5"],
    ["dp", "--stages", "100x5@1.2", "-M", "3", "--delta", "1e-5"],
    ["dp", "--stages", "100x5@1.2"],
    ["dp", "--stages", "100x5@1.2,400x5", "--delta", "1e-5"],
    ["dp", "-M", "100", "-E", "10", "--delta", "1e-5"],
    ["dp", "--delta", "1e-5", "-s", "1"],
    ["sigma", "--stages", "100x5@1.2", "--epsilon", "1", "--delta", "1e-5"],
    ["sigma", "--stages", "100x5", "--epsilon", "1"],
    ["sigma", "--stages", "100x5", "--fpr", "0.01", "--tpr", "0.005"],
    ["sigma", "--stages", "100x5", "--scheme", "fixed-bins", "--epsilon", "1", "--delta", "1e-5"],
])
def test_cli_bad_stage_kind_calls_one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sigmacert: error:")
