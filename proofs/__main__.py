"""``python -m proofs [--json] [--only KEY ...]``: run the checks, print a table,
exit 1 if any check fails."""
from __future__ import annotations

import argparse
import json
import sys
import time

from . import REGISTRY, run_all


def _table(results) -> str:
    head = ("#", "identity", "paper reference", "method", "result")
    rows = [(str(r.number), r.identity, r.reference, r.method,
             "PASS" if r.passed else "FAIL") for r in results]
    widths = [max(len(x[i]) for x in [head] + rows) for i in range(len(head))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    for r in results:
        for f in r.failures:
            out.append(f"  row {r.number} ({r.key}) failed step: {f}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m proofs", description=__doc__)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--only", nargs="+", metavar="KEY", choices=sorted(REGISTRY),
                    help="run only these checks")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    results = run_all(args.only)
    total = time.perf_counter() - start
    ok = all(r.passed for r in results)
    if args.json:
        print(json.dumps({"passed": ok, "seconds": round(total, 3),
                          "checks": [r.as_dict() for r in results]}, indent=2))
    else:
        print(_table(results))
        n_fail = sum(not r.passed for r in results)
        print(f"\n{len(results) - n_fail}/{len(results)} PASS in {total:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
