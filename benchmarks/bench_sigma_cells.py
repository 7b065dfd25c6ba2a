"""Benchmark: `sigmacert sigma` for every target kind at the corner cells, a fresh process each.

    python benchmarks/bench_sigma_cells.py [--small] [--root DIR] [--json FILE]

For each cell (M, E) and kind (tv --target 0.1; dp --epsilon 1 --delta 1e-5; tpr --fpr 0.001 --tpr 0.002)
runs `python -m sigmacert.cli sigma ... --json` in a fresh process (imports included) and prints wall
seconds, CPU seconds (user + system of the child) and the exact sigma. --root runs another checkout's
code (e.g. a copy of main) for a before/after table; the goal is <= 2 s per cell (docs/exact.md §6).
The machine is shared: the load average is printed first and last, compare within one run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CELLS = [(10**7, 1), (10**6, 1), (10**6, 100), (100, 10), (250, 20), (1000, 1), (1, 1), (2, 10)]
SMALL = [(100, 10), (1, 1)]
FLAGS = {"tv": ["--target", "0.1"], "dp": ["--epsilon", "1", "--delta", "1e-5"],
         "tpr": ["--fpr", "0.001", "--tpr", "0.002"]}


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def run(root: str, argv: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s, exact sigma) of `sigmacert <argv> --json` under `root`'s code."""
    env = dict(os.environ, PYTHONPATH=root)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "sigmacert.cli", *argv, "--json"], check=True, env=env,
                         capture_output=True, text=True, cwd=root).stdout
    t = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return t, cpu, str(json.loads(out)["exact"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="two cells only")
    ap.add_argument("--root", default=ROOT, help="checkout whose code runs (default: this one)")
    ap.add_argument("--kinds", default="tv,dp,tpr", help="comma-separated kinds (default tv,dp,tpr)")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    rows = []
    print(load())
    print(f"code: {root}\n")
    print("| M | E | kind | exact sigma | wall s | CPU s |")
    print("|---|---|---|---|---|---|")
    for m, e in SMALL if args.small else CELLS:
        for kind in args.kinds.split(","):
            s, cpu, sigma = run(root, ["sigma", "--steps", str(m), "--epochs", str(e), *FLAGS[kind]])
            rows.append({"M": m, "E": e, "kind": kind, "sigma": sigma, "seconds": s, "cpu_seconds": cpu})
            print(f"| {m} | {e} | {kind} | {sigma} | {s:.2f} | {cpu:.2f} |", flush=True)
    print("\n" + load())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"root": root, "rows": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
