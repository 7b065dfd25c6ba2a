"""The service's calibrated cost model (service/costmodel.py) against measured certify and replay cost.

    python benchmarks/bench_cost_model.py                     # predicted / recorded over the corner grid
    python benchmarks/bench_cost_model.py --fit               # refit service/cost_calibration.json on it
    python benchmarks/bench_cost_model.py --measure 100,10,0.1 3,5000,0.3 [--json OUT]   # run and measure
    python benchmarks/bench_cost_model.py --small             # three small cells measured live (seconds)

The recorded grid is benchmarks/data/corner_grid.json (docs/coverage.md's corner grid: certify and the
verifier, CPU seconds and peak RSS per cell, each in its own process). For each cell the feature is the plan
certify runs first (service.costmodel.plan: the planner's seconds for both sides at the numerics' margins),
about a second per cell. The table shows, for certify and for the replay, predicted / actual CPU seconds and
peak memory, and the admission's former prediction (service.admission.predicted_seconds: the closed-form
sigma, a fixed loss budget, doubled) beside certify's seconds. Goals (docs/reliability.md): time within
[0.5, 2], memory within [1/1.5, 1.5]. `--fit` refits the model (least squares in logs) and prints its
leave-one-out ratios as well: a fit judged on the cells it was fitted to flatters itself.
`--measure` runs `sigmacert certify` (exact sigma, two-sided) and `sigmacert-verify` per cell in child
processes and reads their CPU time and peak RSS (wait4).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DATA = os.path.join(ROOT, "benchmarks", "data", "corner_grid.json")
TARGETS = ("certify_cpu", "certify_mb", "verify_cpu", "verify_mb")
SMALL = ["2,1,0.3", "3,2,0.5", "1,1,0.1"]


def recorded() -> list[dict]:
    with open(DATA) as f:
        return json.load(f)["cells"]


def with_features(cells: list[dict], say=print) -> list[dict]:
    from service.costmodel import plan
    out = []
    for c in cells:
        t0 = time.perf_counter()
        try:
            planned, v2, m, e, lam = plan(c["M"], c["E"], c["target"], c.get("sigma"), "random-allocation")
        except Exception as err:  # a cell the planner refuses: reported, not fitted
            say(f"  ({c['M']}, {c['E']}, {c['target']}): no plan: {type(err).__name__}: {str(err)[:120]}")
            continue
        out.append({**c, "planned": planned, "v2": v2, "feature_seconds": time.perf_counter() - t0})
    return out


def old_prediction(c: dict) -> float | None:
    from service.admission import predicted_seconds
    try:
        return predicted_seconds(c["M"], c["E"], c["target"], None, "random-allocation")
    except Exception:
        return None


def fit(cells: list[dict]) -> dict:
    import numpy as np

    from service.costmodel import features
    rows = [c for c in cells if c["M"] > 1]
    A = np.array([features(c["planned"], c["M"], c["E"], float(c["target"]), c["v2"]) for c in rows])
    coef, loo = {}, {}
    for t in TARGETS:
        ok = [i for i, c in enumerate(rows) if c.get(t)]
        y = np.array([math.log(max(rows[i][t], 0.05)) for i in ok])
        coef[t] = [float(v) for v in np.linalg.lstsq(A[ok], y, rcond=None)[0]]
        r = []
        for k in range(len(ok)):
            keep = np.ones(len(ok), bool)
            keep[k] = False
            ck = np.linalg.lstsq(A[ok][keep], y[keep], rcond=None)[0]
            r.append(float(math.exp(A[ok][k] @ ck - y[k])))
        loo[t] = r
    gs = [c for c in cells if c["M"] == 1]
    med = lambda k: sorted(c[k] for c in gs)[len(gs) // 2]  # noqa: E731
    return {"coefficients": coef, "gaussian_shift": {k: med(k) for k in TARGETS},
            "features": "1, ln(planned + 0.5), ln E, ln M, v2, v2 ln E, v2 ln M, lambda, v2 lambda",
            "cells": len(rows), "source": os.path.relpath(DATA, ROOT)}, loo


def run_measured(cmd: list[str]) -> tuple[float, float, int]:
    """(CPU seconds, peak RSS MB, exit code) of a child (wait4)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1e3, p.returncode


def measure(cells: list[str], say=print) -> list[dict]:
    d = tempfile.mkdtemp(prefix="bench-cost-")
    subprocess.run([sys.executable, "-m", "sigmacert", "keygen", "-o", d + "/k"], check=True, capture_output=True)
    out = []
    for text in cells:
        m, e, lam = text.split(",")
        cert = os.path.join(d, f"{m}_{e}_{lam}.json")
        cpu, mb, code = run_measured([sys.executable, "-m", "sigmacert", "certify", "--steps", m, "--epochs", e,
                                      "--target", lam, "--key", d + "/k/private.pem", "-o", cert, "--json"])
        c = {"M": int(m), "E": int(e), "target": lam, "certify_cpu": cpu, "certify_mb": mb, "load": os.getloadavg()[0]}
        if code == 0:
            with open(cert) as f:
                env = json.load(f)
            import base64
            c["sigma"] = json.loads(base64.b64decode(env["payload"]))["predicate"]["claim"]["sigma"]
            vcpu, vmb, vcode = run_measured([sys.executable, "-m", "verifier", cert, "--key", d + "/k/public.pem"])
            c.update(verify_cpu=vcpu, verify_mb=vmb, verified=vcode == 0)
        say(f"  measured {text}: certify {cpu:.1f} CPU s, {mb:.0f} MB; verify {c.get('verify_cpu', 0):.1f} CPU s, "
            f"{c.get('verify_mb', 0):.0f} MB (load {c['load']:.2f})")
        out.append(c)
    subprocess.run(["rm", "-rf", d])
    return out


def table(cells: list[dict], old: bool = True) -> tuple[str, dict]:
    from service.costmodel import from_plan
    head = ("| M | E | λ | method | planned s | certify CPU s | pred. | ratio | former pred. | former ratio | "
            "verify CPU s | pred. | ratio | certify MB | pred. | ratio | verify MB | pred. | ratio |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    ratios = {t: [] for t in TARGETS}
    former = []
    for c in cells:
        p = from_plan(c["planned"], c["M"], c["E"], float(c["target"]), c["v2"])
        pred = {"certify_cpu": p.certify_seconds, "verify_cpu": p.replay_seconds,
                "certify_mb": p.certify_memory / 1e6, "verify_mb": p.replay_memory / 1e6}
        r = {}
        for t in TARGETS:
            if c.get(t):
                r[t] = pred[t] / max(c[t], 0.05)
                ratios[t].append(r[t])
        f = old_prediction(c) if old and c["M"] > 1 else None
        fr = f / max(c["certify_cpu"], 0.05) if f else None
        if fr:
            former.append(fr)
        fmt = lambda v, d=1: "" if v is None else f"{v:.{d}f}"  # noqa: E731
        lines.append(f"| {c['M']} | {c['E']} | {c['target']} | {'v2' if c['v2'] else ('gs' if c['M'] == 1 else 'v1')} "
                     f"| {fmt(c['planned'])} | {fmt(c.get('certify_cpu'))} | {fmt(pred['certify_cpu'])} | "
                     f"{fmt(r.get('certify_cpu'), 2)} | {fmt(f)} | {fmt(fr, 2)} | {fmt(c.get('verify_cpu'))} | "
                     f"{fmt(pred['verify_cpu'])} | {fmt(r.get('verify_cpu'), 2)} | {fmt(c.get('certify_mb'), 0)} | "
                     f"{fmt(pred['certify_mb'], 0)} | {fmt(r.get('certify_mb'), 2)} | {fmt(c.get('verify_mb'), 0)} | "
                     f"{fmt(pred['verify_mb'], 0)} | {fmt(r.get('verify_mb'), 2)} |")
    summary = {}
    for t, rs in list(ratios.items()) + [("former certify_cpu", former)]:
        band = (1 / 1.5, 1.5) if t.endswith("mb") else (0.5, 2.0)
        if rs:
            summary[t] = {"cells": len(rs), "within": sum(band[0] <= x <= band[1] for x in rs),
                          "band": [round(band[0], 3), band[1]], "min": round(min(rs), 3), "max": round(max(rs), 3),
                          "under 2x": sum(x < 0.5 for x in rs)}
    return "\n".join(lines), summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_cost_model.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", action="store_true", help="refit service/cost_calibration.json on the recorded grid")
    ap.add_argument("--measure", nargs="+", metavar="M,E,LAMBDA", help="run and measure these cells")
    ap.add_argument("--small", action="store_true", help=f"measure {' '.join(SMALL)} live (seconds)")
    ap.add_argument("--json", help="write the rows and the summary here")
    ap.add_argument("--markdown", help="write the table here")
    args = ap.parse_args(argv)
    say = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    if args.small or args.measure:
        cells = with_features(measure(SMALL if args.small else args.measure, say), say)
    else:
        cells = with_features(recorded(), say)
    if args.fit:
        from service.costmodel import CALIBRATION
        cal, loo = fit(cells)
        with open(CALIBRATION, "w") as f:
            json.dump(cal, f, indent=1)
            f.write("\n")
        from service.costmodel import calibration
        calibration.cache_clear()
        for t, r in loo.items():
            band = (1 / 1.5, 1.5) if t.endswith("mb") else (0.5, 2.0)
            print(f"leave-one-out {t}: {sum(band[0] <= x <= band[1] for x in r)}/{len(r)} within "
                  f"[{band[0]:.3g}, {band[1]:g}], range {min(r):.2f}-{max(r):.2f}")
    text, summary = table(cells)
    print(text)
    for t, s in summary.items():
        print(f"{t}: {s['within']}/{s['cells']} within [{s['band'][0]:.3g}, {s['band'][1]:g}], ratio {s['min']}-"
              f"{s['max']}, under-predicted more than 2x: {s['under 2x']}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cells": cells, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
