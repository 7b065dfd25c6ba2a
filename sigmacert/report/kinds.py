"""The report of a dp or tpr certificate (format v4): the certified target on its curve.

dp: the privacy profile delta(eps) = max(delta_{Q||P}, delta_{P||Q})(eps) of the pair at sigma (and at
sigma_low) with the certified point (eps, upper bound) and, two-sided, (eps, lower bound at sigma_low);
tpr: the trade-off curve 1 - T(alpha) (TPR against FPR) with the certified point. The curves are the exact
numerics of certifier.numerics.targets (floating point with error estimates, not certified); a sigma the
numerics refuse leaves its curve out, with a note. The other two quantities are numerical rows.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from sigmacert.report import plots
from sigmacert.report.facts import Facts
from sigmacert.report.stages import profile_at

ALPHAS = np.logspace(-5, 0, 61)[:-1]   # FPRs of the trade-off curve (alpha < 1)
PROFILE_POINTS = 61                    # points of the delta(eps) curve
ROW_FPRS = (1e-3, 1e-2, 1e-1)          # numerical TPR rows of a dp certificate
ROW_DELTAS = (1e-5, 1e-6)              # numerical eps(delta) rows of a tpr certificate
RESOLVED = 10.0                        # a profile point is drawn when its value exceeds this x its error


def _eps_grid(eps: float) -> np.ndarray:
    top = max(2.0 * eps, eps + 2.0, 1.0)
    return np.unique(np.append(np.linspace(0.0, min(top, 100.0), PROFILE_POINTS), eps))


def certified_point(f: Facts) -> dict:
    """The certificate's own numbers: kind, target, sigma, upper and (two-sided) lower, sigma_low."""
    s = f.sides
    return {"kind": s["kind"], "target": f.claim["target"], "sigma": f.claim["sigma"], "upper": s["upper"],
            "lower": s["lower"], "sigma_low": s["sigma_low"]}


def dp_figure(f: Facts) -> tuple[Figure, str]:
    """delta(eps) on a log scale at sigma (and sigma_low), the target delta and the certified points."""
    cert = certified_point(f)
    eps = float(cert["kind"]["epsilon"])
    grid = _eps_grid(eps)
    at = {"sigma": profile_at(f.claim, float(cert["sigma"]), epsilons=list(grid))}
    if cert["sigma_low"] is not None:
        at["sigma_low"] = profile_at(f.claim, float(cert["sigma_low"]), epsilons=list(grid))
    with matplotlib.rc_context(plots.RC):
        fig = Figure(figsize=(6.4, 4.2), layout="constrained")
        ax = fig.subplots()
        for name, p, style in (("sigma", at["sigma"], "-"), ("sigma_low", at.get("sigma_low"), ":")):
            if p is not None:                           # points the error estimate resolves (10 x) only
                pts = [(x, p.delta[float(x)]) for x in grid]
                pts = [(x, v.value) for x, v in pts if v.value > RESOLVED * v.error]
                label = rf"$\delta(\varepsilon)$ at $\sigma{'_{low}' if name == 'sigma_low' else ''}$ = {cert[name]}"
                ax.plot(*zip(*pts), style, color=plots.EXACT, lw=1.4, label=label + " (numerical)")
        ax.axhline(float(cert["target"]), color="black", ls="--", lw=1, label=rf"target $\delta$ = {cert['target']}")
        ax.plot([eps], [float(cert["upper"])], "v", color=plots.UPPER, ms=8,
                label=rf"certified: $\delta({cert['kind']['epsilon']}) \leq$ {cert['upper']} at $\sigma$")
        if cert["lower"] is not None:
            ax.plot([eps], [float(cert["lower"])], "^", color=plots.LOWER, ms=8,
                    label=rf"certified: $\delta({cert['kind']['epsilon']}) \geq$ {cert['lower']} at $\sigma_{{low}}$")
        ax.set(yscale="log", xlabel=r"$\varepsilon$", ylabel=r"$\max(\delta_{Q\|P}, \delta_{P\|Q})(\varepsilon)$")
        ax.legend(loc="upper right")
    refused = [k for k, p in at.items() if p is None]
    return fig, ("The exact numerics refused the profile at " + ", ".join(refused) + "." if refused else "")


def tpr_figure(f: Facts) -> tuple[Figure, str]:
    """TPR against FPR (log-log) at sigma (and sigma_low), the target point and the certified points."""
    cert = certified_point(f)
    alpha = float(cert["kind"]["fpr"])
    grid = np.unique(np.append(ALPHAS, alpha))
    at = {"sigma": profile_at(f.claim, float(cert["sigma"]), fprs=list(grid))}
    if cert["sigma_low"] is not None:
        at["sigma_low"] = profile_at(f.claim, float(cert["sigma_low"]), fprs=list(grid))
    with matplotlib.rc_context(plots.RC):
        fig = Figure(figsize=(6.4, 4.2), layout="constrained")
        ax = fig.subplots()
        ax.plot(grid, grid, color=plots.GREY, lw=0.8, label=r"random guess: TPR = $\alpha$")
        for name, p, style in (("sigma", at["sigma"], "-"), ("sigma_low", at.get("sigma_low"), ":")):
            if p is not None:
                label = rf"$1 - T(\alpha)$ at $\sigma{'_{low}' if name == 'sigma_low' else ''}$ = {cert[name]}"
                ax.plot(grid, [p.tpr[float(a)].value for a in grid], style, color=plots.EXACT, lw=1.4,
                        label=label + " (numerical)")
        ax.plot([alpha], [float(cert["target"])], "x", color="black", ms=7,
                label=rf"target: TPR $\leq$ {cert['target']} at FPR {cert['kind']['fpr']}")
        ax.plot([alpha], [float(cert["upper"])], "v", color=plots.UPPER, ms=8,
                label=rf"certified: TPR $\leq$ {cert['upper']} at $\sigma$")
        if cert["lower"] is not None:
            ax.plot([alpha], [float(cert["lower"])], "^", color=plots.LOWER, ms=8,
                    label=rf"certified: TPR $\geq$ {cert['lower']} at $\sigma_{{low}}$")
        ax.set(xscale="log", yscale="log", xlim=(grid[0], 1), ylim=(grid[0], 1.05),
               xlabel=r"false-positive rate $\alpha$", ylabel="true-positive rate of the best test")
        ax.legend(loc="lower right")
    refused = [k for k, p in at.items() if p is None]
    return fig, ("The exact numerics refused the trade-off curve at " + ", ".join(refused) + "." if refused else "")


def numerical_rows(f: Facts) -> list[tuple[str, str]]:
    """The other two quantities at sigma, numerical (label, value): the exact TV, and the TPR at a few FPRs
    (dp) or eps at a few deltas (tpr). Empty when the numerics refuse."""
    other = OTHER_ROWS[f.curve]
    p = profile_at(f.claim, float(f.claim["sigma"]), **other.numerics)
    if p is None:
        return []
    return [("exact TV", _fmt(p.tv)), *other.rows(p)]


def _fmt(v) -> str:
    return "&ndash;" if not math.isfinite(v.value) else f"{v.value:.6g} (error estimate {v.error:.1e})"


def kind_plots(f: Facts) -> tuple[dict, dict]:
    """The figure of a dp or tpr certificate: name -> SVG, name -> remark."""
    name, draw = FIGURES[f.curve]
    fig, note = draw(f)
    return {name: plots.svg(fig, name)}, {name: note}


class _Rows(NamedTuple):
    """The numerical rows of the other curve: what to ask the numerics, and the rows of its answer."""
    numerics: dict
    rows: Callable


OTHER_ROWS = {  # a point on the privacy profile (dp) shows the trade-off's rows, and the other way round
    "profile": _Rows({"fprs": list(ROW_FPRS)},
                     lambda p: [(f"TPR of the best test at FPR {a:g}", _fmt(p.tpr[a])) for a in ROW_FPRS]),
    "tradeoff": _Rows({"deltas": list(ROW_DELTAS)},
                      lambda p: [(f"&epsilon; at &delta; = {d:g}, both directions", _fmt(p.epsilon[d]))
                                 for d in ROW_DELTAS]),
}
FIGURES = {"profile": ("profile", dp_figure), "tradeoff": ("tradeoff-kind", tpr_figure)}  # name, drawing
