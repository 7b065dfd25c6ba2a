"""The exact sigma certify starts from when none is given: the target kind's numerical search on the claim,
rounded up to the res(sigma) grid (certifier.resolution); a search that fails because sigma lies below what the
numerics cover is a domain refusal naming a nearer target whose exact sigma the numerics find."""
from __future__ import annotations

from flint import fmpq

from certifier.claim import Claim
from certifier.domain import OutsideDomainError
from certifier.errors import NumericsUnreliableError
from certifier.params import decimal_str
from certifier.resolution import issued, round_up
from certifier.targets import TargetKind

NEAREST_TARGETS = tuple(fmpq(k, 100) for k in (98, 95, 90, 50))   # tried when the search fails


def exact_sigma(target_kind: TargetKind, probe: Claim, target: fmpq) -> fmpq:
    """The exact sigma on the res(sigma) grid (certifier.resolution; numerical, the kind's search); a search
    that fails because sigma lies below what the numerics cover is a domain refusal naming a nearer target."""
    try:
        found = target_kind.exact_sigma(probe, target)
    except NumericsUnreliableError as err:
        raise OutsideDomainError(f"the exact sigma of M={probe.steps}, E={probe.epochs}, "
                                 f"{target_text(target_kind, target)} is outside what the numerics cover ({err}); "
                                 f"{nearest_target(target_kind, probe, target)}") from None
    return round_up(found)


def bound_name(target_kind: TargetKind) -> str:
    """The name of the kind's bounded parameter: lambda (TV), delta (dp), tpr (tpr)."""
    return {"dp": "delta", "tpr": "tpr"}.get(target_kind.name, "lambda")


def target_text(target_kind: TargetKind, target: fmpq) -> str:
    """The kind's parameters as the user gave them: lambda=0.1, or epsilon=1, delta=1e-5, or fpr=..., tpr=..."""
    fixed = [f"{k}={v}" for k, v in target_kind.params if k != bound_name(target_kind)]
    return ", ".join(fixed + [f"{bound_name(target_kind)}={decimal_str(target)}"])


def nearest_target(target_kind: TargetKind, probe: Claim, target: fmpq) -> str:
    """The nearest of a few targets whose exact sigma the numerics find (a few seconds at most): smaller
    ones where sigma is small (large lambda, heavy tails), larger ones where it is huge (tiny lambda)."""
    big = target >= fmpq(1, 2)
    for lam in (NEAREST_TARGETS if big else tuple(target * k for k in (2, 5, 10))):
        if (lam < target) == big and lam < 1:
            try:
                s = target_kind.exact_sigma(probe, lam)
            except NumericsUnreliableError:
                continue
            return (f"the nearest target that works is {bound_name(target_kind)} = {decimal_str(lam)} "
                    f"(exact sigma {issued(decimal_str(s))})")
    name = bound_name(target_kind)
    return (f"a smaller target {name} gives a larger sigma" if big else
            f"a larger target {name} gives a smaller sigma")
