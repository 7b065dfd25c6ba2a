"""``python -m proofs [--json] [-v] [--only KEY ...]``: run the checks, print a table,
exit 1 if any check fails."""
from __future__ import annotations

import argparse
import json
import sys
import time

from . import REGISTRY, run_all


def _table(results, verbose: bool = False) -> str:
    head = ("#", "identity", "paper reference", "method", "result")
    rows = [(str(r.number), r.identity, r.reference, r.method,
             "PASS" if r.passed else "FAIL") for r in results]
    widths = [max(len(x[i]) for x in [head] + rows) for i in range(len(head))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    if verbose:
        for r in results:
            out.append(f"\nrow {r.number} ({r.key}, {r.seconds:.2f} s):")
            out.extend(f"  [{'ok' if ok else 'FAIL'}] {label}" for label, ok in r.detail)
    for r in results:
        for f in r.failures:
            out.append(f"  row {r.number} ({r.key}) failed step: {f}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m proofs", description=__doc__)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every step of every proof")
    ap.add_argument("--only", nargs="+", metavar="KEY", choices=sorted(REGISTRY),
                    help="run only these checks")
    args = ap.parse_args(argv)
    start, cpu = time.perf_counter(), time.process_time()
    results = run_all(args.only)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    ok = all(r.passed for r in results)
    if args.json:
        print(json.dumps({"passed": ok, "seconds": round(total, 3), "cpu_seconds": round(cpu, 3),
                          "checks": [r.as_dict() for r in results]}, indent=2))
    else:
        print(_table(results, args.verbose))
        n_fail = sum(not r.passed for r in results)
        print(f"\n{len(results) - n_fail}/{len(results)} PASS in {total:.1f} s ({cpu:.1f} s CPU)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
