"""The stated target domain, in one place (README, docs/coverage.md "The stated target domain"):

    the run   M in [1, 10^7], E in [1, 10^4] (fixed bins: E rounds per bin); a run in stages: every stage
    tv        lambda in [10^-4, 0.999]   (`certify`; the exact sigma of a TV target answers for any lambda)
    dp        epsilon in [0.01, 20], delta in [10^-12, 0.1]
    tpr       FPR alpha in [10^-8, 0.5], TPR beta in (alpha, 1)
    and the pair's noise multiplier >= 0.1 (what the numerics that choose the grids cover)

Inside it the exact sigma answers and `certify` issues a two-sided certificate. Outside it every face (the
CLI, the Python API, the service, the Opacus slot) refuses in one line (`OutsideDomainError`, a ParameterError:
exit 2, a 4xx) naming the nearest target that works, before any long computation: a parameter outside its
interval by the domain's clamp (each Target states its own intervals: certifier.targets, `check_domain`,
`nearest_in_domain`), an exact sigma below 0.1 by one evaluation of the target's functional at sigma 0.1
(`below_floor`: the largest target whose exact sigma is still >= 0.1).
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal

from flint import fmpq

from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import schemes
from certifier.params import StageTally, decimal_str, parse_decimal
from certifier.run import Run

STEPS = (1, 10**7)
EPOCHS = (1, 10**4)
SIGMA_MIN = fmpq(1, 10)          # the pair's noise multiplier: below it the numerics are not covered
FLOOR = "0.1"                    # SIGMA_MIN as decimal text


class OutsideDomainError(ParameterError):
    """The cell lies outside the stated domain; the message names the nearest thing that would work."""


def words(q: fmpq) -> str:
    """A bound or a value as a person writes it: 0.01, 20, 1e-12."""
    if q == 0 or abs(q) >= fmpq(1, 10**4):
        return decimal_str(q)
    return format(Decimal(decimal_str(q)).normalize(), "e")


@dataclass(frozen=True)
class Interval:
    """A parameter's interval of the stated domain: [lo, hi], an end open where `open_lo` / `open_hi`."""
    name: str
    lo: fmpq
    hi: fmpq
    open_lo: bool = False
    open_hi: bool = False
    lo_words: str | None = None      # an end named by another parameter: TPR beta in (alpha, 1)
    why_below: str = ""              # why the low end is where it is (said when a value lies below it)

    def below(self, q: fmpq) -> bool:
        return q <= self.lo if self.open_lo else q < self.lo

    def above(self, q: fmpq) -> bool:
        return q >= self.hi if self.open_hi else q > self.hi

    def __contains__(self, q: fmpq) -> bool:
        return not (self.below(q) or self.above(q))

    def text(self) -> str:
        lo = self.lo_words or words(self.lo)
        return f"{'(' if self.open_lo else '['}{lo}, {words(self.hi)}{')' if self.open_hi else ']'}"

    def clamp(self, q: fmpq) -> fmpq:
        """The nearest point of a closed end (an open end: the caller names its own point inside)."""
        return self.lo if q < self.lo else self.hi if q > self.hi else q


LAMBDA = Interval("lambda", fmpq(1, 10**4), fmpq(999, 1000))
EPSILON = Interval("epsilon", fmpq(1, 100), fmpq(20))
DELTA = Interval("delta", fmpq(1, 10**12), fmpq(1, 10))
FPR = Interval("fpr", fmpq(1, 10**8), fmpq(1, 2))


def tpr_interval(alpha: fmpq) -> Interval:
    """TPR beta in (alpha, 1): beta = alpha is met by every test at any sigma (the test that ignores the data)."""
    return Interval("tpr", alpha, fmpq(1), True, True, f"fpr = {words(alpha)}",
                    " (tpr must exceed fpr: the test that rejects with probability fpr whatever the data has "
                    "TPR = fpr)")


def refuse(given: str, interval: Interval, nearest: str) -> None:
    """Raise the one-line refusal of a parameter outside its interval, naming the nearest target that works."""
    q = parse_decimal(interval.name, given)
    below = interval.below(q)
    raise OutsideDomainError(f"{interval.name} = {words(q)} lies {'below' if below else 'above'} the stated domain, "
                             f"{interval.name} in {interval.text()}{interval.why_below if below else ''}; the "
                             f"nearest target that works is {nearest}")


# ----------------------------------------------------------------------------- the run

def check_block(steps: int, epochs: int, what: str = "") -> None:
    """Refuse M, E outside the domain (fixed bins: E rounds per bin), naming the nearest run that works."""
    if not STEPS[0] <= steps <= STEPS[1]:
        raise OutsideDomainError(f"{what}M = {steps} lies outside the stated domain M in [1, 10^7]; the nearest "
                                 f"cell that works has M = {min(max(steps, STEPS[0]), STEPS[1])}")
    if not EPOCHS[0] <= epochs <= EPOCHS[1]:
        raise OutsideDomainError(f"{what}E = {epochs} lies outside the stated domain E in [1, 10^4]; the nearest "
                                 f"cell that works has E = {min(max(epochs, EPOCHS[0]), EPOCHS[1])} (or split "
                                 "the run into certificates of at most 10^4 epochs and compose them)")


def check_run(run: Run) -> None:
    """A block's M and E, or every stage's of a run in stages (the stated domain's blocks)."""
    def each(stages):
        tally = StageTally(len(stages))          # a refusal names its stage when there are several
        for i, st in enumerate(stages, 1):
            check_block(st.steps, st.epochs, tally.label(i))
    run.pick(lambda steps, epochs, scheme: check_block(steps, epochs), each)


def check(run: Run, target, certify: bool = False) -> None:
    """The stated domain of a (run, target) question, instant: the run's blocks and the target's intervals
    (certify=True: also a TV target's lambda, which the exact sigma does not need). A TV target's exact sigma
    is asked of the numerics alone (no run domain), as it always was."""
    if certify or target.EXACT_SIGMA_DOMAIN:
        check_run(run)
    target.check_domain(certify)


# ----------------------------------------------------------------------------- the numerics' floor, sigma >= 0.1

def pair_run(run: Run) -> Run:
    """The run whose sigma is the pair's: a block of random allocation as it is, fixed bins the one-epoch pair
    (M, 1) at sigma/sqrt(E); a run in stages shares its sigma, each stage's pair at it."""
    def block(steps, epochs, scheme):
        r = schemes.reduce(scheme, steps, epochs)
        return Run.block(r.steps, r.epochs) if r.scale2 != 1 else Run.block(steps, epochs)
    return run.pick(block, lambda stages: run)


def pair_sigma(run: Run, sigma: fmpq) -> fmpq:
    """The pair's sigma squared is sigma^2 / E for fixed bins: returns sigma^2 of the pair (exact)."""
    scale2 = run.pick(lambda steps, epochs, scheme: schemes.reduce(scheme, steps, epochs).scale2, lambda stages: 1)
    return sigma * sigma / scale2


def is_below_floor(run: Run, sigma: fmpq) -> bool:
    return pair_sigma(run, sigma) < SIGMA_MIN * SIGMA_MIN


def round_down(x: float, digits: int = 3) -> fmpq:
    """x > 0 rounded down to `digits` significant digits, or, near 1, to `digits` significant digits of 1 - x
    (0.99999987 -> 0.999999, not 0.999): the largest short decimal not above x."""
    if x > 0.5:
        gap = _decimal_round(1 - x, digits, ROUND_CEILING)
        return fmpq(1) - parse_decimal("x", gap)
    return parse_decimal("x", _decimal_round(x, digits, ROUND_FLOOR))


def _decimal_round(x: float, digits: int, rounding: str) -> str:
    return str(Context(prec=digits, rounding=rounding).create_decimal(repr(x)))


def nearest_at_floor(run: Run, target) -> str:
    """The largest target of the same kind whose exact sigma is still >= 0.1 for the run: the target's functional
    at the pair's sigma 0.1 less its error estimate, rounded down (one evaluation of the numerics); words."""
    try:
        v = target.value_at(pair_run(run).at(FLOOR), check=False)
        value, error = float(v.value), float(v.error)
    except (NumericsUnreliableError, ParameterError, ArithmeticError, ValueError):
        return f"a smaller {target.INDEX_NAME} gives a larger sigma"
    x = value - max(error, 0.0)
    if not x > 0 or x >= float(target.value):
        return f"a smaller {target.INDEX_NAME} gives a larger sigma"
    q = round_down(x)
    nearer = target.with_target(decimal_str(q))
    try:
        nearer.check_domain(True)
    except OutsideDomainError:
        return (f"no {target.INDEX_NAME} of the stated domain has its exact sigma >= 0.1 here "
                f"({target.INDEX_NAME} at sigma 0.1: {value:.3g}); {target.floor_advice()}")
    return f"the nearest target that works is {nearer.words()} (exact sigma >= 0.1)"


GIVE_SIGMA = "give a sigma whose pair's sigma is >= 0.1, or none for the exact sigma"


def below_floor(run: Run, target, sigma: fmpq, given: bool) -> None:
    """Refuse a sigma (given, or the exact sigma found) whose pair's sigma lies below 0.1."""
    if not is_below_floor(run, sigma):
        return
    what = "the given sigma" if given else "the exact sigma"
    pair = float(pair_sigma(run, sigma)) ** 0.5
    raise OutsideDomainError(f"{what} {decimal_str(sigma)} ({pair:.6g} for the pair) lies below 0.1, outside the "
                             f"stated domain (the numerics that choose the grids cover sigma >= 0.1); "
                             f"{GIVE_SIGMA if given else nearest_at_floor(run, target)}")


def explain(run: Run, target, err: NumericsUnreliableError) -> None:
    """A search that failed: refuse as outside the domain where the target is already met at the pair's sigma
    0.1 (the exact sigma lies below what the numerics cover; one evaluation), else re-raise `err` (a gap of the
    numerics inside the domain, in its own line)."""
    try:
        v = target.value_at(pair_run(run).at(FLOOR), check=False)
        met = float(v.value) + float(v.error) <= float(target.value)
    except (NumericsUnreliableError, ParameterError, ArithmeticError, ValueError):
        met = False
    if met:
        raise OutsideDomainError(f"the exact sigma of {run}, {target.words()} lies below the pair's sigma 0.1, "
                                 "outside the stated domain (the numerics cover sigma >= 0.1); "
                                 f"{nearest_at_floor(run, target)}") from None
    raise err


# ----------------------------------------------------------------------------- certify's own entry (a block)

def check_cell(steps: int, epochs: int, target: fmpq) -> None:
    """M, E and a TV target lambda, in the words of a TV Target's check_domain (certifier.targets.tv)."""
    check_block(steps, epochs)
    if target not in LAMBDA:
        refuse(decimal_str(target), LAMBDA, f"lambda = {words(LAMBDA.clamp(target))}")


def check_sigma(sigma_of_pair: float, steps: int, epochs: int, target, given: bool) -> None:
    """Refuse a pair noise multiplier below SIGMA_MIN (given by the user, or the exact sigma found), naming the
    nearest target of the Target's kind; (steps, epochs) is the pair's (certifier.claim.Claim.pair)."""
    if sigma_of_pair >= float(SIGMA_MIN):
        return
    what = "the given sigma" if given else "the exact sigma"
    value = f" ({sigma_of_pair:.6g} for the pair)" if sigma_of_pair > 0 else ""
    raise OutsideDomainError(f"{what}{value} lies below {decimal_str(SIGMA_MIN)}, outside the stated domain (the "
                             f"numerics that choose the grids cover sigma >= 0.1); "
                             f"{GIVE_SIGMA if given else nearest_at_floor(Run.block(steps, epochs), target)}")
