"""auto's method order for a TV claim that method v1 fits: v1 first, unless its first grid is predicted slower than
V2_SWITCH_SECONDS and method v2's first (its calibration included) at most V2_GAIN of that; then v2 first and v1
after it, on both sides (certifier.methods.auto.faster_first, lower_order)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import certifier.methods.auto as au
from certifier import methods as mt
from certifier.certify import STEP_SECONDS
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.errors import CannotCertifyError
from certifier.methods.search import MAX_PREDICTED_SECONDS, Ctx, TooSlowError
from certifier.outcome import Record
from certifier.params import parse_decimal
from certifier.targets import kind

Q = lambda s: parse_decimal("x", s)
V1, V2 = au.SEARCHES[1], au.SEARCHES[2]


def _ctx(name="tv", sigma="0.70886", M=10**6, E=10**4):
    k = kind(name) if name == "tv" else kind(name, {"epsilon": "1"}, Q("0.00001"))
    claim = Claim(RANDOM_ALLOCATION, M, E, Q(sigma), Q("0.1"), None)
    out = Record(False, M, E, sigma, "0.1", None)
    return Ctx(claim, Q(sigma), k, 0.0999996, 1e-10, {}, None, 3, out, lambda *a: None)


def _plans(monkeypatch, v1_seconds, v2_seconds):
    plan = lambda s: SimpleNamespace(predicted_seconds=s)  # noqa: E731
    monkeypatch.setattr(au, "plan_within", lambda side, k: (plan(v1_seconds), 1e-7))
    monkeypatch.setattr(au, "v1_side", lambda ctx: None)
    monkeypatch.setattr(au, "v2_first", lambda ctx, margin, tv, wts=None, need=0.0: (plan(v2_seconds), 0.0))
    monkeypatch.setattr(au, "idle_seconds", lambda s: s)     # the machine's load aside


@pytest.mark.parametrize("v1, v2, swapped", [
    (400.0, 50.0, True),                           # v2 (with its calibration, 56 s) well under 0.4 x 400 s
    (400.0, 150.0, False),                         # 169 s > 160 s: not enough gain
    (50.0, 1.0, False),                            # v1 fast enough: the paper's method stays
])
def test_the_upper_side_takes_v2_first_only_where_it_is_far_faster(monkeypatch, v1, v2, swapped):
    _plans(monkeypatch, v1, v2)
    ctx = _ctx()
    order = au.faster_first(ctx, [V1, V2])
    assert order == ([V2, V1] if swapped else [V1, V2])
    assert any("v2 first" in t.get("skipped", "") for t in ctx.out.tries) == swapped


def test_a_target_kind_keeps_the_order(monkeypatch):
    _plans(monkeypatch, 400.0, 5.0)
    assert au.faster_first(_ctx("dp"), [V1, V2]) == [V1, V2]


def test_the_lower_side_appends_v1_after_v2_and_orders_by_predicted_time(monkeypatch):
    """After an upper v2 (whose search lists lower v2 only), lower v1 is the fallback; where lower v1 is far slower
    lower v2 goes first, else lower v1 does (its time: lower v2's first plan times its calibration)."""
    monkeypatch.setattr(au, "lower_v1_side", lambda *a: None)
    monkeypatch.setattr(au, "choose_v2", lambda *a, **k: SimpleNamespace(predicted_seconds=40.0))
    monkeypatch.setattr(au, "idle_seconds", lambda s: s)
    ctx = _ctx()
    meth = SimpleNamespace(prec=100)
    low = Claim(RANDOM_ALLOCATION, 10**6, 10**4, Q("0.708858"), Q("0.1"), None)
    monkeypatch.setattr(au, "plan_within", lambda side, k: (SimpleNamespace(predicted_seconds=400.0), 1e-7))
    order = [m for m, _ in au.lower_order(ctx, V2, low, Q("0.708858"), 0.10000025, 1e-10, meth)]
    assert order == [mt.LOWER_V2, mt.LOWER_V1]
    monkeypatch.setattr(au, "plan_within", lambda side, k: (SimpleNamespace(predicted_seconds=100.0), 1e-7))
    order = [m for m, _ in au.lower_order(ctx, V2, low, Q("0.708858"), 0.10000025, 1e-10, meth)]
    assert order == [mt.LOWER_V1, mt.LOWER_V2]        # 60 s > 0.4 x 100 s: v1 first


def test_the_order_holds_on_the_real_planners_at_a_cell_where_v2_is_far_faster_above():
    """(10^6, 10^4, 0.1) at sigma 0.70886 (margin 4e-7): the v1 planners predict hundreds of seconds on each side;
    upper v2 (a lattice per level, method-v2.md §10) about a quarter of that, so it goes first, while lower v2
    (two calibration runs, and a finer lattice: its map loses more) is not far enough ahead and lower v1 stays
    first, v2 its fallback."""
    ctx = _ctx()
    ctx.tv, ctx.tv_err = 0.09999959921839197, 1.7e-10
    assert au.faster_first(ctx, [V1, V2]) == [V2, V1]
    low = Claim(RANDOM_ALLOCATION, 10**6, 10**4, Q("0.708858"), Q("0.1"), None)
    order = au.lower_order(ctx, V2, low, Q("0.708858"), 0.1000002461698195, 1.7e-10, SimpleNamespace(prec=100))
    assert [m for m, _ in order] == [mt.LOWER_V1, mt.LOWER_V2]


@pytest.mark.parametrize("v1, v2, spare, err_slow, stepped", [
    (313.0, 254.0, True, True, True),          # (3, 10^4, 0.999): v2 not far faster -> the next sigma step
    (579.0, 60.0, True, True, False),          # (10^7, 1, 0.001): v2 far faster -> v2 at this sigma
    (313.0, 254.0, False, True, False),        # no step to spare: v2 it is
    (313.0, 254.0, True, False, False),        # v1 found no grid at all (not slowness): v2 it is
])
def test_a_slow_v1_at_an_automatic_sigma_steps_sigma_unless_v2_is_far_faster(monkeypatch, v1, v2, spare, err_slow,
                                                                              stepped):
    _plans(monkeypatch, v1, v2)
    ctx = _ctx()
    ctx.limit = STEP_SECONDS if spare else MAX_PREDICTED_SECONDS
    err = TooSlowError("slow", v1) if err_slow else CannotCertifyError("no grid")
    assert au.step_instead(ctx, err, V2) == stepped
