"""Shared machinery of the proof checks: a registry, a step recorder, and two
small sound helpers.

A check is a function that takes the *claimed* expression(s) as keyword
parameters (the paper's expressions are the defaults) and returns a
:class:`Steps` record.  A check passes only if every recorded step holds.

Soundness rules, so that a PASS means something:

* ``is_zero`` accepts an expression only if sympy's simplification reduces it
  to the literal ``0`` (with the assumptions declared on the symbols).  It
  never falls back to numerical evaluation (``Expr.equals`` does, so it is not
  used).
* ``nonneg`` proves ``expr >= 0`` with a handful of valid rules (sympy's own
  assumptions, products of nonnegative factors, ``A - B >= 0`` from
  ``log A - log B >= 0`` for positive ``A, B``, and "zero at u = 0 plus a
  nonnegative derivative on u >= 0").  Unproved means FAIL, never PASS.
* Numeric steps (mpmath, >= 50 digits, seeded random points) are recorded as
  numeric, and a check that contains one is labelled ``numeric``.
"""
from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

import mpmath
import sympy as sp

SYMBOLIC = "symbolic"
NUMERIC = "numeric"


def Phi(x):
    """Standard normal distribution function, Phi(x) = (1 + erf(x/sqrt 2))/2."""
    return (1 + sp.erf(x / sp.sqrt(2))) / 2


def gauss_density(x):
    """Standard normal density phi(x)."""
    return sp.exp(-x**2 / 2) / sp.sqrt(2 * sp.pi)


def _sample_value(sym: sp.Symbol, rng: random.Random):
    """A value admissible under the symbol's assumptions, or None."""
    if sym.is_integer:
        lo = 1 if sym.is_positive else 0 if sym.is_nonnegative else -3
        return sp.Integer(rng.randint(lo, 4))
    if sym.is_positive or sym.is_nonnegative:
        return sp.Rational(rng.randint(1, 300), 100)
    if sym.is_real:
        return sp.Rational(rng.randint(-300, 300), 100)
    return None


def _refuted(expr, tries: int = 3) -> bool:
    """True if ``expr`` is visibly nonzero at an admissible rational point.

    Only ever used to *reject* an identity early (a nonzero value at one
    admissible point disproves it); it never makes an identity PASS.
    """
    rng = random.Random(12345)
    # An identity in undefined functions must hold for every function, so a
    # concrete random quadratic may stand in for each of them.
    v = sp.Dummy("v")
    for func in {a.func for a in expr.atoms(sp.core.function.AppliedUndef)}:
        coeffs = [sp.Rational(rng.randint(-9, 9), 7) for _ in range(3)]
        expr = expr.replace(func, sp.Lambda(v, coeffs[0] + coeffs[1] * v + coeffs[2] * v**2))
    syms = sorted(expr.free_symbols, key=str)
    for _ in range(tries):
        point = {}
        for sym in syms:
            val = _sample_value(sym, rng)
            if val is None:
                return False
            point[sym] = val
        try:
            val = sp.N(expr.subs(point), 30)
        except Exception:
            continue
        if val.is_number and val.is_finite and not val.has(sp.nan, sp.zoo):
            if abs(val) > sp.Float("1e-20"):
                return True
    return False


def is_zero(expr) -> bool:
    """True iff simplification reduces ``expr`` to the literal 0.

    Numerics are never used to accept; a clearly nonzero value at an admissible
    point is used only to reject quickly (see ``_refuted``).
    """
    expr = sp.sympify(expr)
    if isinstance(expr, sp.MatrixBase):
        return all(is_zero(e) for e in expr)
    if expr == 0:
        return True
    try:
        if sp.simplify(expr) == 0:
            return True
    except Exception:  # pragma: no cover
        pass
    if _refuted(expr):
        return False
    for transform in (lambda e: sp.simplify(sp.expand(e)),
                      lambda e: sp.simplify(sp.powsimp(sp.expand_log(e))),
                      lambda e: sp.simplify(e.rewrite(sp.erf)),
                      lambda e: sp.simplify(e.rewrite(sp.exp))):
        try:
            if transform(expr) == 0:
                return True
        except Exception:  # pragma: no cover - simplification failures = unproved
            pass
    return False


def nonneg(expr, var=None, depth: int = 2) -> bool:
    """Prove ``expr >= 0`` (for all admissible symbol values), or return False.

    ``var`` is a nonnegative symbol in which ``expr`` is differentiable on
    [0, oo); with ``depth > 0`` the rule "expr(0) >= 0 and d expr/d var >= 0 on
    var >= 0" may be used recursively.
    """
    expr = sp.sympify(expr)
    if expr.is_nonnegative:
        return True
    simp = sp.simplify(expr)
    if simp.is_nonnegative:
        return True
    fact = sp.factor(simp)
    if fact.is_nonnegative:
        return True
    if isinstance(fact, sp.Mul) and all(nonneg(f, var, depth) for f in fact.args):
        return True
    if (isinstance(fact, sp.Pow) and fact.base.is_extended_real
            and fact.exp.is_integer and fact.exp.is_even):
        return True
    # A - B with A, B > 0: log is increasing, so log A >= log B suffices.
    for cand in ((simp, sp.expand(simp)) if depth > 0 else ()):
        if isinstance(cand, sp.Add):
            pos = [a for a in cand.args if a.could_extract_minus_sign() is False]
            neg = [-a for a in cand.args if a.could_extract_minus_sign()]
            if pos and neg:
                A, B = sp.Add(*pos), sp.Add(*neg)
                if A.is_positive and B.is_positive:
                    diff = sp.expand_log(sp.log(A) - sp.log(B))
                    if nonneg(diff, var, depth - 1):
                        return True
    if var is not None and depth > 0:
        at0 = sp.simplify(simp.subs(var, 0))
        if (at0 == 0 or at0.is_nonnegative) and nonneg(sp.diff(simp, var), var, depth - 1):
            return True
    return False


@dataclass
class Steps:
    """The steps of one proof, each with whether it was established."""
    items: list = field(default_factory=list)
    numeric: bool = False

    def zero(self, label: str, expr) -> bool:
        ok = is_zero(expr)
        self.items.append((label, ok))
        return ok

    def equal(self, label: str, lhs, rhs) -> bool:
        return self.zero(label, sp.sympify(lhs) - sp.sympify(rhs))

    def holds(self, label: str, ok) -> bool:
        ok = bool(ok is True or ok is sp.true)
        self.items.append((label, ok))
        return ok

    def mp_agree(self, label: str, lhs: Callable, rhs: Callable, sampler: Callable,
                 n: int = 200, dps: int = 50, seed: int = 20261130,
                 rtol: float | None = None, relative: bool = False) -> bool:
        """Numeric check: |lhs - rhs| <= rtol*max(1, |rhs|) at n seeded points
        (rtol*|rhs| when ``relative``); default rtol = 10^-(dps-10)."""
        self.numeric = True
        rng = random.Random(seed)
        ok = True
        with mpmath.workdps(dps):
            tol = mpmath.mpf(10) ** (-(dps - 10)) if rtol is None else mpmath.mpf(rtol)
            for _ in range(n):
                point = sampler(rng)
                a, b = mpmath.mpmathify(lhs(*point)), mpmath.mpmathify(rhs(*point))
                scale = abs(b) if relative else max(1, abs(b))
                if mpmath.isinf(b) or mpmath.isinf(a):
                    same = a == b
                else:
                    same = abs(a - b) <= tol * scale
                if not same:
                    ok = False
                    label = f"{label} (fails at {point}: {mpmath.nstr(a, 17)} vs {mpmath.nstr(b, 17)})"
                    break
        self.items.append((f"{label} [numeric, {n} pts, {dps} digits]", ok))
        return ok

    @property
    def passed(self) -> bool:
        return bool(self.items) and all(ok for _, ok in self.items)

    def failures(self) -> list[str]:
        return [label for label, ok in self.items if not ok]


@dataclass
class Check:
    number: int
    key: str
    identity: str
    reference: str
    method: str
    func: Callable[..., Steps]


@dataclass
class Result:
    number: int
    key: str
    identity: str
    reference: str
    method: str
    passed: bool
    steps: int
    failures: list
    seconds: float
    detail: list = field(default_factory=list)   # [(step label, established?)]

    def as_dict(self) -> dict:
        return dict(self.__dict__)


REGISTRY: dict[str, Check] = {}


def check(number: int, key: str, identity: str, reference: str, method: str = SYMBOLIC):
    """Register a check function under ``key``."""
    def deco(func):
        REGISTRY[key] = Check(number, key, identity, reference, method, func)
        func.check_key = key
        return func
    return deco


def run_check(key: str, **claims) -> Result:
    """Run one registered check, with optional claimed expressions overriding the defaults."""
    c = REGISTRY[key]
    start = time.perf_counter()
    try:
        steps = c.func(**claims)
        passed, failures, n = steps.passed, steps.failures(), len(steps.items)
        method = NUMERIC if steps.numeric else c.method
        detail = [[label, ok] for label, ok in steps.items]
    except Exception as exc:  # an exception is a failed proof, never a pass
        passed, n, method, detail = False, 0, c.method, []
        failures = [f"exception: {exc!r}",
                    traceback.format_exc(limit=2).strip().splitlines()[-1]]
    return Result(c.number, key, c.identity, c.reference, method, passed, n, failures,
                  time.perf_counter() - start, detail)
