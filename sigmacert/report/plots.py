"""The report's three figures, drawn with matplotlib and written as deterministic SVG.

Deterministic: glyphs are paths of matplotlib's bundled DejaVu Sans, `svg.hashsalt` is fixed,
no date or creator metadata, no XML prolog or DTD. Every id is prefixed with the figure's
name so that several figures can be inlined in one page without their ids colliding.
"""
from __future__ import annotations

import io
import re

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import ScalarFormatter

from sigmacert.report.curves import TradeOff, TVCurves

RC = {"svg.fonttype": "path", "font.family": "DejaVu Sans", "mathtext.fontset": "dejavusans",
      "font.size": 9, "legend.fontsize": 7.5, "axes.grid": True, "grid.alpha": 0.3,
      "axes.spines.top": False, "axes.spines.right": False}
NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
# Okabe-Ito colours (readable by colour-blind readers and in grey print)
BOUND, EXACT, UPPER, LOWER, TVLINE, GREY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#999999"
TV_PAIR = r"$d_{TV}(P_M^{\otimes E}, Q_M^{\otimes E})$"


def svg(fig: Figure, name: str) -> str:
    """A standalone SVG document for `fig`, byte-identical on every run."""
    buf = io.StringIO()
    with matplotlib.rc_context({**RC, "svg.hashsalt": f"sigmacert-{name}"}):
        fig.savefig(buf, format="svg", metadata=NO_METADATA)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # drop the XML prolog and the DTD reference
    return re.sub(r'(\bid="|href="#|url\(#)', lambda m: f"{m.group(1)}{name}-", text)


def _note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, color="#444444",
            bbox={"boxstyle": "round", "fc": "white", "ec": GREY})


def tv_figure(c: TVCurves, cert: dict, ylabel: str = TV_PAIR,
              bound_label: str = r"closed-form bound $U(c_E)$ (Thm 3.3)") -> Figure:
    """TV against sigma: U(c_E), the exact TV, lambda and the certified points; a zoom on the bracket.

    cert: the certificate's decimal strings sigma, bound, target and, when two-sided, sigma_low and
    tv_lower (then a second panel zooms on sigma_low < sigma_lambda <= sigma). ylabel and bound_label name
    the pair and its closed-form bound (a run in stages: the product pair)."""
    sigma, bound, target = (float(cert[k]) for k in ("sigma", "bound", "target"))
    lower = (float(cert["sigma_low"]), float(cert["tv_lower"])) if "sigma_low" in cert else None
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(8.4, 4.8) if lower else (6.4, 4.8), layout="constrained")
        axes = fig.subplots(1, 2, width_ratios=[3, 2]) if lower else [fig.subplots()]
        ax = axes[0]
        ax.plot(c.sigma, c.bound, color=BOUND, lw=1.6, label=bound_label)
        xs = sorted(c.exact)
        if xs:
            ax.plot(xs, [c.exact[x] for x in xs], "o-", color=EXACT, ms=3.5, lw=1.2,
                    label="exact TV (Thm 4.1), numerical: computed points")
        ax.axhline(target, color="black", ls="--", lw=1, label=rf"target $\lambda$ = {cert['target']}")
        ax.plot([float(c.closed_form_sigma)], [target], "s", color=BOUND, mfc="white", ms=6,
                label=rf"closed-form $\sigma$ = {c.closed_form_sigma} (Cor. 3.4, rounded up)")
        ax.plot([sigma], [bound], "v", color=UPPER, ms=8,
                label=rf"certified: TV $\leq$ {cert['bound']} at $\sigma$ = {cert['sigma']}")
        if lower:
            ax.plot([lower[0]], [lower[1]], "^", color=LOWER, ms=8,
                    label=rf"certified: TV $\geq$ {cert['tv_lower']} at $\sigma_{{low}}$ = {cert['sigma_low']}")
        if c.refused:
            ax.plot([], [], " ", label=f"exact TV refused at {len(c.refused)} point(s)")
        ax.set(xlabel=r"noise multiplier $\sigma$", ylabel=ylabel, ylim=(0, None))
        if lower:
            _zoom(axes[1], c, cert)
        fig.legend(loc="outside lower center", ncols=2)  # one legend for both panels
    return fig


def _zoom(ax, c: TVCurves, cert: dict) -> None:
    """The certified bracket sigma_low < sigma_lambda <= sigma, at the scale of the 1e-6 grid."""
    sigma, bound, target, s_low, tv_low = (float(cert[k]) for k in ("sigma", "bound", "target", "sigma_low",
                                                                      "tv_lower"))
    x = lambda s: (s - sigma) * 1e6  # noqa: E731
    ax.axhline(0.0, color="black", ls="--", lw=1)
    pts = [s for s in (s_low, sigma) if s in c.exact]
    if len(pts) == 2:
        y0, y1 = (c.exact[s] - target for s in pts)
        ax.plot([x(s) for s in pts], [y0, y1], "o-", color=EXACT, ms=3.5, lw=1.2)
        if y0 > 0 >= y1:  # the numerical sigma_lambda, by linear interpolation over 1e-6
            ax.axvline(x(s_low) + (x(sigma) - x(s_low)) * y0 / (y0 - y1), color=EXACT, ls=":", lw=1,
                       label=r"$\sigma_\lambda$ (numerical)")
    else:
        _note(ax, "exact TV refused here")
    ax.plot([x(sigma)], [bound - target], "v", color=UPPER, ms=8)  # the certified points, as on the left
    ax.plot([x(s_low)], [tv_low - target], "^", color=LOWER, ms=8)
    ax.set_xlim(x(s_low) - 0.5, 0.5)
    ax.set(xlabel=rf"$\sigma$ $-$ {cert['sigma']}  (units of $10^{{-6}}$)", ylabel=r"TV $-\ \lambda$",
           xticks=[round(x(s_low)), 0])
    ax.set_title(r"zoom: $\sigma_{low} < \sigma_\lambda \leq \sigma$", pad=14)
    fmt = ScalarFormatter(useMathText=True)
    fmt.set_powerlimits((-3, 3))
    ax.yaxis.set_major_formatter(fmt)


def tradeoff_figure(t: TradeOff, target: float, certified: list) -> Figure:
    """TPR against FPR (log-log): certified bounds, the pair's optimal test, Prop. B.2 and alpha + lambda.

    certified: (alpha, tpr) pairs of the certificate (empty for format v1)."""
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(6.4, 4.0), layout="constrained")
        ax = fig.subplots()
        ax.plot(t.alpha, t.alpha, color=GREY, lw=0.8, label=r"random guess: TPR = $\alpha$")
        ax.plot(t.alpha, t.tv, color=TVLINE, ls="--", lw=1.2, label=r"$\alpha + \lambda$ (TV bound)")
        ax.plot(t.alpha, t.chi2, color=BOUND, lw=1.4, label=r"$\chi^2$ bound $\alpha + \sqrt{c_E\,\alpha(1-\alpha)}$ "
                                                             "(Prop. B.2)")
        if t.exact is not None:
            ax.plot(t.alpha, t.exact, color=EXACT, lw=1.4, label="optimal test on the pair (numerical, App. B.4)")
        else:
            _note(ax, "the pair's exact curve: numerics refused")
        if certified:
            ax.plot(*zip(*certified), "D", color=UPPER, ms=6, label="certified TPR bound")
        else:
            ax.plot([], [], " ", label="no certified rows (one-sided certificate)")
        ax.set(xscale="log", yscale="log", xlim=(t.alpha[0], 1), ylim=(t.alpha[0], 1.05),
               xlabel=r"false-positive rate $\alpha$", ylabel="true-positive rate (upper bounds)")
        ax.legend(loc="lower right")
    return fig


def epsilon_figure(curve, certified: list) -> Figure:
    """eps against delta: the certified (eps, delta) points on the numerical curve.

    curve: (delta, eps) arrays or None; certified: (delta, eps) pairs (empty for format v1)."""
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(6.4, 3.8), layout="constrained")
        ax = fig.subplots()
        if curve is not None:
            ax.plot(*curve, color=EXACT, lw=1.4, label=r"numerical $\varepsilon(\delta)$, both directions (App. B.4)")
        else:
            _note(ax, "numerical curve: numerics refused")
        if certified:
            ax.plot(*zip(*certified), "D", color=UPPER, ms=6, label=r"certified $\varepsilon$ at $\delta$")
        else:
            ax.plot([], [], " ", label="no certified rows (one-sided certificate)")
        ax.set(xscale="log", xlabel=r"$\delta$", ylabel=r"$\varepsilon$", ylim=(0, None))
        ax.legend(loc="upper right")
    return fig
