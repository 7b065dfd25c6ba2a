"""Hostile certificates (signed with a valid key, so the signature is no barrier): each ends in a
REJECT with its reason, in bounded time and memory, without a traceback; and the crashes found
by an audit stay fixed."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import fmpq, fmpz

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from verifier_fixtures import (  # noqa: E402
    CLAIM,
    METHOD,
    predicate_v2,
    public_pem,
    sign_statement,
    statement_v2,
)
from verifier_fixtures import typed_v1 as typed  # noqa: E402

from verifier import Result, verify_bytes, verify_file  # noqa: E402
from verifier.cli import run_capped  # noqa: E402
from verifier.format.schema import typed as typed_as  # noqa: E402
from verifier.replay.upper_v1 import replay  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KEY = Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def v2():
    return predicate_v2()


def edit(path: str, value):
    def fn(p):
        *head, last = path.split(".")
        d = p
        for k in head:
            d = d[k]
        d[last] = value
    return fn


def both(*fns):
    return lambda p: [f(p) for f in fns]


# (change to the spec-built v2 predicate, reasons allowed).  The first four are the denial-of-
# service certificates of the audit (up to 2.3 GB and 13 s, 6.5 GB and > 60 s, hours).
HOSTILE = {
    "tail-step-125000": (both(edit("method.tail_step", "125000"), edit("method.cap", "125004")),
                         {"replay-bound-exceeds", "enclosure-mismatch"}),
    "cap-over-h-1e10": (both(edit("method.tail_step", "1000000"), edit("method.cap", "100000004")),
                        {"replay-bound-exceeds", "enclosure-mismatch"}),
    "eta-7e9": (both(edit("method.eta", "7000000000"), edit("method.k_minus", -1), edit("method.k_plus", 2)),
                {"cost-exceeds-limit"}),
    "every-limit-at-once": (both(edit("method.h", "0.0000008"), edit("method.tail_start", "16"),
                                 edit("method.cap", "16"), edit("method.prec", 4096),
                                 edit("method.fixed_point_bits", 1024), edit("method.k_minus", -5000000),
                                 edit("method.k_plus", 5000000)), {"cost-exceeds-limit"}),
    "M-beyond-the-model": (both(edit("claim.steps", 10**7 + 1), edit("claim.epochs", 10**5),
                                   edit("method.truncation", "80000008"),
                                   edit("method.lattice_schedule", [1] * 24),
                                   edit("lower.method.lattice_schedule", [1] * 24)),
                              {"cost-exceeds-limit"}),
    "lower-cap-over-h-1e10": (edit("lower.method.cap", "100000000"), {"cost-exceeds-limit"}),
    "lower-eta-7e9": (edit("lower.method.eta", "7000000000"), {"lower-replay-not-above-target"}),
    "lower-prec-8": (edit("lower.method.prec", 8), {"lower-replay-not-above-target"}),
    "lower-fixed-point-bits-8": (edit("lower.method.fixed_point_bits", 8), {"lower-replay-not-above-target"}),
    "support-below-the-log-grid": (both(edit("method.cap", "0.2"), edit("method.tail_start", "0.2"),
                                        edit("method.k_minus", -1000)), {"replay-bound-exceeds"}),
    "vacuous-O": (edit("enclosures.O", "[1000 +/- 999.09999]"), {"enclosure-too-wide"}),
    "vacuous-mass": (edit("enclosures.mass.step_ii", "[0 +/- 1e9]"), {"enclosure-too-wide"}),
    "O-above-one": (edit("enclosures.O", "[1.5 +/- 1e-30]"), {"enclosure-out-of-range"}),
    "vacuous-W_A": (edit("lower.enclosures.W_A", "[0.5 +/- 0.5]"), {"enclosure-too-wide"}),
}


def hostile(v2, name) -> bytes:
    p = copy.deepcopy(v2)
    HOSTILE[name][0](p)
    return sign_statement(statement_v2(p), KEY)


def cli_measured(*args) -> dict:
    """Run sigmacert-verify: its output, wall time and peak resident memory (os.wait4 reports the
    largest of the command and its capped child)."""
    exe = Path(sys.executable).parent / "sigmacert-verify"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "verifier"]
    t = time.perf_counter()
    p = subprocess.Popen(cmd + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    out, err = p.stdout.read().decode(), p.stderr.read().decode()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"rc": p.returncode, "out": out, "err": err, "wall": time.perf_counter() - t,
            "rss": usage.ru_maxrss * 1024}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_certificate_is_rejected_quickly_and_small(v2, name, tmp_path):
    (tmp_path / "c.json").write_bytes(hostile(v2, name))
    (tmp_path / "k.pem").write_bytes(public_pem(KEY))
    r = cli_measured(tmp_path / "c.json", "--key", tmp_path / "k.pem", "--json")
    assert "Traceback" not in r["err"] + r["out"], r["err"]
    out = json.loads(r["out"])
    assert r["rc"] == 1 and out["result"] == "REJECT", out
    assert out["reason"] in HOSTILE[name][1], (out["reason"], out["detail"])
    assert r["wall"] < 30 and r["rss"] < 2 << 30, (r["wall"], r["rss"])


def test_cost_rejection_reports_the_predicted_figures(v2):
    r = verify_bytes(hostile(v2, "eta-7e9"), [KEY.public_key()])
    assert r.reason == "cost-exceeds-limit" and "predicted peak memory" in r.detail and "step_iii" in r.detail
    assert r.cost["seconds"] > 1e6 and r.replay_seconds is None  # refused before any arithmetic


def test_support_below_the_log_grid_deletes_everything(v2):
    """Every epoch value below e^{k_minus eta}: all mass is deleted, the bound is 1 (no crash)."""
    r = verify_bytes(hostile(v2, "support-below-the-log-grid"), [KEY.public_key()])
    assert r.reason == "replay-bound-exceeds" and float(r.replayed_bound) == 1, (r.reason, r.detail)


@pytest.mark.parametrize("change", [
    # all of the epoch sum at j = 0 (L = 0 is deleted)
    dict(h="0.5", tail_start="2.5", cap="2.5", truncation="2.5", lattice_schedule=[1, 2, 6], eta="0.1",
         k_minus=-1000, k_plus=-995),
    # cell edges far above 2^prec: each is placed at a higher precision
    dict(h="0.5", tail_start="1.5", cap="1.5", lattice_schedule=[1, 1, 2, 4], eta="3", k_minus=50, k_plus=150),
])
def test_replay_corner_cases_give_the_trivial_bound(change):
    r = replay(*typed(dict(CLAIM, steps=12), dict(METHOD, **change)).values())
    assert r.bound == 1 and r.enclosures["mass"]["step_iv"] == 0


def test_subject_must_be_a_regular_file(tmp_path, v2):
    (tmp_path / "c.json").write_bytes(sign_statement(statement_v2(v2), KEY))
    (tmp_path / "k.pem").write_bytes(public_pem(KEY))
    with pytest.raises(ValueError, match="not a regular file"):
        verify_file(str(tmp_path / "c.json"), [str(tmp_path / "k.pem")], subject="/dev/zero")
    t = time.perf_counter()
    r = cli_measured(tmp_path / "c.json", "--key", tmp_path / "k.pem", "--subject", "/dev/zero")
    assert r["rc"] == 2 and "not a regular file" in r["err"] and "Traceback" not in r["err"]
    assert time.perf_counter() - t < 30


def test_broken_pipe_with_json_prints_no_traceback(tmp_path, v2):
    (tmp_path / "c.json").write_bytes(sign_statement(statement_v2(v2), KEY))
    (tmp_path / "k.pem").write_bytes(public_pem(KEY))
    exe = Path(sys.executable).parent / "sigmacert-verify"
    p = subprocess.Popen([str(exe), str(tmp_path / "c.json"), "--key", str(tmp_path / "k.pem"), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # the reader goes away before the verdict is printed
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) in (0, 1) and "Traceback" not in err and "BrokenPipe" not in err, err


def _allocate():
    return Result(True, "accepted", str((fmpz(3) ** (5 * 10**9)).bit_length()))  # about 1 GB


def _spin():
    while True:
        pass


def test_the_caps_turn_a_model_error_into_a_reason():
    """What the cost model would not catch: FLINT aborts the process when an allocation fails
    under the address-space cap, and a runaway computation meets the CPU cap; both come back
    as a reason from the capped child, and the caller survives."""
    r = run_capped(_allocate, 600 << 20, 60)
    assert (r.accepted, r.reason) == (False, "memory-exhausted"), r
    r = run_capped(_spin, 4 << 30, 1)
    assert (r.accepted, r.reason) == (False, "time-exhausted"), r
    assert run_capped(lambda: Result(True, "accepted", "ok"), 4 << 30, 60).accepted


def test_a_python_memory_error_is_a_reason(v2, monkeypatch):
    import dataclasses

    import verifier.methods as vm

    def exhausted(*a):
        raise MemoryError
    key = ("lemma-c5-rounding", 1)
    monkeypatch.setitem(vm.UPPER, key, dataclasses.replace(vm.UPPER[key], replay=exhausted))
    r = verify_bytes(sign_statement(statement_v2(v2), KEY), [KEY.public_key()])
    assert (r.accepted, r.reason) == (False, "memory-exhausted")


def test_lower_replay_with_everything_floored_away():
    """fixed_point_bits 8 (units of 2^-12): the products floor the masses to (almost) nothing; the
    lower bound is then about -1, not a crash."""
    from verifier_fixtures import LOWER_METHOD

    from verifier.format.v2 import SCHEMA_V2
    from verifier.replay.lower_v1 import replay_lower
    lm = typed_as(dict(LOWER_METHOD, fixed_point_bits=8), SCHEMA_V2["lower"]["method"], "lm")
    assert replay_lower(12, 3, fmpq(29, 20), lm).bound < fmpq(-99, 100)
