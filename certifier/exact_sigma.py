"""The exact sigma certify starts from when none is given: the target kind's numerical search on the claim,
rounded up to the res(sigma) grid (certifier.resolution). A search that fails is one line naming the claim;
certifier.door explains it by one evaluation at the pair's sigma 0.1 (certifier.domain.explain: below the
numerics' floor, a domain refusal naming the nearest target; else the numerics' own gap)."""
from __future__ import annotations

from flint import fmpq

from certifier.claim import Claim
from certifier.errors import NumericsUnreliableError
from certifier.params import decimal_str
from certifier.resolution import round_up
from certifier.targets import TargetKind


def exact_sigma(target_kind: TargetKind, probe: Claim, target: fmpq) -> fmpq:
    """The exact sigma on the res(sigma) grid (certifier.resolution; numerical, the kind's search);
    NumericsUnreliableError in one line where the search fails (no search for a nearer target: one took 27 s)."""
    try:
        found = target_kind.exact_sigma(probe, target)
    except NumericsUnreliableError as err:
        raise NumericsUnreliableError(f"the exact sigma of M={probe.steps}, E={probe.epochs}, "
                                      f"{target_text(target_kind, target)} was not found: {err}") from None
    return round_up(found)


def bound_name(target_kind: TargetKind) -> str:
    """The name of the kind's bounded parameter: lambda (TV), delta (dp), tpr (tpr)."""
    return {"dp": "delta", "tpr": "tpr"}.get(target_kind.name, "lambda")


def target_text(target_kind: TargetKind, target: fmpq) -> str:
    """The kind's parameters as the user gave them: lambda=0.1, or epsilon=1, delta=1e-5, or fpr=..., tpr=..."""
    fixed = [f"{k}={v}" for k, v in target_kind.params if k != bound_name(target_kind)]
    return ", ".join(fixed + [f"{bound_name(target_kind)}={decimal_str(target)}"])
