"""A target: what a certificate bounds and the exact value it must meet (docs/targets.md).

A Target is a frozen value parsed from exact decimals: TV <= lambda (tv), (eps, delta)-DP both ways (dp),
TPR <= beta at FPR alpha (tpr), one module each. It describes itself (refusals, summaries, the report, the
atlas), writes and reads its JSON (the claim's `kind`, the service's request), answers the numerical
questions on a run (certifier.run: its exact sigma, its value at sigma, the proven quick bounds) and hands
the certifier its rule (certifier.targets.rules.TargetKind: the functional both sides bound).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from flint import fmpq

from certifier import domain
from certifier.domain import Interval
from certifier.params import decimal_str, parse_decimal


@dataclass(frozen=True)
class Target:
    """Base of the kinds. `target` is the exact decimal text of the bound the functional must meet."""
    name: ClassVar[str]              # "tv", "dp", "tpr"
    TARGET: ClassVar[str]            # the request's field of the target ("target", "delta", "tpr")
    PARAM: ClassVar[str | None]      # the request's field of the kind's parameter ("epsilon", "fpr"; tv: None)
    INDEX_NAME: ClassVar[str]        # the atlas index's name of the target ("lambda", "delta", "tpr")
    FUNCTIONAL_WORDS: ClassVar[str]  # the lower side's sigma in words ("sigma_lambda", ...)
    EXACT_SIGMA_DOMAIN: ClassVar[bool] = True  # the exact sigma is held to the stated domain (tv: certify only)
    FLOOR_ADVICE: ClassVar[str] = ""  # what gives a larger exact sigma when no target of the domain does
    CURVE: ClassVar[str | None] = None  # the privacy curve the target is a point of ("profile": delta(eps),
    #                                     "tradeoff": TPR at FPR); None: a number (TV), the report's own pages

    @property
    def param(self) -> str | None:
        """The kind's parameter beside the target (exact decimal text; None for tv)."""
        return None if self.PARAM is None else getattr(self, self.PARAM)

    @property
    def value(self) -> fmpq:
        """The target as an exact rational: lambda, delta or beta."""
        return parse_decimal(self.TARGET, self.target)

    @property
    def params(self) -> dict:
        """The request's fields of this target: {field: exact decimal text}."""
        return {k: getattr(self, k) for k in self.FIELDS}

    @property
    def kind_params(self) -> dict | None:
        """The kind's parameter as certify takes it ({"epsilon": text}; None for tv)."""
        return None if self.PARAM is None else {self.PARAM: self.param}

    @classmethod
    def of(cls, target: str, param: str | None = None) -> Target:
        """The target from its value and the kind's parameter (exact decimal text)."""
        return cls.from_params({cls.TARGET: target, **({} if cls.PARAM is None else {cls.PARAM: param})})

    def same(self, other: Target) -> bool:
        """The same kind and exactly the same numbers (1.0 and 1 are the same)."""
        return type(self) is type(other) and all(
            parse_decimal(f, getattr(self, f)) == parse_decimal(f, getattr(other, f)) for f in self.FIELDS)

    def index_fields(self) -> dict:
        """An atlas index entry's fields of the target: tv names `lambda` only (as it always has), a kind its
        `kind`, parameter and target."""
        if self.PARAM is None:
            return {self.INDEX_NAME: self.target}
        return {"kind": self.name, self.PARAM: self.param, self.INDEX_NAME: self.target}

    def f(self, name: str) -> float:
        """A parameter as a float (numerics only)."""
        return float(parse_decimal(name, self.params[name]))

    def to_json(self) -> dict:
        """The claim's `kind` object (format v4): {"name": "tv"} or {"name": "dp", "epsilon": text}, ..."""
        return {"name": self.name, **(self.kind_params or {})}

    def claim_kind(self) -> tuple:
        """Claim.kind: () for tv (formats v1-v3 name none), the named parameters otherwise."""
        return () if self.PARAM is None else (("name", self.name), (self.PARAM, self.param))

    def request_json(self) -> dict:
        """The service's job fields: {"target": text} and, for a kind other than tv, its `kind` object."""
        return {"target": self.target, **({} if self.PARAM is None else {"kind": self.to_json()})}

    def summary(self) -> dict:
        """The kind in a JSON summary: {"kind": name} and, beside tv, "kind_params"."""
        return {"kind": self.name, **({} if self.PARAM is None else {"kind_params": self.params})}

    def aside(self) -> str:
        """The target in words after its value in a refusal (tv: nothing, the value says it)."""
        return "" if self.PARAM is None else f" ({self.describe()})"

    # ------------------------------------------------------------------------- the stated domain (certifier.domain)

    def domain(self, certify: bool = True) -> tuple[tuple[str, Interval], ...]:
        """The stated domain's interval of each parameter, in the request's order (certify=False: what the exact
        sigma needs)."""
        raise NotImplementedError

    def inside(self, name: str, q: fmpq, interval: Interval) -> fmpq:
        """The nearest value of parameter `name` inside its interval (a kind with an open end overrides it)."""
        return interval.clamp(q)

    def nearest_in_domain(self, certify: bool = True) -> Target:
        """This target with every parameter outside the stated domain moved to its nearest point inside (the
        domain's clamp; a parameter whose interval depends on an earlier one is clamped after it)."""
        t = self
        for name, _ in self.domain(certify):
            iv = dict(t.domain(certify))[name]
            q = parse_decimal(name, getattr(t, name))
            if q not in iv:
                t = replace(t, **{name: domain.words(t.inside(name, q, iv))})
        return t

    def check_domain(self, certify: bool = True) -> None:
        """Refuse, in one line naming the nearest target that works, a parameter outside the stated domain
        (certifier.domain.OutsideDomainError); instant."""
        for name, iv in self.domain(certify):
            given = getattr(self, name)
            if parse_decimal(name, given) not in iv:
                domain.refuse(given, iv, self.nearest_in_domain(certify).words())

    def with_target(self, text: str) -> Target:
        """The same kind and parameter with another target value (exact decimal text)."""
        field = "target" if self.PARAM is None else self.TARGET
        return replace(self, **{field: text})

    def words(self) -> str:
        """The target's parameters as a person writes them: lambda = 0.1, or epsilon = 1, delta = 1e-5, ..."""
        show = lambda k, v: domain.words(parse_decimal(k, v))  # noqa: E731
        if self.PARAM is None:
            return f"{self.INDEX_NAME} = {show('target', self.target)}"
        return ", ".join(f"{k} = {show(k, v)}" for k, v in self.params.items())

    def floor_advice(self) -> str:
        return self.FLOOR_ADVICE

    def cell_name(self, steps: int, epochs: int) -> str:
        """An atlas cell's certificate name."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def search(self, run, resolution: str) -> str:
        """The least sigma on the resolution grid meeting the target for the run (certifier.run.exact_sigma)."""
        raise NotImplementedError

    def value_at(self, run, check: bool = True):
        """The kind's quantity for the run at its sigma(s) (certifier.numerics Value: value, error)."""
        raise NotImplementedError

    def rule(self):
        """The certifier's rule for this target (certifier.targets.rules.TargetKind)."""
        raise NotImplementedError

    # An audit of someone else's claim at its sigma (certifier.audit, docs/audit.md): the claim's axis is the
    # target itself (tv: lambda, tpr: beta) or, for dp, its parameter eps at the target delta.
    AUDIT_QUANTITY: ClassVar[str] = "tv"  # the interval's quantity in the audit certificate

    def audit_axis(self) -> fmpq:
        """The claim's value on its audit axis (the target; dp: epsilon)."""
        return self.value

    def audit_aimed(self, x: fmpq) -> Target:
        """This target with its axis value x (what a side of the audit aims at)."""
        return type(self).of(decimal_str(x), self.param)

    def audit_numerical(self, run):
        """The numerical value on the axis for the run at its sigma (aims only; a Value: value, error)."""
        return self.value_at(run, check=False)

    def audit_upper(self, res) -> fmpq | None:
        """The certified upper value of the functional from an upper result (None: not computable from it)."""
        v = self.rule().upper_bound(res)
        return None if v is None else parse_decimal("bound", v)

    def audit_lower(self, low) -> fmpq | None:
        """The certified lower value of the functional from a lower result (exact; None: no pmfs)."""
        return self.rule().lower_value(low)

    def audit_record(self, res) -> dict:
        """What the audit certificate's `upper` records beside the value (tpr: the epsilon of its bound)."""
        return {}

    def audit_words(self) -> str:
        """The claim in words."""
        raise NotImplementedError

    def audit_axis_words(self) -> str:
        """The interval's quantity in words ("TV"; "eps at delta = 1e-5"; "TPR at FPR 0.001")."""
        return "TV"

    def audit_claim_text(self) -> str:
        """The claim in a sentence (the audit report)."""
        t = decimal_str(self.value)
        return f"every membership-inference test has accuracy at most 1/2 + {t}/2 (TV <= {t})"

    def audit_plot(self) -> tuple[str, float, float, str]:
        """Where the report draws the claim: (curve, x, y, the interval's axis): tv on the privacy profile at
        eps = 0 (delta(0) = TV), its interval on the y axis."""
        return "profile", 0.0, float(self.value), "y"

    def audit_interval(self, values, inverse):
        """The certified interval on the axis: values() -- [lower value, upper value] of the functional itself
        (tv, tpr) -- or inverse() -- the axis points where each side decides the target (dp)."""
        return values()

