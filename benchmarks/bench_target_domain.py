"""Benchmark: the exact sigma over the (eps, delta) and TPR scan grids and the target domain's corners.

    python benchmarks/bench_target_domain.py [--small] [--only GRID] [--seed N] [--json FILE]

Calls sigmacert.exact_sigma in-process (imports excluded) for every cell and prints, per kind,
answered / refused and the CPU seconds per cell (median, max), then every refusal with its reason.

  dp       M in {10, 100, 1e3, 1e4, 1e6} x E in {1, 10, 100, 1000} x eps in {0.5, 1, 2, 4, 8}
           x delta in {1e-5, 1e-6, 1e-8}                                             (300 cells)
  tpr      the same (M, E) x (FPR, TPR) in {(1e-3, 1e-2), (1e-5, 1e-3), (1e-8, 1e-5), (1e-8, 1e-3)}  (80)
  corners  M in {1, 1e7} x E in {1, 1e4} x (eps, delta) in {0.01, 20} x {1e-12, 0.1}, the TPR corners
           (1e-8, 1e-7), (1e-8, 0.5), (0.5, 0.6), (0.5, 0.99), fixed bins at the dp corners with M = 1e7,
           and two stage lists at eps 1 / delta 1e-8
  random   60 cells drawn log-uniformly from the target domain (seed 39 unless --seed): M in [1, 1e7],
           E in [1, 1e4]; 40 dp (eps in [0.01, 20], delta in [1e-12, 0.1]), 14 tpr (FPR in [1e-8, 0.5], TPR
           log-uniform in (FPR, 1)), 6 dp with fixed bins -- cells nobody tuned for
  smalldelta  (only with --only) E in {1, 2, 3, 10} x M in {2, 10, 1e2, ..., 1e7} x eps in {0.01, 0.1, 0.5, 1, 2, 4,
           8, 14, 20} x delta in {1e-10, 1e-12}                                      (576 cells, about 15 minutes)
  fewsteps (only with --only) one epoch of M in {3, 5, 7, 10, 15, 20, 25, 40} x eps in {0.1, 0.5, 1, 2, 4, 8, 20}
           at delta 1e-12 (docs/exact.md section 13)                                  (56 cells)
  manyepochs (only with --only) E in {5, 20, 100, 1000, 1e4} x M in {1e5, 1e6, 1e7} x eps in {0.5, 1, 2, 4} at
           delta 1e-12 (docs/exact.md section 14)                                     (60 cells)

--small runs a few cells of each (seconds; exercised by tests/bench). The goal is 0 refused and <= 1 s
per answer; the machine is shared, so the load average is printed first and last.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

MS = (10, 100, 1000, 10**4, 10**6)
ES = (1, 10, 100, 1000)
DP = [dict(steps=m, epochs=e, epsilon=eps, delta=d) for m in MS for e in ES for eps in (0.5, 1, 2, 4, 8)
      for d in ("1e-5", "1e-6", "1e-8")]
TPR = [dict(steps=m, epochs=e, fpr=a, tpr=b) for m in MS for e in ES
       for a, b in (("1e-3", "1e-2"), ("1e-5", "1e-3"), ("1e-8", "1e-5"), ("1e-8", "1e-3"))]
CORNERS = ([dict(steps=m, epochs=e, epsilon=eps, delta=d) for m in (1, 10**7) for e in (1, 10**4)
            for eps in (0.01, 20) for d in ("1e-12", "0.1")]
           + [dict(steps=m, epochs=e, fpr=a, tpr=b) for m in (1, 10**7) for e in (1, 10**4)
              for a, b in (("1e-8", "1e-7"), ("1e-8", "0.5"), ("0.5", "0.6"), ("0.5", "0.99"))]
           + [dict(steps=10**7, epochs=e, epsilon=eps, delta=d, scheme="fixed-bins") for e in (1, 10**4)
              for eps in (0.01, 20) for d in ("1e-12", "0.1")]
           + [dict(stages=[(100, 5), (400, 5)], epsilon=1, delta="1e-8"),
              dict(stages=[(50, 4), (200, 2)], epsilon=2, delta="1e-6")])


SMALL_DELTA = [dict(steps=m, epochs=e, epsilon=eps, delta=d) for e in (1, 2, 3, 10)
               for m in (2, 10, 100, 10**3, 10**4, 10**5, 10**6, 10**7)
               for eps in ("0.01", "0.1", "0.5", "1", "2", "4", "8", "14", "20") for d in ("1e-10", "1e-12")]
FEW_STEPS = [dict(steps=m, epochs=1, epsilon=eps, delta="1e-12") for m in (3, 5, 7, 10, 15, 20, 25, 40)
             for eps in ("0.1", "0.5", "1", "2", "4", "8", "20")]
MANY_EPOCHS = [dict(steps=m, epochs=e, epsilon=eps, delta="1e-12") for e in (5, 20, 100, 1000, 10**4)
               for m in (10**5, 10**6, 10**7) for eps in ("0.5", "1", "2", "4")]
OPT_IN = ("smalldelta", "fewsteps", "manyepochs")   # run only when asked for by --only


def random_cells(seed: int = 39, n_dp: int = 40, n_tpr: int = 14, n_bins: int = 6) -> list:
    """Log-uniform cells of the target domain (a fixed seed: the same cells on every run)."""
    import math
    import random
    rng = random.Random(seed)

    def logu(lo: float, hi: float) -> float:
        return math.exp(rng.uniform(math.log(lo), math.log(hi)))

    def dec(x: float) -> str:
        return f"{x:.3g}"

    cells = []
    for i in range(n_dp + n_tpr + n_bins):
        m, e = int(round(logu(1, 1e7))), int(round(logu(1, 1e4)))
        if i < n_dp or i >= n_dp + n_tpr:
            cell = dict(steps=m, epochs=e, epsilon=dec(logu(0.01, 20.0)), delta=dec(logu(1e-12, 0.1)))
            if i >= n_dp + n_tpr:
                cell["scheme"] = "fixed-bins"
        else:
            a = logu(1e-8, 0.5)
            b = math.exp(rng.uniform(math.log(a), 0.0))
            b = min(max(b, a * 1.01), 0.999)
            cell = dict(steps=m, epochs=e, fpr=dec(a), tpr=dec(b))
        cells.append(cell)
    return cells


SMALL = {"dp": [DP[i] for i in (0, 44, 137, 299)], "tpr": [TPR[i] for i in (2, 41)],
         "corners": [CORNERS[i] for i in (0, 13, 17, 40)], "random": random_cells()[:2],
         "smalldelta": [SMALL_DELTA[3]], "fewsteps": [FEW_STEPS[24]], "manyepochs": [MANY_EPOCHS[18]]}


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def run_cell(cell: dict) -> dict:
    import sigmacert
    from certifier.errors import NumericsUnreliableError, ParameterError
    t = time.process_time()
    try:
        sigma, reason = str(sigmacert.exact_sigma(**cell)), None
    except (NumericsUnreliableError, ParameterError) as ex:
        sigma, reason = None, str(ex).splitlines()[0][:160]
    return dict(cell={k: (str(v) if k != "stages" else v) for k, v in cell.items()}, sigma=sigma,
                refused=reason, cpu=time.process_time() - t)


def summary(name: str, rows: list) -> str:
    ok = [r["cpu"] for r in rows if r["sigma"] is not None]
    med = f"{statistics.median(ok):.2f}" if ok else "-"
    mx = f"{max(ok):.2f}" if ok else "-"
    over = sum(1 for x in ok if x > 1.0)
    return f"| {name} | {len(rows)} | {len(ok)} | {len(rows) - len(ok)} | {med} | {mx} | {over} |"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a few cells of each grid")
    ap.add_argument("--only", choices=("dp", "tpr", "corners", "random") + OPT_IN, help="one grid only")
    ap.add_argument("--seed", type=int, default=39, help="the random grid's seed")
    ap.add_argument("--json", help="also write every row to this file")
    args = ap.parse_args(argv)
    grids = SMALL if args.small else {"dp": DP, "tpr": TPR, "corners": CORNERS, "random": random_cells(args.seed),
                                      "smalldelta": SMALL_DELTA, "fewsteps": FEW_STEPS, "manyepochs": MANY_EPOCHS}
    if args.only:
        grids = {args.only: grids[args.only]}
    elif not args.small:
        grids = {k: v for k, v in grids.items() if k not in OPT_IN}
    print(load())
    out = {}
    for name, cells in grids.items():
        out[name] = []
        for cell in cells:
            row = run_cell(cell)
            out[name].append(row)
            print(f"  {name} {row['cell']} -> {row['sigma'] or 'REFUSED: ' + row['refused']} ({row['cpu']:.2f} s)",
                  flush=True)
    print()
    print("| grid | cells | answered | refused | CPU s per answer, median | max | answers > 1 s |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in out.items():
        print(summary(name, rows))
    refused = [(n, r) for n, rows in out.items() for r in rows if r["sigma"] is None]
    if refused:
        print("\nrefused:")
        for n, r in refused:
            print(f"  {n} {r['cell']}: {r['refused']}")
    print("\n" + load())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
