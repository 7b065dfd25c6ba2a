"""TV(P_M^E, Q_M^E) <= lambda (Section 2): the target kind `tv`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from flint import fmpq

from certifier.certificate.stages import runs_at
from certifier.claim import Claim
from certifier.domain import LAMBDA
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import schemes
from certifier.numerics.exact import exact_tv
from certifier.numerics.stages import exact_sigma_product, exact_tv_product
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.numerics.targets import exact_privacy_scheme
from certifier.params import decimal_str, parse_decimal, parse_target
from certifier.run import Run
from certifier.targets.base import Target
from certifier.targets.rules import SEARCH_RESOLUTION, TargetKind


def _numerics(claim: Claim, sigma: fmpq) -> tuple[float | None, float | None]:
    """The exact TV at sigma (FFT route; a run in stages: the product route, checked) and its error
    estimate, or (None, None) if unavailable."""
    M, E = claim.pair()
    try:
        r = Run.of_claim(claim).pick(lambda steps, epochs, scheme: exact_tv(M, E, claim.sigma_of_pair(float(sigma)),
                                                                            check=False),
                                     lambda stages: exact_tv_product(runs_at(claim, sigma)))
        return float(r.tv), float(r.error)
    except (NumericsUnreliableError, ParameterError, OverflowError):
        return None, None


def _exact_sigma(claim: Claim, target: fmpq) -> fmpq:
    """The exact sigma for the claim's scheme (Theorem 4.1, numerical), on a grid res(sigma) divides."""
    return parse_decimal("sigma", Run.of_claim(claim).pick(
        lambda steps, epochs, scheme: schemes.exact_sigma(steps, epochs, target, scheme=scheme,
                                                          resolution=SEARCH_RESOLUTION),
        lambda stages: exact_sigma_product(stages, float(target), SEARCH_RESOLUTION)))   # one sigma, every stage


RULE = TargetKind("tv", "TV(P_M^E, Q_M^E)", _numerics, _exact_sigma,
                  lambda r, target: parse_decimal("bound", r.bound) <= target,
                  lambda r, target: r.exact > target, lower_value=lambda r: r.exact, tv_functional=True)


@dataclass(frozen=True)
class TV(Target):
    """TV <= lambda; `target` the exact decimal text of lambda (normalized by parse)."""
    target: str
    name: ClassVar[str] = "tv"
    TARGET: ClassVar[str] = "target"
    PARAM: ClassVar[str | None] = None
    FIELDS: ClassVar[tuple] = ("target",)
    INDEX_NAME: ClassVar[str] = "lambda"
    FUNCTIONAL_WORDS: ClassVar[str] = "TV"
    EXACT_SIGMA_DOMAIN: ClassVar[bool] = False    # the exact sigma answers for any lambda in (0, 1)
    FLOOR_ADVICE: ClassVar[str] = "a smaller lambda gives a larger sigma"

    @classmethod
    def from_params(cls, params: dict) -> TV:
        return cls(params["target"])

    @classmethod
    def from_json(cls, obj: dict, target: str) -> TV:
        return cls(decimal_str(parse_target(target)))

    def domain(self, certify: bool = True) -> tuple:
        """lambda in [10^-4, 0.999] for `certify` (certifier.domain); the exact sigma takes any lambda in (0, 1)."""
        return (("target", LAMBDA),) if certify else ()

    def describe(self) -> str:
        return f"TV <= {self.target}"

    def statement(self, target: str | None = None) -> str:
        """The certified inequality in words (a claim's target, default this one)."""
        return f"TV(P_M^E, Q_M^E) <= {target or self.target}"

    def least_sigma_words(self, shared: bool = False) -> str:
        return "sigma_lambda"

    def cell_name(self, steps: int, epochs: int) -> str:
        return f"M{steps}_E{epochs}_L{self.target}"

    def cell_text(self) -> str:
        return f"λ = {self.target}"

    def cell_label(self) -> str:
        return f"lambda={self.target}"

    def numbers(self, value, error, lower) -> dict:
        """The summary's numerical value at sigma and certified lower value at sigma_low (their JSON keys)."""
        return {"tv_exact": value}, {"tv_lower_at_sigma_low": lower}

    def bound_reached(self, outcome) -> str | None:
        """The bound a certify outcome reached on the functional: its `bound`."""
        return outcome.bound

    def search(self, run, resolution: str) -> str:
        return run.pick(lambda m, e, scheme: schemes.exact_sigma(m, e, self.value, scheme, resolution=resolution),
                        lambda stages: exact_sigma_product(stages, self.value, resolution=resolution))

    def value_at(self, run, check: bool = True):
        return run.pick(lambda m, e, scheme: exact_privacy_scheme(m, e, run.sigma_float(), scheme, check=check),
                        lambda stages: exact_privacy_product(stages, check=check)).tv

    def quick_bounds(self, run, exact: str) -> dict:
        return {}

    def rule(self) -> TargetKind:
        return RULE

    def audit_upper(self, res) -> fmpq | None:
        return parse_decimal("bound", res.bound)

    def audit_words(self) -> str:
        t = decimal_str(self.value)
        return f"TV <= {t} (every membership test: accuracy <= 1/2 + {t}/2)"

