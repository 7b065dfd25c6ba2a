"""The report of an audit certificate (format v6, docs/audit.md): the verdict first, the claim in words, the
certified interval on the privacy profile.

The figure is the pair's privacy profile delta(eps) at the claimed sigma (numerical, not certified) with the
claimed point (eps, delta), the certified eps interval at the claimed delta (both ends proven) and the two
certified values at the claimed eps; a TV claim is the profile's value at eps = 0 (delta(0) = TV), a TPR claim is
drawn on the trade-off curve. Only an accepted certificate is drawn (sigmacert.report.render decides).
"""
from __future__ import annotations

from html import escape

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from certifier import door
from sigmacert.report import plots
from sigmacert.report.facts import Facts
from sigmacert.report.kinds import ALPHAS, RESOLVED
from sigmacert.report.page import CSP, CSS, MAX_TEXT, inline_svg
from sigmacert.report.stages import profile_at, stage_list

VERDICT_STYLE = {"HOLDS": "accept", "FALSE": "reject", "TOO CLOSE": "close"}
VERDICT_TEXT = {"HOLDS": "The claim holds: the upper side at the claimed &sigma; proves it.",
                "FALSE": "The claim is false: the lower side at the claimed &sigma; proves the guarantee fails for "
                         "this run.",
                "TOO CLOSE": "Neither side decides the claim: it lies within the certified interval of the truth."}
CAPTION = ("<b>The claim on the privacy profile</b> &delta;(&epsilon;) = max(&delta;<sub>Q&#8214;P</sub>, "
           "&delta;<sub>P&#8214;Q</sub>)(&epsilon;) of the pair at the claimed &sigma; (orange, numerical, not "
           "certified; log scale). Black &times;: the claim. Shaded: the certified interval of the quantity audited "
           "(both ends proven by the replayed sides). Green &#9660; / red &#9650;: the certified upper / lower value "
           "at the claim.")
CAPTION_TPR = ("<b>The claim on the trade-off curve</b>: TPR of the best test against its FPR at the claimed "
               "&sigma; (orange, numerical, not certified). Black &times;: the claim. Green &#9660; / red &#9650;: "
               "the certified upper / lower TPR at the claimed FPR (the certified interval).")
CAPTIONS = {"profile": CAPTION, "tradeoff": CAPTION_TPR}


def _t(x) -> str:
    s = str(x)
    return escape(s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + "\u2026")


def _target(f: Facts):
    """The claim's Target (certifier.targets): every kind-specific word and plot point comes from it."""
    return door.from_json(f.kind, f.claim["target"])


def _run_words(c: dict) -> str:
    def block():
        return (f"a run of M = {c['steps']} steps per epoch for E = {c['epochs']} epochs at noise multiplier sigma = "
                f"{c['sigma']}, " + ("random allocation (balls and bins, Algorithm 1)" if c["scheme"] ==
                                     "random-allocation" else "fixed bins (jax_privacy BallsInBinsSampling)"))
    return door.given_form(c.get("stages")).pick(block, lambda _: (
        f"a run in stages {_stage_text(c)} (M x E each, in order) at one noise multiplier sigma = {c['sigma']}, "
        "random allocation (balls and bins, Algorithm 1)"))


def _run_title(c: dict) -> str:
    return door.given_form(c.get("stages")).pick(lambda: f"M={c['steps']}, E={c['epochs']}",
                                                 lambda _: "stages " + _stage_text(c))


def _stage_text(c: dict) -> str:
    return ",".join(f"{m}x{e}" for m, e, _ in stage_list(c))


def claim_words(f: Facts) -> str:
    """The claim in words, from the certificate."""
    return _t(f"The claim: {_target(f).audit_claim_text()}, for {_run_words(f.claim)}.")


def interval_words(f: Facts) -> str:
    a = f.predicate["audit"]
    return (f"{_t(_target(f).audit_axis_words())} &isin; [{_t(a['interval']['lower'])}, "
            f"{_t(a['interval']['upper'])}]")


def _tradeoff(ax, c: dict, x: float) -> bool:
    """The trade-off curve (TPR of the best test against its FPR) at the claimed sigma; False: refused."""
    grid = np.unique(np.append(ALPHAS, x))
    prof = profile_at(c, float(c["sigma"]), fprs=list(grid))
    if prof is not None:
        ax.plot(grid, [prof.tpr[float(g)].value for g in grid], color=plots.EXACT, lw=1.4,
                label="best test at the claimed sigma (numerical)")
    ax.plot(grid, grid, color=plots.GREY, lw=0.8, label="random guess")
    ax.set(xscale="log", yscale="log", xlabel=r"false-positive rate $\alpha$",
           ylabel="true-positive rate of the best test")
    return prof is not None


def _profile(ax, c: dict, x: float, top: float) -> bool:
    """The privacy profile delta(eps) at the claimed sigma on [0, top] (and at x); False: refused."""
    grid = np.unique(np.append(np.linspace(0.0, top, 61), [x]))
    prof = profile_at(c, float(c["sigma"]), epsilons=list(grid))
    if prof is not None:
        pts = [(g, prof.delta[float(g)]) for g in grid]
        pts = [(g, v.value) for g, v in pts if v.value > RESOLVED * v.error]
        if pts:
            ax.plot(*zip(*pts), color=plots.EXACT, lw=1.4, label=rf"$\delta(\varepsilon)$ at $\sigma$ = "
                    f"{c['sigma']} (numerical)")
    ax.set(yscale="log", xlabel=r"$\varepsilon$", ylabel=r"$\max(\delta_{Q\|P}, \delta_{P\|Q})(\varepsilon)$")
    return prof is not None


def figure(f: Facts) -> tuple[Figure, str]:
    """The claim on its curve at sigma (Target.audit_plot: the profile, or the trade-off curve) with the certified
    interval on its axis and the two certified values at the claim."""
    c, p = f.claim, f.predicate
    a = p["audit"]
    curve, x, y, axis = _target(f).audit_plot()
    lo, hi = float(a["interval"]["lower"]), float(a["interval"]["upper"])
    up, low = float(p["upper"]["value"]), float(p["lower"]["value"])
    with matplotlib.rc_context(plots.RC):
        fig = Figure(figsize=(6.4, 4.2), layout="constrained")
        ax = fig.subplots()
        drawn = (_tradeoff(ax, c, x) if curve == "tradeoff" else
                 _profile(ax, c, x, max(2 * max(hi if axis == "x" else 0.0, x), 1.0)))
        label = f"certified: {_target(f).audit_axis_words()} in [{a['interval']['lower']}, {a['interval']['upper']}]"
        if axis == "x":
            ax.axhline(y, color="black", ls="--", lw=0.8)
            ax.axvspan(lo, hi, color=plots.UPPER, alpha=0.25, label=label)
        else:
            ax.plot([x, x], [max(lo, 1e-300), hi], color=plots.UPPER, lw=6, alpha=0.4, label=label)
        ax.plot([x], [y], "x", color="black", ms=9, label=f"claim: {_target(f).audit_words()}")
        ax.plot([x], [up], "v", color=plots.UPPER, ms=7, label=f"certified upper value {p['upper']['value']}")
        if low > 0:
            ax.plot([x], [low], "^", color=plots.LOWER, ms=7, label=f"certified lower value {p['lower']['value']}")
        ax.legend(loc="lower right" if curve == "tradeoff" else "upper right", fontsize="small")
    what = "trade-off curve" if curve == "tradeoff" else "privacy profile"
    return fig, "" if drawn else f"The numerics refused the {what} at this sigma."


def audit_page(f: Facts, versions: dict) -> tuple[str, dict]:
    """(html, svgs) of an accepted audit certificate: the verdict first, the claim in words, the interval."""
    p, a = f.predicate, f.predicate["audit"]
    fig, note = figure(f)
    curve = _target(f).audit_plot()[0]
    name = f"{curve}-audit"
    svg = plots.svg(fig, name)
    verdict = a["verdict"]
    src = p["claim"].get("source") or ""
    rows = [("claim", claim_words(f))] + ([("source", _t(src))] if src else []) + [
        ("certified interval", interval_words(f) + " (both ends proven)"),
        ("upper side at &sigma;", f"{_t(p['method']['name'])} v{_t(p['method']['version'])}: the claim's functional "
                                  f"&le; {_t(p['upper']['value'])}"),
        ("lower side at &sigma;", f"{_t(p['lower']['method']['name'])} v{_t(p['lower']['method']['version'])}: "
                                  f"&ge; {_t(p['lower']['value'])} (data processing)"),
        ("target", _t(p["claim"]["target"]))]
    if "fix_sigma" in a:
        rows.append(("least &sigma; meeting the claim", f"{_t(a['fix_sigma'])} (numerical, rounded up; not "
                                                         "certified here)"))
    rows += [("verifier", f"ACCEPT: {_t(f.detail)}"), ("certificate SHA-256", f"<span class=mono>{f.sha256}</span>"),
             ("signed by key id", f"<span class=mono>{_t(f.keyid)}</span>"),
             ("this report", ", ".join(f"{_t(k)} {_t(v)}" for k, v in versions.items()))]
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    caption = CAPTIONS[curve]
    body = (f'<header id="verdict" class="verdict {VERDICT_STYLE[verdict]}"><div class="word">{verdict}</div>'
            f"<p>{VERDICT_TEXT[verdict]}</p><p>{claim_words(f)}</p><p>Certified: {interval_words(f)}.</p></header>"
            f'<section id="audit"><h2>The audit</h2><dl>{dl}</dl></section>'
            f'<section id="plots"><h2>Plot</h2><figure id="plot-{name}">{inline_svg(svg)}<figcaption>{caption}'
            + (f" <span class=note>{escape(note)}</span>" if note else "") + "</figcaption></figure></section>")
    css = CSS + ".close{background:#fff6e0;border-color:#b07d00;color:#5c4100}\n"
    html = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>sigmacert audit: {verdict} \u2014 {_t(_run_title(f.claim))}, "
            f"\u03c3={_t(f.claim['sigma'])}</title><style>{css}</style></head>\n<body><h1>sigmacert audit of a "
            "claim</h1>\n" + body + "\n</body></html>\n")
    return html, {name: svg}
