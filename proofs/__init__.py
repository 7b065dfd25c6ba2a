"""Symbolic checks of the closed-form identities the certifier relies on.

Each check is a sympy argument (simplification to zero, symbolic integration,
series, limits, solving) for one identity of the paper; rows that need
floating-point evidence say ``numeric`` and use mpmath at >= 50 digits.
Every check takes the *claimed* expression(s) as keyword arguments, with the
paper's expressions as defaults, so a perturbed claim can be shown to FAIL.

Run ``python -m proofs`` (add ``--json`` for machine-readable output).
"""
from __future__ import annotations

from . import bound, chi2, implementation, integrals, lognormal, moves, schemes, targets  # noqa: F401  (registration)
from ._core import NUMERIC, REGISTRY, SYMBOLIC, Result, run_check

__all__ = ["REGISTRY", "Result", "run_check", "run_all", "SYMBOLIC", "NUMERIC"]


def run_all(keys=None) -> list[Result]:
    """Run the registered checks (all, or those in ``keys``) in row order."""
    checks = sorted(REGISTRY.values(), key=lambda c: c.number)
    return [run_check(c.key) for c in checks if keys is None or c.key in keys]
