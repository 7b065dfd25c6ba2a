"""Benchmark: the stated target domain through the command line, inside and just outside (certifier.domain).

    python benchmarks/bench_domain_faces.py [--small] [--only inside|outside] [--json FILE]

inside   `sigmacert sigma` (a fresh process each, imports included) at every corner of the stated domain:
         M in {1, 1e7} x E in {1, 1e4} x (eps, delta) in {0.01, 20} x {1e-12, 0.1}; the TPR corners
         (1e-8, 1e-7), (1e-8, 0.5), (0.5, 0.6), (0.5, 0.99); fixed bins at M = 1e7; stage lists, one with
         the extreme blocks. Goal: every corner answers in <= 2 CPU s.
outside  the corners just outside (eps 0.009 / 20.5, delta 1e-13 / 0.2, FPR 1e-9, TPR <= FPR, E 2e4, a stage
         of E 2e4) through `sigma` and `certify`: one line, exit 2, the nearest target named, and the CPU
         seconds it took.

Prints one row per cell (CPU s of the child process: user + sys, its maximum resident set size, exit code,
the answer or the refusal) and a summary; the load average first and last (the machine is shared: CPU
seconds, not wall time). --small runs a few cells of each (tested in tests/bench).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOAL = 2.0

INSIDE = ([["-M", m, "-E", e, "--epsilon", eps, "--delta", d] for m in ("1", "10000000") for e in ("1", "10000")
           for eps in ("0.01", "20") for d in ("1e-12", "0.1")]
          + [["-M", m, "-E", e, "--fpr", a, "--tpr", b] for m in ("1", "10000000") for e in ("1", "10000")
             for a, b in (("1e-8", "1e-7"), ("1e-8", "0.5"), ("0.5", "0.6"), ("0.5", "0.99"))]
          + [["-M", "10000000", "-E", e, "--scheme", "fixed-bins", "--epsilon", eps, "--delta", d]
             for e in ("1", "10000") for eps in ("0.01", "20") for d in ("1e-12", "0.1")]
          + [["--stages", "100x5,400x5", "--epsilon", "1", "--delta", "1e-8"],
             ["--stages", "50x4,200x2", "--epsilon", "2", "--delta", "1e-6"],
             ["--stages", "1x1,10000000x10000", "--epsilon", "20", "--delta", "0.1"],
             ["--stages", "1x1,10000000x10000", "--epsilon", "0.01", "--delta", "1e-12"]])
OUTSIDE = [["-M", "100", "-E", "10", "--epsilon", "0.009", "--delta", "1e-5"],
           ["-M", "100", "-E", "10", "--epsilon", "20.5", "--delta", "1e-5"],
           ["-M", "100", "-E", "10", "--epsilon", "1", "--delta", "1e-13"],
           ["-M", "100", "-E", "10", "--epsilon", "1", "--delta", "0.2"],
           ["-M", "100", "-E", "10", "--fpr", "1e-9", "--tpr", "0.01"],
           ["-M", "100", "-E", "10", "--fpr", "0.01", "--tpr", "0.01"],
           ["-M", "20000000", "-E", "10", "--epsilon", "1", "--delta", "1e-5"],
           ["-M", "100", "-E", "20000", "--epsilon", "1", "--delta", "1e-5"],
           ["--stages", "100x5,200x20000", "--epsilon", "1", "--delta", "1e-5"]]
SMALL = {"inside": [INSIDE[i] for i in (0, 15, 17)], "outside": [OUTSIDE[i] for i in (1, 5)]}


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def cli(args: list[str]) -> dict:
    """One `sigmacert` process: its CPU seconds (user + sys of the child), max RSS (MB), exit code, output."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, "-m", "sigmacert", *args], stdout=out, stderr=err, cwd=ROOT, env=env)
        _, status, use = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"args": " ".join(args), "cpu": round(use.ru_utime + use.ru_stime, 2),
                "rss_mb": round(use.ru_maxrss / 1024), "rc": p.returncode, "out": out.read(),
                "err": err.read().strip()}


def inside_row(args: list[str]) -> dict:
    row = cli(["sigma", *args, "--json"])
    if row["rc"] == 0:
        o = json.loads(row["out"])
        row["answer"] = o["exact"]
        row["quick"] = {**o.get("quick_bounds", {}), **{k: "left out" for k in o.get("quick_bounds_omitted", {})}}
    else:
        row["answer"] = None
    return row


def outside_rows(args: list[str], key: str, out: str) -> list[dict]:
    rows = [cli(["sigma", *args]), cli(["certify", *args, "--key", key, "-o", out, "--quiet"])]
    for r, what in zip(rows, ("sigma", "certify")):
        r["face"], r["cell"] = what, " ".join(args)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a few cells of each")
    ap.add_argument("--only", choices=("inside", "outside"), help="one part only")
    ap.add_argument("--json", help="also write every row to this file")
    args = ap.parse_args(argv)
    cells = SMALL if args.small else {"inside": INSIDE, "outside": OUTSIDE}
    if args.only:
        cells = {args.only: cells[args.only]}
    print(load(), flush=True)
    rows: dict = {"inside": [], "outside": []}
    for a in cells.get("inside", []):
        r = inside_row(a)
        rows["inside"].append(r)
        what = r["answer"] if r["answer"] else "REFUSED: " + r["err"].splitlines()[-1][:200] if r["err"] else "?"
        print(f"| {r['args']} | {r['cpu']:.2f} | {r['rss_mb']} | {what} |", flush=True)
    if cells.get("outside"):
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([sys.executable, "-m", "sigmacert", "keygen", "-o", os.path.join(d, "k")], cwd=ROOT,
                           capture_output=True, check=True,
                           env={**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")})
            for a in cells["outside"]:
                for r in outside_rows(a, os.path.join(d, "k", "private.pem"), os.path.join(d, "c.json")):
                    rows["outside"].append(r)
                    print(f"| {r['face']} {r['cell']} | {r['cpu']:.2f} | exit {r['rc']} | "
                          f"{r['err']} |", flush=True)
    ins = rows["inside"]
    if ins:
        ok = [r for r in ins if r["answer"]]
        print(f"\ninside: {len(ins)} corners, {len(ok)} answered, {len(ins) - len(ok)} refused; "
              f"{sum(r['cpu'] <= GOAL for r in ok)} answered within {GOAL:g} CPU s; "
              f"max {max((r['cpu'] for r in ins), default=0):.2f} CPU s")
    outs = rows["outside"]
    if outs:
        one_line = sum(r["rc"] == 2 and len(r["err"].splitlines()) == 1 and
                       ("nearest" in r["err"] or "must be at most" in r["err"]) for r in outs)
        print(f"outside: {len(outs)} refusals, {one_line} one-line with the nearest target or limit; "
              f"max {max(r['cpu'] for r in outs):.2f} CPU s")
    print(load())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
