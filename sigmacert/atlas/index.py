"""DIR/index.json: one entry per cell (certified, failed with its reason, or pending) and a summary.

A tv cell's entry names its target `lambda` (as it always has); a dp cell's `kind`, `epsilon` and `delta`, a
tpr cell's `kind`, `fpr` and `tpr` (certifier.targets: Target.index_fields)."""
from __future__ import annotations

from certifier.door import KINDS
from certifier.params import parse_decimal
from sigmacert.atlas.cells import Cell
from sigmacert.kinds import certified_sides

INDEX_FORMAT = "sigmacert-atlas/1"
STATUSES = ("certified", "failed", "pending")


def _head(cell: Cell, scheme: str, status: str) -> dict:
    return {"M": cell.steps, "E": cell.epochs, **cell.goal.index_fields(), "scheme": scheme, "status": status}


def cell_of(entry: dict) -> Cell:
    """The cell of an index entry (the inverse of _head)."""
    kind = KINDS[entry.get("kind", "tv")]
    return Cell(entry["M"], entry["E"], entry[kind.INDEX_NAME], kind.name,
                None if kind.PARAM is None else entry.get(kind.PARAM))


def pending_entry(cell: Cell, scheme: str) -> dict:
    return _head(cell, scheme, "pending")


def failed_entry(cell: Cell, scheme: str, reason: str, seconds: float | None) -> dict:
    return {**_head(cell, scheme, "failed"), "reason": reason, "seconds": seconds}


def certified_entry(cell: Cell, scheme: str, predicate: dict, sha256: str, cost: dict, reused: bool) -> dict:
    """The entry of a certificate whose predicate is `predicate` (signed by the driver, or verified).

    sigma is certified to meet the target (bound: the upper end of 1 - O for tv, Lemma C.5, or of the kind's
    functional, format v4); sigma_low, when present (two-sided), is certified to miss it, so sigma_low <
    sigma_target <= sigma. cost: the worker's wall-clock "seconds" and "cpu_seconds" for the cell (None
    when unknown).
    """
    lower = predicate.get("lower")
    return {**_head(cell, scheme, "certified"), "sigma": predicate["claim"]["sigma"],
            "sigma_low": lower["sigma_low"] if lower else None, "two_sided": lower is not None,
            "bound": certified_sides(predicate)["upper"], "file": cell.file, "sha256": sha256,
            "seconds": cost.get("seconds"), "cpu_seconds": cost.get("cpu_seconds"), "reused": reused}


def summary(entries: list[dict]) -> dict:
    counts = {s: sum(e["status"] == s for e in entries) for s in STATUSES}
    return {"cells": len(entries), **counts, "reused": sum(bool(e.get("reused")) for e in entries)}


def index_document(entries: list[dict], *, scheme: str, keyid: str, version: str, seconds: float,
                   heatmap: str) -> dict:
    """The whole index: grid, issuer key, counts, run time (this run, wall clock) and the cells. A dp or tpr
    atlas also names its `kind` and lists its parameters beside the targets (grid.epsilon or grid.fpr)."""
    names = {e.get("kind", "tv") for e in entries}
    kind = KINDS[names.pop() if len(names) == 1 else "tv"]
    by = lambda t: parse_decimal("target", t)  # noqa: E731
    grid = {"steps": sorted({e["M"] for e in entries}), "epochs": sorted({e["E"] for e in entries}),
            "targets": sorted({e[kind.INDEX_NAME] for e in entries}, key=by)}
    head = {}
    if kind.PARAM is not None:
        grid[kind.PARAM] = sorted({e[kind.PARAM] for e in entries}, key=by)
        head = {"kind": kind.name}
    return {"format": INDEX_FORMAT, "sigmacert": version, "scheme": scheme, **head, "keyid": keyid,
            "public_key": "public.pem", "grid": grid, "summary": summary(entries),
            "seconds": round(seconds, 3), "heatmap": heatmap, "cells": entries}
