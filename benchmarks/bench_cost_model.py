"""The service's calibrated cost model (service/costmodel.py) against measured certify and replay cost.

    python benchmarks/bench_cost_model.py                     # predicted / recorded over the recorded grids
    python benchmarks/bench_cost_model.py --fit               # refit service/cost_calibration.json on them
    python benchmarks/bench_cost_model.py --measure dp:100,10,8,1e-5 tv:3,5000,0.3 [--record] [--json OUT]
    python benchmarks/bench_cost_model.py --small             # three small cells measured live (seconds)

Recorded grids: benchmarks/data/corner_grid.json (docs/coverage.md's corner grid, tv in random allocation) and
benchmarks/data/kinds_grid.json (dp / tpr kinds, fixed bins, stages, the tails issue's cells and a sample of
tv corner cells measured again, each with its certificate's predicate); certify and the verifier, CPU seconds
(user + sys) and peak RSS, each in its own process. A cell is written as in benchmarks/cost_cells.py
(`tv:M,E,LAMBDA`, `dp:M,E,EPS,DELTA`, `tpr:M,E,FPR,TPR`, `@fb` for fixed bins, `100x5+400x5` for stages).
The feature of each cell is the plan certify runs first (service.costplan, about a second per cell). The table
shows, for certify and for the replay, predicted / actual CPU seconds and peak memory; goals
(docs/reliability.md): time within [0.5, 2], memory within [1/1.5, 1.5]. "LOO" refits without the cell (its
residual too) and predicts it: the honest figure for a cell the model has not seen. `--measure` runs `sigmacert
certify` (exact sigma, two-sided) and `sigmacert-verify` per cell in child processes (wait4); `--record` adds
the rows to kinds_grid.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import cost_cells  # noqa: E402

CORNER = os.path.join(ROOT, "benchmarks", "data", "corner_grid.json")
KINDS = os.path.join(ROOT, "benchmarks", "data", "kinds_grid.json")
TARGETS = ("certify_cpu", "certify_mb", "verify_cpu", "verify_mb")
SMALL = ["tv:2,1,0.3", "tv:3,2,0.5", "tv:1,1,0.1"]


def band(t: str) -> tuple[float, float]:
    return (1 / 1.5, 1.5) if t.endswith("mb") else (0.5, 2.0)


def recorded() -> list[dict]:
    """Every recorded cell as {'cell', 'sigma', the four figures, 'source'}."""
    rows = []
    with open(CORNER) as f:
        for c in json.load(f)["cells"]:
            rows.append({"cell": f"tv:{c['M']},{c['E']},{c['target']}", "sigma": c["sigma"], "source": "corner",
                         **{t: c.get(t) for t in TARGETS}})
    if os.path.exists(KINDS):
        with open(KINDS) as f:
            for c in json.load(f)["cells"]:
                if c.get("certify_exit") == 0 and c.get("verify_exit") == 0:
                    rows.append({**c, "source": "kinds"})
    return rows


def stored_plans() -> dict:
    """The plans stored with the calibration, by (cell, sigma)."""
    from service.costmodel import calibration
    from service.costplan import Plan
    cal = calibration()
    return {(r["cell"], r.get("sigma")): Plan(**r["plan"]) for fam in cal["families"].values()
            for r in fam["residuals"] if "plan" in r}


def with_plans(cells: list[dict], say=print, stored: dict | None = None) -> list[dict]:
    from service.costplan import Plan, request_plan
    out = []
    for c in cells:
        t0 = time.process_time()
        try:
            if c["cell"].startswith("tv:1,"):
                plan = Plan("gs", 0.0, 0.0, False, False, 1, 1, float(c["cell"].split(",")[-1]))
            elif stored and (c["cell"], c.get("sigma")) in stored:
                plan = stored[(c["cell"], c.get("sigma"))]
            else:
                plan = request_plan(cost_cells.request(c["cell"], c.get("sigma")))
        except Exception as err:  # a cell the planners refuse: reported, not fitted
            say(f"  {c['cell']}: no plan: {type(err).__name__}: {str(err)[:160]}")
            continue
        out.append({**c, "plan": plan, "feature_seconds": round(time.process_time() - t0, 3)})
    return out


def fit(cells: list[dict]) -> tuple[dict, dict]:
    """The calibration (per family: least squares in logs and the cells' residuals) and its leave-one-out ratios
    (predicted / actual, the cell and its residual left out)."""
    import numpy as np

    from service.costmodel import FAMILY_FEATURES, features, pull
    cal = {"families": {}, "probe_cpu_seconds": None, "source": [os.path.relpath(p, ROOT) for p in (CORNER, KINDS)]}
    loo = {}
    for family in FAMILY_FEATURES:
        rows = [c for c in cells if c["plan"].family == family]
        A = np.array([features(c["plan"]) for c in rows])
        coef, res = {}, [{"coord": [round(v, 4) for v in c["plan"].coord], "cell": c["cell"], "sigma": c.get("sigma"),
                          "plan": {k: float(f"{v:.7g}") if isinstance(v, float) else v for k, v in vars(c["plan"]).items()}}
                         for c in rows]
        for t in TARGETS:
            ok = [i for i, c in enumerate(rows) if c.get(t)]
            y = np.array([math.log(max(rows[i][t], 0.05)) for i in ok])
            beta = np.linalg.lstsq(A[ok], y, rcond=None)[0]
            coef[t] = [float(v) for v in beta]
            for i, r in zip(ok, y - A[ok] @ beta):
                res[i][t] = round(float(r), 4)
            ratios = []
            for k in range(len(ok)):
                keep = np.ones(len(ok), bool)
                keep[k] = False
                bk = np.linalg.lstsq(A[ok][keep], y[keep], rcond=None)[0]
                others = [{"coord": res[i]["coord"], t: float(r)}
                          for i, r in zip(np.array(ok)[keep], y[keep] - A[ok][keep] @ bk)]
                ratios.append(math.exp(A[ok][k] @ bk + pull(others, rows[ok[k]]["plan"].coord, t) - y[k]))
            loo[(family, t)] = dict(zip([rows[i]["cell"] + f"#{i}" for i in ok], ratios))
        cal["families"][family] = {"features": list(FAMILY_FEATURES[family]), "coefficients": coef,
                                   "cells": len(rows), "residuals": res}
    gs = [c for c in cells if c["plan"].family == "gs" and c["source"] == "corner"]
    med = lambda k: sorted(c[k] for c in gs)[len(gs) // 2]  # noqa: E731
    cal["gaussian_shift"] = {k: med(k) for k in TARGETS}
    return cal, loo


def predictions(cells: list[dict], cal: dict | None = None) -> list[dict]:
    from service.costmodel import from_plan
    out = []
    for c in cells:
        p = from_plan(c["plan"], 1.0, cal)
        pred = {"certify_cpu": p.certify_seconds, "verify_cpu": p.replay_seconds,
                "certify_mb": p.certify_memory / 1e6, "verify_mb": p.replay_memory / 1e6}
        out.append({**c, "predicted": pred,
                    "ratio": {t: pred[t] / max(c[t], 0.05) for t in TARGETS if c.get(t)}})
    return out


def summary(ratios: list[float], t: str) -> dict:
    lo, hi = band(t)
    return {"cells": len(ratios), "within": sum(lo <= x <= hi for x in ratios), "min": round(min(ratios), 3),
            "max": round(max(ratios), 3), "under 2x": sum(x < 0.5 for x in ratios)}


def table(rows: list[dict], loo: dict | None = None) -> str:
    head = ("| cell | σ | plan s (up + lo) | certify CPU s | pred. | ratio | replay CPU s | pred. | ratio | "
            "certify MB | pred. | ratio | replay MB | pred. | ratio |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    fmt = lambda v, d=1: "" if v is None else f"{v:.{d}f}"  # noqa: E731
    for c in rows:
        p = c["plan"]
        meth = "gs" if p.family == "gs" else "/".join("v2" if x else "v1" for x in (p.up_v2, p.lo_v2))
        plan = f"{p.up:.1f} + {p.lo:.1f} {meth}" if p.family == "tv" else (f"{p.up:.1f}" if p.family == "other" else "")
        cells = []
        for t in ("certify_cpu", "verify_cpu", "certify_mb", "verify_mb"):
            d = 0 if t.endswith("mb") else 1
            cells += [fmt(c.get(t), d), fmt(c["predicted"][t], d), fmt(c["ratio"].get(t), 2)]
        lines.append(f"| {c['cell']} | {c.get('sigma') or ''} | {plan} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verifier_rows(say=print) -> tuple[list[dict], dict]:
    """The verifier's cost model (verifier/cost.py) against the recorded replays of kinds_grid.json: each row's
    predicate typed as the verifier types it, its raw (step models) and calibrated predictions, and per group
    (verifier.cost.calibration_key) the median of raw / actual: the factors CALIBRATION should hold."""
    from verifier.cost import BASE_MEMORY, calibration_key, predict, raw_predict
    from verifier.format.statement import FORMATS
    rows, groups = [], {}
    with open(KINDS) as f:
        cells = [c for c in json.load(f)["cells"] if c.get("verify_exit") == 0 and c.get("predicate_type")]
    for c in cells:
        typed, check = FORMATS[c["predicate_type"]]
        p = typed(c["predicate"])
        check(p)
        if p["method"]["name"] == "gaussian-shift":
            continue
        raw, cal = raw_predict(p), predict(p)
        r = {"cell": c["cell"], "group": calibration_key(p), "verify_cpu": c["verify_cpu"], "verify_mb": c["verify_mb"],
             "certify_mb": c["certify_mb"], "raw_seconds": raw.seconds, "raw_mb": (BASE_MEMORY + raw.memory) / 1e6,
             "seconds": cal.seconds, "mb": (BASE_MEMORY + cal.memory) / 1e6}
        r["ratio_seconds"], r["ratio_mb"] = r["seconds"] / c["verify_cpu"], r["mb"] / c["verify_mb"]
        rows.append(r)
        g = groups.setdefault(r["group"], {"seconds": [], "memory": []})
        g["seconds"].append(0.0)
        g["memory"].append(r["raw_mb"] / c["verify_mb"])
        g["seconds"][-1] = raw.seconds / c["verify_cpu"]
    med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else sum(sorted(v)[len(v) // 2 - 1:][:2]) / 2  # noqa: E731
    factors = {k: (round(med(v["seconds"]), 2), round(med(v["memory"]), 2), len(v["seconds"])) for k, v in groups.items()}
    return rows, factors


def verifier_table(rows: list[dict]) -> str:
    head = ("| cell | group | replay CPU s | raw pred. | pred. | ratio | replay MB | raw pred. | pred. | ratio | "
            "certify MB |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        lines.append(f"| {r['cell']} | {r['group']} | {r['verify_cpu']:.1f} | {r['raw_seconds']:.1f} | "
                     f"{r['seconds']:.1f} | {r['ratio_seconds']:.2f} | {r['verify_mb']:.0f} | {r['raw_mb']:.0f} | "
                     f"{r['mb']:.0f} | {r['ratio_mb']:.2f} | {r['certify_mb']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_cost_model.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", action="store_true", help="refit service/cost_calibration.json on the recorded grids")
    ap.add_argument("--measure", nargs="+", metavar="CELL", help="run and measure these cells (cost_cells syntax)")
    ap.add_argument("--record", action="store_true", help="with --measure: add the rows to kinds_grid.json")
    ap.add_argument("--small", action="store_true", help=f"measure {' '.join(SMALL)} live (seconds)")
    ap.add_argument("--stored-plans", action="store_true",
                    help="reuse the plans stored with the calibration (only new cells are planned)")
    ap.add_argument("--verifier", action="store_true",
                    help="the verifier's cost model (verifier/cost.py) against the recorded replays")
    ap.add_argument("--json", help="write the rows and the summary here")
    ap.add_argument("--markdown", help="write the table here")
    args = ap.parse_args(argv)
    say = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    if args.verifier:
        rows, factors = verifier_rows(say)
        print(verifier_table(rows))
        for t, key in (("seconds", "ratio_seconds"), ("memory", "ratio_mb")):
            rs = [r[key] for r in rows]
            s = summary(rs, "verify_cpu")
            print(f"verifier {t}: {s['within']}/{s['cells']} within [0.5, 2], ratio {s['min']}-{s['max']}, "
                  f"under-predicted more than 2x: {s['under 2x']}")
        print("raw / actual by group, median (seconds, peak memory, cells):", factors)
        heavier = [r["cell"] for r in rows if r["verify_mb"] > r["certify_mb"]]
        print(f"replay heavier than certify (peak RSS): {len(heavier)} of {len(rows)} {heavier}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rows": rows, "factors": factors}, f, indent=1)
        return 0
    if args.small or args.measure:
        import subprocess
        d = tempfile.mkdtemp(prefix="bench-cost-")
        subprocess.run([sys.executable, "-m", "sigmacert", "keygen", "-o", d + "/k"], check=True, capture_output=True)
        measured = []
        for cell in (SMALL if args.small else args.measure):
            row = cost_cells.measure(cell, d, d + "/k")
            say(f"  measured {cell}: certify {row['certify_cpu']} CPU s, {row['certify_mb']} MB; verify "
                f"{row.get('verify_cpu')} CPU s, {row.get('verify_mb')} MB (load {row['load']})")
            measured.append(row)
        subprocess.run(["rm", "-rf", d])
        if args.record:
            with open(KINDS) as f:
                data = json.load(f)
            data["cells"] += measured
            cost_cells.write_grid(data["cells"], KINDS, data["source"])   # a cell a line, as recorded
        cells = with_plans([c for c in measured if c.get("certify_exit") == 0], say)
    else:
        cells = with_plans(recorded(), say, stored_plans() if args.stored_plans else None)
    loo = None
    cal = None
    if args.fit:
        from service.costmodel import CALIBRATION, calibration, probe_seconds
        cal, loo = fit(cells)
        cal["probe_cpu_seconds"] = round(min(probe_seconds() for _ in range(3)), 6)
        with open(CALIBRATION, "w") as f:
            json.dump(cal, f, indent=1)
            f.write("\n")
        calibration.cache_clear()
    rows = predictions(cells, cal)
    print(table(rows))
    out = {}
    for family in ("tv", "other", "gs"):
        fam = [r for r in rows if r["plan"].family == family]
        for t in TARGETS:
            rs = [r["ratio"][t] for r in fam if t in r["ratio"]]
            if rs:
                s = out[f"{family} {t}"] = summary(rs, t)
                lo, hi = band(t)
                line = (f"{family} {t}: {s['within']}/{s['cells']} within [{lo:.3g}, {hi:g}], ratio {s['min']}-"
                        f"{s['max']}, under-predicted more than 2x: {s['under 2x']}")
                if loo and (family, t) in loo:
                    ls = out[f"{family} {t} loo"] = summary(list(loo[(family, t)].values()), t)
                    line += (f"; leave-one-out {ls['within']}/{ls['cells']}, {ls['min']}-{ls['max']}, "
                             f"under 2x: {ls['under 2x']}")
                print(line)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table(rows) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cells": [{k: v for k, v in r.items() if k not in ("plan", "predicate")} |
                                 {"plan": vars(r["plan"])} for r in rows], "summary": out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
