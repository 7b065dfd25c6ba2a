"""What a new user meets in the first hour: the numbers printed, the messages, the documented commands.

Every check parses what a command prints (text or JSON), not only its exit code.
"""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

import sigmacert
from certifier import schemes

ROOT = Path(__file__).resolve().parents[1]
RES = Decimal("0.000001")
CLOSED_LINE = re.compile(r"closed-form sigma \(Cor\. 3\.4, a proven bound\)\s*: (\d+\.\d{6})\s")
EXACT_LINE = re.compile(r"exact sigma \(Thm 4\.1, rounded up to 1e-6\)\s*: (\d+\.\d{6})\s")


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "sigmacert.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def meets(steps, epochs, sigma: Decimal, target: str, scheme=schemes.DEFAULT_SCHEME) -> bool:
    """U(chi^2) of Theorem 3.3 at sigma is <= target, compared exactly (the float bound as a rational)."""
    return Fraction(schemes.tv_bound(steps, epochs, float(sigma), scheme)) <= Fraction(target)


# corners: M = 1, large M, large E, small and large lambda (both branches of c_lambda), fixed bins
CELLS = [(100, 10, "0.1", "random-allocation"), (1, 1, "0.5", "random-allocation"),
         (1, 1000, "0.05", "random-allocation"), (100, 10, "1e-6", "random-allocation"),
         (100, 10, "0.99", "random-allocation"), (10, 100000, "0.1", "random-allocation"),
         (10000, 1, "0.3", "random-allocation"), (100, 10, "0.1", "fixed-bins"),
         (3, 1000, "0.9", "fixed-bins")]


@pytest.mark.parametrize("steps, epochs, target, scheme", CELLS)
def test_the_closed_form_sigma_is_printed_rounded_up_and_the_same_everywhere(steps, epochs, target, scheme):
    """Corollary 3.4 is a proven bound only if the printed decimal has U(c_E) <= lambda: rounded UP."""
    shape = ("--steps", steps, "--epochs", epochs, "--target", target, "--scheme", scheme)
    text, js = run("sigma", *shape), run("sigma", *shape, "--json")
    assert text.returncode == 0 and js.returncode == 0, (text.stderr, js.stderr)
    printed = Decimal(CLOSED_LINE.search(text.stdout).group(1))
    obj = json.loads(js.stdout)
    assert isinstance(obj["closed_form"], str) and Decimal(obj["closed_form"]) == printed  # an exact decimal
    assert sigmacert.closed_form_sigma(steps, epochs, target, scheme=scheme) == printed
    assert printed == printed.quantize(RES)
    assert meets(steps, epochs, printed, target, scheme)
    # the least such grid point at or above the float closed form: rounding up adds no more than needed
    below = printed - RES
    assert below < Decimal(schemes.closed_form_sigma(steps, epochs, float(target), scheme)) \
        or not meets(steps, epochs, below, target, scheme)
    exact = Decimal(EXACT_LINE.search(text.stdout).group(1))
    assert str(exact) == obj["exact"] and exact < printed
    if printed <= 10**6:  # `sigmacert tv` takes sigma <= 1e6: its tv_bound at the printed sigma meets the target
        tv = run("tv", "--steps", steps, "--epochs", epochs, "--sigma", printed, "--scheme", scheme, "--json")
        assert tv.returncode == 0, tv.stderr
        assert Fraction(json.loads(tv.stdout)["tv_bound"]) <= Fraction(target)


def test_the_issue_example_is_no_longer_rounded_down():
    """1.7369820363 was printed as 1.736982, where tv_bound = 0.1000000025 > 0.1."""
    assert not meets(100, 10, Decimal("1.736982"), "0.1")
    out = run("sigma", "--steps", 100, "--epochs", 10, "--target", "0.1").stdout
    assert CLOSED_LINE.search(out).group(1) == "1.736983"


def test_the_service_certificate_and_report_carry_the_same_decimal():
    """GET /v1/sigma, the certificate's numerics and the report's plot label: one decimal, rounded up."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from service.routes.sigma import sigma as sigma_route
    from service.validate import Limits
    from sigmacert import report

    class Exact:
        async def exact(self, m, e, t, sch):
            return {"exact": schemes.exact_sigma(m, e, t, sch), "exact_status": "done", "cached": False}
    state = SimpleNamespace(config=SimpleNamespace(limits=Limits()), sigma=Exact())
    for steps, epochs, target, scheme in [(100, 10, "0.1", "random-allocation"), (100, 10, "0.1", "fixed-bins"),
                                          (1, 4, "0.3", "random-allocation")]:
        body = asyncio.run(sigma_route(str(steps), target, str(epochs), scheme, None, state))
        assert body["closed_form"] == str(sigmacert.closed_form_sigma(steps, epochs, target, scheme=scheme))
        assert meets(steps, epochs, Decimal(body["closed_form"]), target, scheme)
    key = Ed25519PrivateKey.generate()
    cert = sigmacert.certify(1, 4, "0.3", key=key)  # M = 1: the Gaussian shift, a fraction of a second
    closed = str(sigmacert.closed_form_sigma(1, 4, "0.3"))
    assert cert.predicate["numerics"]["closed_form_sigma"] == closed
    page = report.render(cert.envelope, [key.public_key()])
    assert page.verdict == "ACCEPT" and f"= {closed} (Cor. 3.4, rounded up)" in page.svgs["tv"]


def test_a_tiny_target_keeps_its_digits_in_the_claim_text():
    """lambda = 1e-7: 'accuracy <= 0.5' would be false; the exact 1/2 + lambda/2 is 0.50000005."""
    out = run("sigma", "--steps", 100, "--epochs", 10, "--target", "1e-7").stdout
    assert "(every membership test: accuracy <= 0.50000005)" in out
    closed_tv, closed_acc = re.search(r"exact TV (\S+), accuracy <= (\S+)\)", out).groups()
    assert 0 < float(closed_tv) < 1e-7 and Decimal(closed_acc) >= Decimal("0.5") + Decimal(closed_tv) / 2
    assert Decimal(closed_acc) > Decimal("0.5")


def test_mc_progress_is_one_line_per_tenth_when_stderr_is_not_a_terminal():
    r = run("mc", "--steps", 8, "--epochs", 4, "--sigma", "1.5", "--samples", 400000, "--seed", 5)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr
    lines = r.stderr.splitlines()
    assert 1 <= len(lines) <= 11 and all(re.fullmatch(r"mc: +\d+\.\d % +\d+\.\d s", x) for x in lines), lines
    assert lines[-1].startswith("mc: 100.0 %")
    assert re.fullmatch(r"M=8 E=4 sigma=1\.5: Monte Carlo TV = 0\.\d{6} \+/- 0\.\d{6} .*\n", r.stdout)


def test_the_atlas_heatmap_title_fits_a_one_panel_grid():
    import matplotlib

    from sigmacert.atlas import heatmap
    from sigmacert.atlas.cells import Cell
    from sigmacert.atlas.index import certified_entry
    pred = {"claim": {"steps": 1, "epochs": 2, "sigma": "5.627083", "target": "0.1"}, "bound": "0.0999",
            "lower": {"sigma_low": "5.627082"}}
    entry = certified_entry(Cell(1, 2, "0.1"), schemes.DEFAULT_SCHEME, pred, "ab" * 32, {"seconds": 4.0}, False)
    with matplotlib.rc_context(heatmap.RC):
        fig = heatmap.figure([entry], schemes.DEFAULT_SCHEME)
        renderer = fig._get_renderer()
        box, title = fig.bbox, fig._suptitle.get_window_extent(renderer)
        assert box.x0 <= title.x0 and title.x1 <= box.x1 and title.y1 <= box.y1, (title, box)
    svg = heatmap.render([entry], schemes.DEFAULT_SCHEME).decode()
    assert "5.627083" in svg  # the certified decimal itself, not a rounded one
