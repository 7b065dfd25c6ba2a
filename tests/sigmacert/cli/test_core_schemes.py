"""`--scheme fixed-bins` on `sigmacert sigma` / `tv` and `scheme=` in the Python API."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from decimal import Decimal

import pytest

import sigmacert
from certifier.numerics import closed_form as cf
from certifier.numerics import exact, schemes

RES = Decimal("0.000001")


def run(*args):
    return subprocess.run([sys.executable, "-m", "sigmacert.cli", *args], capture_output=True, text=True, timeout=600)


def test_sigma_fixed_bins_is_sqrt_E_times_the_one_epoch_sigma():
    r = run("sigma", "--scheme", "fixed-bins", "--steps", "100", "--epochs", "10", "--target", "0.1", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["scheme"] == "fixed-bins" and (obj["steps"], obj["epochs"]) == (100, 10)
    s = Decimal(obj["exact"])
    # the answer is the grid point where TV(M, 1, sigma/sqrt(E)) first meets the target ...
    tv = lambda x: exact.exact_tv(100, 1, float(x) / math.sqrt(10), check=False).tv  # noqa: E731
    assert tv(s) <= 0.1 < tv(s - RES)
    # ... so it is sqrt(10) times the one-epoch exact sigma, within the two grids' rounding
    one = sigmacert.exact_sigma(100, 1, "0.1")
    root = Decimal(10).sqrt()
    assert root * (one - RES) < s <= root * one + RES
    assert float(s) > 1.426215 * 1.4      # more noise than random allocation (Table 4: 1.426215)
    closed = Decimal(obj["closed_form"])  # Corollary 3.4 rounded up to the 1e-6 grid
    assert 0 <= closed - Decimal(math.sqrt(10) * cf.closed_form_sigma(100, 1, 0.1)) < RES
    assert closed > s


def test_tv_fixed_bins_takes_iterations():
    r = run("tv", "--scheme", "fixed-bins", "-M", "10", "--iterations", "25", "-s", "3", "--json")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    assert (o["scheme"], o["epochs"], o["iterations"]) == ("fixed-bins", 3, 25)   # ceil(25/10) = 3
    assert o["tv_exact"] == pytest.approx(exact.exact_tv(10, 1, 3 / math.sqrt(3), check=False).tv, abs=1e-10)
    assert o["chi2"] == pytest.approx(math.expm1(3 / 9) / 10, rel=1e-12)
    assert o["tv_bound"] == pytest.approx(cf.U(o["chi2"]), rel=1e-12) and o["tv_bound"] > o["tv_exact"]
    assert exact.exact_tv(10, 3, 3.0, check=False).tv < o["tv_exact"]   # random allocation: less distance


@pytest.mark.parametrize("args", [
    ("tv", "-M", "10", "--iterations", "25", "-s", "3"),                              # not fixed-bins
    ("tv", "--scheme", "fixed-bins", "-M", "10", "-E", "2", "--iterations", "25", "-s", "3"),  # ceil = 3
    ("tv", "--scheme", "fixed-bins", "-M", "10", "--iterations", "0", "-s", "3"),
    ("tv", "--scheme", "balls", "-M", "10", "-E", "2", "-s", "3"),
    ("sigma", "--scheme", "fixed-bins", "-M", "10", "--target", "0.1"),               # neither E nor T
])
def test_bad_scheme_input_is_one_line_exit_2(args):
    r = run(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if "error" in ln]) == 1


def test_api_scheme_closed_form_and_tv():
    s = sigmacert.closed_form_sigma(100, 10, "0.1", scheme="fixed-bins")
    assert s.as_tuple().exponent >= -6
    assert schemes.tv_bound(100, 10, float(s), "fixed-bins") <= 0.1 < schemes.tv_bound(100, 10, float(s - RES),
                                                                                       "fixed-bins")
    assert s > sigmacert.closed_form_sigma(100, 10, "0.1")
    r = sigmacert.exact_tv(10, None, "3", scheme="fixed-bins", iterations=25)
    assert r.tv == pytest.approx(exact.exact_tv(10, 1, math.sqrt(3), check=False).tv, abs=1e-10)
    assert sigmacert.DEFAULT_SCHEME == "random-allocation" and "fixed-bins" in sigmacert.SCHEMES


@pytest.mark.parametrize("call", [
    lambda: sigmacert.exact_tv(10, 3, "3", scheme="nope"),
    lambda: sigmacert.exact_tv(10, 3, "3", iterations=25),
    lambda: sigmacert.exact_tv(10, 2, "3", scheme="fixed-bins", iterations=25),
    lambda: sigmacert.closed_form_sigma(10, None, "0.1", scheme="fixed-bins"),
    lambda: sigmacert.exact_sigma(10, None, "0.1", scheme="fixed-bins", iterations=-1),
])
def test_api_bad_scheme_input_is_a_parameter_error(call):
    with pytest.raises(sigmacert.ParameterError):
        call()
