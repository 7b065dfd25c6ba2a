"""`sigmacert sigma` / `sigmacert tv`: JSON contract and one-line errors."""
import json
import subprocess
import sys

import pytest

from certifier.params import ParameterError, decimal_str, parse_decimal, parse_steps, parse_target


def run(*args):
    return subprocess.run([sys.executable, "-m", "sigmacert.cli", *args], capture_output=True, text=True, timeout=300)


def test_sigma_json_reproduces_table_4():
    r = run("sigma", "--steps", "250", "--epochs", "20", "--target", "0.1", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert set(obj) == {"steps", "epochs", "scheme", "target", "closed_form", "exact", "gdp_limit"}
    assert obj["scheme"] == "random-allocation"
    assert obj["exact"] == "1.309428"
    assert float(obj["closed_form"]) > float(obj["exact"]) * 1.14  # Section 5.2: 14.9-25.3 % excess


def test_tv_json_keys_and_consistency():
    r = run("tv", "--steps", "100", "--epochs", "10", "--sigma", "1.426215", "--json")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    for k in ("tv_exact", "tv_error", "tv_bound", "chi2", "accuracy_bound", "accuracy_exact"):
        assert k in o
    assert 0.0999 < o["tv_exact"] <= 0.1 and o["tv_error"] < 1e-10
    assert o["accuracy_exact"] == pytest.approx(0.5 + o["tv_exact"] / 2)
    assert o["tv_bound"] > o["tv_exact"]


@pytest.mark.parametrize("args", [
    ("sigma", "--steps", "0", "--epochs", "1", "--target", "0.1"),
    ("sigma", "--steps", "10", "--epochs", "-3", "--target", "0.1"),
    ("sigma", "--steps", "10", "--epochs", "1", "--target", "1"),
    ("sigma", "--steps", "10", "--epochs", "1", "--target", "0"),
    ("sigma", "--steps", "10", "--epochs", "1", "--target", "abc"),
    ("tv", "--steps", "10", "--epochs", "2", "--sigma", "0"),
    ("tv", "--steps", "10", "--epochs", "2", "--sigma", "-1.5"),
    ("tv", "--steps", "1e99", "--epochs", "2", "--sigma", "1"),
    ("tv", "--steps", "10", "--epochs", "99999999999", "--sigma", "1"),
    ("tv", "--steps", "10", "--epochs", "2", "--sigma", "nan"),
    ("tv", "--steps", "10", "--epochs", "2", "--sigma", "0.01"),
    ("tv", "--steps", "10", "--epochs", "2"),
    ("tv", "--steps", "\u0661\u0660", "--epochs", "2", "--sigma", "1"),       # Arabic-Indic digits "10"
    ("sigma", "--steps", "10", "--epochs", "1", "--target", "0.\uff11"),   # a fullwidth digit one
    ("frobnicate",),
])
def test_bad_input_is_one_line_exit_2(args):
    r = run(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if "error" in ln]) == 1


def test_decimals_are_exact():
    assert parse_decimal("x", "1.426215") * 1000000 == 1426215
    assert decimal_str(parse_decimal("x", "5e-5")) == "0.00005"
    assert decimal_str(parse_decimal("x", "0.1")) == "0.1"
    with pytest.raises(ParameterError):
        parse_target("1.0")


@pytest.mark.parametrize("text", ["\u0661.5", "1.\u0665", "1e\u0663", "\uff11", "1\u00b2"])
def test_only_ascii_digits_are_decimals(text):
    with pytest.raises(ParameterError):     # int() would read these; the verifier reads ASCII only
        parse_decimal("x", text)
    with pytest.raises(ParameterError):
        parse_steps(text)
