"""The heatmap of an atlas: certified sigma over (E, M), one panel per target, one colour scale.

The target is the atlas's kind (sigmacert.atlas.cells): a panel per lambda (tv), per (eps, delta) (dp) or
per (FPR, TPR bound) (tpr); the title names the kind.

Deterministic SVG (same entries, same matplotlib -> same bytes): fixed font, a fixed
svg.hashsalt, no date or creator stamp; text stays text (searchable). Failed cells are grey with a cross, pending ones
grey with a dot; each label is the certified sigma as index.json holds it (never rounded).
"""
from __future__ import annotations

import io

import numpy as np

from certifier.params import parse_decimal
from sigmacert.atlas.index import cell_of

RC = {"font.family": "DejaVu Sans", "font.size": 9, "svg.hashsalt": "sigmacert-atlas", "svg.fonttype": "none",
      "path.simplify": False}
MARK = {"failed": "×", "pending": "·"}


def _axis(entries: list[dict], key: str, as_number=int) -> list:
    return sorted({e[key] for e in entries}, key=as_number)


TITLE = "sigmacert atlas: certified σ, {scheme}  (× failed, · pending)"
KIND_TITLE = {"dp": "sigmacert atlas: certified σ for (ε, δ)-DP, both directions, {scheme}  (× failed, · pending)",
              "tpr": "sigmacert atlas: certified σ for TPR ≤ β at FPR α, {scheme}  (× failed, · pending)"}
TITLE_INCHES_PER_CHAR = 0.075  # 9 pt DejaVu Sans, with room to spare: the title is never clipped


def render(entries: list[dict], scheme: str) -> bytes:
    """The SVG of the heatmap of `entries` (index.json cells)."""
    import matplotlib
    with matplotlib.rc_context(RC):
        fig = figure(entries, scheme)
        svg = io.BytesIO()
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return svg.getvalue()


def figure(entries: list[dict], scheme: str):
    """The matplotlib Figure of the heatmap (call inside matplotlib.rc_context(RC))."""
    import matplotlib
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure
    from matplotlib.ticker import FormatStrFormatter

    ms, es = _axis(entries, "M"), _axis(entries, "E")
    cells = {id(e): cell_of(e) for e in entries}
    num = lambda t: parse_decimal("target", t)  # noqa: E731
    panels = sorted({(c.param or "0", c.target) for c in cells.values()}, key=lambda pt: (num(pt[0]), num(pt[1])))
    by_key = {(c.steps, c.epochs, (c.param or "0", c.target)): e for e in entries for c in [cells[id(e)]]}
    titles = {(c.param or "0", c.target): c.target_text() for c in cells.values()}
    kind = next(iter(cells.values())).kind if cells else "tv"
    sigmas = [float(e["sigma"]) for e in entries if e["status"] == "certified"]
    norm = LogNorm(min(sigmas), max(sigmas) * 1.0001) if sigmas else LogNorm(1.0, 10.0)
    title = KIND_TITLE.get(kind, TITLE).format(scheme=scheme)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#d9d9d9")
    width = 1.2 + 0.75 * len(es) * len(panels) + 0.6 * len(panels)
    fig = Figure(figsize=(max(width, TITLE_INCHES_PER_CHAR * len(title)), 1.5 + 0.4 * len(ms)),
                 layout="constrained")
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    image = None
    for ax, lam in zip(axes, panels):
        z = np.full((len(ms), len(es)), np.nan)
        for i, m in enumerate(ms):
            for j, ep in enumerate(es):
                e = by_key.get((m, ep, lam))
                if e is None:
                    continue
                if e["status"] == "certified":  # the certified decimal itself, as in index.json
                    z[i, j] = float(e["sigma"])
                    rgba = cmap(norm(z[i, j]))
                    dark = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] < 0.5
                    ax.text(j, i, e["sigma"], ha="center", va="center", color="white" if dark else "black",
                            fontsize=9 if len(e["sigma"]) <= 9 else 7)
                else:
                    ax.text(j, i, MARK[e["status"]], ha="center", va="center", color="#555555")
        image = ax.imshow(z, cmap=cmap, norm=norm, origin="lower", aspect="auto")
        ax.set_xticks(range(len(es)), labels=[str(x) for x in es])
        ax.set_yticks(range(len(ms)), labels=[str(x) for x in ms])
        ax.set_xlabel("epochs E")
        ax.set_title(titles[lam])
    axes[0].set_ylabel("steps per epoch M")
    if sigmas:
        what = {"dp": ", (ε, δ)-DP", "tpr": ", TPR at FPR α"}.get(kind, "")
        bar = fig.colorbar(image, ax=list(axes), label=f"certified σ{what} (two-sided)")
        for axis_format in (bar.ax.yaxis.set_major_formatter, bar.ax.yaxis.set_minor_formatter):
            axis_format(FormatStrFormatter("%.3g"))
    fig.suptitle(title)
    return fig
