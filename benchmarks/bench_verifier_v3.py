"""The verifier's replay of method v2 against the certifier's own time, on the same certificate.

For each cell: `certify(..., method="v2", two_sided=True)` issues a certificate; the verifier
then replays its upper side (verifier/replay_v2.py) and its lower side (verifier/lower_v2.py)
from claim and method alone.  Times are CPU seconds of this process (the machine is shared, so
wall clock is noise): `time.perf_counter` is pointed at `time.process_time` before anything
runs, so the certifier's recorded `timings` and its lower-side tries are CPU seconds too.

    python benchmarks/bench_verifier_v3.py                 # the quick cells
    python benchmarks/bench_verifier_v3.py 100,10,0.7,0.445406 3,2,0.5,0.9 fb:10,4,0.3,2,40
"""
from __future__ import annotations

import sys
import time

time.perf_counter = time.process_time  # CPU seconds everywhere (see the docstring)

from certifier.certify import certify  # noqa: E402
from certifier.params import parse_decimal  # noqa: E402
from verifier.lower_v2 import replay_lower_v2  # noqa: E402
from verifier.replay_v2 import replay_v2  # noqa: E402
from verifier.schema_v3 import typed  # noqa: E402

QUICK = ["5,2,0.3,0.967768", "10,2,0.2,1.055789", "fb:10,4,0.3,2,40"]


def run(cell: str) -> None:
    fb = cell.startswith("fb:")
    f = cell[3:].split(",") if fb else cell.split(",")
    M, E, lam, sig = int(f[0]), int(f[1]), f[2], f[3]
    kw = {"scheme": "fixed-bins", "iterations": int(f[4])} if fb else {}
    out = certify(M, E, parse_decimal("target", lam), parse_decimal("sigma", sig), two_sided=True,
                  method="v2", **kw)
    if not out.success:
        print(f"| {cell} | not certified: bound {out.bound} |")
        return
    pred = out.predicate
    p = typed(pred)
    up = replay_v2(p["claim"], p["method"])
    row = [cell, f"{pred['timings']['total']:.2f}", f"{up.seconds['total']:.2f}",
           f"{up.seconds['total'] / pred['timings']['total']:.2f}", pred["bound"], f"{float(up.bound):.13g}"]
    if "lower" in pred:
        lo = pred["lower"]
        lr = replay_lower_v2(p["claim"], p["lower"]["sigma_low"], p["lower"]["method"])
        last = [t for t in out.lower_tries if t.get("certified")][-1]["seconds"]
        row += [f"{last:.2f}", f"{lr.seconds['total']:.2f}", f"{lr.seconds['total'] / last:.2f}",
                lo["tv_lower"], f"{float(lr.bound):.13g}"]
    print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    print("| cell | certifier upper s | replay upper s | ratio | bound | replayed | certifier lower s "
          "| replay lower s | ratio | tv_lower | replayed lower |")
    print("|" + " --- |" * 11)
    for c in sys.argv[1:] or QUICK:
        run(c)
