"""Every test with FPR <= alpha has TPR <= beta: 1 - T(alpha) <= beta ((7)): the target kind `tpr`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from flint import fmpq

from certifier.bounds import gaussian_shift as gs
from certifier.bounds.lower_kinds import tpr_lower
from certifier.bounds.privacy import EPSILON_GRID, tpr_at_fpr
from certifier.bounds.result import LowerResult, UpperResult
from certifier.domain import FPR, Interval, tpr_interval
from certifier.errors import ParameterError
from certifier.numerics import quick_bounds as qb
from certifier.numerics import schemes
from certifier.numerics.stages_profile import exact_privacy_product, exact_sigma_tpr_product
from certifier.numerics.targets import exact_privacy_scheme, exact_sigma_tpr
from certifier.params import decimal_str, parse_decimal
from certifier.run import Run
from certifier.targets.base import Target
from certifier.targets.dp import masses
from certifier.targets.rules import (
    KIND_UPPER,
    SEARCH_RESOLUTION,
    TargetKind,
    hockey_density,
    plan_weights,
    profile_numerics,
    proves_above,
    proves_below,
)


def tpr_row(r: UpperResult, alpha: fmpq) -> dict | None:
    """{tpr, epsilon}: min over gamma = epsilon on the grid of e^gamma alpha + delta_{Q||P}(gamma), upper end
    (1 - T(alpha) <= it for every gamma, (7))."""
    if r.shift2 is not None:                          # M = 1: at the tangent of the closed form
        return gs.tpr_upper(r.shift2, alpha, r.method.prec)
    ms = masses(r)
    return None if ms is None else tpr_at_fpr(ms, alpha, parse_decimal("epsilon_grid", EPSILON_GRID))


def tpr_upper(r: UpperResult, alpha: fmpq) -> str | None:
    row = tpr_row(r, alpha)
    return None if row is None else row["tpr"]


def tpr_lower_value(r: LowerResult, alpha: fmpq) -> fmpq | None:
    """The data-processing lower bound on 1 - T(alpha) (exact; None: no pmfs)."""
    if r.shift2 is not None:                          # M = 1: Phi(mu + z_lo), z_lo <= Phi^-1(alpha)
        return gs.tpr_lower(r.shift2, alpha, r.method.prec)
    if r.pmfs is None:
        return None
    # a P-mass d less shrinks the test's budget by d, at most d times the ROC's slope <= 1/alpha (a concave
    # curve through (0, 0) below 1); a Q-mass d less costs d: at most r.slack / alpha in all
    return tpr_lower(r.pmfs, alpha) - r.slack / alpha


def _kink(alpha: float):
    """The TPR bound e^gamma alpha + delta_{Q||P}(gamma) has its kink at gamma = ln K, the Neyman-Pearson
    threshold at alpha (the minimiser of the line's TPR)."""
    return lambda ln: hockey_density(ln.dqp, ln.tpr(alpha)[1])


def tpr_kind(fpr: str, tpr: fmpq) -> TargetKind:
    """Every test with FPR <= alpha has TPR <= beta: 1 - T(alpha) <= beta ((7)); target = beta."""
    alpha = parse_decimal("fpr", fpr)
    if not (0 < alpha < 1):
        raise ParameterError(f"the false-positive rate must lie strictly between 0 and 1, got {fpr}")
    a = float(alpha)
    upper = lambda r: tpr_upper(r, alpha)  # noqa: E731
    lower = lambda r: tpr_lower_value(r, alpha)  # noqa: E731
    return TargetKind(
        "tpr", f"1 - T({fpr})", profile_numerics("tpr", a),
        lambda claim, target: parse_decimal("sigma", Run.of_claim(claim).pick(
            lambda steps, epochs, scheme: exact_sigma_tpr(steps, epochs, a, float(target), SEARCH_RESOLUTION,
                                                          scheme=scheme),
            lambda stages: exact_sigma_tpr_product(stages, a, float(target), SEARCH_RESOLUTION))),
        proves_below(upper), proves_above(lower), (("fpr", fpr),), upper, True, max(1.0, float(tpr) / a),
        lower_value=lower, upper_record=lambda r: (lambda row: {"bound": row["tpr"], "epsilon": row["epsilon"]})(
            tpr_row(r, alpha)),
        plan_weights=plan_weights(_kink(a), lambda ln: max(1.0, math.exp(ln.tpr(a)[1]))),
        named=(("name", "tpr"), ("fpr", fpr)), **KIND_UPPER)


@dataclass(frozen=True)
class TPR(Target):
    """TPR <= tpr at FPR fpr (both exact decimal text)."""
    fpr: str
    tpr: str
    name: ClassVar[str] = "tpr"
    TARGET: ClassVar[str] = "tpr"
    PARAM: ClassVar[str | None] = "fpr"
    FIELDS: ClassVar[tuple] = ("fpr", "tpr")
    INDEX_NAME: ClassVar[str] = "tpr"
    CURVE: ClassVar[str | None] = "tradeoff"
    FLOOR_ADVICE: ClassVar[str] = "a smaller tpr or a larger fpr gives a larger sigma"

    @property
    def target(self) -> str:
        return self.tpr

    def domain(self, certify: bool = True) -> tuple:
        """FPR alpha in [10^-8, 0.5], TPR beta in (alpha, 1) (certifier.domain), for the exact sigma and certify."""
        return (("fpr", FPR), ("tpr", tpr_interval(parse_decimal("fpr", self.fpr))))

    def inside(self, name: str, q: fmpq, interval: Interval) -> fmpq:
        """beta at or below alpha: 2 alpha (any beta above alpha works; the exact sigma grows without bound as
        beta comes down to alpha); beta at or above 1: 0.99."""
        if name != "tpr":
            return interval.clamp(q)
        return 2 * interval.lo if q <= interval.lo else fmpq(99, 100)

    @classmethod
    def from_params(cls, params: dict) -> TPR:
        return cls(params["fpr"], params["tpr"])

    @classmethod
    def from_json(cls, obj: dict, target: str) -> TPR:
        return cls(str(obj["fpr"]), str(target))

    def describe(self) -> str:
        return f"TPR <= {self.tpr} at FPR {self.fpr}"

    def statement(self, target: str | None = None) -> str:
        return f"every membership test with FPR <= {self.fpr} has TPR <= {target or self.tpr}"

    @property
    def FUNCTIONAL_WORDS(self) -> str:
        return f"TPR at FPR {self.fpr}"

    def least_sigma_words(self, shared: bool = False) -> str:
        return f"the least {'shared ' if shared else ''}sigma meeting {self.describe()}"

    def cell_name(self, steps: int, epochs: int) -> str:
        return f"M{steps}_E{epochs}_tpr_fpr{self.fpr}_tpr{self.tpr}"

    def cell_text(self) -> str:
        return f"FPR = {self.fpr}, TPR ≤ {self.tpr}"

    def cell_label(self) -> str:
        return f"tpr fpr={self.fpr} tpr={self.tpr}"

    def numbers(self, value, error, lower) -> tuple[dict, dict]:
        return ({"tv_exact": None, "value_exact": value, "value_error": error},
                {"tv_lower_at_sigma_low": None})

    def bound_reached(self, outcome) -> str | None:
        if outcome.success:
            return outcome.bound
        return next((t["tpr_bound"] for t in reversed(outcome.tries) if t.get("tpr_bound") is not None), None)

    def search(self, run, resolution: str) -> str:
        a, b = self.f("fpr"), self.f("tpr")
        return run.pick(lambda m, e, scheme: exact_sigma_tpr(m, e, a, b, resolution, scheme),
                        lambda stages: exact_sigma_tpr_product(stages, a, b, resolution))

    def value_at(self, run, check: bool = True):
        a = self.f("fpr")
        return run.pick(lambda m, e, scheme: exact_privacy_scheme(m, e, run.sigma_float(), scheme, fprs=[a],
                                                                  check=check),
                        lambda stages: exact_privacy_product(stages, fprs=[a], check=check)).tpr[a]

    def quick_bounds(self, run, exact: str) -> dict:
        """(R3) and, at FPR <= 1/2, Proposition B.2: name -> a thunk computing the proven quick bound on sigma as
        decimal text (its own search may fail: the caller leaves it out with the reason)."""
        a, b = self.f("fpr"), self.f("tpr")
        def block(m, e, scheme):
            r = schemes.reduce(scheme, m, e)
            out = {"rdp": lambda: qb.rdp_tpr_sigma([(r.steps, r.epochs)], a, b, seed=float(exact), scale2=r.scale2)}
            if a <= 0.5:
                out["closed_form"] = lambda: qb.tpr_bound_sigma(r.steps, r.epochs, a, b, scale2=r.scale2)
            return out
        return run.pick(block, lambda stages: {"rdp": lambda: qb.rdp_tpr_sigma(
            [(s.steps, s.epochs) for s in stages], a, b, seed=float(exact))})

    def rule(self) -> TargetKind:
        return tpr_kind(self.fpr, self.value)

    AUDIT_QUANTITY: ClassVar[str] = "tpr"

    def audit_record(self, res) -> dict:
        return {"epsilon": self.rule().upper_record(res)["epsilon"]}

    def audit_words(self) -> str:
        return f"every test with FPR {self.fpr} has TPR <= {decimal_str(self.value)}"

    def audit_axis_words(self) -> str:
        return f"TPR at FPR {self.fpr}"

    def audit_claim_text(self) -> str:
        return (f"every membership test with false-positive rate {self.fpr} has true-positive rate at most "
                f"{decimal_str(self.value)}")

    def audit_plot(self) -> tuple[str, float, float, str]:
        return "tradeoff", float(self.f("fpr")), float(self.value), "y"

