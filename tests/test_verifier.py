"""Tests of the independent verifier (issue 4): replay correctness, mutation suite, CLI."""
from __future__ import annotations

import ast
import base64
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import arb, arb_poly, ctx, fmpq

sys.path.insert(0, str(Path(__file__).parent))
from verifier_fixtures import (CLAIM, METHOD, canonical, envelope, predicate, public_pem,  # noqa: E402
                               sign_statement, statement)

from verifier import verify_bytes, verify_file  # noqa: E402
from verifier.replay import replay  # noqa: E402
from verifier.statement import SCHEMA, _typed  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def typed(claim, method):
    return _typed({"claim": claim, "method": method}, {k: SCHEMA[k] for k in ("claim", "method")}, "p")


# ---------------------------------------------------------------- independence --
def test_verifier_imports_nothing_from_certifier():
    allowed = {"__future__", "argparse", "base64", "binascii", "dataclasses", "fractions", "hashlib",
               "json", "math", "re", "sys", "time", "flint", "cryptography"}
    files = sorted((ROOT / "verifier").glob("*.py"))
    assert len(files) >= 5
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            for n in names:
                assert n.split(".")[0] != "certifier", f"{f.name} imports {n}"
                assert n.split(".")[0] in allowed, f"{f.name} imports {n}"


# ------------------------------------------------------------ replay is right --
def literal_O(M, E, sigma, h, cap, T, eta, kmin, kmax, sched):
    """Appendix C.5 done literally in arb balls (no fixed point, no trimming),
    with the cell formulas of docs/certificate.md §4 (i) and naive loops."""
    old, ctx.prec = ctx.prec, 120
    try:
        s, h, T, eta = arb(sigma), fmpq(*h), fmpq(*T), fmpq(*eta)
        Phi = lambda x: (-x / arb(2).sqrt()).erfc() / 2
        F0 = lambda y: arb(0) if y == 0 else Phi(s * arb(y).log() + 1 / (2 * s))
        F1 = lambda y: arb(0) if y == 0 else Phi(s * arb(y).log() - 1 / (2 * s))
        n = int(cap / h)
        ys = [fmpq(k) * h for k in range(n + 1)]
        p = [arb(0)] * (n + 1)
        for k in range(n):
            a, b = ys[k], ys[k + 1]
            m, mu = F0(b) - F0(a), F1(b) - F1(a)
            p[k] += (b * m - mu) / (b - a)
            p[k + 1] += (mu - a * m) / (b - a)

        def cut(c, g):  # delete values above T (value = index * g * h)
            return c[: int((T / (g * h)).floor()) + 1]

        def reround(c, q):  # onto multiples of q (exact two-point rounding)
            out = [arb(0)] * (len(c) // q + 2)
            for j, x in enumerate(c):
                out[j // q] += x * (q - j % q) / q
                out[j // q + 1] += x * (j % q) / q
            return out

        def mul(a, b, g):
            return cut((arb_poly(a) * arb_poly(b)).coeffs(), g)

        B, gB, A, gA = cut(p, 1), 1, None, 1
        for i in range(len(sched)):
            if i:
                B = mul(B, B, gB)
                if sched[i] > gB:
                    B, gB = cut(reround(B, sched[i] // gB), sched[i]), sched[i]
            if M >> i & 1:
                if A is None:
                    A, gA = B, gB
                else:
                    if gA < gB:
                        A, gA = cut(reround(A, gB // gA), gB), gB
                    A = mul(A, B, gB)
        r = [arb(0)] * (kmax - kmin + 1)
        for j, x in enumerate(A):
            if j == 0:
                continue
            L = fmpq(j) * gA * h / M
            k = int((arb(L).log() / arb(eta)).floor().unique_fmpz())
            if kmin <= k < kmax:
                lo, hi = (arb(eta) * k).exp(), (arb(eta) * (k + 1)).exp()
                up = x * (arb(L) - lo) / (hi - lo)
                r[k - kmin] += x - up
                r[k + 1 - kmin] += up
        b = (arb_poly(r) ** E).coeffs()
        return sum((bk * min(arb(1), (arb(eta) * (i + E * kmin)).exp()) for i, bk in enumerate(b)), arb(0))
    finally:
        ctx.prec = old


@pytest.mark.parametrize("sched", [[1, 1], [1, 2]])
def test_replay_matches_literal_ball_arithmetic(sched):
    claim = dict(CLAIM, steps=3, epochs=2, sigma="1.2")
    method = dict(METHOD, h="0.05", tail_start="5", tail_step="0.05", cap="5", truncation="8",
                  lattice_schedule=sched, eta="0.01", k_minus=-100, k_plus=200, trim="0")
    ref = literal_O(3, 2, "1.2", (1, 20), 5, (8, 1), (1, 100), -100, 200, sched)
    got = replay(*typed(claim, method).values())
    assert ref.rad() < 1e-25
    man, exp = ref.mid().man_exp()
    ref_mid = fmpq(int(man) * 2 ** max(int(exp), 0), 2 ** max(-int(exp), 0))
    assert 0 <= ref_mid - (1 - got.bound) < fmpq(1, 10**18)  # a lower bound; floors cost < 1e-18


def test_replay_is_exact_at_one_step_one_epoch():
    """M = E = 1: 1 is a grid point of both grids, (1 - y)_+ is linear between them, so the
    rounded construction loses nothing but the mass above the cap: bound = TV + deleted.cap."""
    claim = dict(CLAIM, steps=1, epochs=1, sigma="2")
    method = dict(METHOD, h="0.01", tail_start="40", tail_step="0.01", cap="40", truncation="40",
                  lattice_schedule=[1], eta="0.001", k_minus=-20000, k_plus=5000)
    r = replay(*typed(claim, method).values())
    old, ctx.prec = ctx.prec, 200
    try:
        tv = (arb(1) / (2 * arb(2)) / arb(2).sqrt()).erf()  # 2 Phi(t/2) - 1 at t = 1/2
        excess = arb(r.bound) - tv - r.enclosures["deleted"]["cap"]
        assert abs(excess) < 1e-20, excess
        assert arb(r.bound) > tv
    finally:
        ctx.prec = old


def test_replay_bound_is_sound_and_tightens_with_the_grid():
    tvs = []
    for h, eta in (("0.02", "0.002"), ("0.01", "0.001")):
        method = dict(METHOD, h=h, eta=eta, k_minus=int(-1 / float(eta)), k_plus=int(2 / float(eta)))
        tvs.append(float(replay(*typed(CLAIM, method).values()).bound))
    assert tvs[1] < tvs[0] < tvs[1] + 1e-3


# ------------------------------------------------------------- mutation suite --
KEY = Ed25519PrivateKey.generate()
OTHER = Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def base():
    return predicate()


def resigned(fn):
    def build(pred):
        p = copy.deepcopy(pred)
        st = fn(p) or statement(p)
        return sign_statement(st, KEY)
    return build


def raw_env(fn):
    def build(pred):
        env = json.loads(sign_statement(statement(pred), KEY))
        out = fn(env)
        return out if isinstance(out, bytes) else json.dumps(env).encode()
    return build


def setp(path, value):
    def fn(p):
        *head, last = path.split(".")
        d = p
        for k in head:
            d = d[k]
        if value is DELETE:
            del d[last]
        else:
            d[last] = value
    return resigned(fn)


DELETE = object()


def _st(change):
    def fn(p):
        st = statement(p)
        change(st)
        return st
    return resigned(fn)


def _payload(env, change):
    raw = base64.b64decode(env["payload"])
    env["payload"] = base64.b64encode(change(raw)).decode()


def _flip_sig(env):
    raw = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
    raw[5] ^= 1
    env["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()


def _other_key(forge_keyid):
    def build(pred):
        env = envelope(canonical(statement(pred)), OTHER)
        if forge_keyid:
            env["signatures"][0]["keyid"] = json.loads(sign_statement(statement(pred), KEY))["signatures"][0]["keyid"]
        return json.dumps(env).encode()
    return build


def _dup_payload_key(p):
    st = statement(p)
    body = canonical(st).replace(b'"bound":', b'"bound":"0.01","bound":', 1)
    return body


def _resign_bytes(body_fn):
    def build(pred):
        return json.dumps(envelope(body_fn(copy.deepcopy(pred)), KEY)).encode()
    return build


def _non_canonical_sig(env):  # non-zero padding bits: decodes to the same bytes
    s = env["signatures"][0]["sig"]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    env["signatures"][0]["sig"] = s[:-3] + alphabet[alphabet.index(s[-3]) | 1] + s[-2:]


def _bound_and_O(p):
    p["bound"] = "0.14"
    p["enclosures"]["O"] = "[0.87 +/- 1e-20]"


def _edit_O(p):
    o = arb(p["enclosures"]["O"])
    p["enclosures"]["O"] = (o + arb("1e-9")).str(30, radius=True)


MUTATIONS = {
    # envelope and signature
    "payload-bytes": (raw_env(lambda e: _payload(e, lambda b: b.replace(b'"steps":12', b'"steps":13'))), "bad-signature"),
    "signature-bytes": (raw_env(_flip_sig), "bad-signature"),
    "keyid": (raw_env(lambda e: e["signatures"][0].update(keyid="0" * 64)), "unknown-key"),
    "payload-type": (raw_env(lambda e: e.update(payloadType="application/json")), "payload-type"),
    "unknown-key-signature": (_other_key(False), "unknown-key"),
    "unknown-key-forged-keyid": (_other_key(True), "bad-signature"),
    "truncated-json": (raw_env(lambda e: json.dumps(e).encode()[: len(json.dumps(e)) // 2]), "envelope-not-json"),
    "base64-no-padding": (raw_env(lambda e: e.update(payload=e["payload"].rstrip("="))
                                  if e["payload"].endswith("=") else e.update(payload=e["payload"] + "\n")), "envelope-base64"),
    "base64-pad-bits": (raw_env(_non_canonical_sig), "envelope-base64"),
    "base64-urlsafe": (raw_env(lambda e: e.update(payload=e["payload"].replace("+", "-").replace("/", "_") + "-")), "envelope-base64"),
    "envelope-extra-field": (raw_env(lambda e: e.update(note="x")), "envelope-fields"),
    "signature-extra-field": (raw_env(lambda e: e["signatures"][0].update(cert="x")), "envelope-fields"),
    "envelope-duplicate-key": (raw_env(lambda e: json.dumps(e).replace('"payloadType"', '"payloadType":"x","payloadType"', 1).encode()), "envelope-duplicate-key"),
    "too-large": (raw_env(lambda e: json.dumps(e).encode() + b" " * (4 * 1024 * 1024)), "envelope-too-large"),
    # Statement
    "predicate-type": (_st(lambda s: s.update(predicateType="https://sigmacert.dev/tv-certificate/v2")), "predicate-type"),
    "statement-type": (_st(lambda s: s.update(_type="https://in-toto.io/Statement/v0.1")), "statement-type"),
    "subject-claim-digest": (_st(lambda s: s["subject"][0]["digest"].update(sha256="0" * 64)), "subject-digest"),
    "payload-not-canonical": (_resign_bytes(lambda p: json.dumps(statement(p), indent=1).encode()), "payload-not-canonical"),
    "payload-duplicate-key": (_resign_bytes(_dup_payload_key), "payload-duplicate-key"),
    # predicate schema
    "unknown-predicate-field": (setp("extra", 1), "schema-unknown-field"),
    "unknown-method-field": (setp("method.fft", True), "schema-unknown-field"),
    "missing-sigma": (setp("claim.sigma", DELETE), "schema-missing-field"),
    "missing-deleted-trim": (setp("enclosures.deleted.trim", DELETE), "schema-missing-field"),
    "sigma-as-float": (setp("claim.sigma", 1.5), "schema-type"),
    "enclosure-not-a-ball": (setp("enclosures.mass.step_i", "about one"), "schema-type"),
    "steps-as-string": (setp("claim.steps", "12"), "schema-type"),
    "method-name": (setp("method.name", "fft-accountant"), "method-unknown"),
    "mechanism": (setp("claim.mechanism", "dp-sgd/poisson"), "claim-mechanism"),
    "statement-text": (setp("claim.statement", "TV <= target for every attack"), "claim-statement"),
    "schedule-length": (setp("method.lattice_schedule", [1, 1, 1]), "method-invalid"),
    "h-not-dividing-cap": (setp("method.h", "0.03"), "method-invalid"),
    "target-above-one": (setp("claim.target", "1.5"), "claim-invalid"),
    "too-expensive": (setp("method.h", "0.0000001"), "method-too-expensive"),
    # claims
    "target-decreased": (setp("claim.target", "0.14"), "bound-above-target"),
    "bound-decreased": (setp("bound", "0.14"), "bound-inconsistent"),
    # re-signed, schema-valid, and the mathematics does not certify
    "sigma-decreased": (setp("claim.sigma", "1.45"), "replay-bound-exceeds"),
    "steps-decreased": (setp("claim.steps", 11), "replay-bound-exceeds"),
    # TV falls as M grows, so M=13 is certified by the replay, but the recorded numbers are not its
    "steps-increased": (setp("claim.steps", 13), "enclosure-mismatch"),
    "epochs-increased": (setp("claim.epochs", 4), "replay-bound-exceeds"),
    "bound-and-O-decreased": (resigned(_bound_and_O), "replay-bound-exceeds"),
    "h-coarsened": (setp("method.h", "0.02"), "replay-bound-exceeds"),
    "eta-coarsened": (resigned(lambda p: p["method"].update(eta="0.002", k_minus=-500, k_plus=1000)),
                      "replay-bound-exceeds"),
    "cap-lowered": (setp("method.cap", "8"), "replay-bound-exceeds"),
    "tail-step-coarsened": (setp("method.tail_step", "0.4"), "replay-bound-exceeds"),
    "tail-start-lowered": (setp("method.tail_start", "2"), "replay-bound-exceeds"),
    "precision-lowered": (setp("method.prec", 20), "replay-bound-exceeds"),
    "fixed-point-lowered": (setp("method.fixed_point_bits", 24), "replay-bound-exceeds"),
    "trim-increased": (setp("method.trim", "1e-6"), "replay-bound-exceeds"),
    "truncation-lowered": (setp("method.truncation", "18"), "replay-bound-exceeds"),
    "lattice-coarsened": (setp("method.lattice_schedule", [1, 1, 2, 4]), "replay-bound-exceeds"),
    "k-minus-raised": (setp("method.k_minus", -50), "replay-bound-exceeds"),
    # enclosures edited (bound still consistent): the replay disagrees
    "enclosure-O": (resigned(_edit_O), "enclosure-mismatch"),
    "enclosure-step-ii": (setp("enclosures.mass.step_ii", "[0.9 +/- 1e-20]"), "enclosure-mismatch"),
    "enclosure-deleted-cap": (setp("enclosures.deleted.cap", "[0.001 +/- 1e-20]"), "enclosure-mismatch"),
}


def test_untouched_certificate_is_accepted(base):
    r = verify_bytes(sign_statement(statement(base), KEY), [KEY.public_key()])
    assert r.accepted and r.reason == "accepted", r
    assert fmpq(*map(int, fmpq_of(r.replayed_bound))) <= fmpq(*map(int, fmpq_of(base["bound"])))
    assert r.mismatches == []


def fmpq_of(s):
    from fractions import Fraction
    f = Fraction(s)
    return f.numerator, f.denominator


def test_mutation_suite_is_large_enough():
    assert len(MUTATIONS) >= 30 and len({r for _, r in MUTATIONS.values()}) >= 20


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_rejected_with_its_reason(base, name):
    build, reason = MUTATIONS[name]
    data = build(base)
    r = verify_bytes(data, [OTHER.public_key() if False else KEY.public_key()])
    assert not r.accepted
    assert r.reason == reason, (r.reason, r.detail)


def test_other_trusted_key_accepts_when_listed(base):
    data = json.dumps(envelope(canonical(statement(base)), OTHER)).encode()
    assert verify_bytes(data, [KEY.public_key(), OTHER.public_key()]).accepted


def test_subject_file_digest(base, tmp_path):
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights")
    st = statement(base)
    st["subject"] = [{"name": "model.bin", "digest": {"sha256": hashlib.sha256(b"weights").hexdigest()}}]
    cert, key = tmp_path / "cert.json", tmp_path / "key.pem"
    cert.write_bytes(sign_statement(st, KEY))
    key.write_bytes(public_pem(KEY))
    assert verify_file(str(cert), [str(key)], subject=str(model)).accepted
    model.write_bytes(b"other weights")
    r = verify_file(str(cert), [str(key)], subject=str(model))
    assert (r.accepted, r.reason) == (False, "subject-digest")


# ------------------------------------------------------------------------ CLI --
def run_cli(*args):
    exe = BIN / "sigmacert-verify"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "verifier"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def files(base, tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "good.json").write_bytes(sign_statement(statement(base), KEY))
    (d / "bad.json").write_bytes(MUTATIONS["sigma-decreased"][0](base))
    (d / "key.pem").write_bytes(public_pem(KEY))
    (d / "junk.pem").write_text("not a key")
    (d / "garbage.json").write_bytes(b"\x00\xff{[")
    return d


def test_cli_accept_reject_and_usage(files):
    ok = run_cli(files / "good.json", "--key", files / "key.pem")
    assert ok.returncode == 0 and ok.stdout.startswith("ACCEPT") and "replayed bound" in ok.stdout
    bad = run_cli(files / "bad.json", "--key", files / "key.pem")
    assert bad.returncode == 1 and "REJECT (replay-bound-exceeds)" in bad.stdout
    js = run_cli(files / "bad.json", "--key", files / "key.pem", "--json")
    out = json.loads(js.stdout)
    assert js.returncode == 1 and out["result"] == "REJECT" and out["reason"] == "replay-bound-exceeds"
    assert float(out["replayed_bound"]) > float(out["recorded_bound"])
    garbage = run_cli(files / "garbage.json", "--key", files / "key.pem")
    assert garbage.returncode == 1 and "envelope-not-json" in garbage.stdout
    for args in ([files / "good.json", "--key", files / "junk.pem"],
                 [files / "missing.json", "--key", files / "key.pem"],
                 [files / "good.json", "--key", files / "nokey.pem"],
                 [files / "good.json"], []):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr + r.stdout


def test_python_dash_m(files):
    r = subprocess.run([sys.executable, "-m", "verifier", str(files / "good.json"), "--key",
                        str(files / "key.pem"), "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["result"] == "ACCEPT"
