"""Method `gaussian-shift` v1 (docs/method-v2.md §5): certificates built from the spec with mpmath
(no certifier or verifier code), mutations rejected with their reasons, real certificates issued
by the CLI accepted."""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction as Fr
from pathlib import Path

import mpmath as mp
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
from verifier_fixtures import smallest_step  # noqa: E402
from verifier_v3_fixtures import dec  # noqa: E402
from verifier_v3_fixtures import resign_v3 as resign  # noqa: E402

from verifier import verify_file  # noqa: E402
from verifier.format.v1 import STATEMENT  # noqa: E402

METHOD = {"name": "gaussian-shift", "version": 1, "prec": 128}
GRID_DIGITS = 4  # epsilon_grid = 10^-4


def tv(mu):  # TV(N(0,1), N(mu,1)) = erf(mu / (2 sqrt 2))
    return mp.erf(mu / (2 * mp.sqrt(2)))


def delta(mu, eps):  # Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def mp_ball(x) -> str:
    return f"[{mp.nstr(x, 40, min_fixed=-50, max_fixed=50)} +/- 1e-35]"


def rnd(x, up: bool, digits: int = 10) -> str:
    """x rounded up (down) to `digits` significant digits, as a plain decimal."""
    e = int(mp.floor(mp.log10(x))) - digits + 1  # x < 1 here, so e < 0
    n = int(mp.ceil(x / mp.mpf(10) ** e) if up else mp.floor(x / mp.mpf(10) ** e))
    return _plain(n, -e)


def _plain(n: int, k: int) -> str:
    s = str(n).rjust(k + 1, "0")
    return s[:len(s) - k] + "." + s[len(s) - k:]


def grid(n: int):
    """n epsilon_grid, exactly as the decimal the certificate records (at the current precision)."""
    return mp.mpf(n) / 10**GRID_DIGITS


def predicate(epochs=4, sigma="1.5", sigma_low="1.45", target="0.5") -> dict:
    mu, mu_low = mp.sqrt(epochs) / mp.mpf(sigma), mp.sqrt(epochs) / mp.mpf(sigma_low)
    assert tv(mu) < mp.mpf(target) < tv(mu_low)
    rows = {}
    for d in ("1e-05", "1e-06"):
        n = smallest_step(lambda k, d=d: delta(mu, grid(k)) <= mp.mpf(d), 2**24)
        rows[d] = {"epsilon": _plain(n, 4), "delta_qp": mp_ball(delta(mu, grid(n))),
                   "delta_pq": mp_ball(delta(mu, grid(n)))}
    tpr = {}
    for a in ("0.1", "0.01", "0.001"):
        best = min((mp.exp(mp.mpf(j) / 20) * mp.mpf(a) + delta(mu, mp.mpf(j) / 20), j) for j in range(120))
        tpr[a] = {"tpr": rnd(best[0], True, 6), "epsilon": _plain(best[1] * 5, 2)}
    claim = {"mechanism": "dp-sgd/random-allocation", "scheme": "random-allocation", "adjacency": "zero-out",
             "steps": 1, "epochs": epochs, "sigma": sigma, "target": target, "statement": STATEMENT}
    return {"claim": claim, "method": dict(METHOD), "enclosures": {"TV": mp_ball(tv(mu))},
            "bound": rnd(tv(mu), True),
            "numerics": {"tv_exact": "0.49", "tv_error": "1e-15", "closed_form_sigma": "2.4",
                         "search_resolution": "1e-6"},
            "software": {"sigmacert": "0.1.0", "python-flint": "0.9.0", "flint": "3.6.0"},
            "issued_at": "2026-12-01T12:00:00Z",
            "timings": {"step_i": 0, "step_ii": 0, "step_iii": 0, "step_iv": 0, "total": 0},
            "lower": {"sigma_low": sigma_low, "target": target, "method": dict(METHOD),
                      "tv_lower": rnd(tv(mu_low), False), "enclosures": {"TV": mp_ball(tv(mu_low))}},
            "privacy": {"epsilon_grid": "0.0001", "epsilon_at_delta": rows}, "tpr": tpr}


@pytest.fixture(autouse=True)
def precision():
    """mpmath's precision is global state that other tests change: 60 digits here."""
    with mp.workdps(60):
        yield


@pytest.fixture(scope="module")
def spec():
    with mp.workdps(60):
        return predicate(), Ed25519PrivateKey.generate()


def test_spec_built_gaussian_shift_is_accepted(spec):
    pred, key = spec
    r = resign(pred, key)
    assert r.accepted, (r.reason, r.detail)
    assert Fr(r.replayed_bound) <= Fr(pred["bound"]) and Fr(r.replayed_lower) >= Fr(pred["lower"]["tv_lower"])
    assert r.derived["1e-06"]["epsilon"] == pred["privacy"]["epsilon_at_delta"]["1e-06"]["epsilon"]


def _eps_step(d, k, deltas: bool):
    """epsilon moved by k grid steps; with `deltas`, the recorded deltas recomputed there."""
    def fn(p):
        row = p["privacy"]["epsilon_at_delta"][d]
        row["epsilon"] = _plain(int(Fr(row["epsilon"]) * 10**4) + k, 4)
        mu = mp.sqrt(p["claim"]["epochs"]) / mp.mpf(p["claim"]["sigma"])
        if deltas:
            row["delta_qp"] = row["delta_pq"] = mp_ball(delta(mu, mp.mpf(row["epsilon"])))
    return fn


def _set(path, value):
    def fn(p):
        *head, last = path.split(".")
        for k in head:
            p = p[k]
        p[last] = value(p[last]) if callable(value) else value
    return fn


MUTATIONS = {
    # the bound below the closed form's ball (recorded TV moved with it, so the schema checks pass)
    "replay-bound-exceeds": lambda p: (_set("bound", lambda b: dec(Fr(b) - Fr(1, 10**6)))(p),
                                       _set("enclosures.TV", lambda b: mp_ball(mp.mpf(Fr(p["bound"]).numerator)
                                                                          / Fr(p["bound"]).denominator
                                                                          - mp.mpf("1e-20")))(p)),
    "enclosure-mismatch": _set("enclosures.TV", lambda b: mp_ball(mp.mpf(b[1:].split()[0]) - mp.mpf("1e-12"))),
    "lower-replay-below-recorded": lambda p: (_set("lower.tv_lower", lambda t: dec(Fr(t) + Fr(1, 10**9)))(p),
                                              _set("lower.enclosures.TV", lambda b: mp_ball(
                                                  mp.mpf(b[1:].split()[0]) + mp.mpf("1e-9")))(p)),
    "lower-enclosure-mismatch": _set("lower.enclosures.TV",
                                     lambda b: mp_ball(mp.mpf(b[1:].split()[0]) + mp.mpf("1e-9"))),
    "privacy-epsilon-too-small": _eps_step("1e-06", -1, deltas=False),
    "privacy-epsilon-not-minimal": _eps_step("1e-05", +1, deltas=True),
    "tpr-too-small": lambda p: p["tpr"]["0.01"].update(tpr=dec(Fr(p["tpr"]["0.01"]["tpr"]) - Fr(1, 10**4))),
    "method-scheme": _set("claim.steps", 2),
    "method-invalid": _set("method.prec", 32),
    "lower-method-invalid": _set("lower.method.prec", 10**5),
    "method-unknown": _set("method.version", 2),
    "schema-unknown-field": _set("method.h", "0.001"),
}


@pytest.mark.parametrize("reason", sorted(MUTATIONS))
def test_gaussian_shift_mutation_is_rejected_with_its_reason(spec, reason):
    pred, key = spec
    r = resign(pred, key, MUTATIONS[reason])
    assert not r.accepted and r.reason == reason, (r.reason, r.detail)


@pytest.mark.parametrize("args", [["--epochs", "4", "--target", "0.5"],
                                  ["--scheme", "fixed-bins", "--iterations", "9", "--target", "0.3"]],
                         ids=["random-allocation", "fixed-bins"])
def test_certificates_issued_at_one_step_verify(tmp_path, args):
    cli = str(Path(sys.executable).parent / "sigmacert")
    subprocess.run([cli, "keygen", "-o", str(tmp_path / "k")], check=True, capture_output=True)
    r = subprocess.run([cli, "certify", "--steps", "1", *args, "--key", str(tmp_path / "k" / "private.pem"),
                        "-o", str(tmp_path / "c.json"), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = verify_file(str(tmp_path / "c.json"), [str(tmp_path / "k" / "public.pem")])
    assert out.accepted, (out.reason, out.detail)
    assert out.claim["steps"] == 1 and out.replayed_lower is not None and "1e-06" in out.derived
    assert [t["method"] for t in json.loads(r.stdout)["tries"]] == ["gaussian-shift"]
