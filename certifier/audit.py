"""An audit of someone else's privacy claim at the sigma it states (docs/audit.md).

A claim names the run (a block: scheme, M, E; or stages at one shared sigma), the sigma and one guarantee, a
Target (certifier.targets): TV <= lambda, (eps, delta)-DP (max(delta_Q||P(eps), delta_P||Q(eps)) <= delta,
Appendix B.4) or TPR(alpha) <= beta ((7)). Both sides run at the claimed sigma itself: the upper side (Lemma C.5,
certifier.certify.upper_at, a block or stages) bounds the target's functional from above,
the lower side (data processing, lower_at) from below. The verdict: HOLDS where the upper
value at the claim is <= its target, FALSE where the lower value exceeds it, else TOO CLOSE. Always the certified
interval on the claim's axis (Target.audit_axis): eps(delta) in [eps_lo, eps_hi] for dp (both ends proven:
delta_upper(eps_hi) <= delta and delta_lower(eps_lo) > delta, so the least eps with delta(eps) <= delta lies in
between), or [lower value, upper value] of TV / TPR(alpha). Floats (the numerics) only aim the sides. What
differs between the kinds is the Target's (its audit_* methods); what differs between a block and stages is the
Run's (Run.pick).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from flint import fmpq

from certifier.bounds.fixedpoint import arb_exact, round_down_sig, round_up_sig
from certifier.certificate.stages import stages_claim
from certifier.certify import lower_at, upper_at
from certifier.claim import Claim
from certifier.domain import check_cell, check_sigma
from certifier.errors import CannotCertifyError, NumericsUnreliableError, ParameterError
from certifier.params import decimal_str, parse_decimal
from certifier.run import Run, exact_sigma
from certifier.targets import Target

VERDICTS = ("HOLDS", "FALSE", "TOO CLOSE")
AIM = fmpq(2, 5)           # each side aims at AIM * width of the numerical value: the interval is about 0.8 width
NEAREST = 0.25             # the lower side is aimed at the claim only where it lies NEAREST * AIM * width below
WIDER = 5                  # the factor between a side's successive aims after the default one
DEFAULT_WIDTH = "0.001"    # relative width of the certified interval
DEFAULT_LIMIT = 60.0       # a side aimed at the claim itself may plan grids predicted up to this (then TOO CLOSE)


@dataclass(frozen=True)
class Stated:
    """A claim as stated: the run (certifier.run.Run without sigma: a block, or stages sharing one sigma), the
    claimed sigma and the guarantee (a certifier.targets Target, parsed from exact decimals)."""
    run: Run
    sigma: fmpq
    target: Target
    source: str = ""

    @property
    def steps(self) -> int:
        return self.run.steps

    @property
    def epochs(self) -> int:
        """E of a block; the total epochs of a run in stages."""
        return self.run.epochs

    @property
    def scheme(self) -> str:
        return self.run.scheme

    @property
    def iterations(self) -> int | None:
        return self.run.iterations

    @property
    def stages(self) -> tuple:
        """((M_s, E_s), ...) of a run in stages; () for a block."""
        return self.run.pick(lambda m, e, scheme: (), lambda stages: tuple((s.steps, s.epochs) for s in stages))

    def claim(self, target: Target | None = None) -> Claim:
        """The certifier's Claim at sigma of the guarantee (or of `target`, a side's aim)."""
        t = self.target if target is None else target
        return self.run.pick(
            lambda m, e, scheme: Claim(scheme, m, e, self.sigma, t.value, self.run.iterations, t.claim_kind()),
            lambda stages: stages_claim(self.stages, self.sigma, t.value, t.claim_kind()))

    def words(self) -> str:
        """The claim in words."""
        run = self.run.pick(lambda m, e, scheme: f"M = {m} steps per epoch, E = {e} epochs, sigma = "
                            f"{decimal_str(self.sigma)} ({scheme.replace('-', ' ')})",
                            lambda stages: f"stages {','.join(f'{s.steps}x{s.epochs}' for s in stages)} (M x E "
                            f"each, in order) at one sigma = {decimal_str(self.sigma)} (random allocation)")
        return f"{self.target.audit_words()}, for {run}"


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
    upper_value: str          # the target's upper value at the claim (dp: delta at the claimed eps)
    lower_value: str          # the target's lower value at the claim
    fix_sigma: str | None = None   # FALSE: the least sigma meeting the claim (numerical, rounded up)
    tries: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)

    @property
    def relative_width(self) -> float:
        lo, hi = (float(parse_decimal("interval", x)) for x in self.interval)
        return (hi - lo) / hi if hi > 0 else math.inf


def _upper_side(claim, kind, limit, progress):
    """The upper side at claim.sigma (a block, or stages on one method-v2 grid for every stage): (tries,
    (UpperResult, method) or None, the method's JSON, lower(claim, kind) -> (tries, LowerResult or None, the
    `lower` record or None) on the same search)."""
    out, search, found = upper_at(claim, kind, limit=limit, progress=progress)
    if found is None:
        return out.tries, None, None, None
    meth = found[1]

    def lower(c, k):
        lout, rec = lower_at(c, k, search, meth, progress=progress)
        return lout.lower_tries, lout.lower_result, rec
    return out.tries, found, search.method.to_json(meth, claim), lower


def numerical(stated: Stated) -> tuple[float, float]:
    """The numerical value on the axis and its error estimate: eps(delta), TV or TPR(alpha) at sigma."""
    try:
        v = stated.target.audit_numerical(stated.run.at(decimal_str(stated.sigma)))
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


def _value_str(x: fmpq | None, up: bool) -> str:
    """A value rounded up (down) to 10 significant digits; a lower value below 0 is recorded as 0 (delta, TPR,
    TV are >= 0)."""
    if x is None:
        raise CannotCertifyError("a side gave no value of the claim's functional")
    if up:
        return round_up_sig(arb_exact(x), 10)
    return "0" if x <= 0 else round_down_sig(x, 10)


def _bisect(good, lo: int, hi: int) -> int:
    """good(hi) is True, good(lo) False (monotone between): the least j in (lo, hi] with good(j)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if good(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _inverse_interval(target: Target, res, low, up_aim: fmpq, low_aim: fmpq, num: float, width: fmpq):
    """(lo, hi) on a grid of spacing g ~ width num / 50 of the axis: hi the least grid point x whose certified
    upper value (of the target aimed at x) meets the target, up_aim being one; lo the largest whose certified
    lower value exceeds it."""
    g_float = max(num, 1e-6) * float(width) / 50
    g = fmpq(1, 10 ** max(0, -math.floor(math.log10(g_float))))

    def up_ok(j):
        t = target.audit_aimed(g * j)
        v = t.audit_upper(res)
        return v is not None and v <= t.value

    def low_ok(j):
        t = target.audit_aimed(g * j)
        v = t.audit_lower(low)
        return v is not None and v > t.value
    j_up = int((up_aim / g).ceil())
    if not up_ok(j_up):
        raise CannotCertifyError(f"the upper side certified {decimal_str(up_aim)} but not the grid point above it")
    j_low = int((low_aim / g).floor())
    if not low_ok(j_low):
        raise CannotCertifyError(f"the lower side certified {decimal_str(low_aim)} but not the grid point below")
    hi = _bisect(up_ok, j_low, j_up)                     # low_ok(j_low): the upper cannot hold there
    lo = _bisect(lambda j: not low_ok(j), j_low, hi) - 1
    return decimal_str(g * lo), decimal_str(g * hi)


def _check_domain(stated: Stated) -> None:
    """The stated domain (certifier.domain), before any computation: every stage's M, the run's E, the pair's
    sigma; a tv target is a lambda of the domain."""
    rule = stated.target.rule()
    for s in stated.run.stages:
        check_cell(s.steps, stated.run.epochs, stated.target.value if rule.lambda_domain else fmpq(1, 2))
    probe = stated.claim()
    check_sigma(probe.sigma_of_pair(float(stated.sigma)), *probe.pair(), fmpq(1, 2), True)


def audit(stated: Stated, *, width=DEFAULT_WIDTH, limit: float = DEFAULT_LIMIT, progress=None) -> AuditOutcome:
    """Run both sides at the claimed sigma and decide the claim (module docstring). width: the interval's
    relative width to aim at (exact decimal). CannotCertifyError where a side finds no grid."""
    t0 = time.perf_counter()
    width = width if isinstance(width, fmpq) else parse_decimal("width", str(width))
    if not 0 < width < 1:
        raise ParameterError(f"width must lie strictly between 0 and 1, got {decimal_str(width)}")
    _check_domain(stated)
    target = stated.target
    num, err = numerical(stated)
    claimed = target.audit_axis()
    tries: list = []
    # the upper side: at the claim when it lies just above the truth, else at the default aim
    found = None
    for k, x in enumerate(_aims(claimed, num, err, width, up=True)):
        aimed = target.audit_aimed(x)
        claim = stated.claim(aimed)
        try:
            up_tries, found, method_json, lower_side = _upper_side(claim, aimed.rule(), limit if k == 0 else 3600.0,
                                                                   progress)
        except CannotCertifyError as e:
            tries.append({"side": "upper", "aim": decimal_str(x), "skipped": str(e)})
            continue
        tries += [{"side": "upper", "aim": decimal_str(x), **t} for t in up_tries]
        if found is not None:
            up_aim = x
            break
    if found is None:
        raise CannotCertifyError(f"the upper side found no grid at sigma {decimal_str(stated.sigma)} "
                                 f"({tries[-1].get('skipped', 'not certified') if tries else 'no try'})")
    res = found[0]
    t_up = time.perf_counter()
    low = None
    for x in _aims(claimed, num, err, width, up=False):
        aimed = target.audit_aimed(x)
        low_tries, result, rec = lower_side(stated.claim(aimed), aimed.rule())
        tries += [{"side": "lower", "aim": decimal_str(x), **t} for t in low_tries]
        if rec is not None:
            low, low_aim, low_rec = result, x, rec
            break
    if low is None:
        raise CannotCertifyError(_no_lower_grid(stated, tries, num, target.audit_upper(res)))
    t_low = time.perf_counter()
    u_at, l_at = target.audit_upper(res), target.audit_lower(low)
    holds = u_at is not None and u_at <= target.value
    false = l_at is not None and l_at > target.value
    verdict = "HOLDS" if holds else "FALSE" if false else "TOO CLOSE"
    interval = target.audit_interval(lambda: (_value_str(l_at, False), _value_str(u_at, True)),
                                     lambda: _inverse_interval(target, res, low, up_aim, low_aim, num, width))
    upper = {"method": method_json, "enclosures": res.enclosures, "bound": res.bound,
             "value": _value_str(u_at, True), **target.audit_record(res)}
    lower = {"method": low_rec["method"], "enclosures": low_rec["enclosures"], "tv_lower": low_rec["tv_lower"],
             "value": _value_str(l_at, False)}
    fix = fix_sigma(stated) if verdict == "FALSE" else None
    t_end = time.perf_counter()
    return AuditOutcome(stated, verdict, target.AUDIT_QUANTITY, interval, num, err, upper, lower, upper["value"],
                        lower["value"], fix, tries,
                        {"upper": round(t_up - t0, 3), "lower": round(t_low - t_up, 3),
                         "interval": round(t_end - t_low, 3), "total": round(t_end - t0, 3)})


def _no_lower_grid(stated: Stated, tries: list, num: float, upper: fmpq | None) -> str:
    """The refusal where the lower side finds no grid at any aim: what its grids lost against the numerical value
    (at heavy tails the data-processing lower side loses a mass of the order of the target whatever its grid:
    docs/audit.md) and what the upper side alone proved of the claim."""
    t = stated.target
    lost = [x.get("measured_loss") for x in tries if x.get("side") == "lower" and x.get("measured_loss") is not None]
    why = (f": its grids lost up to {max(lost):.3g} against the numerical value, of the order of the target "
           f"{decimal_str(t.value)} (the data-processing lower side at heavy tails)" if lost else
           f" ({tries[-1]['skipped']})" if tries and "skipped" in tries[-1] else "")
    proved = (f"the upper side alone proves the claim holds ({t.FUNCTIONAL_WORDS} <= {_value_str(upper, True)}), "
              if upper is not None and upper <= t.value else "")
    return (f"the lower side found no grid at sigma {decimal_str(stated.sigma)} proving a lower end below the "
            f"numerical {num:.6g}{why}; {proved}no interval with a proven lower end is issued (docs/audit.md)")


def fix_sigma(stated: Stated) -> str | None:
    """The least sigma meeting the claim on the res(sigma) grid (the target's exact-sigma search, numerical,
    rounded up), or None where the numerics cannot find it."""
    try:
        return decimal_str(parse_decimal("sigma", exact_sigma(stated.run, stated.target)))
    except (NumericsUnreliableError, ParameterError, ArithmeticError, ValueError):
        return None
