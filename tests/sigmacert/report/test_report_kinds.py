"""The report of a dp and a tpr certificate: the certified point on the privacy profile / trade-off curve,
the other quantities as numerical rows, the kind's statement.

The page and figure tests build a v4-shaped predicate (claim.kind, claim.target = delta or beta,
upper.bound, lower.bound_lower) on the committed M=100, E=10 statement, with numbers read off the exact
numerics (the committed rows are left out: they belong to another sigma), so the figures are checked at
a cell too large to certify in a test; one test renders a real, verified v4 certificate at (10, 2).
"""
from __future__ import annotations

import base64
import copy
import json
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path

import pytest

from certifier.numerics.targets import exact_privacy
from certifier.run import Run
from sigmacert import kinds
from sigmacert.report import _plots
from sigmacert.report import kinds as rk
from sigmacert.report.facts import Facts
from sigmacert.report.page import page

ROOT = Path(__file__).resolve().parents[3]
CERT = ROOT / "artifacts" / "certificates" / "M100_E10.json"
M, E = 100, 10


def _dec(x: float, rounding) -> str:
    return str(Decimal(repr(x)).quantize(Decimal("1e-12"), rounding=rounding).normalize())


def _v4(kind: dict, target: str, sigma: str, sigma_low: str, value, lower_value) -> Facts:
    """The committed v2 statement turned into a v4-shaped one of `kind` (upper/lower from the numerics)."""
    stmt = json.loads(base64.b64decode(json.loads(CERT.read_bytes())["payload"]))
    p = copy.deepcopy(stmt["predicate"])
    p["claim"].update(kind=kind, target=target, sigma=sigma, scheme="random-allocation",
                      statement=kinds.claim_statement(kind, target))
    p["upper"] = {"bound": _dec(value, ROUND_CEILING)}
    p["lower"] = {**p["lower"], "sigma_low": sigma_low, "bound_lower": _dec(lower_value, ROUND_FLOOR)}
    del p["lower"]["tv_lower"]
    for rows in ("privacy", "tpr"):   # the committed rows are for the TV certificate's sigma: not this claim's
        del p[rows]
    stmt["predicate"] = p
    stmt["predicateType"] = "https://sigmacert.dev/certificate/v4"
    return Facts(sha256="0" * 64, size=1, accepted=True, reason="accepted", detail="d", keyid="k", statement=stmt,
                 replayed_bound=p["upper"]["bound"], replayed_lower=p["lower"]["bound_lower"])


@pytest.fixture(scope="module")
def dp_facts():
    k = kinds.parse_kind(epsilon="1", delta="1e-5")
    sigma = kinds.exact_sigma(Run.block(M, E), k)
    low = str(Decimal(sigma) - Decimal("1e-6"))
    hi, lo = (exact_privacy(M, E, float(s), epsilons=[1.0]).delta[1.0].value for s in (sigma, low))
    assert hi <= 1e-5 < lo            # the exact sigma: the cell is a real bracket
    return _v4({"name": "dp", "epsilon": "1"}, "0.00001", sigma, low, hi, lo)


@pytest.fixture(scope="module")
def tpr_facts():
    k = kinds.parse_kind(fpr="0.001", tpr="0.002")
    sigma = kinds.exact_sigma(Run.block(M, E), k)
    low = str(Decimal(sigma) - Decimal("1e-6"))
    hi, lo = (exact_privacy(M, E, float(s), fprs=[1e-3]).tpr[1e-3].value for s in (sigma, low))
    assert hi <= 2e-3 < lo
    return _v4({"name": "tpr", "fpr": "0.001"}, "0.002", sigma, low, hi, lo)


def _line(fig, label_part):
    lines = [ln for ln in fig.axes[0].lines if label_part in str(ln.get_label())]
    assert len(lines) == 1, [ln.get_label() for ln in fig.axes[0].lines]
    return lines[0]


def test_the_kind_is_read_from_the_claim():
    assert kinds.claim_kind({}) == {"name": "tv"}
    assert kinds.claim_kind({"kind": {"name": "dp", "epsilon": "1"}}) == {"name": "dp", "epsilon": "1"}
    for bad in ({"name": "renyi"}, "dp", None, {"epsilon": "1"}):
        with pytest.raises(ValueError):
            kinds.claim_kind({"kind": bad})
    s = kinds.certified_sides({"claim": {}, "bound": "0.09", "lower": {"sigma_low": "1", "tv_lower": "0.11"}})
    assert (s["upper"], s["lower"], s["sigma_low"]) == ("0.09", "0.11", "1")
    s = kinds.certified_sides({"claim": {"kind": {"name": "tpr", "fpr": "0.1"}}, "bound": "0.3",
                               "upper": {"bound": "0.2"}, "lower": {"sigma_low": "1", "bound_lower": "0.25"}})
    assert (s["upper"], s["lower"]) == ("0.2", "0.25")


def test_dp_figure_puts_the_certified_points_on_the_profile(dp_facts):
    fig, note = rk.dp_figure(dp_facts)
    assert note == ""
    c = dp_facts.sides
    up, low = _line(fig, r"\leq"), _line(fig, r"\geq")
    assert list(up.get_xdata()) == [1.0] and list(up.get_ydata()) == [float(c["upper"])]
    assert list(low.get_xdata()) == [1.0] and list(low.get_ydata()) == [float(c["lower"])]
    curve = _line(fig, r"$\sigma$ = ")                       # the profile at sigma
    xs, ys = list(curve.get_xdata()), list(curve.get_ydata())
    at = ys[xs.index(1.0)]                                   # the curve passes through the certified epsilon
    assert at <= 1e-5 <= float(c["upper"]) * 1.0001 and abs(at - float(c["upper"])) <= 1e-12
    assert all(a >= b for a, b in zip(ys, ys[1:]))           # delta(eps) is non-increasing
    assert _line(fig, r"\sigma_{low}$ = ").get_ydata()[xs.index(1.0)] > 1e-5
    assert fig.axes[0].get_yscale() == "log"


def test_tpr_figure_puts_the_certified_points_on_the_trade_off_curve(tpr_facts):
    fig, note = rk.tpr_figure(tpr_facts)
    assert note == ""
    c = tpr_facts.sides
    up = _line(fig, r"TPR $\leq$ " + c["upper"])
    assert list(up.get_xdata()) == [0.001] and list(up.get_ydata()) == [float(c["upper"])]
    curve = _line(fig, r"$1 - T(\alpha)$ at $\sigma$")
    xs, ys = list(curve.get_xdata()), list(curve.get_ydata())
    assert abs(ys[xs.index(0.001)] - float(c["upper"])) <= 1e-11
    assert all(b >= a for a, b in zip(ys, ys[1:])) and all(y >= x for x, y in zip(xs, ys))  # TPR >= FPR, rising


def test_dp_page_states_the_kind_and_the_other_quantities(dp_facts):
    svgs, notes = _plots(dp_facts)
    assert set(svgs) == {"profile"} and svgs["profile"].startswith("<svg")
    rows = rk.numerical_rows(dp_facts)
    h = page(dp_facts, svgs, notes, {}, {}, rows)
    assert "(1, 0.00001)-DP, both directions" in h and "target kind <b>dp</b>" in h
    assert dp_facts.sides["upper"] in h and dp_facts.sides["lower"] in h
    assert 'id="plot-profile"' in h and "privacy profile" in h and 'id="plot-tv"' not in h
    tv = exact_privacy(M, E, float(dp_facts.claim["sigma"])).tv.value
    assert ("exact TV", f"{tv:.6g}") == (rows[0][0], rows[0][1].split(" ")[0]) and f"{tv:.6g}" in h
    assert [r[0] for r in rows[1:]] == [f"TPR of the best test at FPR {a:g}" for a in rk.ROW_FPRS]
    assert "&alpha; + &lambda;</th>" not in h                # no TV-target column for a dp target
    assert "the upper bound on &delta;(1)" in h             # the trust section names the kind's quantity
    assert h == page(dp_facts, *_plots(dp_facts), {}, {}, rows)   # deterministic bytes


def test_tpr_page_states_the_kind_and_the_other_quantities(tpr_facts):
    svgs, notes = _plots(tpr_facts)
    assert set(svgs) == {"tradeoff-kind"}
    rows = rk.numerical_rows(tpr_facts)
    h = page(tpr_facts, svgs, notes, {}, {}, rows)
    assert "every membership test with FPR &lt;= 0.001 has TPR &lt;= 0.002" in h
    eps = exact_privacy(M, E, float(tpr_facts.claim["sigma"]), deltas=[1e-5]).epsilon[1e-5].value
    assert rows[1][0].startswith("&epsilon; at &delta; = 1e-05") and rows[1][1].startswith(f"{eps:.6g}")
    assert re.search(r"TPR at FPR 0\.001 &le; [0-9.]+ &le; &beta; = 0\.002", h)


def test_tv_page_is_unchanged_by_the_kinds():
    """A v2 claim (no kind) reads as tv: the same claim section and no kind rows."""
    stmt = json.loads(base64.b64decode(json.loads(CERT.read_bytes())["payload"]))
    f = Facts(sha256="0" * 64, size=1, accepted=True, reason="accepted", detail="d", keyid="k", statement=stmt)
    h = page(f, {}, {}, {a: (0.5, 0.5) for a, _ in f.tpr_rows}, {})
    assert f.kind == {"name": "tv"} and "TV &le; 0.09999997311 &le; &lambda; = 0.1" in h
    assert "&alpha; + &lambda;</th>" in h and "target kind" not in h and "numerical, not certified)" not in h


def test_render_a_real_dp_certificate(tmp_path):
    import sigmacert
    from certifier.certificate.keys import keygen
    from sigmacert.report import render
    keygen(str(tmp_path / "k"))
    cert = sigmacert.certify(10, 2, epsilon="0.5", delta="1e-4", key=tmp_path / "k" / "private.pem")
    r = render(cert.envelope, tmp_path / "k" / "public.pem")
    assert r.accepted and set(r.svgs) == {"profile"} and str(cert.bound) in r.html


def test_a_one_sided_dp_certificate_has_no_lower_point(dp_facts):
    stmt = copy.deepcopy(dp_facts.statement)
    del stmt["predicate"]["lower"]
    f = Facts(sha256="0" * 64, size=1, accepted=True, reason="accepted", detail="d", keyid="k", statement=stmt)
    assert f.sides["lower"] is None and not f.two_sided
    fig, _ = rk.dp_figure(f)
    assert not [ln for ln in fig.axes[0].lines if r"\geq" in str(ln.get_label())]
    assert not [ln for ln in fig.axes[0].lines if r"\sigma_{low}" in str(ln.get_label())]
    h = page(f, *_plots(f), {}, {}, [])
    assert "One-sided certificate" in h and "<td>lower bound at" not in h
