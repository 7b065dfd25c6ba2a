"""Progress of an atlas on stderr: a live bar on a terminal (cells done / total, failures, ETA),
one line per finished cell otherwise (logs, CI)."""
from __future__ import annotations

import sys
import time

from sigmacert.atlas.index import cell_of

BAR_WIDTH = 24


def clock_text(seconds: float) -> str:
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}h{m:02d}m{s % 60:02d}s" if h else f"{m}m{s % 60:02d}s" if m else f"{s}s"


def eta_seconds(counts: dict, elapsed: float) -> float | None:
    """Remaining time at the rate of the cells computed so far (reused cells cost only a replay)."""
    done = counts["certified"] + counts["failed"]
    computed = done - counts["reused"]
    return None if computed <= 0 else elapsed / computed * (counts["cells"] - done)


def cell_line(entry: dict) -> str:
    head = cell_of(entry).label()
    secs = "" if entry.get("seconds") is None else f" ({entry['seconds']:.1f} s)"
    if entry["status"] == "failed":
        return f"{head}: FAILED: {entry['reason']}{secs}"
    low = f", sigma_low {entry['sigma_low']}" if entry["sigma_low"] else ", one-sided"
    how = "reused (verified)" if entry["reused"] else "certified"
    return f"{head}: {how} sigma {entry['sigma']}{low}, bound {entry['bound']}{secs}"


class Progress:
    """Receives finished cells, notes and ticks from the engine."""

    def __init__(self, total: int, *, stream=None, quiet: bool = False, tty: bool | None = None, clock=None):
        self.stream = stream or sys.stderr
        self.total, self.quiet = total, quiet
        self.tty = self.stream.isatty() if tty is None else tty
        self.clock = clock or time.monotonic
        self.start = self.clock()
        self.counts = {"cells": total, "certified": 0, "failed": 0, "pending": total, "reused": 0}

    def bar(self) -> str:
        c, elapsed = self.counts, self.clock() - self.start
        done = c["certified"] + c["failed"]
        filled = BAR_WIDTH * done // max(self.total, 1)
        eta = eta_seconds(c, elapsed)
        return (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{self.total} cells, {c['failed']} failed, "
                f"{c['reused']} reused, {clock_text(elapsed)} elapsed, ETA "
                + ("?" if eta is None else clock_text(eta)))

    def _print(self, line: str) -> None:
        if self.tty:
            print("\r\x1b[K" + line, file=self.stream)
            print(self.bar(), end="", file=self.stream, flush=True)
        else:
            print(line, file=self.stream, flush=True)

    def cell(self, entry: dict, counts: dict) -> None:
        self.counts = counts
        if self.quiet:
            return
        done = counts["certified"] + counts["failed"]
        if not self.tty:
            self._print(f"[{done}/{self.total}] {cell_line(entry)}")
        elif entry["status"] == "failed":
            self._print(cell_line(entry))
        else:
            self.tick(counts)

    def note(self, text: str) -> None:
        if not self.quiet:
            self._print(text)

    def tick(self, counts: dict) -> None:
        self.counts = counts
        if self.tty and not self.quiet:
            print("\r\x1b[K" + self.bar(), end="", file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty and not self.quiet:
            print(file=self.stream, flush=True)
