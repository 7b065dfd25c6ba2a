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
"""
from __future__ import annotations

from flint import arb, fmpq

from . import kinds, methods
from .cost import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS, check_budget, predict
from .format.strict import Reject, working_prec
from .format.v4 import parameter
from .format.v6 import verdict_of
from .replay.slack import upper_end


def _upper_value(p: dict, deltas_at, rp, eps: fmpq | None = None) -> fmpq:
    """Our certified upper value of the kind (dp at eps, default the claimed eps)."""
    kind = p["claim"]["kind"]
    if kind["name"] == "tv":
        return rp.bound
    with working_prec(max(200, p["method"]["prec"])):
        if kind["name"] == "dp":
            return max(upper_end(d) for d in deltas_at(parameter(kind) if eps is None else eps))
        g = p["upper"]["epsilon"]
        return upper_end(arb(g).exp() * arb(parameter(kind)) + deltas_at(g)[0])


def _lower_value(p: dict, lr, eps: fmpq | None = None) -> fmpq:
    """Our certified lower value of the kind at sigma (dp at eps, default the claimed eps)."""
    kind = p["claim"]["kind"]
    if kind["name"] == "tv":
        return lr.bound
    if eps is not None:
        kind = {"name": "dp", "epsilon": _text(eps)}
    if getattr(lr, "mu", None) is not None:             # the closed form (M = 1)
        return kinds.shift_lower(kind, lr.mu)
    if getattr(lr, "pmfs", None) is None:
        raise Reject("lower-method-kind", "this lower method's replay gives no pmfs for the kind")
    x = parameter(kind)
    return kinds.dp_lower(lr.pmfs, x) if kind["name"] == "dp" else kinds.tpr_lower(lr.pmfs, x)


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
    deltas_at = method.deltas(rp, m) if c["kind"]["name"] != "tv" else None
    up = _upper_value(p, deltas_at, rp)
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
    low = max(_lower_value(p, lr), fmpq(0))          # delta, TV and TPR are >= 0: a lower bound below 0 says 0
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
    _interval(p, raw, deltas_at, rp, lr, up, low, round_up, res)
    iv = raw["audit"]["interval"]
    res.detail = (f"audit {a['verdict']}: {a['quantity']} in [{iv['lower']}, {iv['upper']}] at sigma "
                  f"{raw['claim']['sigma']}, M={c['steps']}, E={c['epochs']} (replayed upper {res.derived['upper']}, "
                  f"lower {res.derived['lower']} against the target {raw['claim']['target']})")


def _interval(p, raw, deltas_at, rp, lr, up, low, round_up, res) -> None:
    """Both ends of the certified interval from our replay (module docstring, 5)."""
    iv, target = p["audit"]["interval"], p["claim"]["target"]
    if p["claim"]["kind"]["name"] != "dp":
        if iv["upper"] < up or iv["lower"] > low:
            raise Reject("audit-interval-unproven", f"interval [{raw['audit']['interval']['lower']}, "
                         f"{raw['audit']['interval']['upper']}] is not within the replayed [{res.derived['lower']}, "
                         f"{res.derived['upper']}]")
        return
    hi = _upper_value(p, deltas_at, rp, iv["upper"])
    res.derived["interval_upper_delta"] = round_up(hi, 13)
    if hi > target:
        raise Reject("audit-interval-upper", f"at eps = interval.upper {raw['audit']['interval']['upper']} the "
                     f"replayed upper bound on delta is {round_up(hi, 13)} > delta {raw['claim']['target']}")
    lw = _lower_value(p, lr, iv["lower"])
    res.derived["interval_lower_delta"] = round_up(lw, 13, up=False)
    if not lw > target:
        raise Reject("audit-interval-lower", f"at eps = interval.lower {raw['audit']['interval']['lower']} the "
                     f"replayed lower bound on delta is {res.derived['interval_lower_delta']}, not above delta "
                     f"{raw['claim']['target']}")
