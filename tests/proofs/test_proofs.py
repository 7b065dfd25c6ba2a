"""Issue 5: every proof check passes, and each one FAILS when its claimed
expression is perturbed (one changed constant), so no check is vacuous."""
from __future__ import annotations

import json
import types

import pytest
import sympy as sp

import proofs
from certifier.numerics import closed_form as cf
from certifier.numerics import schemes
from proofs import REGISTRY, run_all, run_check
from proofs.__main__ import main
from proofs._core import Phi, Steps, is_zero, nonneg
from proofs.chi2 import t as _t
from proofs.targets import _partition_sum

I = sp.I


def _schemes_impl(**changed):
    """A copy of certifier.numerics.schemes with some functions replaced."""
    ns = types.SimpleNamespace(**{k: getattr(schemes, k) for k in dir(schemes) if not k.startswith("__")})
    for k, v in changed.items():
        setattr(ns, k, v)
    return ns


def _impl(**changed):
    """A copy of certifier.numerics.closed_form with some functions replaced."""
    ns = types.SimpleNamespace(**{k: getattr(cf, k) for k in dir(cf) if not k.startswith("__")})
    for k, v in changed.items():
        setattr(ns, k, v)
    return ns


# (row key, claimed expressions with one constant changed)
PERTURBED = [
    ("one_epoch_chi2", dict(claimed=lambda t, M: (sp.exp(2 * t**2) - 1) / M)),
    ("composition", dict(claimed=lambda c, E: (1 + c) ** (2 * E))),
    ("U_function", dict(u_high=lambda c: c / (1 + 2 * c))),
    ("U_function", dict(u_low=lambda c: sp.sqrt(c) / 3)),
    ("corollary_3_4", dict(c_low=lambda l: 3 * l**2)),
    ("corollary_3_4", dict(c_high=lambda l: l / (2 - l))),
    ("corollary_3_4", dict(sigma=lambda M, E, c: sp.log(1 + M * ((1 + c) ** (1 / E) - 1))
                           ** sp.Rational(-1, 3))),
    ("c_E_sandwich", dict(lower=lambda x: 2 * x)),
    ("c_E_sandwich", dict(upper=lambda x: sp.exp(x / 2) - 1)),
    ("lognormal_partial", dict(F0=lambda y, t: Phi((sp.log(y) + t**2 / 3) / t))),
    ("lognormal_partial", dict(F1=lambda y, t: Phi((sp.log(y) - t**2 / 3) / t))),
    ("two_point_rounding", dict(cell=lambda a, b, m, mu: ((b * m - mu) / (b - a),
                                                          (mu - 2 * a * m) / (b - a)))),
    ("two_point_rounding", dict(tail1=lambda y, t: sp.erfc((sp.log(y) - t**2 / 2)
                                                           / (t * sp.sqrt(3))) / 2)),
    ("M_equals_1", dict(F1=lambda q, t: sp.exp(q * (q + 1) * t**2 / 2))),
    ("M_equals_1", dict(tv1=lambda t, E: 2 * Phi(t * sp.sqrt(E) / 3) - 1)),
    ("min_transform", dict(transform=lambda z: 1 / (z**2 - 2 * I * z))),
    ("min_transform", dict(kernel=lambda u: 1 / (u**2 + sp.Rational(1, 2)))),
    ("abs_integral", dict(claimed=lambda z: sp.pi * sp.Abs(z) / 3)),
    ("ratio_limit", dict(ratio=lambda: sp.sqrt(sp.pi / 3))),
    ("ratio_limit", dict(lead=lambda: 1 / sp.sqrt(3 * sp.pi))),
    ("gdp_limit_sigma", dict(sigma=lambda M, E, z: sp.log(1 + 2 * z**2 * M / E)
                             ** sp.Rational(-1, 2))),
    ("chi2_tpr_bound", dict(claimed=lambda a, c: a + sp.sqrt(2 * c * a * (1 - a)))),
    ("moves_and_payoffs", dict(payoffs={"min{1, Lambda}": ((sp.Symbol("Lambda", positive=True), 2), 1)})),
    ("moves_and_payoffs", dict(lam=lambda Y, M, E: sp.Mul(*[sp.Add(*[y**2 for y in Y[k]]) / M for k in range(E)]))),
    ("moves_and_payoffs", dict(half=lambda m: (sp.Rational(1, 3), sp.Rational(2, 3)))),
    ("moves_and_payoffs", dict(top=lambda C: C - 2)),
    ("implementation", dict(impl=_impl(c_lambda=lambda lam: 3.0 * lam * lam if lam <= 0.5
                                       else lam / (1.0 - lam)))),
    ("implementation", dict(impl=_impl(closed_form_sigma=lambda M, E, lam:
                                       cf.math.log1p(M * cf._per_epoch_level(E, lam)) ** -0.4))),
    ("implementation", dict(impl=_impl(gdp_limit_sigma=lambda M, E, lam:
                                       cf.math.log1p(2.0 * float(cf.ndtri(0.5 + 0.5 * lam)) ** 2
                                                     * M / E) ** -0.5))),
    ("fixed_bins_reduction", dict(scale=lambda E: E)),
    ("fixed_bins_reduction", dict(scale=lambda E: sp.sqrt(E) * sp.Rational(101, 100))),
    ("fixed_bins_closed_form", dict(sigma=lambda M, E, c: E * sp.log(1 + M * c) ** sp.Rational(-1, 2))),
    ("fixed_bins_closed_form", dict(sigma=lambda M, E, c: sp.sqrt(E) * sp.log(1 + 2 * M * c)
                                    ** sp.Rational(-1, 2))),
    ("fixed_bins_implementation", dict(impl=_schemes_impl(
        closed_form_sigma=lambda M, E, lam, scheme: (E + 1) ** 0.5 * cf.closed_form_sigma(M, 1, lam)))),
    ("fixed_bins_implementation", dict(impl=_schemes_impl(
        chi2=lambda M, E, sigma, scheme: cf.c_E(M, E, sigma)))),   # the random-allocation chi-square
    ("integer_moments", dict(formula=lambda m, q: _partition_sum(m, q, exponent=lambda a: a * _t ** 2 / 3))),
    ("integer_moments", dict(coefficients=lambda m, q: ((0, m ** q),))),   # F = 1: the moments dropped
    ("rdp_tangent", dict(constant=lambda K, q: K ** (1 - q) * sp.Integer(q - 1) ** (q - 1) / sp.Integer(q) ** (q + 1))),
]


@pytest.fixture(scope="module")
def results():
    return {r.key: r for r in run_all()}


def test_rows_are_numbered_without_gaps():
    numbers = sorted(c.number for c in REGISTRY.values())
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 18


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_check_passes(results, key):
    r = results[key]
    assert r.passed, r.failures
    assert r.steps >= 2


def test_methods_are_labelled(results):
    for r in results.values():
        assert r.method in (proofs.SYMBOLIC, proofs.NUMERIC)
    assert results["implementation"].method == proofs.NUMERIC


def test_every_row_has_a_perturbation():
    assert {k for k, _ in PERTURBED} == set(REGISTRY)


@pytest.mark.parametrize("key,claims", PERTURBED,
                         ids=[f"{k}-{'-'.join(c)}" for k, c in PERTURBED])
def test_perturbed_claim_fails(key, claims):
    r = run_check(key, **claims)
    assert not r.passed
    assert r.failures


def test_helpers_refuse_false_statements():
    x = sp.Symbol("x", positive=True)
    u = sp.Symbol("u", nonnegative=True)
    assert is_zero(sp.exp(sp.log(x)) - x)
    assert not is_zero(sp.exp(x) - 1 - x)
    assert not is_zero(sp.Rational(1, 10**30))
    assert nonneg(sp.exp(u) - 1 - u, u)
    assert not nonneg(1 + u - sp.exp(u), u)
    assert not nonneg(x - 1)


def test_exception_is_a_failure(monkeypatch):
    def broken() -> Steps:
        raise RuntimeError("boom")
    monkeypatch.setattr(REGISTRY["abs_integral"], "func", broken)
    r = run_check("abs_integral")
    assert not r.passed and "boom" in r.failures[0]


def test_cli_json_and_exit_code(monkeypatch, capsys):
    assert main(["--only", "ratio_limit", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["checks"][0]["key"] == "ratio_limit"
    assert all(ok for _, ok in out["checks"][0]["detail"])
    assert main(["--only", "ratio_limit", "-v"]) == 0
    assert "[ok]" in capsys.readouterr().out
    monkeypatch.setattr(REGISTRY["ratio_limit"], "func", lambda: Steps(items=[("no", False)]))
    assert main(["--only", "ratio_limit"]) == 1
    assert "FAIL" in capsys.readouterr().out
