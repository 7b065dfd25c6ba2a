"""The audit report (`sigmacert report`, sigmacert.report.render): verdict, claim, numbers, plots, one file.

One real verification of a committed certificate (M=100, E=10) serves the content checks; a tiny
certificate built from the spec (M=12, E=3, one-sided) serves the command line and the
byte-for-byte determinism across two processes.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import verifier_fixtures as vf
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import verifier
from certifier.errors import NumericsUnreliable, ParameterError
from certifier.numerics import closed_form as cf
from certifier.numerics.exact import exact_tv, tv_m1
from sigmacert.cli import main
from sigmacert.report import curves, gaussian_pair_of, render
from sigmacert.report.facts import Facts
from sigmacert.report.page import page

ROOT = Path(__file__).resolve().parent.parent
CERT = ROOT / "artifacts" / "certificates" / "M100_E10.json"
KEY = ROOT / "artifacts" / "keys" / "public.pem"
PLOTS = ("tv", "tradeoff", "epsilon")


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(map(str, args)))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def m100():
    """The report of the committed M=100, E=10 certificate, and the verifier's Result behind it."""
    seen = []
    real = verifier.verify_bytes

    def recording(*a):
        seen.append(real(*a))
        return seen[-1]
    with mock.patch.object(verifier, "verify_bytes", recording):
        report = render(CERT.read_bytes(), str(KEY))
    return report, seen[0]


@pytest.fixture(scope="module")
def spec_cert(tmp_path_factory):
    """A one-sided certificate built from docs/certificate.md (M=12, E=3, sigma=1.5), with its key."""
    d = tmp_path_factory.mktemp("spec")
    key = Ed25519PrivateKey.generate()
    (d / "cert.json").write_bytes(vf.sign_statement(vf.statement(vf.predicate()), key))
    (d / "public.pem").write_bytes(vf.public_pem(key))
    return d


def test_committed_certificate_report_has_verdict_claim_numbers_and_three_plots(m100):
    r, result = m100
    assert (r.verdict, r.reason, r.accepted) == ("ACCEPT", "accepted", True)
    assert r.sha256 == hashlib.sha256(CERT.read_bytes()).hexdigest() and r.sha256 in r.html
    h = r.html
    verdict = re.search(r'<header id="verdict" class="verdict accept"><div class="word">ACCEPT</div>', h)
    assert verdict and verdict.start() < h.index('id="claim"')  # the verdict comes first
    for text in ("M = 100", "E = 10", "&sigma; = 1.426215", "&lambda; = 0.1", "random-allocation",
                 "1.426214 &lt; &sigma;<sub>&lambda;</sub> &le; 1.426215", "0.09999997311", "0.100000009",
                 "0.9428", "1.0818", "0.002278223715", "0.01906148238", "0.1516279345", "= <b>0.55</b>",
                 result.replayed_bound, result.replayed_lower, result.derived["tpr@0.001"], result.keyid,
                 "2026-11-30T07:08:39Z", "python-flint 0.9.0"):
        assert text in h, text
    for name in PLOTS:
        fig = re.search(rf'<figure id="plot-{name}"><svg [^>]*viewBox="0 0 [\d.]+ [\d.]+"(.*?)</svg>', h, re.S)
        assert fig and fig.group(1).count("<path") > 20, name
        assert r.svgs[name].startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in r.svgs[name]
    # the certified points are drawn at the certificate's numbers (matplotlib keeps labels as comments)
    assert "certified: TV $\\leq$ 0.09999997311 at $\\sigma$ = 1.426215" in r.svgs["tv"]
    assert "certified: TV $\\geq$ 0.100000009 at $\\sigma_{low}$ = 1.426214" in r.svgs["tv"]


def test_the_report_fetches_nothing(m100):
    h = m100[0].html
    assert not re.search(r"[A-Za-z][A-Za-z0-9+.-]*://", h), "a URL in the page"
    assert not re.search(r"<(script|link|img|iframe|object|embed|base)\b|@import|\bsrc=", h, re.I)
    refs = re.findall(r'href="([^"]*)"|url\(([^)]*)\)', h)
    assert refs and all((a or b).startswith("#") for a, b in refs)  # only ids inside the page
    assert "default-src 'none'" in h
    ids = re.findall(r'\bid="([^"]+)"', h)
    assert len(ids) == len(set(ids)), "duplicate ids between inlined figures"


def test_same_verdict_same_bytes(m100):
    """Given the verifier's result, the page is a pure function of the certificate: identical bytes."""
    report, result = m100
    with mock.patch.object(verifier, "verify_bytes", lambda *a: result):
        again = render(CERT.read_bytes(), str(KEY))
    assert again.html == report.html and dict(again.svgs) == dict(report.svgs)


def test_cli_json_default_output_and_identical_bytes_in_another_process(spec_cert, tmp_path):
    cert, key = tmp_path / "c.json", spec_cert / "public.pem"
    cert.write_bytes((spec_cert / "cert.json").read_bytes())
    code, out, _ = cli("report", cert, "--key", key, "--json")  # default output: c.html beside c.json
    obj = json.loads(out)
    assert code == 0 and set(obj) == {"verdict", "reason", "detail", "output", "sha256"}
    assert (obj["verdict"], obj["output"]) == ("ACCEPT", str(tmp_path / "c.html"))
    assert obj["sha256"] == hashlib.sha256(cert.read_bytes()).hexdigest()
    other = subprocess.run([sys.executable, "-m", "sigmacert", "report", str(cert), "--key", str(key),
                            "-o", str(tmp_path / "b.html"), "--quiet"], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    assert other.stdout.splitlines()[-1] == f"report: {tmp_path / 'b.html'}"
    a, b = (tmp_path / "c.html").read_bytes(), (tmp_path / "b.html").read_bytes()
    assert a == b and b.count(b"<svg") == 3
    assert b"One-sided certificate" in a and b"no certified rows (one-sided certificate)" in a


def test_tampered_signature_is_reject_exit_1_and_nothing_read(tmp_path):
    env = json.loads(CERT.read_bytes())
    sig = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
    sig[0] ^= 1
    env["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(env))
    code, out, _ = cli("report", bad, "--key", KEY, "-o", tmp_path / "bad.html")
    h = (tmp_path / "bad.html").read_text()
    assert code == 1 and out.startswith("REJECT (bad-signature)")
    assert 'class="verdict reject"><div class="word">REJECT</div>' in h and "Do not rely on it" in h
    assert "<svg" not in h and "contents were not read" in h and "1.426215" not in h


def test_signed_but_rejected_shows_the_claim_as_not_verified(tmp_path):
    """Re-signed with another key and an edited bound: the signature checks, the verifier rejects."""
    stmt = json.loads(base64.b64decode(json.loads(CERT.read_bytes())["payload"]))
    stmt["predicate"]["bound"] = "0.05"  # below 1 - O of the recorded O
    key = Ed25519PrivateKey.generate()
    r = render(vf.sign_statement(stmt, key), vf.public_pem(key))
    assert (r.verdict, r.reason) == ("REJECT", "bound-inconsistent") and not r.svgs
    assert "NOT verified" in r.html and "1.426215" in r.html and "0.05" in r.html and "<svg" not in r.html


def _facts(claim_extra: dict, accepted=True) -> Facts:
    stmt = json.loads(base64.b64decode(json.loads(CERT.read_bytes())["payload"]))
    stmt["predicate"]["claim"].update(claim_extra)
    return Facts(sha256="0" * 64, size=1, accepted=accepted, reason="accepted" if accepted else "x", detail="d",
                 keyid="k", statement=stmt)


def test_scheme_is_shown_when_present_and_defaults_to_random_allocation():
    cmp = {a: (0.5, 0.5) for a in ("0.1", "0.01", "0.001")}
    assert "<b>random-allocation</b> sampling" in page(_facts({}), {}, {}, cmp, {})
    assert "<b>shuffle</b> sampling" in page(_facts({"scheme": "shuffle"}), {}, {}, cmp, {})


def test_fixed_bins_claim_is_described_and_plotted_as_its_one_epoch_pair(monkeypatch):
    """docs/method-v2.md §3: fixed bins certify (P_M, Q_M) at sigma/sqrt(E), E = ceil(iterations/M)."""
    claim = {"scheme": "fixed-bins", "steps": 100, "epochs": 10, "iterations": 1000, "sigma": "2.1394",
             "target": "0.1", "statement": "TV(P_M, Q_M) at sigma/sqrt(E) <= target, ..."}
    assert gaussian_pair_of(claim) == (100, 1, pytest.approx(10 ** 0.5, rel=1e-15))
    assert gaussian_pair_of({**claim, "scheme": "random-allocation"}) == (100, 10, 1.0)
    assert gaussian_pair_of({**claim, "scheme": "poisson"}) is None  # no reference curves: no plots
    monkeypatch.setattr(curves, "exact_tv", lambda *a, **k: exact_tv(1, 1, 1.0))  # only the closed form here
    c = curves.tv_curves(100, 1, 2.1394, 0.1, None, 10 ** 0.5)
    # U(c) = lambda with c = (e^{E/sigma^2} - 1)/M = 4 lambda^2 (Thm 3.3, first branch), solved by hand:
    assert abs(c.closed_form_sigma - (10 / math.log1p(100 * 0.04)) ** 0.5) < 1e-12
    assert abs(c.bound[0] - 0.5 * math.sqrt(math.expm1(10 / c.sigma[0] ** 2) / 100)) < 1e-12
    h = page(_facts(claim), {}, {}, {a: (0.5, 0.5) for a in ("0.1", "0.01", "0.001")}, {})
    assert "<b>fixed-bins</b> sampling" in h and "1000 iterations" in h and "at &sigma;/&radic;E" in h


def test_certificate_text_is_escaped():
    h = page(_facts({"steps": "<img src=x onerror=alert(1)>"}, accepted=False), {}, {}, {}, {})
    assert "<img" not in h and "&lt;img src=x" in h


def test_bad_input_is_one_line_exit_2(tmp_path):
    for args in (("report", tmp_path / "missing.json", "--key", KEY),
                 ("report", CERT, "--key", ROOT / "README.md"),
                 ("report", CERT, "--key", KEY, "-o", tmp_path / "no" / "dir.html"),
                 ("report", CERT, "--key", KEY, "--subject", tmp_path / "missing")):
        code, _, err = cli(*args)
        assert code == 2 and err.count("\n") == 1 and err.startswith("sigmacert: error:"), (args, err)
    with pytest.raises(ParameterError):
        render(CERT.read_bytes(), b"not a key")


def test_a_refused_exact_tv_point_is_left_out(monkeypatch):
    calls = []

    def flaky(m, e, s, check=True):
        calls.append(s)
        if len(calls) == 2:
            raise NumericsUnreliable("refused")
        return exact_tv(m, e, s, check=check)
    monkeypatch.setattr(curves, "exact_tv", flaky)
    c = curves.tv_curves(100, 10, 1.426215, 0.1, 1.426214)
    assert c.refused == (calls[1],) and len(c.exact) == len(calls) - 1 == curves.WIDE_POINTS + 1
    assert abs(c.exact[1.426215] - 0.0999999380) < 1e-9  # Table 4 cell, the certificate's numerics


@pytest.mark.parametrize("steps, epochs, sigma", [(1, 4, 2.0), (100, 10, 1.426215)])
def test_pair_curves_meet_the_total_variation(steps, epochs, sigma):
    """delta(0) = TV and max_alpha TPR(alpha) - alpha = TV (eq. 19), for the M = 1 closed form and the density."""
    pair = curves.gaussian_pair(steps, epochs, sigma)
    tv = tv_m1(epochs, sigma) if steps == 1 else exact_tv(steps, epochs, sigma, check=False).tv
    assert abs(pair.delta(0.0) - tv) < 1e-6
    best = max(pair.tpr(a) - a for a in [i / 200 for i in range(1, 200)])
    assert 0 <= tv - best < 1e-3  # the supremum over a grid of alpha lies just below TV
    assert pair.tpr(0.001) < cf.chi2_tpr_bound(0.001, cf.c_E(steps, epochs, sigma))  # Prop. B.2 holds
