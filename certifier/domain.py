"""The stated domain of `certify` (README, docs/certificate.md §7): where every cell certifies two-sided.

    M in [1, 10^7],  E in [1, 10^4],  lambda in [10^-4, 0.999],  and the pair's exact sigma >= 0.1

(the exact-TV numerics that choose the grids cover sigma >= 0.1). Outside it `certify` refuses in one
line, before any long computation, naming the nearest cell that would work (`OutsideDomainError`, exit 2).
"""
from __future__ import annotations

from flint import fmpq

from certifier.bounds.fixedpoint import round_down_sig
from certifier.errors import ParameterError
from certifier.numerics.exact import exact_tv
from certifier.params import decimal_str

STEPS = (1, 10**7)
EPOCHS = (1, 10**4)
TARGETS = (fmpq(1, 10**4), fmpq(999, 1000))
SIGMA_MIN = fmpq(1, 10)          # the pair's noise multiplier: below it the numerics are not covered


class OutsideDomainError(ParameterError):
    """The cell lies outside the stated domain; the message names the nearest thing that would work."""


def check_cell(steps: int, epochs: int, target: fmpq) -> None:
    """Refuse M, E, lambda outside the domain (M, E of the claim; fixed bins: E rounds per bin)."""
    if not STEPS[0] <= steps <= STEPS[1]:
        raise OutsideDomainError(f"M = {steps} lies outside the certified domain M in [1, 10^7]; the nearest cell "
                            f"that works has M = {min(max(steps, STEPS[0]), STEPS[1])}")
    if not EPOCHS[0] <= epochs <= EPOCHS[1]:
        raise OutsideDomainError(f"E = {epochs} lies outside the certified domain E in [1, 10^4]; the nearest cell "
                            f"that works has E = {min(max(epochs, EPOCHS[0]), EPOCHS[1])} (or split the run "
                            "into certificates of at most 10^4 epochs and compose them)")
    if target < TARGETS[0]:
        raise OutsideDomainError(f"target {decimal_str(target)} is below the certified domain lambda in "
                            "[0.0001, 0.999]; the nearest target that works is 0.0001")
    if target > TARGETS[1]:
        raise OutsideDomainError(f"target {decimal_str(target)} is above the certified domain lambda in "
                            "[0.0001, 0.999]; the nearest target that works is 0.999")


def check_sigma(sigma_of_pair: float, steps: int, epochs: int, target: fmpq, given: bool) -> None:
    """Refuse a pair noise multiplier below SIGMA_MIN (given by the user, or the exact sigma found)."""
    if sigma_of_pair >= float(SIGMA_MIN):
        return
    what = "the given sigma" if given else "the exact sigma"
    value = f" ({sigma_of_pair:.6g} for the pair)" if sigma_of_pair > 0 else ""
    raise OutsideDomainError(f"{what}{value} lies below {decimal_str(SIGMA_MIN)}, outside the certified domain (the "
                        f"numerics that choose the grids cover sigma >= 0.1); {nearest_target(steps, epochs, target)}")


def nearest_target(steps: int, epochs: int, target: fmpq) -> str:
    """The largest target whose exact sigma is still >= SIGMA_MIN: TV at sigma 0.1, rounded down."""
    try:
        tv = exact_tv(steps, epochs, float(SIGMA_MIN), check=False)
        lam = fmpq(int((tv.tv - 10 * tv.error) * 10**6), 10**6)
    except (ArithmeticError, ValueError, OverflowError):
        return "a smaller target lambda gives a larger sigma"
    if lam <= TARGETS[0] or lam >= target:
        return "a smaller target lambda gives a larger sigma"
    return f"the nearest target that works is lambda = {round_down_sig(lam, 3)} (exact sigma >= 0.1)"
