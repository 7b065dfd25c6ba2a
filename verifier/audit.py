"""The replay of an audit certificate (format v6, format/v6.py): both sides at the claimed sigma.

ACCEPT only if, after the static checks, the cost model's prediction fits the budget and
  1. our replay of the upper method bounds TV by at most `bound`, and the enclosures agree within the slack;
  2. our upper value of the kind at the claim (dp: max of both deltas at the claimed eps; tpr: e^eps fpr +
     delta_Q||P(eps) at upper.epsilon; tv: the TV bound) is <= upper.value;
  3. our replay of the lower method AT sigma (not sigma - res) gives TV >= tv_lower, its enclosures agree,
     and our lower value of the kind at the claim (data processing, kinds.py) is >= lower.value;
  4. the verdict is the one our values give: HOLDS iff our upper value <= target, FALSE iff our lower value
     > target, TOO CLOSE otherwise (a FALSE whose lower side does not exceed the claim is refused);
  5. the interval is proven by our replay: dp -- both deltas at interval.upper <= delta (upper side) and the
     lower bound on max(delta_Q||P, delta_P||Q) at interval.lower > delta (lower side), so the least eps with
     delta(eps) <= delta lies in [lower, upper]; tv / tpr -- interval.upper >= our upper value and
     interval.lower <= our lower value.
A run in stages (one shared sigma) replays by format v5's methods (methods.upper / lower read the claim's
stages). What differs between the kinds is the table KINDS, written apart from the certifier.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flint import arb, fmpq

from . import kinds, methods
from .cost import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS, check_budget, predict
from .format.stages import where
from .format.strict import Reject, working_prec
from .format.v4 import parameter
from .format.v6 import verdict_of
from .replay.slack import upper_end


def _pmf_lower(lr, kind: dict, of_pmfs) -> fmpq:
    """A kind's lower value from our lower replay: the closed form (M = 1) or of_pmfs(U, W, F) of the processed
    pair."""
    if getattr(lr, "mu", None) is not None:
        return kinds.shift_lower(kind, lr.mu)
    if getattr(lr, "pmfs", None) is None:
        raise Reject("lower-method-kind", "this lower method's replay gives no pmfs for the kind")
    return of_pmfs(lr.pmfs)


def _dp_upper(p: dict, deltas_at, rp, x: fmpq) -> fmpq:
    """max of both deltas' upper ends at eps = x (Appendix B.4)."""
    with working_prec(max(200, p["method"]["prec"])):
        return max(upper_end(d) for d in deltas_at(x))


def _tpr_upper(p: dict, deltas_at, rp, x: fmpq) -> fmpq:
    """e^g fpr + delta_Q||P(g) at the recorded g = upper.epsilon ((7))."""
    g = p["upper"]["epsilon"]
    with working_prec(max(200, p["method"]["prec"])):
        return upper_end(arb(g).exp() * arb(x) + deltas_at(g)[0])


@dataclass(frozen=True)
class Replayed:
    """How an audit of a kind replays (written apart from the certifier): our upper / lower value of its
    functional at the kind's parameter x (dp: eps; tpr: fpr; tv: none), and whether its interval is the
    inverse of the functional on the parameter (dp: eps(delta)) or the functional's own values (tv, tpr)."""
    upper: Callable       # (p, deltas_at, rp, x) -> fmpq
    lower: Callable       # (lr, kind, x) -> fmpq
    inverse: bool = False
    deltas: bool = True   # the upper side's deltas are needed (every kind but tv)
    param: Callable = parameter   # the claim's parameter x from claim.kind


KINDS = {
    "tv": Replayed(lambda p, deltas_at, rp, x: rp.bound, lambda lr, kind, x: lr.bound, deltas=False,
                   param=lambda kind: None),
    "dp": Replayed(_dp_upper, lambda lr, kind, x: _pmf_lower(lr, {**kind, "epsilon": _text(x)},
                                                           lambda pmfs: kinds.dp_lower(pmfs, x)), inverse=True),
    "tpr": Replayed(_tpr_upper, lambda lr, kind, x: _pmf_lower(lr, kind, lambda pmfs: kinds.tpr_lower(pmfs, x))),
}


def _text(q: fmpq) -> str:
    """An exact decimal text of a grid point (interval ends are finite decimals)."""
    p, d = int(q.p), int(q.q)
    k = 0
    while (p * 10**k) % d:
        k += 1
        if k > 60:
            raise Reject("audit-interval-invalid", "an interval end is not a finite decimal")
    n = p * 10**k // d
    s = str(abs(n)).rjust(k + 1, "0")
    return ("-" if n < 0 else "") + (s[:-k] + "." + s[-k:] if k else s)


def verify(p: dict, raw: dict, res, round_up, max_memory=None, max_seconds=None) -> None:
    """Replay an audit (module docstring); fills res (replayed values in res.derived) or raises Reject."""
    c, m, lo = p["claim"], p["method"], p["lower"]
    rule, kind = KINDS[c["kind"]["name"]], c["kind"]
    x = rule.param(kind)
    res.claim, res.recorded_bound = raw["claim"], raw["bound"]
    cost = predict({"claim": c, "method": m, "lower": {**lo, "sigma_low": c["sigma"]}})
    res.cost = cost.as_dict()
    check_budget(cost, DEFAULT_MAX_MEMORY if max_memory is None else max_memory,
                 DEFAULT_MAX_SECONDS if max_seconds is None else max_seconds)
    method = methods.upper(m, c)
    rp = method.replay(c, m)
    res.replayed_bound, res.replay_seconds = round_up(rp.bound, 13), rp.seconds
    if rp.bound > p["bound"]:
        raise Reject("replay-bound-exceeds", f"replayed upper bound on TV {res.replayed_bound} > recorded bound "
                     f"{raw['bound']}")
    _, bad = method.check(c, m, p["enclosures"], rp)
    if bad:
        res.mismatches = bad
        raise Reject("enclosure-mismatch", "recorded enclosures disagree with the replay: " + "; ".join(bad))
    deltas_at = method.deltas(rp, m) if rule.deltas else None
    up = rule.upper(p, deltas_at, rp, x)
    res.derived = {"upper": round_up(up, 13)}
    if up > p["upper"]["value"]:
        raise Reject("audit-upper-value-exceeds", f"replayed upper value {round_up(up, 13)} > recorded upper.value "
                     f"{raw['upper']['value']}")
    lmethod = methods.lower(lo["method"], c)
    lr = methods.better_map(lmethod.replay(c, c["sigma"], lo["method"]),
                            lambda r: r.bound >= lo["tv_lower"] and not lmethod.check(c, lo["method"],
                                                                                      lo["enclosures"], r)[1])
    res.replayed_lower, res.replay_seconds["lower"] = round_up(lr.bound, 13, up=False), lr.seconds
    if lr.bound < lo["tv_lower"]:
        raise Reject("lower-replay-below-recorded", f"replayed lower bound on TV {res.replayed_lower} is below the "
                     f"recorded tv_lower {raw['lower']['tv_lower']}")
    _, bad = lmethod.check(c, lo["method"], lo["enclosures"], lr)
    if bad:
        res.mismatches = bad
        raise Reject("lower-enclosure-mismatch", "recorded lower enclosures disagree with the replay: "
                     + "; ".join(bad))
    low = max(rule.lower(lr, kind, x), fmpq(0))      # delta, TV and TPR are >= 0: a lower bound below 0 says 0
    res.derived["lower"] = round_up(low, 13, up=False)
    if low < lo["value"]:
        raise Reject("audit-lower-value-below", f"replayed lower value {res.derived['lower']} < recorded "
                     f"lower.value {raw['lower']['value']}")
    verdict, a = verdict_of(up, low, c["target"]), p["audit"]
    if a["verdict"] == "FALSE" and not low > c["target"]:
        raise Reject("audit-false-not-above-claim", f"verdict FALSE but the replayed lower value "
                     f"{res.derived['lower']} does not exceed the target {raw['claim']['target']}")
    if a["verdict"] != verdict:
        raise Reject("audit-verdict-mismatch", f"verdict {a['verdict']} but the replay gives {verdict}")
    (_inverse if rule.inverse else _values)(p, raw, rule, deltas_at, rp, lr, up, low, round_up, res)
    iv = raw["audit"]["interval"]
    res.detail = (f"audit {a['verdict']}: {a['quantity']} in [{iv['lower']}, {iv['upper']}] {where(raw['claim'])} "
                  f"(replayed upper {res.derived['upper']}, lower {res.derived['lower']} against the target "
                  f"{raw['claim']['target']})")


def _values(p, raw, rule, deltas_at, rp, lr, up, low, round_up, res) -> None:
    """The interval of the functional's own values (tv, tpr): it contains our [lower, upper] (module
    docstring, 5)."""
    iv = p["audit"]["interval"]
    if iv["upper"] < up or iv["lower"] > low:
        raise Reject("audit-interval-unproven", f"interval [{raw['audit']['interval']['lower']}, "
                     f"{raw['audit']['interval']['upper']}] is not within the replayed [{res.derived['lower']}, "
                     f"{res.derived['upper']}]")


def _inverse(p, raw, rule, deltas_at, rp, lr, up, low, round_up, res) -> None:
    """The interval of the inverse on the parameter (dp: eps(delta)): our upper value at interval.upper meets the
    target and our lower value at interval.lower exceeds it (module docstring, 5)."""
    iv, target = p["audit"]["interval"], p["claim"]["target"]
    hi = rule.upper(p, deltas_at, rp, iv["upper"])
    res.derived["interval_upper_delta"] = round_up(hi, 13)
    if hi > target:
        raise Reject("audit-interval-upper", f"at eps = interval.upper {raw['audit']['interval']['upper']} the "
                     f"replayed upper bound on delta is {round_up(hi, 13)} > delta {raw['claim']['target']}")
    lw = rule.lower(lr, p["claim"]["kind"], iv["lower"])
    res.derived["interval_lower_delta"] = round_up(lw, 13, up=False)
    if not lw > target:
        raise Reject("audit-interval-lower", f"at eps = interval.lower {raw['audit']['interval']['lower']} the "
                     f"replayed lower bound on delta is {res.derived['interval_lower_delta']}, not above delta "
                     f"{raw['claim']['target']}")
