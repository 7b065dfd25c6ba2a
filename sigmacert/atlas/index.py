"""DIR/index.json: one entry per cell (certified, failed with its reason, or pending) and a summary."""
from __future__ import annotations

from certifier.params import parse_decimal
from sigmacert.atlas.cells import Cell

INDEX_FORMAT = "sigmacert-atlas/1"
STATUSES = ("certified", "failed", "pending")


def _head(cell: Cell, scheme: str, status: str) -> dict:
    return {"M": cell.steps, "E": cell.epochs, "lambda": cell.target, "scheme": scheme, "status": status}


def pending_entry(cell: Cell, scheme: str) -> dict:
    return _head(cell, scheme, "pending")


def failed_entry(cell: Cell, scheme: str, reason: str, seconds: float | None) -> dict:
    return {**_head(cell, scheme, "failed"), "reason": reason, "seconds": seconds}


def certified_entry(cell: Cell, scheme: str, predicate: dict, sha256: str, cost: dict, reused: bool) -> dict:
    """The entry of a certificate whose predicate is `predicate` (signed by the driver, or verified).

    sigma is certified to meet lambda (bound = upper end of 1 - O, Lemma C.5); sigma_low, when
    present (two-sided, format v2), is certified to miss it, so sigma_low < sigma_lambda <= sigma.
    cost: the worker's wall-clock "seconds" and "cpu_seconds" for the cell (None when unknown).
    """
    lower = predicate.get("lower")
    return {**_head(cell, scheme, "certified"), "sigma": predicate["claim"]["sigma"],
            "sigma_low": lower["sigma_low"] if lower else None, "two_sided": lower is not None,
            "bound": predicate["bound"], "file": cell.file, "sha256": sha256, "seconds": cost.get("seconds"),
            "cpu_seconds": cost.get("cpu_seconds"), "reused": reused}


def summary(entries: list[dict]) -> dict:
    counts = {s: sum(e["status"] == s for e in entries) for s in STATUSES}
    return {"cells": len(entries), **counts, "reused": sum(bool(e.get("reused")) for e in entries)}


def index_document(entries: list[dict], *, scheme: str, keyid: str, version: str, seconds: float,
                   heatmap: str) -> dict:
    """The whole index: grid, issuer key, counts, run time (this run, wall clock) and the cells."""
    grid = {"steps": sorted({e["M"] for e in entries}), "epochs": sorted({e["E"] for e in entries}),
            "targets": sorted({e["lambda"] for e in entries}, key=lambda t: parse_decimal("target", t))}
    return {"format": INDEX_FORMAT, "sigmacert": version, "scheme": scheme, "keyid": keyid,
            "public_key": "public.pem", "grid": grid, "summary": summary(entries),
            "seconds": round(seconds, 3), "heatmap": heatmap, "cells": entries}
