"""Benchmark: where the time of `sigmacert sigma --epsilon/--delta | --fpr/--tpr` goes at large M, and runs in stages.

    python benchmarks/bench_sigma_speed.py [--small] [--json FILE]

Table 1 (in process, per cell): the exact-sigma search of certifier.numerics.targets (evaluations of the
primary route and seconds), the same search by the previous rule (Brent on log_gap to 0.3 grid steps,
then a walk checking the grid point and the one below) on the same curve for the ratio, the proven quick
bound's seconds ((R2) / (R3) with the convex stop over orders), and value_at (the kind's value at the
exact sigma with the second route). Table 2: wall seconds of the whole command in a fresh process
(imports included) for the cells of the goal (<= 2 s, docs/targets.md). Table 3: runs in stages.
The load average is printed first and last: the machine is shared, compare within one run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from certifier.numerics import targets as nt  # noqa: E402
from certifier.params import decimal_str, parse_positive_decimal  # noqa: E402
from certifier.run import Run  # noqa: E402
from sigmacert import kinds  # noqa: E402

CELLS = [(100, 10, "dp"), (10**5, 10, "dp"), (10**5, 10, "tpr"), (10**6, 10, "dp"), (10**6, 10, "tpr"),
         (10**5, 1, "dp"), (10**6, 1, "dp"), (10**6, 1, "tpr"), (10**5, 100, "dp"),
         (10**7, 1, "dp"), (10**7, 1, "tpr"), (2, 100, "dp"), (2, 100, "tpr"), (1000, 1000, "dp"),
         (1000, 1000, "tpr")]
STAGES = ["100x5,400x5", "20x2,5x3,50x1", "100000x5,1000000x5"]
SMALL = {"CELLS": CELLS[:3], "STAGES": STAGES[:1]}
KW = {"dp": {"epsilon": "1", "delta": "1e-5"}, "tpr": {"fpr": "0.001", "tpr": "0.002"}}
FLAGS = {"dp": ["--epsilon", "1", "--delta", "1e-5"], "tpr": ["--fpr", "0.001", "--tpr", "0.002"]}


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def _curve(m: int, e: int, kind: str) -> tuple[nt.Curve, float]:
    if kind == "dp":
        eps, dlt = 1.0, 1e-5
        f = nt.Curve(m, e, 1, lambda r: r.delta(eps), dlt, "dp")
        return f, nt._gdp_sigma(m, e, nt.gdp_mu_for_delta(eps, dlt))
    f = nt.Curve(m, e, 1, lambda r: r.tpr(1e-3), 2e-3, "tpr")
    return f, nt._gdp_sigma(m, e, nt.isf(1e-3) - nt.isf(2e-3))


def previous_search(f: nt.Curve, seed: float, resolution="1e-6") -> str:
    """The rule before this round: Brent to 0.3 grid steps, then the walk (for the ratio only)."""
    from scipy.optimize import brentq
    res = parse_positive_decimal("resolution", resolution)
    step = float(res)
    lo, hi = nt._bracket(f, seed)
    root = brentq(lambda x: f.log_gap(x), lo, hi, xtol=0.3 * step, rtol=1e-15)
    k = max(1, math.ceil(root / step))
    while k > 1 and f(step * (k - 1)) <= 0:
        k -= 1
    while f(step * k) > 0:
        k += 1
    return decimal_str(res * k)


def in_process(m: int, e: int, kind: str) -> dict:
    nt._PRIMARY.clear()  # each search from cold lines: the route cache would favour the second one
    f, seed = _curve(m, e, kind)
    t = time.perf_counter()
    new = nt.grid_search(f, seed, "1e-6")
    t_new, n_new = time.perf_counter() - t, len(f.values)
    nt._PRIMARY.clear()
    g, seed = _curve(m, e, kind)
    t = time.perf_counter()
    old = previous_search(g, seed)
    t_old, n_old = time.perf_counter() - t, len(g.values)
    nt._PRIMARY.clear()
    nt.grid_search(_curve(m, e, kind)[0], seed, "1e-6")  # as in the command: value_at follows the search
    k = kinds.parse_kind(None, **KW[kind])
    t = time.perf_counter()
    kinds.quick_bounds(Run.block(m, e), k, new)
    t_quick = time.perf_counter() - t
    t = time.perf_counter()
    kinds.value_at(Run.block(m, e, sigma=new), k)
    t_value = time.perf_counter() - t
    return {"M": m, "E": e, "kind": kind, "exact": new, "same_as_previous": new == old, "evals": n_new,
            "seconds": t_new, "evals_previous": n_old, "seconds_previous": t_old, "quick_seconds": t_quick,
            "value_at_seconds": t_value}


def wall(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the child) of the command in a fresh process."""
    import resource
    env = dict(os.environ, PYTHONPATH=ROOT)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sigmacert.cli", *argv], check=True, env=env, capture_output=True)
    t = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return t, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="three cells and one stages run")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args(argv)
    cells, stages = (SMALL["CELLS"], SMALL["STAGES"]) if args.small else (CELLS, STAGES)
    rows = {"search": [], "wall": [], "stages": []}
    print(load())
    print("\n| M | E | kind | exact sigma | evals | search s | previous evals | previous s | ratio | same | "
          "quick bound s | value_at s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m, e, kind in cells:
        r = in_process(m, e, kind)
        rows["search"].append(r)
        print(f"| {m} | {e} | {kind} | {r['exact']} | {r['evals']} | {r['seconds']:.2f} | {r['evals_previous']} | "
              f"{r['seconds_previous']:.2f} | {r['seconds'] / r['seconds_previous']:.2f} | {r['same_as_previous']} | "
              f"{r['quick_seconds']:.2f} | {r['value_at_seconds']:.2f} |", flush=True)
    print("\n| command | wall s (fresh process) | CPU s |")
    print("|---|---|---|")
    base, cpu = wall(["--help"])
    print(f"| sigmacert --help (imports only) | {base:.2f} | {cpu:.2f} |")
    rows["wall"].append({"command": "--help", "seconds": base, "cpu_seconds": cpu})
    for m, e, kind in cells:
        cmd = ["sigma", "--steps", str(m), "--epochs", str(e), *FLAGS[kind]]
        s, cpu = wall(cmd)
        rows["wall"].append({"command": " ".join(cmd), "seconds": s, "cpu_seconds": cpu})
        print(f"| sigmacert {' '.join(cmd)} | {s:.2f} | {cpu:.2f} |", flush=True)
    print("\n| stages | kind | wall s | CPU s |")
    print("|---|---|---|---|")
    for spec in stages:
        for kind in ("dp", "tpr"):
            cmd = ["sigma", "--stages", spec, *FLAGS[kind]]
            s, cpu = wall(cmd)
            rows["stages"].append({"stages": spec, "kind": kind, "seconds": s, "cpu_seconds": cpu})
            print(f"| {spec} | {kind} | {s:.2f} | {cpu:.2f} |", flush=True)
    print("\n" + load())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
