"""The dp and tpr target kinds on the face: `sigmacert sigma --epsilon/--delta | --fpr/--tpr`, `sigmacert dp`,
`sigmacert.exact_sigma(..., epsilon=, delta= | fpr=, tpr=)`, `sigmacert.exact_privacy`; one kind per call."""
from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal

import pytest

import sigmacert
from certifier.numerics.targets import exact_privacy, exact_sigma_dp, exact_sigma_tpr


def run(*args):
    return subprocess.run([sys.executable, "-m", "sigmacert.cli", *args], capture_output=True, text=True, timeout=300)


def test_sigma_dp_json():
    r = run("sigma", "--steps", "100", "--epochs", "10", "--epsilon", "1", "--delta", "1e-5", "--json")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    assert o["kind"] == "dp" and o["epsilon"] == "1" and o["delta"] == "1e-5" and o["scheme"] == "random-allocation"
    assert o["exact"] == exact_sigma_dp(100, 10, 1.0, 1e-5)
    assert o["value_at_exact"] <= 1e-5 and o["value_error"] < 1e-9
    assert float(o["quick_bounds"]["rdp_qp"]) > float(o["exact"])


def test_sigma_dp_quick_bound_left_out_not_fatal():
    """A quick bound whose own search fails is left out with its reason; the exact sigma still answers
    (certify issues 42.507 two-sided at this cell)."""
    r = run("sigma", "--steps", "1", "--epochs", "7", "--epsilon", "0.3", "--delta", "1e-8")
    assert r.returncode == 0, r.stderr
    assert "42.507" in r.stdout and "left out (" in r.stdout
    o = json.loads(run("sigma", "--steps", "1", "--epochs", "7", "--epsilon", "0.3", "--delta", "1e-8",
                       "--json").stdout)
    assert o["exact"] == "42.507" and "rdp_qp" not in o["quick_bounds"]
    assert o["quick_bounds_omitted"]["rdp_qp"]


def test_sigma_tail_cell_answers():
    """(100, 10, eps 8, delta 1e-5), refused before the tilted line: answered, delta at the exact sigma
    to a relative error estimate below 1e-6."""
    o = json.loads(run("sigma", "--steps", "100", "--epochs", "10", "--epsilon", "8", "--delta", "1e-5",
                       "--json").stdout)
    assert o["value_at_exact"] <= 1e-5 and o["value_error"] < 1e-6 * o["value_at_exact"]
    assert float(o["quick_bounds"]["rdp_qp"]) > float(o["exact"])


def test_sigma_tpr_text_and_json():
    r = run("sigma", "--steps", "100", "--epochs", "10", "--fpr", "0.001", "--tpr", "0.002")
    assert r.returncode == 0, r.stderr
    exact = exact_sigma_tpr(100, 10, 1e-3, 2e-3)
    assert "exact sigma (rounded up to 1e-6)" in r.stdout and exact in r.stdout and "Prop. B.2" in r.stdout
    o = json.loads(run("sigma", "-M", "100", "-E", "10", "--fpr", "0.001", "--tpr", "0.002", "--json").stdout)
    assert o["exact"] == exact and o["kind"] == "tpr"
    assert float(o["quick_bounds"]["closed_form"]) > float(o["quick_bounds"]["rdp"]) > float(exact)


def test_sigma_tv_unchanged():
    o = json.loads(run("sigma", "--steps", "250", "--epochs", "20", "--target", "0.1", "--json").stdout)
    assert set(o) == {"steps", "epochs", "scheme", "target", "closed_form", "exact", "gdp_limit"}
    assert o["exact"] == "1.309428"


def test_sigma_fixed_bins_dp():
    o = json.loads(run("sigma", "-M", "20", "-E", "4", "--epsilon", "1", "--delta", "1e-5", "--scheme", "fixed-bins",
                       "--json").stdout)
    assert o["exact"] == exact_sigma_dp(20, 4, 1.0, 1e-5, scheme="fixed-bins")
    assert exact_privacy(20, 1, float(o["exact"]) / 2, epsilons=[1.0]).delta[1.0].value <= 1e-5


@pytest.mark.parametrize("args,match", [
    (("--epsilon", "1"), "epsilon needs delta"),
    (("--tpr", "0.2"), "tpr needs fpr"),
    (("--target", "0.1", "--epsilon", "1", "--delta", "1e-5"), "exactly one target"),
    (("--target", "0.1", "--fpr", "0.1", "--tpr", "0.2"), "exactly one target"),
    (("--epsilon", "1", "--delta", "1e-5", "--fpr", "0.1", "--tpr", "0.2"), "exactly one target"),
    ((), "exactly one target"),
    (("--epsilon", "1", "--delta", "0"), "delta = 0 lies below the stated domain, delta in [1e-12, 0.1]; "
                                         "the nearest target that works is epsilon = 1, delta = 1e-12"),
    (("--epsilon", "-1", "--delta", "1e-5"), "epsilon = -1 lies below the stated domain, epsilon in [0.01, 20]"),
    (("--epsilon", "abc", "--delta", "1e-5"), "decimal number"),
    (("--fpr", "0.1", "--tpr", "0.05"), "tpr must exceed fpr"),
])
def test_one_kind_per_call_one_line_errors(args, match):
    r = run("sigma", "--steps", "100", "--epochs", "10", *args)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0] and "Traceback" not in r.stderr


def test_dp_command_json_rows():
    r = run("dp", "--steps", "100", "--epochs", "10", "--sigma", "1.426215", "--delta", "1e-5", "--fpr", "0.001",
            "--fpr", "0.1", "--epsilon", "1", "--json")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    assert 0.0999 < o["tv"] <= 0.1
    (row,) = o["epsilon_at_delta"]
    assert row["delta"] == "1e-5" and 0.94 < row["epsilon"] <= 0.9428           # the certificate's 0.9428
    assert [t["fpr"] for t in o["tpr_at_fpr"]] == ["0.001", "0.1"]
    t = o["tpr_at_fpr"][0]
    assert 0.0022 < t["tpr"] <= 0.002278223715 < t["rdp_bound"] < t["chi2_bound"]
    (d,) = o["delta_at_epsilon"]
    assert d["delta"] <= 1e-5 < d["rdp_bound_qp"]


def test_dp_command_errors():
    r = run("dp", "--steps", "100", "--epochs", "10", "--sigma", "1.4")
    assert r.returncode == 2 and "give at least one" in r.stderr
    r = run("dp", "--steps", "100", "--epochs", "10", "--sigma", "1.4", "--fpr", "1")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_api():
    assert sigmacert.exact_sigma(100, 10, "0.1") == Decimal("1.426215")             # positional TV form
    s = sigmacert.exact_sigma(100, 10, epsilon=1, delta=1e-5)
    assert isinstance(s, Decimal) and str(s) == exact_sigma_dp(100, 10, 1.0, 1e-5)
    assert str(sigmacert.exact_sigma(100, 10, fpr=0.001, tpr=0.002)) == exact_sigma_tpr(100, 10, 1e-3, 2e-3)
    assert sigmacert.exact_sigma(100, 10, epsilon="1", delta="1e-5", scheme="fixed-bins") > s
    p = sigmacert.exact_privacy(100, 10, "1.426215", delta=[1e-5, 1e-6], fpr=0.001, epsilon=1)
    assert set(p.epsilon) == {1e-5, 1e-6} and p.epsilon[1e-6].value > p.epsilon[1e-5].value
    assert p.tpr[0.001].value <= 0.002278223715 and p.delta[1.0].value < 1e-5
    with pytest.raises(sigmacert.ParameterError, match="exactly one target"):
        sigmacert.exact_sigma(100, 10, "0.1", fpr=0.1, tpr=0.2)
    with pytest.raises(sigmacert.ParameterError, match="delta needs epsilon"):
        sigmacert.exact_sigma(100, 10, delta=1e-5)


def test_sigma_says_when_the_value_at_the_answer_is_not_decided(capsys, monkeypatch):
    """Where the value at the exact sigma lies within 3 estimates of the target (the search stopped in the values'
    noise), `sigma` says so and --json carries value_decided false; a resolved cell carries true and no such line."""
    import sigmacert.cli.targets as face
    from certifier.numerics.profile import Value
    from sigmacert.cli import main
    cell = ["sigma", "--steps", "100", "--epochs", "10", "--epsilon", "1", "--delta", "1e-5"]
    assert main(cell + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value_decided"] is True
    assert main(cell) == 0
    assert "known to the numerics' noise" not in capsys.readouterr().out
    monkeypatch.setattr(face.kinds, "value_at", lambda run, kind, check=True: Value(0.9999999e-5, 1e-11))
    assert main(cell) == 0
    assert "known to the numerics' noise here, `certify` decides" in capsys.readouterr().out
    assert main(cell + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value_decided"] is False
