"""(eps, delta)-DP both ways: max(delta_{Q||P}(eps), delta_{P||Q}(eps)) <= delta (Appendix B.4): kind `dp`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from flint import fmpq

from certifier.bounds import gaussian_shift as gs
from certifier.bounds.fixedpoint import round_up_sig
from certifier.bounds.lower_kinds import dp_lower, exp_upper
from certifier.bounds.privacy import Masses
from certifier.bounds.result import LowerResult, UpperResult
from certifier.domain import DELTA, EPSILON
from certifier.errors import ParameterError
from certifier.numerics import quick_bounds as qb
from certifier.numerics import schemes
from certifier.numerics.stages_profile import exact_privacy_product, exact_sigma_dp_product
from certifier.numerics.targets import exact_privacy_scheme, exact_sigma_dp
from certifier.params import decimal_str, parse_decimal
from certifier.run import Run
from certifier.targets.base import Target
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


def masses(r: UpperResult):
    """The step-(iv) masses b_k of a Lemma C.5 upper bound as certifier.bounds.privacy.Masses (None: no b)."""
    if r.b is None or r.method is None or not hasattr(r.method, "eta"):
        return None
    return Masses(r.b, r.method.eta, r.method.fixed_point_bits, r.method.prec)


def dp_upper(r: UpperResult, epsilon: fmpq) -> str | None:
    """max of the certified upper ends of delta_{Q||P}(eps), delta_{P||Q}(eps) (Lemma C.5, concave
    functionals min{Lambda, e^eps}, min{1, e^eps Lambda}; certifier.bounds.privacy), rounded up."""
    if r.shift2 is not None:                          # M = 1: the Gaussian shift's closed form
        return gs.dp_upper(r.shift2, epsilon, r.method.prec)
    ms = masses(r)
    if ms is None:
        return None
    a, b = ms.dqp_ball(epsilon), ms.dpq_ball(epsilon)
    return max((round_up_sig(x, 10) for x in (a, b)), key=lambda v: parse_decimal("delta", v))


def dp_lower_value(r: LowerResult, epsilon: fmpq) -> fmpq | None:
    """max of the data-processing lower bounds on delta_{Q||P}(eps), delta_{P||Q}(eps) (exact; None: no pmfs)."""
    if r.shift2 is not None:                          # M = 1: the closed form's lower end
        return gs.dp_lower(r.shift2, epsilon, r.method.prec)
    if r.pmfs is None:
        return None
    # another replay's pmfs may hold r.slack less mass (floors): on the Q side that costs its own amount, on
    # the P side e^eps times as much (it enters as deleted P-mass), so at most e^eps r.slack in all
    return dp_lower(r.pmfs, epsilon) - exp_upper(epsilon) * r.slack


def _kinks(eps: float):
    """delta_{Q||P}(eps) has its kink at ln Lambda = eps (weight f^Q), delta_{P||Q}(eps) at -eps (f^P)."""
    return lambda ln: max(hockey_density(ln.dqp, eps), hockey_density(ln.dpq, eps))


def dp_kind(epsilon: str, delta: fmpq) -> TargetKind:
    """(eps, delta)-DP: max(delta_{Q||P}(eps), delta_{P||Q}(eps)) <= delta (Appendix B.4); target = delta."""
    eps = parse_decimal("epsilon", epsilon)
    if not (0 <= eps <= 100):
        raise ParameterError(f"epsilon must lie in [0, 100], got {epsilon}")
    e = float(eps)
    upper = lambda r: dp_upper(r, eps)  # noqa: E731
    lower = lambda r: dp_lower_value(r, eps)  # noqa: E731
    return TargetKind(
        "dp", f"max(delta_Q||P({epsilon}), delta_P||Q({epsilon}))", profile_numerics("dp", e),
        lambda claim, target: parse_decimal("sigma", Run.of_claim(claim).pick(
            lambda steps, epochs, scheme: exact_sigma_dp(steps, epochs, e, float(target), SEARCH_RESOLUTION,
                                                         scheme=scheme),
            lambda stages: exact_sigma_dp_product(stages, e, float(target), SEARCH_RESOLUTION))),
        proves_below(upper), proves_above(lower), (("epsilon", epsilon),), upper, True, math.exp(e),
        lower_value=lower, upper_record=lambda r: {"bound": upper(r)},
        plan_weights=plan_weights(_kinks(e), lambda ln: math.exp(e)),
        named=(("name", "dp"), ("epsilon", epsilon)), **KIND_UPPER)


@dataclass(frozen=True)
class DP(Target):
    """(epsilon, delta)-DP in both directions; both exact decimal text."""
    epsilon: str
    delta: str
    name: ClassVar[str] = "dp"
    TARGET: ClassVar[str] = "delta"
    PARAM: ClassVar[str | None] = "epsilon"
    FIELDS: ClassVar[tuple] = ("epsilon", "delta")
    INDEX_NAME: ClassVar[str] = "delta"
    CURVE: ClassVar[str | None] = "profile"
    FLOOR_ADVICE: ClassVar[str] = "a smaller epsilon gives a larger sigma"

    @property
    def target(self) -> str:
        return self.delta

    def domain(self, certify: bool = True) -> tuple:
        """epsilon in [0.01, 20], delta in [10^-12, 0.1] (certifier.domain), for the exact sigma and certify."""
        return (("epsilon", EPSILON), ("delta", DELTA))

    @classmethod
    def from_params(cls, params: dict) -> DP:
        return cls(params["epsilon"], params["delta"])

    @classmethod
    def from_json(cls, obj: dict, target: str) -> DP:
        return cls(str(obj["epsilon"]), str(target))

    def describe(self) -> str:
        return f"({self.epsilon}, {self.delta})-DP, both directions"

    def statement(self, target: str | None = None) -> str:
        t = target or self.delta
        return f"max(delta_Q||P, delta_P||Q)({self.epsilon}) <= {t}: ({self.epsilon}, {t})-DP, both directions"

    @property
    def FUNCTIONAL_WORDS(self) -> str:
        return f"max(delta_Q||P, delta_P||Q)({self.epsilon})"

    def least_sigma_words(self, shared: bool = False) -> str:
        return f"the least {'shared ' if shared else ''}sigma meeting {self.describe()}"

    def cell_name(self, steps: int, epochs: int) -> str:
        return f"M{steps}_E{epochs}_dp_eps{self.epsilon}_delta{self.delta}"

    def cell_text(self) -> str:
        return f"ε = {self.epsilon}, δ = {self.delta}"

    def cell_label(self) -> str:
        return f"dp epsilon={self.epsilon} delta={self.delta}"

    def numbers(self, value, error, lower) -> tuple[dict, dict]:
        return ({"tv_exact": None, "value_exact": value, "value_error": error},
                {"tv_lower_at_sigma_low": None})

    def bound_reached(self, outcome) -> str | None:
        """Its `bound` when certified; otherwise the last try's dp bound (the outcome's `bound` is then the
        grid's TV), None when no try computed one."""
        if outcome.success:
            return outcome.bound
        return next((t["dp_bound"] for t in reversed(outcome.tries) if t.get("dp_bound") is not None), None)

    def search(self, run, resolution: str) -> str:
        e, d = self.f("epsilon"), self.f("delta")
        return run.pick(lambda m, n, scheme: exact_sigma_dp(m, n, e, d, resolution, scheme),
                        lambda stages: exact_sigma_dp_product(stages, e, d, resolution))

    def value_at(self, run, check: bool = True):
        e = self.f("epsilon")
        return run.pick(lambda m, n, scheme: exact_privacy_scheme(m, n, run.sigma_float(), scheme, epsilons=[e],
                                                                  check=check),
                        lambda stages: exact_privacy_product(stages, epsilons=[e], check=check)).delta[e]

    def quick_bounds(self, run, exact: str) -> dict:
        """(R2): name -> a thunk computing the proven quick bound on sigma as decimal text (its own search may
        fail: the caller leaves it out with the reason)."""
        e, d = self.f("epsilon"), self.f("delta")
        def block(m, n, scheme):
            r = schemes.reduce(scheme, m, n)
            return lambda: qb.rdp_sigma([(r.steps, r.epochs)], e, d, seed=float(exact), scale2=r.scale2)
        return {"rdp_qp": run.pick(block, lambda stages: lambda: qb.rdp_sigma(
            [(s.steps, s.epochs) for s in stages], e, d, seed=float(exact)))}

    def rule(self) -> TargetKind:
        return dp_kind(self.epsilon, self.value)

    AUDIT_QUANTITY: ClassVar[str] = "epsilon"   # an audit's axis: eps(delta), the least eps meeting delta

    def audit_axis(self) -> fmpq:
        return parse_decimal("epsilon", self.epsilon)

    def audit_aimed(self, x: fmpq) -> DP:
        return DP(decimal_str(x), self.delta)

    def audit_numerical(self, run):
        d = self.f("delta")
        return run.pick(lambda m, n, scheme: exact_privacy_scheme(m, n, run.sigma_float(), scheme, deltas=[d],
                                                                  check=False),
                        lambda stages: exact_privacy_product(stages, deltas=[d], check=False)).epsilon[d]

    def audit_words(self) -> str:
        d = decimal_str(self.value)
        return f"({self.epsilon}, {d})-DP: eps <= {self.epsilon} at delta = {d}"

    def audit_interval(self, values, inverse):
        return inverse()

    def audit_axis_words(self) -> str:
        return f"eps at delta = {self.delta}"

    def audit_claim_text(self) -> str:
        return (f"the run is ({self.epsilon}, {decimal_str(self.value)})-differentially private (both directions, "
                "zero-out adjacency)")

    def audit_plot(self) -> tuple[str, float, float, str]:
        return "profile", float(self.f("epsilon")), float(self.value), "x"

