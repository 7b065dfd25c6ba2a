"""The audit report: a certificate a person can read, archive and show.

    from sigmacert.report import render
    r = render(open("cert.json", "rb").read(), ["keys/public.pem"])
    r.verdict, r.reason, r.sha256      # "ACCEPT", "accepted", SHA-256 of the envelope bytes
    r.html                             # one self-contained page (inline CSS and SVG, no URL)
    r.svgs["tv"], r.svgs["tradeoff"], r.svgs["epsilon"]   # standalone SVG documents

The independent verifier decides the verdict; plots are drawn only for an accepted certificate
(a rejected one's numbers are not trusted). The same input gives the same bytes.
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import flint
import matplotlib

import verifier
from certifier.door import RANDOM_ALLOCATION, Claim, __version__, c_E, chi2_tpr_bound, closed_form_sigma_up, given_form
from certifier.errors import ParameterError
from certifier.params import parse_decimal
from sigmacert.files import read_regular, sha256_regular
from sigmacert.report import curves, plots, stages
from sigmacert.report.binding import log_section, release_section
from sigmacert.report.facts import Facts, read_facts
from sigmacert.report.page import page


@dataclass(frozen=True)
class Report:
    html: str                   # the whole self-contained page
    verdict: str                # "ACCEPT" or "REJECT"
    reason: str                 # the verifier's reason code ("accepted" or why not)
    detail: str                 # the verifier's one-line explanation
    sha256: str                 # of the certificate bytes, as `sha256sum` prints it
    svgs: Mapping[str, str]     # name -> standalone SVG document; empty for a rejected certificate

    @property
    def accepted(self) -> bool:
        return self.verdict == "ACCEPT"


def _key(k):
    """An Ed25519 public key from PEM bytes, a PEM path or the key itself."""
    if not isinstance(k, (bytes, str, os.PathLike)):
        return k
    name = "given as bytes" if isinstance(k, bytes) else os.fspath(k)
    data = k if isinstance(k, bytes) else read_regular(k, "public key")
    try:
        return verifier.load_public_key(data)
    except ValueError:
        raise ParameterError(f"public key {name} is not an Ed25519 SubjectPublicKeyInfo PEM") from None


def _keys(public_keys) -> list:
    return [_key(k) for k in (public_keys if isinstance(public_keys, (list, tuple)) else [public_keys])]


def _subject_digest(subject) -> str | None:
    if subject is None:
        return None
    if isinstance(subject, bytes):
        return hashlib.sha256(subject).hexdigest()
    return sha256_regular(subject)


def _block_pair(claim: dict) -> tuple[int, int, float] | None:
    """(M, E, scale) of a block's claim: its scheme reduces to the pair (P_M^E, Q_M^E) at sigma / scale (Section 2;
    docs/method-v2.md §3), or None for a scheme this version does not know."""
    try:
        c = Claim(claim.get("scheme", RANDOM_ALLOCATION), claim["steps"], claim["epochs"],
                  parse_decimal("sigma", claim["sigma"]), parse_decimal("target", claim["target"]))
    except ParameterError:
        return None
    return (*c.pair(), 1.0 / c.sigma_of_pair(1.0))


def _block_plots(f: Facts) -> tuple[dict, dict]:
    """The three figures of a block's TV certificate (its scheme's Gaussian pair), and a remark per figure."""
    c, p = f.claim, f.predicate
    pair_of = _block_pair(c)
    if pair_of is None:
        return {}, {"plots": f"No plots: this version has no reference curves for the scheme {f.scheme!r}."}
    (m, e, scale), sigma, lam = pair_of, float(c["sigma"]), float(c["target"])
    cert = {"sigma": c["sigma"], "target": c["target"], "bound": p["bound"]}
    if f.two_sided:
        cert.update(sigma_low=p["lower"]["sigma_low"], tv_lower=p["lower"]["tv_lower"])
    closed = closed_form_sigma_up(c["steps"], c["epochs"], c["target"], f.scheme)
    tv = curves.tv_curves(m, e, sigma, lam, float(cert["sigma_low"]) if f.two_sided else None, scale, closed)
    pair = curves.gaussian_pair(m, e, sigma / scale)
    tpr = [(float(a), float(row["tpr"])) for a, row in f.tpr_rows]
    eps = [(float(d), float(row["epsilon"])) for d, row in f.epsilon_rows]
    svgs = {"tv": plots.svg(plots.tv_figure(tv, cert), "tv"),
            "tradeoff": plots.svg(plots.tradeoff_figure(curves.trade_off(pair, m, e, sigma / scale, lam), lam,
                                                        tpr), "tradeoff"),
            "epsilon": plots.svg(plots.epsilon_figure(curves.epsilon_curve(pair), eps), "epsilon")}
    refused = ", ".join(f"{s:.6g}" for s in tv.refused)
    notes = {"tv": f"The exact-TV numerics refused sigma = {refused}; those points are left out." if refused else "",
             "tradeoff": "" if pair else "The numerics refused the Gaussian pair's density at this sigma.",
             "epsilon": "" if pair else "The numerics refused the Gaussian pair's density at this sigma."}
    return svgs, notes


def _block_chi2(claim: dict) -> float | None:
    """The chi-square c_E (eq. 9) of a block's pair at its sigma, None for a scheme this version does not know."""
    pair_of = _block_pair(claim)
    if pair_of is None:
        return None
    m, e, scale = pair_of
    return c_E(m, e, float(claim["sigma"]) / scale)


@dataclass(frozen=True)
class _Shape:
    """What the report draws for a claim's run: a block's pair is its scheme's Gaussian pair, a run in stages' the
    product of the stages' pairs (sigmacert.report.stages)."""
    pair_of: Callable   # claim -> (M, E, scale) of the Gaussian pair, or None
    plots: Callable     # Facts -> (svgs, notes) of a TV certificate
    chi2: Callable      # claim -> the pair's chi-square at sigma (float), or None


BLOCK = _Shape(_block_pair, _block_plots, _block_chi2)
STAGED = _Shape(lambda claim: None, stages.stages_plots, lambda claim: stages.chi2(stages.runs_at(claim)))


def _shape(claim: dict) -> _Shape:
    """The claim's shape (format v5, a list of stages, or a block), as door.given_form reads its `stages`."""
    return given_form(claim.get("stages")).shape(BLOCK, STAGED)


def gaussian_pair_of(claim: dict) -> tuple[int, int, float] | None:
    """(M, E, scale): the claim's scheme reduces to the pair (P_M^E, Q_M^E) at sigma / scale (Section 2;
    docs/method-v2.md §3), or None for a scheme this version does not know (and for a run in stages,
    whose pair is a product: sigmacert.report.stages)."""
    return _shape(claim).pair_of(claim)


def _plots(f: Facts) -> tuple[dict, dict]:
    """The three figures of an accepted certificate, and a remark per figure (points the numerics refused)."""
    if f.curve is not None:                           # dp / tpr (format v4): the certified target on its curve
        from sigmacert.report.kinds import kind_plots
        return kind_plots(f)
    return _shape(f.claim).plots(f)


def _comparisons(f: Facts) -> dict:
    """FPR -> (chi-square bound of Prop. B.2, alpha + lambda), floats, for the TPR table (the bound nan where this
    version has no reference pair)."""
    c = f.claim
    chi2 = _shape(c).chi2(c)
    return {a: (math.nan if chi2 is None else chi2_tpr_bound(float(a), chi2), min(1.0, float(a) + float(c["target"])))
            for a, _ in f.tpr_rows}


def render(envelope_bytes: bytes, public_keys, *, subject=None,
           progress: Callable[[str], None] | None = None, release: dict | None = None,
           log: dict | None = None) -> Report:
    """Verify a certificate with the independent verifier and write its report.

    public_keys: PEM bytes, a PEM path or an Ed25519PublicKey, or a list of them. subject: a file
    path or bytes whose SHA-256 must be a subject of the statement. progress(stage) is called with
    "verifying" and "plotting". A rejected certificate gives a Report with verdict "REJECT" (never
    an exception); unreadable keys or subject raise ParameterError. release: the verdict of
    verifier.release.verify_release (as_dict), log: of a log proof; each shown in its section, and a
    REJECT of either makes the report's verdict REJECT.
    """
    keys, digest = _keys(public_keys), _subject_digest(subject)
    progress = progress or (lambda stage: None)
    progress("verifying")
    f = read_facts(envelope_bytes, verifier.verify_bytes(envelope_bytes, keys, digest))
    if f.accepted:
        progress("plotting")
    versions = {"sigmacert": __version__, "python-flint (verifier)": flint.__version__,
                "FLINT": flint.__FLINT_VERSION__, "matplotlib": matplotlib.__version__}
    if f.accepted and "audit" in f.predicate:           # format v6: an audit of a claim (sigmacert.report.audit)
        from sigmacert.report.audit import audit_page
        html, svgs = audit_page(f, versions)
        return Report(html, f.verdict, f.reason, f.detail, f.sha256, MappingProxyType(svgs))
    svgs, notes = _plots(f) if f.accepted else ({}, {})
    numerical = []
    if f.accepted and f.curve is not None:
        from sigmacert.report.kinds import numerical_rows
        numerical = numerical_rows(f)
    extra = ([release_section(release)] if release else []) + ([log_section(log)] if log else [])
    html = page(f, svgs, notes, _comparisons(f) if f.accepted else {}, versions, numerical, extra)
    verdict, reason, detail = f.verdict, f.reason, f.detail
    if f.accepted and release and release.get("result") != "ACCEPT":
        verdict, reason, detail = "REJECT", "release", "; ".join(x["detail"] for x in release["failures"])[:500]
    elif f.accepted and log and not log.get("accepted"):
        verdict, reason, detail = "REJECT", log.get("reason"), str(log.get("detail"))
    return Report(html, verdict, reason, detail, f.sha256, MappingProxyType(svgs))


__all__ = ["Report", "render"]
