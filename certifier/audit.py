"""An audit of someone else's privacy claim at the sigma it states (docs/audit.md).

A claim names the run (scheme, M, E, sigma) and one guarantee of a target kind: TV <= lambda, (eps, delta)-DP
(max(delta_Q||P(eps), delta_P||Q(eps)) <= delta, Appendix B.4) or TPR(alpha) <= beta ((7)). Both sides run at
the claimed sigma itself: the upper side (Lemma C.5, certifier.certify.upper_at) bounds the kind's functional
from above, the lower side (data processing, certifier.certify.lower_at) from below. The verdict:
HOLDS where the upper value at the claim is <= its target, FALSE where the lower value exceeds it, else TOO
CLOSE. Always the certified interval on the claim's axis: eps(delta) in [eps_lo, eps_hi] for dp (both ends
proven: delta_upper(eps_hi) <= delta and delta_lower(eps_lo) > delta, so the least eps with delta(eps) <= delta
lies in between), or [lower value, upper value] of TV / TPR(alpha). Floats (the numerics) only aim the sides.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

from flint import fmpq

from certifier.bounds.fixedpoint import round_down_sig
from certifier.certify import lower_at, upper_at
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.domain import check_block, check_sigma
from certifier.errors import CannotCertifyError, NumericsUnreliableError, ParameterError
from certifier.params import decimal_str, parse_decimal
from certifier.resolution import round_up
from certifier.targets import from_json
from certifier.targets import kind as target_kind

VERDICTS = ("HOLDS", "FALSE", "TOO CLOSE")
AIM = fmpq(2, 5)           # each side aims at AIM * width of the numerical value: the interval is about 0.8 width
NEAREST = 0.25             # the lower side is aimed at the claim only where it lies NEAREST * AIM * width below
WIDER = 5                  # the factor between a side's successive aims after the default one
DEFAULT_WIDTH = "0.001"    # relative width of the certified interval
DEFAULT_LIMIT = 60.0       # a side aimed at the claim itself may plan grids predicted up to this (then TOO CLOSE)
QUANTITY = {"dp": "epsilon", "tv": "tv", "tpr": "tpr"}


@dataclass(frozen=True)
class Stated:
    """A claim as stated: the run (scheme, M, E, sigma) and one guarantee. kind "tv" (target lambda), "dp"
    (params epsilon, target delta) or "tpr" (params fpr, target beta); params are exact decimal texts."""
    steps: int
    epochs: int
    sigma: fmpq
    kind: str
    params: tuple            # (("epsilon", "0.95"),) or (("fpr", "0.001"),) or ()
    target: fmpq
    scheme: str = RANDOM_ALLOCATION
    iterations: int | None = None
    source: str = ""

    def claim(self, kind_params: tuple | None = None, target: fmpq | None = None) -> Claim:
        """The certifier's Claim at sigma (kind_params / target replaced for a side's aim)."""
        named = () if self.kind == "tv" else (("name", self.kind), *(self.params if kind_params is None
                                                                     else kind_params))
        return Claim(self.scheme, self.steps, self.epochs, self.sigma, self.target if target is None else target,
                     self.iterations, named)

    def param(self) -> fmpq | None:
        return parse_decimal(self.params[0][0], self.params[0][1]) if self.params else None

    def value(self) -> fmpq:
        """The claim on the interval's axis: eps (dp), lambda (tv), beta (tpr)."""
        return self.param() if self.kind == "dp" else self.target

    def words(self) -> str:
        """The claim in words."""
        run = (f"M = {self.steps} steps per epoch, E = {self.epochs} epochs, sigma = {decimal_str(self.sigma)}"
               + (" (fixed bins)" if self.scheme != RANDOM_ALLOCATION else " (random allocation)"))
        p = dict(self.params)
        what = {"tv": f"TV <= {decimal_str(self.target)} (every membership test: accuracy <= 1/2 + "
                      f"{decimal_str(self.target)}/2)",
                "dp": f"({p.get('epsilon')}, {decimal_str(self.target)})-DP: eps <= {p.get('epsilon')} at "
                      f"delta = {decimal_str(self.target)}",
                "tpr": f"every test with FPR {p.get('fpr')} has TPR <= {decimal_str(self.target)}"}[self.kind]
        return f"{what}, for {run}"


@dataclass
class AuditOutcome:
    """What `audit` found: the verdict, the certified interval, both sides' records and results."""
    stated: Stated
    verdict: str
    quantity: str
    interval: tuple           # (lower end, upper end): exact decimal texts
    numerical: float          # the numerical value on the axis (aims only)
    numerical_error: float
    upper: dict               # {method, enclosures, bound, value[, epsilon]}: the upper side at sigma
    lower: dict               # {method, enclosures, tv_lower, value}: the lower side at sigma
    upper_value: str          # the kind's upper value at the claim (dp: delta at the claimed eps)
    lower_value: str          # the kind's lower value at the claim
    fix_sigma: str | None = None   # FALSE: the least sigma meeting the claim (numerical, rounded up)
    tries: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)

    @property
    def relative_width(self) -> float:
        lo, hi = (float(parse_decimal("interval", x)) for x in self.interval)
        return (hi - lo) / hi if hi > 0 else math.inf


def _kind(stated: Stated, x: fmpq | None = None):
    """The target kind at axis value x (dp: eps = x; tv / tpr: x is the target, the kind unchanged)."""
    if stated.kind == "tv":
        return target_kind("tv")
    if stated.kind == "dp":
        return target_kind("dp", {"epsilon": decimal_str(stated.param() if x is None else x)}, stated.target)
    return target_kind("tpr", {"fpr": stated.params[0][1]}, stated.target if x is None else x)


def _aimed(stated: Stated, x: fmpq):
    """(claim, kind) of a side aimed at axis value x."""
    if stated.kind == "dp":
        text = decimal_str(x)
        return stated.claim((("epsilon", text),)), target_kind("dp", {"epsilon": text}, stated.target)
    return stated.claim(target=x), _kind(stated, x)


def numerical(stated: Stated) -> tuple[float, float]:
    """The numerical value on the axis and its error estimate: eps(delta), TV or TPR(alpha) at sigma."""
    from certifier.numerics.exact import exact_tv
    from certifier.numerics.targets import exact_privacy_scheme
    M, E, s = stated.steps, stated.epochs, float(stated.sigma)
    try:
        if stated.kind == "tv":
            c = stated.claim()                # fixed bins: the one-epoch pair at sigma/sqrt(E)
            r = exact_tv(*c.pair(), c.sigma_of_pair(s), check=False)
            return float(r.tv), float(r.error)
        if stated.kind == "dp":
            d = float(stated.target)
            v = exact_privacy_scheme(M, E, s, scheme=stated.scheme, deltas=(d,), check=False).epsilon[d]
        else:
            a = float(stated.param())
            v = exact_privacy_scheme(M, E, s, scheme=stated.scheme, fprs=(a,), check=False).tpr[a]
    except (NumericsUnreliableError, ParameterError, OverflowError, ValueError) as err:
        raise CannotCertifyError(f"the numerics at sigma {decimal_str(stated.sigma)} cannot aim the audit: {err}") \
            from None
    return float(v.value), float(v.error)


def _decimal(x: float, up: bool, digits: int = 7) -> fmpq:
    """x rounded up / down to `digits` significant digits, as an exact rational (aims only)."""
    if x <= 0:
        return fmpq(0)
    k = digits - 1 - math.floor(math.log10(x))
    n = math.ceil(x * 10**k) if up else math.floor(x * 10**k)
    return fmpq(n, 10**k) if k >= 0 else fmpq(n * 10**-k)


def _aims(claimed: fmpq, num: float, err: float, width: fmpq, up: bool) -> list:
    """The axis values a side tries, in order: the claim itself where it lies between the numerical value and
    the default aim (its own proof is the verdict), then the default aim num (1 +- AIM width) (+- err), then
    WIDER times and WIDER^2 times as far (a side whose grids lose more than planned, e.g. the lower side at heavy
    tails: the interval is then wider than asked, and says so)."""
    w = float(AIM * width)
    wider = [_decimal(num * (1 + w * f) + err, True) if up else _decimal(max(num * (1 - w * f) - err, 0.0), False)
             for f in (WIDER, WIDER * WIDER)]
    default = _decimal(num * (1 + w) + err, True) if up else _decimal(max(num * (1 - w) - err, 0.0), False)
    # the upper side at the claim plans within `limit` seconds (certify's refusal of slow grids); the lower side
    # has no such limit, so it is aimed only at a claim NEAREST * AIM * width (relative) below the truth
    gap = err if up else NEAREST * w * num + err
    between = (float(default) > float(claimed) > num + gap) if up else (float(default) < float(claimed) < num - gap)
    return ([claimed, default] if between else [default]) + wider


def _value_str(x: fmpq, up: bool) -> str:
    """A value rounded up (down) to 10 significant digits; a lower value below 0 is recorded as 0 (delta, TPR,
    TV are >= 0)."""
    if up:
        from certifier.bounds.fixedpoint import arb_exact, round_up_sig
        return round_up_sig(arb_exact(x), 10)
    return "0" if x <= 0 else round_down_sig(x, 10)


def _upper_value(stated: Stated, res, x: fmpq | None = None) -> fmpq | None:
    """The kind's certified upper value at axis value x (dp: delta at eps x; tv: the TV bound; tpr: TPR)."""
    if stated.kind == "tv":
        return parse_decimal("bound", res.bound)
    v = _kind(stated, x).upper_bound(res)
    return None if v is None else parse_decimal("bound", v)


def _lower_value(stated: Stated, low, x: fmpq | None = None) -> fmpq | None:
    return _kind(stated, x).lower_value(low)


def _bisect(good, lo: int, hi: int) -> int:
    """good(hi) is True, good(lo) False (monotone between): the least j in (lo, hi] with good(j)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if good(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _epsilon_interval(stated: Stated, res, low, eps_up: fmpq, eps_low: fmpq, num: float, width: fmpq):
    """(eps_lo, eps_hi) on a grid of spacing g ~ width num / 50: eps_hi the least grid point whose certified
    upper delta is <= delta (eps_up is one), eps_lo the largest whose certified lower delta exceeds delta."""
    delta = stated.target
    g_float = max(num, 1e-6) * float(width) / 50
    g = fmpq(1, 10 ** max(0, -math.floor(math.log10(g_float))))
    up_ok = lambda j: (lambda v: v is not None and v <= delta)(_upper_value(stated, res, g * j))  # noqa: E731
    low_ok = lambda j: (lambda v: v is not None and v > delta)(_lower_value(stated, low, g * j))  # noqa: E731
    j_up = int((eps_up / g).ceil())
    if not up_ok(j_up):
        raise CannotCertifyError(f"the upper side certified eps {decimal_str(eps_up)} but not the grid point above it")
    j_low = int((eps_low / g).floor())
    if not low_ok(j_low):
        raise CannotCertifyError(f"the lower side certified eps {decimal_str(eps_low)} but not the grid point below")
    hi = _bisect(up_ok, j_low, j_up)                     # low_ok(j_low): the upper cannot hold there
    lo = _bisect(lambda j: not low_ok(j), j_low, hi) - 1
    return g * lo, g * hi


def audit(stated: Stated, *, width=DEFAULT_WIDTH, limit: float = DEFAULT_LIMIT, progress=None) -> AuditOutcome:
    """Run both sides at the claimed sigma and decide the claim (module docstring). width: the interval's
    relative width to aim at (exact decimal). CannotCertifyError where a side finds no grid."""
    t0 = time.perf_counter()
    width = width if isinstance(width, fmpq) else parse_decimal("width", str(width))
    if not 0 < width < 1:
        raise ParameterError(f"width must lie strictly between 0 and 1, got {decimal_str(width)}")
    probe = stated.claim()                    # the stated domain, before any computation (certifier.domain)
    check_block(stated.steps, stated.epochs)
    target = from_json({"name": stated.kind, **dict(stated.params)}, decimal_str(stated.target))
    target.check_domain(certify=True)
    check_sigma(probe.sigma_of_pair(float(stated.sigma)), *probe.pair(), target, True)
    num, err = numerical(stated)
    claimed = stated.value()
    tries: list = []
    # the upper side: at the claim when it lies just above the truth, else at the default aim
    found = None
    for k, x in enumerate(_aims(claimed, num, err, width, up=True)):
        claim, kind = _aimed(stated, x)
        try:
            out, search, found = upper_at(claim, kind, limit=limit if k == 0 else 3600.0, progress=progress)
        except CannotCertifyError as e:
            tries.append({"side": "upper", "aim": decimal_str(x), "skipped": str(e)})
            continue
        tries += [{"side": "upper", "aim": decimal_str(x), **t} for t in out.tries]
        if found is not None:
            up_aim, up_claim = x, claim
            break
    if found is None:
        raise CannotCertifyError(f"the upper side found no grid at sigma {decimal_str(stated.sigma)} "
                                 f"({tries[-1].get('skipped', 'not certified') if tries else 'no try'})")
    res, meth = found
    t_up = time.perf_counter()
    low = None
    for x in _aims(claimed, num, err, width, up=False):
        claim, kind = _aimed(stated, x)
        lout, rec = lower_at(claim, kind, search, meth, progress=progress)
        tries += [{"side": "lower", "aim": decimal_str(x), **t} for t in lout.lower_tries]
        if rec is not None:
            low, low_aim, low_rec = lout.lower_result, x, rec
            break
    if low is None:
        raise CannotCertifyError(f"the lower side found no grid at sigma {decimal_str(stated.sigma)}")
    t_low = time.perf_counter()
    u_at, l_at = _upper_value(stated, res), _lower_value(stated, low)
    holds = u_at is not None and u_at <= stated.target
    false = l_at is not None and l_at > stated.target
    verdict = "HOLDS" if holds else "FALSE" if false else "TOO CLOSE"
    if stated.kind == "dp":
        lo, hi = _epsilon_interval(stated, res, low, up_aim, low_aim, num, width)
        interval = (decimal_str(lo), decimal_str(hi))
    else:
        interval = (_value_str(l_at, False), _value_str(u_at, True))
    upper = {"method": search.method.to_json(meth, up_claim), "enclosures": res.enclosures, "bound": res.bound,
             "value": _value_str(u_at, True)}
    if stated.kind == "tpr":
        upper["epsilon"] = _kind(stated).upper_record(res)["epsilon"]
    lower = {"method": low_rec["method"], "enclosures": low_rec["enclosures"], "tv_lower": low_rec["tv_lower"],
             "value": _value_str(l_at, False)}
    fix = fix_sigma(stated) if verdict == "FALSE" else None
    t_end = time.perf_counter()
    return AuditOutcome(stated, verdict, QUANTITY[stated.kind], interval, num, err, upper, lower, upper["value"],
                        lower["value"], fix, tries,
                        {"upper": round(t_up - t0, 3), "lower": round(t_low - t_up, 3),
                         "interval": round(t_end - t_low, 3), "total": round(t_end - t0, 3)})


def fix_sigma(stated: Stated) -> str | None:
    """The least sigma meeting the claim on the res(sigma) grid (the kind's exact-sigma search, numerical,
    rounded up), or None where the numerics cannot find it."""
    kind = _kind(stated)
    probe = replace(stated.claim(), sigma=fmpq(1))
    try:
        return decimal_str(round_up(kind.exact_sigma(probe, stated.target)))
    except (NumericsUnreliableError, ParameterError, ArithmeticError, ValueError):
        return None
