"""Cells of the cost models' recorded grids, and their measurement (benchmarks/bench_cost_model.py --measure).

A cell is a short text: `KIND[@fb]:ARGS` with KIND one of tv, dp, tpr and ARGS

    tv:M,E,LAMBDA            dp:M,E,EPSILON,DELTA            tpr:M,E,FPR,TPR

`@fb` asks for fixed bins (`--scheme fixed-bins`); a run in stages names its stages instead of M,E:
`dp:100x5+400x5,2,1e-8`. `request(cell)` is the service's request for it, `argv(cell)` certify's options.
`measure(cell)` runs `sigmacert certify` (the exact sigma, two-sided) and `sigmacert-verify --json` in child
processes and reads their CPU seconds (user + sys) and peak RSS from wait4, with the verifier's own prediction
(its `cost`) and the certificate's predicate (so that the verifier's cost model can be checked against the
record without replaying it).
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time

KIND_ARGS = {"tv": ("--target",), "dp": ("--epsilon", "--delta"), "tpr": ("--fpr", "--tpr")}


def parse(cell: str) -> dict:
    """{'kind', 'fixed_bins', 'stages' or 'M', 'E', 'params': [...]} of a cell text."""
    head, _, rest = cell.partition(":")
    kind, _, scheme = head.partition("@")
    if kind not in KIND_ARGS or scheme not in ("", "fb") or not rest:
        raise ValueError(f"not a cell: {cell!r}")
    fields = rest.split(",")
    out = {"kind": kind, "fixed_bins": scheme == "fb"}
    if "x" in fields[0]:
        out["stages"] = [tuple(int(v) for v in s.split("x")) for s in fields[0].split("+")]
        params = fields[1:]
    else:
        out["M"], out["E"] = int(fields[0]), int(fields[1])
        params = fields[2:]
    if len(params) != len(KIND_ARGS[kind]):
        raise ValueError(f"{kind} takes {len(KIND_ARGS[kind])} parameters: {cell!r}")
    out["params"] = params
    return out


def argv(cell: str) -> list[str]:
    c = parse(cell)
    a = (["--stages", ",".join(f"{m}x{e}" for m, e in c["stages"])] if "stages" in c
         else ["--steps", str(c["M"]), "--epochs", str(c["E"])])
    if c["fixed_bins"]:
        a += ["--scheme", "fixed-bins"]
    for opt, v in zip(KIND_ARGS[c["kind"]], c["params"]):
        a += [opt, v]
    return a


def request(cell: str, sigma: str | None = None) -> dict:
    """The service's job request (service.validate's shape) for the cell."""
    c = parse(cell)
    req = {"scheme": "fixed-bins" if c["fixed_bins"] else "random-allocation", "sigma": sigma}
    if "stages" in c:
        req["stages"] = [{"steps": m, "epochs": e} for m, e in c["stages"]]
    else:
        req["steps"], req["epochs"] = c["M"], c["E"]
    if c["kind"] == "tv":
        req["target"] = c["params"][0]
    elif c["kind"] == "dp":
        req["kind"], req["target"] = {"name": "dp", "epsilon": c["params"][0]}, c["params"][1]
    else:
        req["kind"], req["target"] = {"name": "tpr", "fpr": c["params"][0]}, c["params"][1]
    return req


def run_measured(cmd: list[str], timeout: float | None = None) -> tuple[float, float, int, bytes, bytes]:
    """(CPU seconds, peak RSS MB, exit code, stdout, stderr) of a child and its descendants (wait4)."""
    with open(os.devnull, "rb") as null:
        import tempfile
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            p = subprocess.Popen(cmd, stdin=null, stdout=out, stderr=err)
            t0 = time.monotonic()
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if timeout is not None and time.monotonic() - t0 > timeout:
                    p.kill()
                time.sleep(0.2)
            p.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1e3, p.returncode, out.read(), err.read()


def measure(cell: str, workdir: str, key: str, timeout: float = 1800.0) -> dict:
    """Certify the cell (exact sigma, two-sided) and verify its certificate, each in its own process."""
    py = sys.executable
    cert = os.path.join(workdir, cell.replace(":", "_").replace(",", "_").replace("@", "_") + ".json")
    row = {"cell": cell, "load": round(os.getloadavg()[0], 2), "when": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())}
    cpu, mb, code, out, err = run_measured([py, "-m", "sigmacert", "certify", *argv(cell), "--key",
                                            os.path.join(key, "private.pem"), "-o", cert, "--force", "--json",
                                            "--quiet"], timeout)
    row.update(certify_cpu=round(cpu, 2), certify_mb=round(mb, 1), certify_exit=code)
    if code != 0:
        row["certify_error"] = (err.decode(errors="replace").strip().splitlines() or [""])[-1][:300]
        return row
    summary = json.loads(out)
    row["two_sided"] = bool(summary.get("two_sided"))
    with open(cert) as f:
        env = json.load(f)
    statement = json.loads(base64.b64decode(env["payload"]))
    row["predicate_type"] = statement["predicateType"]
    row["predicate"] = statement["predicate"]
    row["tries"] = [len(summary.get("tries") or []), len(summary.get("lower_tries") or [])]
    row["sigma"] = statement["predicate"]["claim"].get("sigma")
    cpu, mb, code, out, err = run_measured([py, "-m", "verifier", cert, "--key", os.path.join(key, "public.pem"),
                                            "--json"], timeout)
    row.update(verify_cpu=round(cpu, 2), verify_mb=round(mb, 1), verify_exit=code)
    try:
        v = json.loads(out)
        row["verify_result"] = v.get("result")
        row["verify_predicted"] = {"seconds": v["cost"]["seconds"], "memory": v["cost"]["memory"]}
    except (ValueError, KeyError, TypeError):
        row["verify_error"] = (err.decode(errors="replace").strip().splitlines() or [""])[-1][:300]
    return row


def write_grid(rows: list[dict], path: str, source: str) -> None:
    """The grid file: {"source", "cells": [...]}, a cell a line (diffs stay readable)."""
    with open(path, "w") as f:
        f.write('{"source": ' + json.dumps(source) + ',\n"cells": [\n')
        f.write(",\n".join(json.dumps(r, sort_keys=True) for r in rows))
        f.write("\n]}\n")


def main(argv_=None) -> int:
    """python benchmarks/cost_cells.py OUT.jsonl CELL ...: measure the cells one after the other, a JSON line each."""
    import argparse
    import tempfile
    ap = argparse.ArgumentParser(prog="python benchmarks/cost_cells.py",
                                 description="Measure cells of the cost models' grids (certify and verify, CPU s "
                                             "and peak RSS), appending one JSON line per cell to OUT.")
    ap.add_argument("out", metavar="OUT.jsonl", help="the file the rows are appended to")
    ap.add_argument("cells", nargs="*", metavar="CELL", help="cells as in this module's docstring (tv:M,E,LAMBDA ...)")
    ap.add_argument("--small", action="store_true", help="measure one small cell (tv:10,1,0.3) only")
    args = ap.parse_args(argv_)
    cells = ["tv:10,1,0.3"] if args.small else args.cells
    if not cells:
        ap.error("give at least one CELL (or --small)")
    d = tempfile.mkdtemp(prefix="cost-cells-")
    subprocess.run([sys.executable, "-m", "sigmacert", "keygen", "-o", d + "/k"], check=True, capture_output=True)
    for cell in cells:
        row = measure(cell, d, d + "/k")
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"{cell}: certify {row['certify_cpu']} CPU s {row['certify_mb']} MB; verify {row.get('verify_cpu')} "
              f"CPU s {row.get('verify_mb')} MB (load {row['load']})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
