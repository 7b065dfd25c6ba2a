"""The verifier's replay of method v2 against the certifier's own time, on the same certificate.

For each cell: `certify(..., method="v2", two_sided=True)` issues a certificate; a fresh Python
process (as `sigmacert-verify` would run) then replays its upper side (verifier/replay/upper_v2.py) and
its lower side (verifier/replay/lower_v2.py) from claim and method alone.  Times are CPU seconds (the
machine is shared, so wall clock is noise): `time.perf_counter` is pointed at `time.process_time`
in both processes before anything runs, so the certifier's recorded `timings` and the seconds of
its successful lower-side try are CPU seconds too.

    python benchmarks/bench_verifier_v3.py                 # the quick cells
    python benchmarks/bench_verifier_v3.py 100,10,0.7,0.445406 2,2,0.3,- fb:10,4,0.3,2,40
    python benchmarks/bench_verifier_v3.py --save DIR ...  # also write each predicate as JSON

A cell is M,E,target,sigma ("-": the exact sigma, found by the certifier) or, for fixed bins,
fb:M,E,target,sigma,iterations.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

time.perf_counter = time.process_time  # CPU seconds everywhere (see the docstring)

from certifier.certify import certify  # noqa: E402
from certifier.params import parse_decimal  # noqa: E402

QUICK = ["2,2,0.3,-", "fb:10,2,0.2,-,20", "5,2,0.3,0.967768"]
REPLAY = """
import json, sys, time
time.perf_counter = time.process_time
from verifier.replay.lower_v2 import replay_lower_v2
from verifier.replay.upper_v2 import replay_v2
from verifier.format.v3 import typed
p = typed(json.load(open(sys.argv[1])))
up = replay_v2(p["claim"], p["method"])
out = {"upper": up.seconds["total"], "bound": float(up.bound)}
if "lower" in p:
    lr = replay_lower_v2(p["claim"], p["lower"]["sigma_low"], p["lower"]["method"])
    out.update(lower=lr.seconds["total"], tv_lower=float(lr.bound))
print(json.dumps(out))
"""


def replay_in_fresh_process(pred: dict) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(pred, f)
    try:
        res = subprocess.run([sys.executable, "-c", REPLAY, f.name], capture_output=True, text=True, check=True)
        return json.loads(res.stdout)
    finally:
        os.unlink(f.name)


def run(cell: str, save: str | None = None) -> None:
    fb = cell.startswith("fb:")
    f = cell[3:].split(",") if fb else cell.split(",")
    M, E, lam, sig = int(f[0]), int(f[1]), f[2], f[3]
    kw = {"scheme": "fixed-bins", "iterations": int(f[4])} if fb else {}
    out = certify(M, E, parse_decimal("target", lam), None if sig == "-" else parse_decimal("sigma", sig),
                  two_sided=True, method="v2", **kw)
    if not out.success:
        print(f"| {cell} | not certified: bound {out.bound} |")
        return
    pred = out.predicate
    if save:
        with open(f"{save}/{cell.replace(':', '_').replace(',', '_')}.json", "w") as fh:
            json.dump(pred, fh)
    r = replay_in_fresh_process(pred)
    cu = pred["timings"]["total"]
    row = [cell, pred["claim"]["sigma"], f"{cu:.2f}", f"{r['upper']:.2f}", f"{r['upper'] / cu:.2f}", pred["bound"],
           f"{r['bound']:.13g}"]
    if "lower" in pred:
        cl = [t for t in out.lower_tries if t.get("certified")][-1]["seconds"]
        row += [f"{cl:.2f}", f"{r['lower']:.2f}", f"{r['lower'] / cl:.2f}", pred["lower"]["tv_lower"],
                f"{r['tv_lower']:.13g}"]
    print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    save = None
    if args[:1] == ["--save"]:
        save, args = args[1], args[2:]
    print("| cell | sigma | certifier upper s | replay upper s | ratio | bound | replayed | certifier lower s "
          "| replay lower s | ratio | tv_lower | replayed lower |")
    print("|" + " --- |" * 12)
    for c in args or QUICK:
        run(c, save)
