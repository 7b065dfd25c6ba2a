"""Replay of a format-v4 claim's target kind (dp, tpr) on both sides, from our own replays.

Upper side (Lemma C.5: min{Lambda, e^eps}, min{1, e^eps Lambda} are concave): from the b_k of our
replay of step (iv), delta_Q||P(eps), delta_P||Q(eps) <= the balls of methods.UPPER[..].deltas; dp:
the max of their upper ends; tpr: e^epsilon fpr + delta_Q||P(epsilon) at the recorded epsilon ((7)).
Lower side (data processing, Appendix B.4): from our replay's integer pmfs U, W of the processed pair
(lower bounds, units 2^-F; deleted_p = 1 - sum U, deleted_q = 1 - sum W)
    delta_Q||P(eps) >= W(A) - e^eps (U(A) + deleted_p),  delta_P||Q(eps) >= U(A') - e^eps (W(A') + deleted_q),
    1 - T(fpr) >= sum phi_k W_k for a test with sum phi_k U_k <= fpr - deleted_p (Neyman-Pearson order),
exact rationals with a rational upper end of e^eps. Written apart from the certifier (no shared code).
"""
from __future__ import annotations

from statistics import NormalDist

from flint import arb, fmpq

from . import methods
from .format.stages import where
from .format.strict import Reject, working_prec
from .format.v4 import parameter
from .replay.arith import dyadic
from .replay.gaussian_shift import delta
from .replay.slack import upper_end


def exp_upper(eps: fmpq) -> fmpq:
    """A rational >= e^eps (upper end of a 200-bit ball)."""
    with working_prec(200):
        return upper_end(arb(eps).exp())


def _hockey(X: list, Y: list, F: int, c: fmpq) -> fmpq:
    """Y(A) - c (X(A) + 1 - sum X) over A = {Y > c X}, exact: with c = a/b, y > c x iff b y > a x."""
    one, a, b = 1 << F, int(c.p), int(c.q)
    ya = xa = 0
    for x, y in zip(X, Y):
        if b * y > a * x:
            ya, xa = ya + y, xa + x
    return fmpq(b * ya - a * (xa + one - sum(X)), b * one)


def dp_lower(pmfs: tuple, eps: fmpq) -> fmpq:
    U, W, F = pmfs
    c = exp_upper(eps)
    return max(_hockey(U, W, F, c), _hockey(W, U, F, c))


def tpr_lower(pmfs: tuple, alpha: fmpq) -> fmpq:
    U, W, F = pmfs
    one = 1 << F
    left = alpha * one - (one - sum(U))
    if left < 0:
        return fmpq(0)
    free = sum(w for u, w in zip(U, W) if u == 0)          # cells with no P mass: phi = 1 costs nothing
    got = fmpq(free)
    for u, w in sorted(((u, w) for u, w in zip(U, W) if u > 0 and w > 0), key=lambda t: -t[1] / t[0]):
        if u <= left:
            got, left = got + w, left - u
        else:
            got += fmpq(w) * left / u
            break
    return got / one


def _lower_end(x: arb) -> fmpq:
    """A rational <= every point of the ball x (its lower end on the grid 2^-400, rounded down)."""
    return fmpq(dyadic(x, False, 400), 2**400)


def _phi(x: arb) -> arb:
    return (-x / arb(2).sqrt()).erfc() / 2


def z_below(alpha: fmpq) -> fmpq:
    """A rational z with Phi(z) <= alpha proven in balls, so z <= Phi^-1(alpha) (floats only locate it)."""
    z = NormalDist().inv_cdf(float(alpha))
    step = max(abs(z), 1.0) * 1e-15
    with working_prec(200):
        while True:
            zq = fmpq(*float(z).as_integer_ratio())
            if _phi(arb(zq)) <= arb(alpha):  # certainly <= (the comparison of balls)
                return zq
            z, step = z - step, 2 * step


def shift_lower(kind: dict, mu: arb) -> fmpq:
    """M = 1, the Gaussian shift mu (a ball): dp: the lower end of delta(eps) (both directions);
    tpr: 1 - T(fpr) = Phi(mu + Phi^-1(fpr)) >= the lower end of Phi(mu + z), z <= Phi^-1(fpr) ((7))."""
    x = parameter(kind)
    with working_prec(200):
        return _lower_end(SHIFT_VALUE[kind["name"]](mu, x))


# the Gaussian shift's value of each kind's functional (a ball; M = 1): dp: delta(eps) (both directions are
# equal); tpr: Phi(mu + z), z <= Phi^-1(fpr) ((7))
SHIFT_VALUE = {"dp": lambda mu, x: delta(mu, x), "tpr": lambda mu, x: _phi(mu + arb(z_below(x)))}
# our upper value of each kind's functional from the deltas' balls: dp: the max of the two directions' upper
# ends; tpr: e^epsilon fpr + delta_Q||P(epsilon) at the recorded epsilon ((7))
UPPER_VALUE = {"dp": lambda p, x, deltas_at: max(upper_end(d) for d in deltas_at(x)),
               "tpr": lambda p, x, deltas_at: upper_end(arb(p["upper"]["epsilon"]).exp() * arb(x)
                                                        + deltas_at(p["upper"]["epsilon"])[0])}
LOWER_VALUE = {"dp": dp_lower, "tpr": tpr_lower}     # our lower value at sigma_low from the processed pmfs


def upper_value(p: dict, deltas_at) -> fmpq:
    """Our certified upper value of the kind's functional (an exact rational: an upper end)."""
    kind = p["claim"]["kind"]
    x = parameter(kind)
    with working_prec(max(200, p["method"]["prec"])):
        return UPPER_VALUE[kind["name"]](p, x, deltas_at)


def lower_value(p: dict, pmfs: tuple) -> fmpq:
    """Our certified lower value of the kind's functional at sigma_low (exact rational)."""
    kind = p["claim"]["kind"]
    return LOWER_VALUE[kind["name"]](pmfs, parameter(kind))


def verify_upper(p: dict, deltas_at, round_up, res) -> None:
    """The kind's upper side: our value <= the target (the proof) and <= the recorded upper.bound."""
    c, kind = p["claim"], p["claim"]["kind"]
    v = upper_value(p, deltas_at)
    res.derived = {**(res.derived or {}), "upper": round_up(v, 13)}
    res.replayed_value = res.derived["upper"]
    if v > c["target"]:
        raise Reject("kind-replay-exceeds-target", f"replayed upper bound {round_up(v, 13)} on the {kind['name']} "
                     f"functional exceeds the target {round_up(c['target'], 13, up=False)}: the replay does "
                     "not prove this claim")
    if v > p["upper"]["bound"]:
        raise Reject("kind-replay-bound-exceeds", f"replayed upper bound {round_up(v, 13)} > recorded upper.bound "
                     f"{round_up(p['upper']['bound'], 13)}")


def verify_lower(p: dict, lr, round_up, res) -> None:
    """The kind's lower side: our value at sigma_low > the target (the proof) and >= bound_lower."""
    c, lo = p["claim"], p["lower"]
    if getattr(lr, "mu", None) is not None:  # the closed form (M = 1)
        v = shift_lower(c["kind"], lr.mu)
    elif getattr(lr, "pmfs", None) is None:
        raise Reject("lower-method-kind", "this lower method's replay gives no pmfs for the kind")
    else:
        v = lower_value(p, lr.pmfs)
    res.derived = {**(res.derived or {}), "lower": round_up(v, 13, up=False)}
    res.replayed_value_lower = res.derived["lower"]
    if v <= c["target"]:
        raise Reject("kind-lower-not-above-target", f"replayed lower bound {round_up(v, 13, up=False)} on the "
                     f"{c['kind']['name']} functional at sigma_low does not exceed the target")
    if v < lo["bound_lower"]:
        raise Reject("kind-lower-below-recorded", f"replayed lower bound {round_up(v, 13, up=False)} is below "
                     f"the recorded bound_lower {round_up(lo['bound_lower'], 13, up=False)}")


def verify(p: dict, raw: dict, res, deltas_at, round_up) -> None:
    """Both sides of a v4 claim's kind (after the upper method's replay and enclosure check)."""
    c, kind = p["claim"], raw["claim"]["kind"]
    what = ", ".join(f"{k}={v}" for k, v in kind.items() if k != "name")
    verify_upper(p, deltas_at, round_up, res)
    res.detail = (f"{kind['name']} ({what}): {KIND_FUNCTIONAL[kind['name']]} <= {raw['upper']['bound']} <= target "
                  f"{raw['claim']['target']} {where(raw['claim'])} (replayed {res.derived['upper']})")
    if "lower" not in p:
        return
    lo = p["lower"]
    method = methods.lower(lo["method"], c)
    lr = methods.better_map(method.replay(c, lo["sigma_low"], lo["method"]),
                            lambda r: (getattr(r, "pmfs", None) is None or lower_value(p, r.pmfs) >= lo["bound_lower"])
                            and not method.check(c, lo["method"], lo["enclosures"], r)[1])
    res.replayed_lower, res.replay_seconds["lower"] = round_up(lr.bound, 13, up=False), lr.seconds
    verify_lower(p, lr, round_up, res)
    _, bad = method.check(c, lo["method"], lo["enclosures"], lr)
    if bad:
        res.mismatches += bad
        raise Reject("lower-enclosure-mismatch", "recorded lower enclosures disagree with the replay: "
                     + "; ".join(bad))
    res.detail += (f"; > {raw['lower']['bound_lower']} > target at sigma_low {raw['lower']['sigma_low']} "
                   f"(replayed {res.derived['lower']})")


KIND_FUNCTIONAL = {"dp": "max(delta_Q||P, delta_P||Q)", "tpr": "1 - T(fpr)"}
