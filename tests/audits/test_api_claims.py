"""sigmacert.audit at the claimed sigma: verdicts, the certified interval against the numerics and closed forms."""
import json
import math
from decimal import Decimal
from statistics import NormalDist

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import sigmacert
from certifier.certificate.envelope import sign_certificate
from certifier.errors import ParameterError
from verifier.core import verify_bytes

CELL = dict(steps=100, epochs=10, sigma="1.426215")
KEY = Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def holds():
    return sigmacert.audit(**CELL, epsilon="0.95", delta="1e-5", key=KEY)


@pytest.fixture(scope="module")
def false():
    return sigmacert.audit(**CELL, epsilon="0.93", delta="1e-5", key=KEY)


def test_certificates_verify_and_forgeries_are_refused(holds, false):
    """Both signed audit certificates verify (format v6); a re-signed forged verdict or interval end is refused."""
    for a in (holds, false):
        res = verify_bytes(a.envelope, [KEY.public_key()])
        assert res.accepted, res.detail
    forged = [("audit", "verdict", "FALSE", holds), ("audit", "verdict", "HOLDS", false),
              ("interval", "upper", "0.9427", holds), ("interval", "lower", "0.9428", false)]
    for where, key, value, a in forged:
        pred = json.loads(json.dumps(dict(a.predicate)))
        (pred["audit"] if where == "audit" else pred["audit"]["interval"])[key] = value
        res = verify_bytes(sign_certificate(pred, KEY), [KEY.public_key()])
        assert not res.accepted and res.reason.startswith("audit-"), (key, value, res.reason)


def test_done_when_claims(holds, false):
    """(0.95, 1e-5) HOLDS and (0.93, 1e-5) is FALSE at (100, 10, 1.426215); each interval has relative width
    <= 1e-3 and contains the numerical eps(1e-5) (0.942732, two routes agree to 1e-9)."""
    num = sigmacert.exact_privacy(100, 10, "1.426215", delta=1e-5).epsilon[1e-5].value
    assert holds.verdict == "HOLDS" and false.verdict == "FALSE"
    for a in (holds, false):
        lo, hi = a.interval
        assert float(lo) < num < float(hi)
        assert a.relative_width <= 1e-3
        assert a.quantity == "epsilon"
    assert float(holds.predicate["upper"]["value"]) <= 1e-5 < float(false.predicate["lower"]["value"])
    # FALSE names the least sigma meeting the claim: above the claimed one, and the claim holds there numerically
    assert false.fix_sigma > false.sigma
    at_fix = sigmacert.exact_privacy(100, 10, false.fix_sigma, delta=1e-5).epsilon[1e-5].value
    below = sigmacert.exact_privacy(100, 10, float(false.fix_sigma) - 1e-5, delta=1e-5).epsilon[1e-5].value
    assert at_fix <= 0.93 < below
    assert holds.fix_sigma is None


def test_result_is_frozen(holds):
    with pytest.raises(AttributeError):
        holds.verdict = "FALSE"
    with pytest.raises(TypeError):
        holds.predicate["audit"] = {}


def _gaussian_eps(mu: float, delta: float) -> float:
    """eps(delta) of the Gaussian shift mu: the root of Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) = delta."""
    phi = NormalDist().cdf
    d = lambda e: phi(-e / mu + mu / 2) - math.exp(e) * phi(-e / mu - mu / 2)  # noqa: E731
    lo, hi = 0.0, 50.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if d(mid) > delta else (lo, mid)
    return hi


def test_m1_closed_form():
    """M = 1: the pair is the Gaussian shift mu = sqrt(E)/sigma; the interval contains its closed-form eps."""
    a = sigmacert.audit(1, 10, "3", epsilon="4.6", delta="1e-5")
    eps = _gaussian_eps(math.sqrt(10) / 3, 1e-5)
    lo, hi = map(float, a.interval)
    assert lo < eps < hi and a.relative_width <= 1e-3
    assert a.verdict == ("FALSE" if eps > 4.6 else "HOLDS")


def test_tv_and_tpr_intervals():
    """TV and TPR claims: the interval is [lower value, upper value] at sigma, around the numerical value."""
    tv = sigmacert.audit(**CELL, target="0.1")
    num = sigmacert.exact_tv(100, 10, "1.426215")
    assert tv.verdict == "HOLDS" and float(tv.interval[0]) <= num.tv <= float(tv.interval[1])
    assert sigmacert.audit(**CELL, target="0.0999").verdict == "FALSE"
    t = sigmacert.audit(**CELL, fpr="0.001", tpr="0.0022")
    val = sigmacert.exact_privacy(100, 10, "1.426215", fpr=0.001).tpr[0.001].value
    assert t.verdict == "FALSE" and float(t.interval[0]) <= val <= float(t.interval[1])
    assert t.relative_width <= 1e-3


def test_fixed_bins_claim():
    """Fixed bins: the one-epoch pair at sigma/sqrt(E); a claim far above the truth HOLDS."""
    num = sigmacert.exact_privacy(100, 10, "4.5", delta=1e-5, scheme="fixed-bins").epsilon[1e-5].value
    a = sigmacert.audit(100, 10, "4.5", epsilon=str(round(2 * num, 3)), delta="1e-5", scheme="fixed-bins")
    assert a.verdict == "HOLDS" and float(a.interval[0]) < num < float(a.interval[1])


@pytest.mark.parametrize("kw, msg", [
    (dict(epsilon="1"), "epsilon needs delta"),
    (dict(target="0.1", epsilon="1", delta="1e-5"), "exactly one target"),
    (dict(target="1.5"), "target"),
    (dict(epsilon="1", delta="1e-5", width="0"), "width"),
])
def test_bad_input(kw, msg):
    with pytest.raises(ParameterError, match=msg.split()[0]):
        sigmacert.audit(**CELL, **kw)


def test_missing_sigma():
    with pytest.raises(ParameterError, match="sigma"):
        sigmacert.audit(100, 10, None, target="0.1")


def test_report_shows_verdict_first(false):
    """The report of an audit: the verifier accepts it, the verdict comes before the claim in words, the interval
    and the plot of the profile are on the page."""
    from sigmacert.report import render
    r = render(false.envelope, KEY.public_key())
    assert r.accepted and set(r.svgs) == {"profile-audit"}
    body = r.html[r.html.index("<body>"):]
    assert body.index(">FALSE<") < body.index("The claim: the run is (0.93, 0.00001)-differentially private")
    lo, hi = false.interval
    assert f"[{lo}, {hi}]" in body and str(false.fix_sigma) in body


def test_too_close_and_claims_just_beside_the_truth():
    """A claim at the numerical eps is TOO CLOSE (inside the interval, the certificate verifies); a claim 2e-4
    (relative) above or below the truth is aimed at by its side and decided, with a narrower interval."""
    num = sigmacert.exact_privacy(**CELL, delta=1e-5).epsilon[1e-5].value
    at = sigmacert.audit(**CELL, epsilon=f"{num:.5f}", delta="1e-5", key=KEY)
    assert at.verdict == "TOO CLOSE" and at.interval[0] < Decimal(f"{num:.5f}") < at.interval[1]
    assert verify_bytes(at.envelope, [KEY.public_key()]).accepted
    above = sigmacert.audit(**CELL, epsilon=f"{num * 1.0002:.6f}", delta="1e-5")
    below = sigmacert.audit(**CELL, epsilon=f"{num * 0.9998:.6f}", delta="1e-5")
    assert above.verdict == "HOLDS" and below.verdict == "FALSE"
    assert above.interval[1] <= Decimal(f"{num * 1.0002:.6f}") and below.interval[0] >= Decimal(f"{num * 0.9998:.6f}")


def test_fix_certifies_the_least_sigma():
    """M = 1 (closed forms, instant): a FALSE claim with fix=True gets a two-sided certificate at the least sigma
    meeting it; that certificate verifies and proves one resolution step less misses it."""
    a = sigmacert.audit(1, 10, "3", epsilon="4", delta="1e-5", key=KEY, fix=True)
    assert a.verdict == "FALSE" and a.fix_certificate is not None
    c = a.fix_certificate
    assert c.sigma == a.fix_sigma and c.bound <= Decimal("0.00001") and c.sigma_low is not None
    assert verify_bytes(c.envelope, [KEY.public_key()]).accepted
    with pytest.raises(ParameterError, match="key"):
        sigmacert.audit(1, 10, "3", epsilon="4", delta="1e-5", fix=True)


@pytest.mark.parametrize("kw, plot", [(dict(target="0.1"), "profile-audit"),
                                      (dict(fpr="0.001", tpr="0.0025"), "tradeoff-audit")])
def test_report_of_tv_and_tpr_audits(kw, plot):
    from sigmacert.report import render
    a = sigmacert.audit(**CELL, key=KEY, **kw)
    r = render(a.envelope, KEY.public_key())
    assert r.accepted and set(r.svgs) == {plot}
    lo, hi = a.interval
    assert f"[{lo}, {hi}]" in r.html and f">{a.verdict}<" in r.html


def test_fixed_bins_tv_and_a_claim_far_above_the_truth_verify():
    """A TV claim in fixed bins is audited on the one-epoch pair at sigma/sqrt(E) (its interval holds the exact TV of
    that pair); a dp claim far above the truth records the lower value 0 (its bound is below 0) and verifies."""
    fb = sigmacert.audit(100, 10, "4.5", target="0.1", scheme="fixed-bins", key=KEY)
    num = sigmacert.exact_tv(100, 10, "4.5", scheme="fixed-bins").tv
    assert fb.verdict == "HOLDS" and float(fb.interval[0]) <= num <= float(fb.interval[1])
    far = sigmacert.audit(**CELL, epsilon="3", delta="1e-5", key=KEY)
    assert far.verdict == "HOLDS" and far.predicate["lower"]["value"] == "0"
    for a in (fb, far):
        assert verify_bytes(a.envelope, [KEY.public_key()]).accepted
