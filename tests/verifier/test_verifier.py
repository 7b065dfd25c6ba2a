"""Tests of the independent verifier: replay correctness, mutation suite, CLI."""
from __future__ import annotations

import ast
import base64
import copy
import hashlib
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flint import arb, arb_poly, ctx, fmpq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import dec  # noqa: E402
from verifier_fixtures import (  # noqa: E402
    CLAIM,
    LOWER_METHOD,
    METHOD,
    canonical,
    envelope,
    predicate,
    predicate_v2,
    public_pem,
    sign_statement,
    statement,
    statement_v2,
)
from verifier_fixtures import typed_v1 as typed  # noqa: E402

from verifier import verify_bytes, verify_file  # noqa: E402
from verifier.format.schema import typed as typed_as  # noqa: E402
from verifier.format.strict import working_prec  # noqa: E402
from verifier.replay.upper_v1 import replay  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


# ---------------------------------------------------------------- independence --
def test_verifier_imports_nothing_from_certifier():
    allowed = {"__future__", "argparse", "base64", "binascii", "typing", "dataclasses", "fractions", "hashlib",
               "faulthandler", "itertools", "json", "math", "os", "re", "resource", "stat", "statistics", "sys",
               "time", "flint", "cryptography",
               "ctypes", "glob",  # replay.arith.release: FLINT's cache and the heap's free pages back between steps
               "model_signing", "huggingface_hub"}  # verifier.release: model signing's verifier and the card reader (optional)
    files = sorted((ROOT / "verifier").rglob("*.py"))
    assert len(files) >= 20
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
OTHER = Ed25519PrivateKey.generate()


def certifier_certificate(tmp: Path):
    """A real v1 certificate from `sigmacert certify --one-sided` at a small cell (M=12, E=3, sigma=1.5)."""
    exe = BIN / "sigmacert"
    subprocess.run([str(exe), "keygen", "-o", str(tmp / "keys")], check=True, capture_output=True, timeout=60)
    subprocess.run([str(exe), "certify", "--steps", "12", "--epochs", "3", "--target", "0.15",
                    "--sigma", "1.5", "--one-sided", "--key", str(tmp / "keys" / "private.pem"), "-o",
                    str(tmp / "cert.json"), "--quiet"], check=True, capture_output=True, timeout=300)
    key = serialization.load_pem_private_key((tmp / "keys" / "private.pem").read_bytes(), None)
    data = (tmp / "cert.json").read_bytes()
    env = json.loads(data)
    pred = json.loads(base64.b64decode(env["payload"]))["predicate"]
    return pred, key, data


@pytest.fixture(scope="module", params=["spec-built", "certifier"])
def base(request, tmp_path_factory):
    """(predicate, signing key, original envelope bytes)."""
    if request.param == "spec-built":
        key = Ed25519PrivateKey.generate()
        pred = predicate()
        return pred, key, sign_statement(statement(pred), key)
    return certifier_certificate(tmp_path_factory.mktemp("real"))


Fr = Fraction


def spf(n: int) -> int:  # smallest prime factor (n >= 2)
    return next(d for d in range(2, n + 1) if n % d == 0)


def m_(p):
    return p["method"]


def coarsen_h(p):
    m = m_(p)
    h, ts, st, cap = (Fr(m[k]) for k in ("h", "tail_start", "tail_step", "cap"))
    g = math.gcd(int(ts / h), int(cap / h), int(st / h)) if ts < cap else math.gcd(int(ts / h), int(cap / h))
    assert g > 1
    m["h"] = dec(h * spf(g))


def lower_cap(p):
    m = m_(p)
    ts, st, cap = (Fr(m[k]) for k in ("tail_start", "tail_step", "cap"))
    if ts == cap:
        m["cap"] = m["tail_start"] = dec(Fr(m["h"]) * int(cap / Fr(m["h"]) / 2))
    else:
        m["cap"] = dec(ts + st * int((cap - ts) / st / 2))


def coarsen_tail_step(p):
    m = m_(p)
    ts, st, cap = (Fr(m[k]) for k in ("tail_start", "tail_step", "cap"))
    m["tail_step"] = dec(st * spf(int((cap - ts) / st)))


def lower_tail_start(p):
    m = m_(p)
    ts, st = Fr(m["tail_start"]), Fr(m["tail_step"])
    m["tail_start"] = dec(ts - st * int(ts / st / 2))


def coarsen_eta(p):
    m = m_(p)
    m.update(eta=dec(2 * Fr(m["eta"])), k_minus=m["k_minus"] // 2, k_plus=-(-m["k_plus"] // 2))


def coarsen_lattice(p):
    n = len(m_(p)["lattice_schedule"])
    m_(p)["lattice_schedule"] = [2 ** max(0, i - n + 3) for i in range(n)]


def bad_h(p):
    h = Fr(m_(p)["h"])
    unit = Fr(1, 10 ** len(m_(p)["h"].split(".")[-1])) / 10
    m_(p)["h"] = dec(h + unit)
    assert 1 != (Fr(m_(p)["cap"]) / (h + unit)).denominator * (Fr(m_(p)["tail_start"]) / (h + unit)).denominator


def edit_O(p):
    with working_prec(200):
        p["enclosures"]["O"] = (arb(p["enclosures"]["O"]) + arb("1e-9")).str(30, radius=True)


def bound_and_O(p):
    b = Fr(p["bound"]) - Fr(1, 200)
    p["bound"] = dec(b)
    p["enclosures"]["O"] = f"[{dec(1 - b + Fr(1, 1000))} +/- 1e-20]"


def setp(path, value):
    def fn(p):
        *head, last = path.split(".")
        d = p
        for k in head:
            d = d[k]
        v = value(d[last]) if callable(value) else value
        if v is DELETE:
            del d[last]
        else:
            d[last] = v
    return fn


DELETE = object()


# Each tampering: (kind, change, reason).  kind "resign": change the predicate and sign
# correctly with the right key; "statement": change the Statement, sign correctly;
# "envelope": change the signed envelope (no re-signing); "bytes": the envelope file bytes;
# "body": the payload bytes, signed correctly.
def _flip_sig(e):
    raw = bytearray(base64.b64decode(e["signatures"][0]["sig"]))
    raw[5] ^= 1
    e["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()


def _pad_bits(e):  # non-zero padding bits: decodes to the same 64 bytes, not canonical
    s, a = e["signatures"][0]["sig"], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    e["signatures"][0]["sig"] = s[:-3] + a[a.index(s[-3]) | 1] + s[-2:]


def _payload_bytes(e):
    raw = base64.b64decode(e["payload"])
    e["payload"] = base64.b64encode(raw.replace(b'"steps":12', b'"steps":13')).decode()


def _strip_padding(e):
    e["payload"] = e["payload"].rstrip("=") if e["payload"].endswith("=") else e["payload"] + "\n"


MUTATIONS = {
    # envelope and signature (nothing re-signed)
    "payload-bytes": ("envelope", _payload_bytes, "bad-signature"),
    "signature-bytes": ("envelope", _flip_sig, "bad-signature"),
    "keyid": ("envelope", lambda e: e["signatures"][0].update(keyid="0" * 64), "unknown-key"),
    "payload-type": ("envelope", lambda e: e.update(payloadType="application/json"), "payload-type"),
    "base64-no-padding": ("envelope", _strip_padding, "envelope-base64"),
    "base64-pad-bits": ("envelope", _pad_bits, "envelope-base64"),
    "base64-urlsafe": ("envelope", lambda e: e.update(payload=e["payload"].replace("+", "-").replace("/", "_") + "-"), "envelope-base64"),
    "envelope-extra-field": ("envelope", lambda e: e.update(note="x"), "envelope-fields"),
    "signature-extra-field": ("envelope", lambda e: e["signatures"][0].update(cert="x"), "envelope-fields"),
    "truncated-json": ("bytes", lambda b: b[: len(b) // 2], "envelope-not-json"),
    "envelope-duplicate-key": ("bytes", lambda b: b.replace(b'"payloadType"', b'"payloadType":"x","payloadType"', 1), "envelope-duplicate-key"),
    "too-large": ("bytes", lambda b: b + b" " * (4 * 1024 * 1024), "envelope-too-large"),
    "unknown-key-signature": ("other-key", False, "unknown-key"),
    "unknown-key-forged-keyid": ("other-key", True, "bad-signature"),
    # Statement (re-signed with the right key)
    "predicate-type": ("statement", lambda s: s.update(predicateType="https://sigmacert.dev/tv-certificate/v4"), "predicate-type"),
    "v2-type-without-v2-rows": ("statement", lambda s: s.update(predicateType="https://sigmacert.dev/tv-certificate/v2"), "schema-missing-field"),
    "statement-type": ("statement", lambda s: s.update(_type="https://in-toto.io/Statement/v0.1"), "statement-type"),
    "subject-claim-digest": ("statement", lambda s: s["subject"][0]["digest"].update(sha256="0" * 64), "subject-digest"),
    "payload-not-canonical": ("body", lambda st: json.dumps(st, indent=1).encode(), "payload-not-canonical"),
    "payload-duplicate-key": ("body", lambda st: canonical(st).replace(b'"bound":', b'"bound":"0.01","bound":', 1), "payload-duplicate-key"),
    # predicate schema
    "unknown-predicate-field": ("resign", setp("extra", 1), "schema-unknown-field"),
    "unknown-method-field": ("resign", setp("method.fft", True), "schema-unknown-field"),
    "missing-sigma": ("resign", setp("claim.sigma", DELETE), "schema-missing-field"),
    "missing-deleted-trim": ("resign", setp("enclosures.deleted.trim", DELETE), "schema-missing-field"),
    "sigma-as-float": ("resign", setp("claim.sigma", lambda v: float(v)), "schema-type"),
    "enclosure-not-a-ball": ("resign", setp("enclosures.mass.step_i", "about one"), "schema-type"),
    "steps-as-string": ("resign", setp("claim.steps", lambda v: str(v)), "schema-type"),
    "method-name": ("resign", setp("method.name", "fft-accountant"), "method-unknown"),
    "method-version": ("resign", setp("method.version", 9), "method-unknown"),
    "mechanism": ("resign", setp("claim.mechanism", "dp-sgd/poisson"), "claim-mechanism"),
    "statement-text": ("resign", setp("claim.statement", "TV <= target for every attack"), "claim-statement"),
    "schedule-length": ("resign", setp("method.lattice_schedule", lambda v: v[:-1]), "method-invalid"),
    "h-not-dividing-grid": ("resign", bad_h, "method-invalid"),
    "target-above-one": ("resign", setp("claim.target", "1.5"), "claim-invalid"),
    "too-expensive": ("resign", setp("method.h", "0.0000001"), "cost-exceeds-limit"),
    "eta-huge": ("resign", lambda p: p["method"].update(eta="7000000000", k_minus=-1, k_plus=2), "cost-exceeds-limit"),
    "every-limit-at-once": ("resign", lambda p: p["method"].update(
        h="0.0000008", tail_start="16", cap="16", prec=4096, fixed_point_bits=1024, k_minus=-5 * 10**6, k_plus=5 * 10**6), "cost-exceeds-limit"),
    "huge-exponent-decimal": ("resign", setp("method.trim", "1e-99999999"), "schema-type"),
    "huge-exponent-ball": ("resign", setp("enclosures.O", "[1e-99999999 +/- 1e-99999999]"), "schema-type"),
    "lattice-spacing-huge": ("resign", setp("method.lattice_schedule", lambda v: v[:-1] + [2**40]), "method-invalid"),
    # the claim against the recorded numbers
    "target-decreased": ("resign", setp("claim.target", lambda v: dec(Fr(v) / 2)), "bound-above-target"),
    "bound-decreased": ("resign", setp("bound", lambda v: dec(Fr(v) - Fr(1, 10**6))), "bound-inconsistent"),
    # re-signed, well-formed, and the mathematics does not certify
    "sigma-decreased": ("resign", setp("claim.sigma", lambda v: dec(Fr(v) * Fr(97, 100))), "replay-bound-exceeds"),
    "steps-decreased": ("resign", setp("claim.steps", lambda v: v - 1), "replay-bound-exceeds"),
    "epochs-increased": ("resign", setp("claim.epochs", lambda v: v + 1), "replay-bound-exceeds"),
    "bound-and-O-decreased": ("resign", bound_and_O, "replay-bound-exceeds"),
    "h-coarsened": ("resign", coarsen_h, "replay-bound-exceeds"),
    "eta-coarsened": ("resign", coarsen_eta, "replay-bound-exceeds"),
    "cap-lowered": ("resign", lower_cap, "replay-bound-exceeds"),
    "tail-step-coarsened": ("resign", coarsen_tail_step, "replay-bound-exceeds"),
    "tail-start-lowered": ("resign", lower_tail_start, "replay-bound-exceeds"),
    "precision-lowered": ("resign", setp("method.prec", 20), "replay-bound-exceeds"),
    "fixed-point-lowered": ("resign", setp("method.fixed_point_bits", 24), "replay-bound-exceeds"),
    "trim-increased": ("resign", setp("method.trim", "0.000001"), "replay-bound-exceeds"),
    "truncation-lowered": ("resign", lambda p: p["method"].update(truncation=dec(Fr(p["claim"]["steps"]) * 3 / 2)), "replay-bound-exceeds"),
    "lattice-coarsened": ("resign", coarsen_lattice, "replay-bound-exceeds"),
    "k-minus-raised": ("resign", lambda p: p["method"].update(k_minus=-int(Fr(1, 20) / Fr(p["method"]["eta"]))), "replay-bound-exceeds"),
    # TV falls as M grows: the replay certifies M+1, but the recorded numbers are not its own
    "steps-increased": ("resign", setp("claim.steps", lambda v: v + 1), "enclosure-mismatch"),
    # enclosures edited (the bound still consistent with O): the replay disagrees
    "enclosure-O": ("resign", edit_O, "enclosure-mismatch"),
    "enclosure-step-ii": ("resign", setp("enclosures.mass.step_ii", "[0.9 +/- 1e-20]"), "enclosure-mismatch"),
    "enclosure-deleted-cap": ("resign", setp("enclosures.deleted.cap", "[0.001 +/- 1e-20]"), "enclosure-mismatch"),
    # vacuous or impossible enclosures (certificate.md §3: radius <= 2^-40, a point in [0, 1])
    "enclosure-O-vacuous": ("resign", setp("enclosures.O", "[1000 +/- 999.09999]"), "enclosure-too-wide"),
    "enclosure-mass-vacuous": ("resign", setp("enclosures.mass.step_i", "[0 +/- 1e9]"), "enclosure-too-wide"),
    "enclosure-radius-2^-39": ("resign", setp("enclosures.deleted.trim", "[0 +/- 1.9e-12]"), "enclosure-too-wide"),
    "enclosure-O-above-one": ("resign", setp("enclosures.O", "[1.0001 +/- 1e-30]"), "enclosure-out-of-range"),
    "enclosure-deleted-negative": ("resign", setp("enclosures.deleted.fixed_point", "[-0.5 +/- 1e-30]"), "enclosure-out-of-range"),
}


def tamper(base, name) -> bytes:
    pred, key, data = base
    kind, change, _ = MUTATIONS[name]
    if kind == "bytes":
        return change(data)
    if kind == "envelope":
        env = json.loads(data)
        change(env)
        return json.dumps(env).encode()
    if kind == "other-key":
        env = envelope(canonical(statement(pred)), OTHER)
        if change:
            env["signatures"][0]["keyid"] = json.loads(data)["signatures"][0]["keyid"]
        return json.dumps(env).encode()
    p = copy.deepcopy(pred)
    if kind == "resign":
        change(p)
    st = statement(p)
    if kind == "statement":
        change(st)
    body = change(st) if kind == "body" else canonical(st)
    return json.dumps(envelope(body, key)).encode()


def test_untouched_certificate_is_accepted(base):
    pred, key, data = base
    for blob in (data, sign_statement(statement(pred), key)):
        r = verify_bytes(blob, [key.public_key()])
        assert r.accepted and r.reason == "accepted", r
        assert Fr(r.replayed_bound) <= Fr(pred["bound"]) <= Fr(pred["claim"]["target"])
        assert r.mismatches == []


def test_mutation_suite_is_large_enough():
    assert len(MUTATIONS) >= 30 and len({r for *_, r in MUTATIONS.values()}) >= 20


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_rejected_with_its_reason(base, name):
    r = verify_bytes(tamper(base, name), [base[1].public_key()])
    assert not r.accepted
    assert r.reason == MUTATIONS[name][2], (r.reason, r.detail)


def test_other_trusted_key_accepts_when_listed(base):
    data = json.dumps(envelope(canonical(statement(base[0])), OTHER)).encode()
    assert verify_bytes(data, [base[1].public_key(), OTHER.public_key()]).accepted


def test_subject_file_digest(base, tmp_path):
    pred, key, _ = base
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights")
    st = statement(pred)
    st["subject"] = [{"name": "model.bin", "digest": {"sha256": hashlib.sha256(b"weights").hexdigest()}}]
    cert, pem = tmp_path / "cert.json", tmp_path / "key.pem"
    cert.write_bytes(sign_statement(st, key))
    pem.write_bytes(public_pem(key))
    assert verify_file(str(cert), [str(pem)], subject=str(model)).accepted
    model.write_bytes(b"other weights")
    r = verify_file(str(cert), [str(pem)], subject=str(model))
    assert (r.accepted, r.reason) == (False, "subject-digest")


# ------------------------------------------------------------------------ CLI --
def run_cli(*args):
    exe = BIN / "sigmacert-verify"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "verifier"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    key = Ed25519PrivateKey.generate()
    pred = predicate()
    base = (pred, key, sign_statement(statement(pred), key))
    (d / "good.json").write_bytes(base[2])
    (d / "bad.json").write_bytes(tamper(base, "sigma-decreased"))
    (d / "key.pem").write_bytes(public_pem(key))
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


# ------------------------------------------------------------- committed artifacts --
@pytest.mark.parametrize("cell", ["M100_E10", "M100_E20", "M100_E40"])
def test_committed_table4_certificates_verify(cell):
    """The three fast cells of artifacts/certificates/ (all nine: docs/verifier.md)."""
    r = verify_file(str(ROOT / "artifacts" / "certificates" / f"{cell}.json"),
                    [str(ROOT / "artifacts" / "keys" / "public.pem")])
    assert r.accepted, (r.reason, r.detail)
    assert Fr(r.replayed_bound) <= Fr(r.recorded_bound) <= Fr("0.1")



# ============================================== format v2 (docs/two-sided.md) ==
from verifier.core import round_up  # noqa: E402
from verifier.format.v2 import SCHEMA_V2  # noqa: E402
from verifier.replay.lower_v1 import deltas, replay_lower  # noqa: E402
from verifier.replay.slack import upper_end as _upper  # noqa: E402


def lower_literal(M, E, sigma, h, cap, eta, bmin, bmax):
    """§1 (a)-(e) literally in arb balls with the spec's formulas, lattice schedule all ones
    (so Q_S = q p^{M-1}), no fixed point, no trimming; buckets from the ball midpoints."""
    old, ctx.prec = ctx.prec, 150
    try:
        s, h = arb(sigma), fmpq(*h)
        Phi = lambda x: (-x / arb(2).sqrt()).erfc() / 2
        F0 = lambda y: arb(0) if y == 0 else Phi(s * arb(y).log() + 1 / (2 * s))
        F1 = lambda y: arb(0) if y == 0 else Phi(s * arb(y).log() - 1 / (2 * s))
        K = int(cap / h)
        p = [F0((k + 1) * h) - F0(k * h) for k in range(K)] + [1 - F0(K * h)]
        q = [F1((k + 1) * h) - F1(k * h) for k in range(K)] + [1 - F1(K * h)]
        PS = (arb_poly(p) ** M).coeffs()
        QS = (arb_poly(q) * arb_poly(p) ** (M - 1)).coeffs()
        u, w = [arb(0)] * (bmax - bmin + 1), [arb(0)] * (bmax - bmin + 1)
        for ps, qs in zip(PS, QS):
            b = math.floor(math.log(float(qs.mid()) / float(ps.mid())) / float(fmpq(*eta)))
            b = min(max(b, bmin), bmax) - bmin
            u[b] += ps
            w[b] += qs
        U, W = (arb_poly(u) ** E).coeffs(), (arb_poly(w) ** E).coeffs()
        return sum((max(wk - uk, arb(0)) for uk, wk in zip(U, W)), arb(0))
    finally:
        ctx.prec = old


def lower_method(**kw):
    return typed_as(dict(LOWER_METHOD, **kw), SCHEMA_V2["lower"]["method"], "lm")


def test_lower_replay_matches_literal_ball_arithmetic():
    ref = lower_literal(3, 2, "1.2", (1, 20), 5, (1, 100), -300, 300)
    got = replay_lower(3, 2, fmpq(6, 5), lower_method(h="0.05", cap="5", eta="0.01", b_min=-300,
                                                        b_max=300, lattice_schedule=[1, 1], trim="0"))
    with working_prec(200):
        assert ref.rad() < 1e-25
        gap = ref - arb(got.bound)  # ours is a lower bound; floors and the deficit cost < 1e-18
        assert gap > 0 and gap < 1e-18, (ref, float(got.bound))


def test_lower_bound_is_below_the_upper_bound_at_every_schedule():
    """Soundness against the independent upper side: lower(sigma) <= TV(sigma) <= upper(sigma)."""
    up = replay(*typed(dict(CLAIM, sigma="1.45"), METHOD).values()).bound
    for sched in ([1, 1, 1, 1], [1, 1, 2, 2], [1, 2, 4, 8]):
        lo = replay_lower(12, 3, fmpq(29, 20), lower_method(lattice_schedule=sched)).bound
        assert up - fmpq(1, 100) < lo < up, (sched, float(lo), float(up))


def test_deltas_against_tv_and_monotone():
    """delta(0) of both directions is the upper bound 1 - O on TV; both fall as epsilon grows."""
    r = replay(*typed(CLAIM, METHOD).values())
    with working_prec(200):
        d0 = deltas(r.b, r.F, fmpq(1, 1000), fmpq(0))
        assert all(abs(d - (1 - r.O)) < 1e-25 for d in d0)
        d1 = deltas(r.b, r.F, fmpq(1, 1000), fmpq(1, 2))
        assert d1[0] < d0[0] and d1[1] < d0[1]


def certifier_v2_certificate(tmp: Path):
    """A real v2 certificate from `sigmacert certify --two-sided` (M=12, E=3, target 0.15,
    the exact sigma found by the certifier)."""
    exe = BIN / "sigmacert"
    subprocess.run([str(exe), "keygen", "-o", str(tmp / "keys")], check=True, capture_output=True, timeout=60)
    subprocess.run([str(exe), "certify", "--steps", "12", "--epochs", "3", "--target", "0.15", "--two-sided",
                    "--key", str(tmp / "keys" / "private.pem"), "-o", str(tmp / "cert.json"), "--quiet"],
                   check=True, capture_output=True, timeout=300)
    key = serialization.load_pem_private_key((tmp / "keys" / "private.pem").read_bytes(), None)
    data = (tmp / "cert.json").read_bytes()
    st = json.loads(base64.b64decode(json.loads(data)["payload"]))
    assert st["predicateType"] == "https://sigmacert.dev/tv-certificate/v2"
    return st["predicate"], key, data


@pytest.fixture(scope="module", params=["spec-built", "certifier"])
def base_v2(request, tmp_path_factory):
    if request.param == "certifier":
        return certifier_v2_certificate(tmp_path_factory.mktemp("real-v2"))
    key = Ed25519PrivateKey.generate()
    pred = predicate_v2()
    return pred, key, sign_statement(statement_v2(pred), key)


def lw(p):
    return p["lower"]


def raise_tv_lower(by):
    def fn(p):
        lw(p)["tv_lower"] = dec(Fr(lw(p)["tv_lower"]) + by)
        with working_prec(200):
            lw(p)["enclosures"]["W_A"] = (arb(lw(p)["enclosures"]["W_A"]) + arb(by.numerator) / by.denominator).str(30, radius=True)
    return fn


def bump(d, k, by):
    with working_prec(200):
        d[k] = (arb(d[k]) + arb(by.numerator) / by.denominator).str(30, radius=True)


def eps_row(d):
    return lambda p: p["privacy"]["epsilon_at_delta"][d]


def rename(path, old, new):
    def fn(p):
        d = p
        for k in path.split("."):
            d = d[k]
        d[new] = d.pop(old)
    return fn


MUTATIONS_V2 = {
    # schema of the v2 rows
    "unknown-lower-field": (setp("lower.note", "x"), "schema-unknown-field"),
    "unknown-lower-method-field": (setp("lower.method.fft", True), "schema-unknown-field"),
    "unknown-privacy-field": (setp("privacy.note", "x"), "schema-unknown-field"),
    "unknown-privacy-row-field": (lambda p: eps_row("1e-05")(p).update(note="x"), "schema-unknown-field"),
    "unknown-tpr-row-field": (lambda p: p["tpr"]["0.01"].update(note="x"), "schema-unknown-field"),
    "missing-tv-lower": (setp("lower.tv_lower", DELETE), "schema-missing-field"),
    "missing-privacy": (setp("privacy", DELETE), "schema-missing-field"),
    "missing-tpr-row": (lambda p: p["tpr"].pop("0.01"), "schema-missing-row"),
    "missing-privacy-row": (lambda p: p["privacy"]["epsilon_at_delta"].pop("1e-06"), "schema-missing-row"),
    "tpr-row-as-float": (lambda p: p["tpr"]["0.1"].update(tpr=0.2), "schema-type"),
    "delta-grid-edited": (rename("privacy.epsilon_at_delta", "1e-05", "1e-04"), "privacy-grid"),
    "alpha-grid-edited": (rename("tpr", "0.001", "0.0001"), "tpr-grid"),
    "epsilon-grid-coarsened": (setp("privacy.epsilon_grid", "0.001"), "privacy-grid"),
    "lower-method-name": (setp("lower.method.name", "sampling-lower"), "lower-method-unknown"),
    "lower-schedule-length": (setp("lower.method.lattice_schedule", [1, 2]), "lower-method-invalid"),
    "lower-cap-not-multiple": (lambda p: lw(p)["method"].update(cap=dec(Fr(lw(p)["method"]["cap"]) + Fr(lw(p)["method"]["h"]) / 2)), "lower-method-invalid"),
    "lower-too-expensive": (setp("lower.method.h", "0.0000001"), "cost-exceeds-limit"),
    # the lower side
    "sigma-low-at-sigma": (lambda p: lw(p).update(sigma_low=p["claim"]["sigma"]), "lower-sigma-not-below"),
    # sigma - 1e-9 is above the exact sigma_lambda: TV there <= the upper bound + 1e-9 |dTV/dsigma| < target
    "sigma-low-raised": (lambda p: lw(p).update(sigma_low=dec(Fr(p["claim"]["sigma"]) - Fr(1, 10**9))), "lower-replay-not-above-target"),
    "lower-target-edited": (setp("lower.target", "0.14"), "lower-target"),
    "tv-lower-not-above-target": (lambda p: lw(p).update(tv_lower=p["claim"]["target"]), "lower-recorded-not-above-target"),
    "tv-lower-raised-alone": (setp("lower.tv_lower", lambda v: dec(Fr(v) + Fr(1, 10**6))), "lower-inconsistent"),
    "tv-lower-raised": (raise_tv_lower(Fr(1, 10**6)), "lower-replay-below-recorded"),
    # the recorded enclosures of the lower side against our replay
    "W_A-edited": (lambda p: bump(lw(p)["enclosures"], "W_A", Fr(1, 10**9)), "lower-enclosure-mismatch"),
    "U_A-edited": (lambda p: bump(lw(p)["enclosures"], "U_A", -Fr(1, 10**9)), "lower-enclosure-mismatch"),
    "deleted-p-edited": (lambda p: bump(lw(p)["enclosures"], "deleted_p", Fr(1, 10**9)), ("lower-enclosure-mismatch", "lower-inconsistent")),
    "W_A-vacuous": (lambda p: lw(p)["enclosures"].update(W_A="[0.5 +/- 0.5]"), "enclosure-too-wide"),
    "delta-vacuous": (lambda p: eps_row("1e-06")(p).update(delta_qp="[0 +/- 1e-6]"), "enclosure-too-wide"),
    "lower-h-coarsened": (lambda p: lw(p)["method"].update(h=dec(2 * Fr(lw(p)["method"]["h"])), cap=dec(
        2 * Fr(lw(p)["method"]["h"]) * (Fr(lw(p)["method"]["cap"]) / Fr(lw(p)["method"]["h"]) // 2))), ("lower-replay-below-recorded", "lower-replay-not-above-target")),
    "lower-eta-coarsened": (lambda p: lw(p)["method"].update(eta=dec(2 * Fr(lw(p)["method"]["eta"]))), ("lower-replay-below-recorded", "lower-replay-not-above-target")),
    "lower-schedule-coarsened": (setp("lower.method.lattice_schedule", [1, 2, 4, 8]), ("lower-replay-below-recorded", "lower-replay-not-above-target")),
    "lower-trim-increased": (setp("lower.method.trim", "0.000001"), ("lower-replay-below-recorded", "lower-replay-not-above-target")),
    "lower-fixed-point-lowered": (setp("lower.method.fixed_point_bits", 20), "lower-replay-not-above-target"),
    # privacy and TPR rows
    "epsilon-lowered": (lambda p: eps_row("1e-05")(p).update(epsilon=dec(Fr(eps_row("1e-05")(p)["epsilon"]) - Fr(1, 100))), "privacy-epsilon-too-small"),
    "epsilon-lowered-one-step": (lambda p: eps_row("1e-06")(p).update(epsilon=dec(Fr(eps_row("1e-06")(p)["epsilon"]) - Fr(1, 10**4))), "privacy-epsilon-too-small"),
    "delta-above-delta": (lambda p: eps_row("1e-05")(p).update(delta_qp="[0.00002 +/- 1e-30]"), "privacy-inconsistent"),
    "delta-edited": (lambda p: eps_row("1e-05")(p).update(delta_pq="[1e-6 +/- 1e-30]"), "privacy-mismatch"),
    "tpr-lowered": (lambda p: p["tpr"]["0.001"].update(tpr=dec(Fr(p["tpr"]["0.001"]["tpr"]) * Fr(9, 10))), "tpr-too-small"),
    "tpr-epsilon-edited": (lambda p: p["tpr"]["0.1"].update(epsilon="3"), "tpr-too-small"),
}


def tamper_v2(base, name) -> bytes:
    pred, key, _ = base
    p = copy.deepcopy(pred)
    MUTATIONS_V2[name][0](p)
    return sign_statement(statement_v2(p), key)


@pytest.mark.parametrize("edit", [{"W_A": Fr(1, 10**9), "U_A": Fr(1, 10**9)}, {"W_A": -Fr(1, 10**13)}],
                         ids=["tied-bucket", "less-than-the-replay"])
def test_lower_v1_map_is_free_so_less_than_the_replay_is_accepted(base_v2, edit):
    """Lower method v1 leaves the bucket map free (float logs at bucket edges): a bucket with
    W_k = U_k may be counted in A or not, and sums near an edge may land on either side, so a
    correct certifier may record a smaller W_A - U_A than this replay (seen at M=50, E=100:
    0.100000000259 against 0.100000000396).  Recording less than the replay proves is accepted;
    recording more is not (the W_A-edited and U_A-edited mutations)."""
    pred, key, _ = base_v2
    p = copy.deepcopy(pred)
    for k, d in edit.items():
        bump(lw(p)["enclosures"], k, d)
    r = verify_bytes(sign_statement(statement_v2(p), key), [key.public_key()])
    assert r.accepted, (r.reason, r.detail)


def test_untouched_v2_certificate_is_accepted(base_v2):
    pred, key, data = base_v2
    r = verify_bytes(data, [key.public_key()])
    assert r.accepted and r.reason == "accepted", r
    assert r.mismatches == []
    assert Fr(pred["claim"]["target"]) < Fr(pred["lower"]["tv_lower"]) <= Fr(r.replayed_lower)
    for a, row in pred["tpr"].items():
        assert Fr(r.derived[f"tpr@{a}"]) <= Fr(row["tpr"]) + Fr(1, 10**15)  # ours rounded up to 13 digits
    assert set(r.replay_seconds["lower"]) >= {"epoch", "buckets", "total"}


def test_v2_suite_is_large_enough():
    assert len(MUTATIONS_V2) >= 30 and len({r for _, r in MUTATIONS_V2.values() if isinstance(r, str)}) >= 15


@pytest.mark.parametrize("name", sorted(MUTATIONS_V2))
def test_v2_mutation_is_rejected_with_its_reason(base_v2, name):
    r = verify_bytes(tamper_v2(base_v2, name), [base_v2[1].public_key()])
    assert not r.accepted
    want = MUTATIONS_V2[name][1]
    assert r.reason in (want if isinstance(want, tuple) else (want,)), (r.reason, r.detail)


def test_v2_tv_lower_above_the_replay_by_any_amount_is_rejected(base_v2):
    """No slack: a tv_lower 1e-20 above our exact lower bound (the better of our two bucket maps) is not
    proven, so it is rejected."""
    pred, key, _ = base_v2
    p = copy.deepcopy(pred)
    c, lo = typed(p["claim"], p["method"])["claim"], p["lower"]
    lr = replay_lower(c["steps"], c["epochs"], Fr_q(lo["sigma_low"]), lower_method(**lo["method"]))
    mine = max(lr.bound, lr.other().bound)  # the verifier tries both of its bucket maps
    above = Fr(round_up(mine, 20))  # at most 1e-20 above
    assert Fr(int(mine.p), int(mine.q)) < above
    raise_tv_lower(above - Fr(lo["tv_lower"]))(p)
    r = verify_bytes(sign_statement(statement_v2(p), key), [key.public_key()])
    assert r.reason == "lower-replay-below-recorded", (r.reason, r.detail)


def test_v2_non_minimal_epsilon_is_rejected(base_v2):
    """certificate.md §6.2: epsilon is the smallest grid point; one 0.1 above it (with its own,
    correct delta balls) is still certified but not minimal."""
    pred, key, _ = base_v2
    p = copy.deepcopy(pred)
    row = p["privacy"]["epsilon_at_delta"]["1e-05"]
    row["epsilon"] = dec(Fr(row["epsilon"]) + Fr(1, 10))
    with working_prec(200):
        r0 = replay(*typed(p["claim"], p["method"]).values())
        dqp, dpq = deltas(r0.b, r0.F, Fr_q(p["method"]["eta"]), Fr_q(row["epsilon"]))
    row["delta_qp"], row["delta_pq"] = dqp.str(30, radius=True), dpq.str(30, radius=True)
    r = verify_bytes(sign_statement(statement_v2(p), key), [key.public_key()])
    assert r.reason == "privacy-epsilon-not-minimal", (r.reason, r.detail)


def Fr_q(s: str) -> fmpq:
    f = Fr(s)
    return fmpq(f.numerator, f.denominator)


def test_v2_cli_json(base_v2, tmp_path):
    (tmp_path / "c.json").write_bytes(base_v2[2])
    (tmp_path / "k.pem").write_bytes(public_pem(base_v2[1]))
    r = run_cli(tmp_path / "c.json", "--key", tmp_path / "k.pem", "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["result"] == "ACCEPT" and out["replayed_lower"] and out["derived"]
    (tmp_path / "bad.json").write_bytes(tamper_v2(base_v2, "tpr-lowered"))
    r = run_cli(tmp_path / "bad.json", "--key", tmp_path / "k.pem")
    assert r.returncode == 1 and "REJECT (tpr-too-small)" in r.stdout and "Traceback" not in r.stderr


def test_v2_negative_tpr_epsilon(base_v2):
    """The minimising epsilon = ln(gamma) may be negative (docs/certificate.md §6.3)."""
    pred, key, _ = base_v2
    p = copy.deepcopy(pred)
    r0 = replay(*typed(p["claim"], p["method"]).values())
    with working_prec(200):
        eps = -Fr_q("0.5")
        b = arb(eps).exp() * arb(Fr_q("0.1")) + deltas(r0.b, r0.F, Fr_q(p["method"]["eta"]), eps)[0]
        p["tpr"]["0.1"] = {"tpr": round_up(_upper(b), 10), "epsilon": "-0.5"}
    assert verify_bytes(sign_statement(statement_v2(p), key), [key.public_key()]).accepted
    p["tpr"]["0.1"]["tpr"] = dec(Fr(p["tpr"]["0.1"]["tpr"]) - Fr(1, 10**6))
    r = verify_bytes(sign_statement(statement_v2(p), key), [key.public_key()])
    assert r.reason == "tpr-too-small", r.detail


def test_lower_replay_with_a_lattice_schedule_matches_brute_force():
    """M = 3, lattice_schedule [1, 2]: the map is T(k1, k2, k3) = floor(k1/2) + floor((k2 + k3)/2)
    (block of bit 0 = coordinate 1, block of bit 1 = coordinates 2, 3). Enumerate all
    cell triples under P and under Q (shifted coordinate uniform among the three)."""
    old, ctx.prec = ctx.prec, 150
    try:
        s, h, K, E, eta = arb("1.2"), fmpq(1, 4), 20, 2, fmpq(1, 100)
        Phi = lambda x: (-x / arb(2).sqrt()).erfc() / 2
        F0 = lambda y: arb(0) if y == 0 else Phi(s * arb(y).log() + 1 / (2 * s))
        F1 = lambda y: arb(0) if y == 0 else Phi(s * arb(y).log() - 1 / (2 * s))
        p = [F0((k + 1) * h) - F0(k * h) for k in range(K)] + [1 - F0(K * h)]
        q = [F1((k + 1) * h) - F1(k * h) for k in range(K)] + [1 - F1(K * h)]
        PS, QS = {}, {}
        for a in range(K + 1):
            for b in range(K + 1):
                for c in range(K + 1):
                    t = a // 2 + (b + c) // 2
                    PS[t] = PS.get(t, arb(0)) + p[a] * p[b] * p[c]
                    QS[t] = QS.get(t, arb(0)) + (q[a] * p[b] * p[c] + p[a] * q[b] * p[c] + p[a] * p[b] * q[c]) / 3
        u, w = [arb(0)] * 601, [arb(0)] * 601
        for t in PS:
            beta = min(max(math.floor(math.log(float(QS[t].mid()) / float(PS[t].mid())) / float(eta)), -300), 300)
            u[beta + 300] += PS[t]
            w[beta + 300] += QS[t]
        U, W = (arb_poly(u) ** E).coeffs(), (arb_poly(w) ** E).coeffs()
        ref = sum((max(wk - uk, arb(0)) for uk, wk in zip(U, W)), arb(0))
        got = replay_lower(3, E, fmpq(6, 5), lower_method(h="0.25", cap="5", eta="0.01", b_min=-300,
                                                            b_max=300, lattice_schedule=[1, 2], trim="0"))
        gap = ref - arb(got.bound)
        assert ref.rad() < 1e-25 and gap > 0 and gap < 1e-18, (ref, float(got.bound))
    finally:
        ctx.prec = old
