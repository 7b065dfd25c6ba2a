"""Validated user parameters: exact decimals (fmpq) and bounded integers.

sigma, lambda and grid parameters are parsed from their decimal text straight
into exact rationals, never through a binary float; every failure raises
ParameterError with a one-line, user-facing message.
"""
from __future__ import annotations

import decimal
import fractions
import numbers
import re
from dataclasses import dataclass

from flint import fmpq

from certifier.errors import ParameterError

__all__ = ["ParameterError", "as_decimal_text", "parse_decimal", "decimal_str", "parse_sigma", "parse_target",
           "parse_steps", "parse_epochs", "parse_count", "parse_positive_decimal", "StageTally", "at_least_one_stage"]

MAX_STEPS = 10**7
MAX_EPOCHS = 10**6
_DECIMAL = re.compile(r"^[+-]?(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?$|^[+-]?\.(\d+)(?:[eE]([+-]?\d{1,4}))?$",
                      re.ASCII)


def parse_decimal(name: str, text) -> fmpq:
    """Exact rational value of a decimal string like '1.426215' or '5e-5' (ASCII digits only: int()
    would read other scripts' digits, and the verifier reads ASCII only)."""
    s = str(text).strip()
    m = _DECIMAL.match(s)
    if not m:
        raise ParameterError(f"{name} must be a decimal number, got {text!r}")
    if m.group(1) is not None:
        whole, frac, exp = m.group(1), m.group(2) or "", m.group(3)
    else:
        whole, frac, exp = "0", m.group(4), m.group(5)
    value = fmpq(int(whole + frac), 10 ** len(frac))
    if s.startswith("-"):
        value = -value
    e = int(exp or 0)
    return value * fmpq(10) ** e if e >= 0 else value / fmpq(10) ** (-e)


def decimal_str(q: fmpq, digits: int = 12) -> str:
    """Shortest-looking exact decimal for q when it has one, else `digits` places."""
    p, d = int(q.p), int(q.q)
    for k in range(0, 41):
        if (p * 10**k) % d == 0:
            n = p * 10**k // d
            sign = "-" if n < 0 else ""
            s = str(abs(n)).rjust(k + 1, "0")
            return sign + (s[:-k] + "." + s[-k:] if k else s)
    return f"{float(q):.{digits}g}"


def as_decimal_text(name: str, value) -> str:
    """One coercion for every numeric argument: the exact decimal text of `value`.

    str is taken as written (validated later by parse_decimal); int and Decimal exactly;
    float by its shortest round-trip repr (0.1 -> "0.1", what the user typed); Fraction
    only if it has a finite decimal expansion. Anything else is a ParameterError.
    """
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ParameterError(f"{name} must be finite, got {value}")
        return format(value, "f")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ParameterError(f"{name} must be finite, got {value}")
        return repr(value)
    if isinstance(value, (fractions.Fraction, fmpq)):
        p, q = int(value.numerator if isinstance(value, fractions.Fraction) else value.p), \
            int(value.denominator if isinstance(value, fractions.Fraction) else value.q)
        text = decimal_str(fmpq(p, q))
        if parse_decimal(name, text) != fmpq(p, q):
            raise ParameterError(f"{name} = {p}/{q} has no finite decimal expansion")
        return text
    raise ParameterError(f"{name} must be an int, float, str, Decimal or Fraction, got {type(value).__name__}")


def parse_positive_decimal(name: str, text) -> fmpq:
    q = parse_decimal(name, text)
    if q <= 0:
        raise ParameterError(f"{name} must be > 0, got {text}")
    return q


def parse_sigma(text) -> fmpq:
    q = parse_positive_decimal("sigma", text)
    if q > 10**6:
        raise ParameterError(f"sigma must be at most 1e6, got {text}")
    return q


def parse_target(text) -> fmpq:
    q = parse_decimal("target", text)
    if not 0 < q < 1:
        raise ParameterError(f"target lambda must lie strictly between 0 and 1, got {text}")
    return q


def parse_count(name: str, text, maximum: int) -> int:
    s = str(text).strip()
    if not re.fullmatch(r"[+]?\d{1,12}", s, re.ASCII):
        raise ParameterError(f"{name} must be a positive integer, got {text!r}")
    n = int(s)
    if n < 1:
        raise ParameterError(f"{name} must be at least 1, got {n}")
    if n > maximum:
        raise ParameterError(f"{name} must be at most {maximum}, got {n}")
    return n


def parse_steps(text) -> int:
    return parse_count("steps M", text, MAX_STEPS)


def parse_epochs(text) -> int:
    return parse_count("epochs E", text, MAX_EPOCHS)


# ----------------------------------------------------------------------------- a list of stages

MIXED_SIGMAS = "give a sigma on every stage (100x5@1.2,400x5@1.5) or on none"
OWN_SIGMAS = "every stage needs its sigma here: 100x5@1.2,400x5@1.5"
SHARED_SIGMA = "the stages share one sigma here: write them without @sigma (100x5,400x5)"


def at_least_one_stage(count: int) -> None:
    """A run has at least one stage: the one refusal of an empty stage list (numerics, bounds, claims)."""
    if count < 1:
        raise ParameterError("at least one stage is needed")


@dataclass(frozen=True)
class StageTally:
    """A stage list as its checks read it: how many stages, and how many carry their own sigma. The one place a
    list is refused for having no stage or a sigma on some stages only, and where a message names a stage."""
    count: int
    own: int = 0

    def __post_init__(self):
        at_least_one_stage(self.count)

    @classmethod
    def of(cls, own_sigma) -> StageTally:
        """From each stage's flag, in order: it carries its own sigma."""
        flags = [bool(f) for f in own_sigma]
        return cls(len(flags), sum(flags))

    @property
    def mixed(self) -> bool:
        """Some stages carry their own sigma, some do not."""
        return 0 < self.own < self.count

    @property
    def every(self) -> bool:
        """Every stage carries its own sigma."""
        return self.own == self.count

    def require(self, per_stage: bool | None) -> None:
        """Refuse a mixture, no sigma on the stages where each needs its own (per_stage True), or a sigma on every
        stage where they share one (per_stage False); per_stage None accepts either."""
        if self.mixed or per_stage not in (None, self.every):
            raise ParameterError(MIXED_SIGMAS if self.mixed else SHARED_SIGMA if self.every else OWN_SIGMAS)

    def label(self, i: int) -> str:
        """'stage i: ' before a refusal about stage i when there are several stages, else nothing."""
        return f"stage {i}: " if self.count > 1 else ""
