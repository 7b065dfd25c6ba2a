"""The report of a run in stages (format v5: claim.stages, no steps/epochs).

One real two-sided v5 certificate at the tiny run 4x2,8x1 (lambda = 0.3, seconds) serves the page and the
plots; v5-shaped predicates with a sigma per stage and with a dp kind (what the certifier is gaining) are
built from its statement, their numbers read off the stages numerics.
"""
from __future__ import annotations

import base64
import copy
import json
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

import numpy as np
import pytest
import verifier_fixtures as vf
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import sigmacert
from certifier.certificate.keys import keygen
from certifier.numerics import closed_form as cf
from certifier.numerics.stages import exact_tv_product
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.run import Run
from sigmacert import kinds
from sigmacert.report import _comparisons, _plots, render
from sigmacert.report import kinds as rk
from sigmacert.report import stages as rs
from sigmacert.report.facts import Facts
from sigmacert.report.page import page

RUN = [(4, 2), (8, 1)]


@pytest.fixture(scope="module")
def v5(tmp_path_factory):
    """(envelope bytes, public key path, Certificate) of a real two-sided v5 certificate."""
    d = tmp_path_factory.mktemp("v5")
    keygen(str(d))
    c = sigmacert.certify(stages=RUN, target="0.3", key=d / "private.pem")
    assert c.predicate["claim"]["stages"] == [{"steps": 4, "epochs": 2}, {"steps": 8, "epochs": 1}]
    return c.envelope, d / "public.pem", c


@pytest.fixture(scope="module")
def report(v5):
    data, pub, _ = v5
    return render(data, str(pub))


def _statement(data: bytes) -> dict:
    return json.loads(base64.b64decode(json.loads(data)["payload"]))


def _facts(stmt: dict, **kw) -> Facts:
    return Facts(sha256="0" * 64, size=1, accepted=True, reason="accepted", detail="d", keyid="k", statement=stmt,
                 **kw)


def _dec(x: float, rounding) -> str:
    return str(Decimal(repr(x)).quantize(Decimal("1e-12"), rounding=rounding).normalize())


def test_a_real_v5_certificate_is_accepted_with_its_stages_table_and_three_plots(report, v5):
    _, _, c = v5
    h = report.html
    assert report.verdict == "ACCEPT" and set(report.svgs) == {"tv", "tradeoff", "epsilon"}
    assert "run in 2 stages" in h and "3 epochs in all" in h and "stages 4x2,8x1" in h   # the title names the list
    table = re.search(r'<table id="stages">(.*?)</table>', h).group(1)
    cells = re.findall(r"<td class=num>([^<]*)</td>", table)
    assert cells == ["1", "4", "2", f"{c.sigma} (shared)", "2", "8", "1", f"{c.sigma} (shared)"]
    assert f"TV &le; {c.bound} &le; &lambda; = 0.3" in h and f"TV &ge; {c.tv_lower} &gt; &lambda;" in h
    assert "product pair" in h and "M = " not in h               # no single (M, E) is claimed
    for name in report.svgs:
        assert f'id="plot-{name}"' in h


def test_the_staged_tv_curves_bracket_the_certified_points(v5):
    """The exact TV of the product at sigma is <= the certified bound, at sigma_low >= tv_lower; the closed form
    U(c) of the product's chi-square is above the exact TV at every point computed (Theorem 3.3)."""
    _, _, c = v5
    claim = c.predicate["claim"]
    t = rs.tv_curves(claim, float(c.sigma), float(c.sigma_low))
    assert not t.refused
    assert t.exact[float(c.sigma)] <= float(c.bound) <= 0.3 < float(c.tv_lower) <= t.exact[float(c.sigma_low)]
    for s, tv in t.exact.items():
        assert cf.U(rs.chi2([(4, 2, s), (8, 1, s)])) >= tv
    assert rs.chi2([(4, 2, float(c.sigma)), (8, 1, float(c.sigma))]) > rs.chi2([(4, 2, float(c.sigma))])
    # the closed-form sigma of the product: U(c) <= lambda there and (rounded up on 1e-6) not one step below
    sc = float(t.closed_form_sigma)
    assert cf.U(rs.chi2([(4, 2, sc), (8, 1, sc)])) <= 0.3 < cf.U(rs.chi2([(4, 2, sc - 2e-6), (8, 1, sc - 2e-6)]))


def test_chi2_of_stages_of_one_block_is_the_block():
    """Stages of one M multiply to the block: 1 + c = (1 + b/M)^E (eq. 9)."""
    for m, e, s in [(100, 10, 1.426215), (4, 3, 0.7), (1, 5, 2.0)]:
        split = [(m, 1, s)] * e
        assert rs.chi2(split) == pytest.approx(cf.c_E(m, e, s), rel=1e-12)


def test_staged_trade_off_and_comparisons_use_the_product_pair(v5):
    """The plotted optimal test is the stages numerics' TPR, and the chi-square column is Prop. B.2 on the
    product's chi-square, above every certified TPR row."""
    _, _, c = v5
    f = _facts(_statement(c.envelope))
    pair = rs.stages_pair(rs.runs_at(f.claim))
    ref = exact_privacy_product([(4, 2, c.sigma), (8, 1, c.sigma)], fprs=[1e-3, 1e-2], check=False)
    for a in (1e-3, 1e-2):
        assert pair.tpr(a) == pytest.approx(ref.tpr[a].value, rel=1e-9)
    cmp = _comparisons(f)
    chi2 = rs.chi2(rs.runs_at(f.claim))
    for a, row in f.tpr_rows:
        assert cmp[a][0] == pytest.approx(cf.chi2_tpr_bound(float(a), chi2))
        assert float(row["tpr"]) <= cmp[a][0] and cmp[a][1] == pytest.approx(min(1.0, float(a) + 0.3))
        assert float(row["tpr"]) >= pair.tpr(float(a)) - 1e-9   # certified rows are upper bounds on the exact TPR


def test_a_sigma_per_stage_is_shown_and_used(v5):
    """A stage entry with its own `sigma` (the optional key): the table shows it, the curves use it, and TV is
    not drawn against one shared sigma (a note says why)."""
    _, _, c = v5
    stmt = _statement(c.envelope)
    stmt["predicate"]["claim"]["stages"] = [{"steps": 4, "epochs": 2, "sigma": "1.1"},
                                            {"steps": 8, "epochs": 1, "sigma": "1.3"}]
    f = _facts(stmt)
    assert rs.runs_at(f.claim) == [(4, 2, 1.1), (8, 1, 1.3)]
    svgs, notes = _plots(f)
    assert set(svgs) == {"tradeoff", "epsilon"} and "own sigma" in notes["plots"]
    pair = rs.stages_pair(rs.runs_at(f.claim))
    ref = exact_privacy_product([(4, 2, "1.1"), (8, 1, "1.3")], epsilons=[1.0], check=False)
    assert pair.delta(1.0) == pytest.approx(ref.delta[1.0].value, rel=1e-9)
    h = page(f, svgs, notes, _comparisons(f), {})
    cells = re.findall(r"<td class=num>([^<]*)</td>", re.search(r'<table id="stages">(.*?)</table>', h).group(1))
    assert cells == ["1", "4", "2", "1.1", "2", "8", "1", "1.3"] and "its own noise multiplier" in h


@pytest.fixture(scope="module")
def dp_v5(v5):
    """A v5 dp-kind predicate (claim.kind dp, upper.bound, lower.bound_lower) at the exact shared sigma for
    eps = 1, delta = 0.01 of 4x2,8x1, its numbers from the stages numerics (kind-generic report path)."""
    _, _, c = v5
    k = kinds.parse_kind(epsilon="1", delta="0.01")
    run = sigmacert.Stage(4, 2), sigmacert.Stage(8, 1)
    sigma = kinds.exact_sigma(Run.composed(run), k)
    low = str(Decimal(sigma) - Decimal("1e-6"))
    hi, lo = (exact_privacy_product([(4, 2, s), (8, 1, s)], epsilons=[1.0]).delta[1.0].value for s in (sigma, low))
    assert hi <= 0.01 < lo
    stmt = _statement(c.envelope)
    p = copy.deepcopy(stmt["predicate"])
    kind = {"name": "dp", "epsilon": "1"}
    p["claim"].update(kind=kind, target="0.01", sigma=sigma, statement=kinds.claim_statement(kind, "0.01"))
    p["upper"] = {"bound": _dec(hi, ROUND_CEILING)}
    p["lower"] = {**p["lower"], "sigma_low": low, "bound_lower": _dec(lo, ROUND_FLOOR)}
    del p["lower"]["tv_lower"], p["privacy"], p["tpr"]
    stmt["predicate"] = p
    return _facts(stmt, replayed_bound=p["upper"]["bound"], replayed_lower=p["lower"]["bound_lower"]), hi, lo


def test_a_dp_kind_v5_certificate_gets_its_profile_with_the_certified_points(dp_v5):
    f, hi, lo = dp_v5
    svgs, notes = _plots(f)
    assert set(svgs) == {"profile"} and notes["profile"] == ""      # both curves computed, none refused
    rows = rk.numerical_rows(f)
    ref = exact_privacy_product([(4, 2, f.claim["sigma"]), (8, 1, f.claim["sigma"])], fprs=[1e-3], check=False)
    assert rows[0][0] == "exact TV" and f"{ref.tv.value:.6g}" in rows[0][1]
    assert f"{ref.tpr[1e-3].value:.6g}" in rows[1][1]
    h = page(f, svgs, notes, _comparisons(f), {}, rows)
    assert "target kind <b>dp</b>" in h and '<table id="stages">' in h and "run in 2 stages" in h
    assert f"&le; {f.sides['upper']} &le; &delta; = 0.01" in h and f"&ge; {f.sides['lower']} &gt; &delta;" in h


def test_a_signed_but_rejected_v5_shows_its_stage_list_as_claimed(v5):
    data, _, _ = v5
    stmt = _statement(data)
    stmt["predicate"]["claim"]["stages"][0]["epochs"] = 1     # a stage list it did not certify
    key = Ed25519PrivateKey.generate()
    r = render(vf.sign_statement(stmt, key), vf.public_pem(key))
    assert r.verdict == "REJECT" and not r.svgs
    assert "NOT verified" in r.html and "4x1,8x1" in r.html and "<svg" not in r.html


def test_the_staged_epsilon_curve_lies_below_the_certified_rows(v5):
    """Every certified eps(delta) row is >= the product pair's numerical eps at that delta (the plotted curve
    passes below the certified points) and within 10 % of it (the rows of this small grid)."""
    _, _, c = v5
    f = _facts(_statement(c.envelope))
    pair = rs.stages_pair(rs.runs_at(f.claim))
    ref = exact_privacy_product([(4, 2, c.sigma), (8, 1, c.sigma)], deltas=[float(d) for d, _ in f.epsilon_rows])
    assert len(f.epsilon_rows) == 2
    for d, row in f.epsilon_rows:
        eps, exact = float(row["epsilon"]), ref.epsilon[float(d)].value
        assert pair.delta(eps) <= float(d) and exact <= eps <= 1.1 * exact
        assert pair.delta(0.99 * exact) > float(d)
    assert np.isfinite(exact_tv_product([(4, 2, c.sigma), (8, 1, c.sigma)]).tv)
