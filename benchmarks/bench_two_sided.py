"""Benchmark: two-sided (v2) certificates at the nine cells of Table 4 (lambda = 0.1, paper's exact sigma).

    python benchmarks/bench_two_sided.py [--cells 0,3] [--key PRIVATE.pem --out DIR] [--json]

Each cell runs in its own subprocess (one at a time): `certify(..., two_sided=True)` at the
paper's exact sigma (= sigma_high), then the numerical eps(1e-5) and optimal TPR at FPR 1e-3
of the pair (certifier.numerics.tradeoff, floating point) for comparison. Columns:
sigma_high, sigma_low, their gap, tv_upper (the v1 bound at sigma_high), tv_lower at
sigma_low, certified eps(1e-5) vs numerical (and the relative excess), certified TPR(1e-3)
vs the pair's, `upper s` (the one-sided part of the certify call: numerics, grid, bound),
`lower s` (the extra seconds of the lower side incl. its exact-TV numerics at sigma_low),
`rows s` (the privacy and TPR rows), and the verifier's replay time and verdict.

Goals: sigma_high = the paper's exact sigma, sigma_high - sigma_low <= 2e-6 where the
margin allows, eps(1e-5) within 1 % of the numerical eps and inside or just above the
paper's 0.939-1.022, TPR(1e-3) within 10 % of the pair's value (Table 3: 0.0023 at M=100, E=10).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.bench_certify import CELLS, TARGET, write_certificate  # noqa: E402


def run_cell(i: int, key: str | None, out: str | None) -> dict:
    from certifier.certify import certify
    from certifier.numerics.tradeoff import epsilon_at_delta, optimal_tpr, pair_density
    from certifier.params import parse_decimal
    M, E, s = CELLS[i]
    t0, c0 = time.perf_counter(), time.process_time()
    res = certify(M, E, parse_decimal("target", TARGET), parse_decimal("sigma", s), two_sided=True)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    d = pair_density(M, E, float(s))
    eps_num = epsilon_at_delta(d, 1e-5)
    tpr_num = optimal_tpr(d, 1e-3)
    row = {"M": M, "E": E, "sigma_high": res.sigma, "certified": res.success, "two_sided": res.two_sided,
           "sigma_low": res.sigma_low, "tv_upper": res.bound, "tv_lower": res.tv_lower,
           "eps_cert": res.privacy["epsilon_at_delta"]["1e-05"]["epsilon"] if res.privacy else None,
           "eps_1e6_cert": res.privacy["epsilon_at_delta"]["1e-06"]["epsilon"] if res.privacy else None,
           "eps_num": eps_num, "tpr_cert": res.tpr["0.001"]["tpr"] if res.tpr else None, "tpr_num": tpr_num,
           "seconds": round(secs, 2), "cpu_seconds": round(cpu, 2),
           "lower_seconds": res.lower_seconds, "privacy_seconds": res.privacy_seconds,
           "upper_seconds": round(secs - (res.lower_seconds or 0) - (res.privacy_seconds or 0), 2),
           "lower_tries": res.lower_tries,
           "cert": write_certificate(res, key, out) if res.success and key and out else None}
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default=",".join(str(i) for i in range(len(CELLS))))
    ap.add_argument("--key")
    ap.add_argument("--out")
    ap.add_argument("--no-replay", action="store_true", help="skip the verifier's replay")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode
    a = ap.parse_args()
    if a.one is not None:
        print(json.dumps(run_cell(a.one, a.key, a.out)))
        return 0
    tmp = None
    if not (a.key and a.out):
        import tempfile

        from certifier.certificate.keys import keygen
        tmp = tempfile.TemporaryDirectory()
        keygen(os.path.join(tmp.name, "keys"))
        a.key, a.out = os.path.join(tmp.name, "keys", "private.pem"), os.path.join(tmp.name, "certs")
    pub = os.path.join(os.path.dirname(a.key), "public.pem")
    from benchmarks.bench_certify import replay
    hdr = (f"{'M':>4} {'E':>3} {'sigma_high':>10} {'sigma_low':>10} {'gap':>7} {'tv_upper':>13} {'tv_lower':>13} "
           f"{'eps(1e-5)':>9} {'eps num':>8} {'excess':>7} {'tpr(1e-3)':>11} {'tpr num':>9} {'ratio':>6} "
           f"{'upper s':>7} {'lower s':>7} {'rows s':>6} {'replay s':>8} {'ok':>3}")
    if not a.json:
        print(hdr, flush=True)
    rows = []
    for i in [int(x) for x in a.cells.split(",")]:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", str(i), "--key", a.key, "--out", a.out]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if p.returncode != 0:
            print(f"cell {CELLS[i]} failed: {p.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
        rep = ({"accepted": None, "seconds": float("nan")} if a.no_replay or not r["cert"]
               else replay(r["cert"], pub))
        r["replay_seconds"], r["replay_accepted"] = rep["seconds"], rep["accepted"]
        gap = (float(r["sigma_high"]) - float(r["sigma_low"])) if r["sigma_low"] else float("nan")
        r["gap"] = round(gap, 9)
        r["eps_excess"] = (float(r["eps_cert"]) / r["eps_num"] - 1) if r["eps_cert"] else None
        r["tpr_ratio"] = float(r["tpr_cert"]) / r["tpr_num"] if r["tpr_cert"] else None
        rows.append(r)
        if not a.json:
            ok = {True: "yes", False: "NO", None: "-"}[r["replay_accepted"]]
            print(f"{r['M']:>4} {r['E']:>3} {r['sigma_high']:>10} {str(r['sigma_low']):>10} {gap:>7.1e} "
                  f"{r['tv_upper']:>13} {str(r['tv_lower']):>13} {str(r['eps_cert']):>9} {r['eps_num']:>8.4f} "
                  f"{(r['eps_excess'] or float('nan')):>7.2%} {str(r['tpr_cert'])[:11]:>11} {r['tpr_num']:>9.6f} "
                  f"{(r['tpr_ratio'] or float('nan')):>6.3f} {r['upper_seconds']:>7.2f} "
                  f"{(r['lower_seconds'] or float('nan')):>7.2f} {(r['privacy_seconds'] or float('nan')):>6.2f} "
                  f"{r['replay_seconds']:>8.2f} {ok:>3}", flush=True)
    summ = {"cells": len(rows), "all_two_sided": all(r["two_sided"] for r in rows),
            "max_gap": max(r["gap"] for r in rows),
            "max_eps_excess": max((r["eps_excess"] or 1.0) for r in rows),
            "eps_range": [min(float(r["eps_cert"] or "nan") for r in rows),
                          max(float(r["eps_cert"] or "nan") for r in rows)],
            "max_tpr_ratio": max((r["tpr_ratio"] or 9.0) for r in rows),
            "total_upper_s": round(sum(r["upper_seconds"] for r in rows), 2),
            "total_lower_s": round(sum(r["lower_seconds"] or 0 for r in rows), 2),
            "total_rows_s": round(sum(r["privacy_seconds"] or 0 for r in rows), 2)}
    if a.json:
        print(json.dumps({"rows": rows, "summary": summ}, indent=1))
    else:
        print(f"all two-sided: {summ['all_two_sided']}; max gap {summ['max_gap']:.1e}; certified eps(1e-5) in "
              f"[{summ['eps_range'][0]}, {summ['eps_range'][1]}], max excess over numerical "
              f"{summ['max_eps_excess']:.3%}; max TPR(1e-3) ratio {summ['max_tpr_ratio']:.3f}; "
              f"time upper {summ['total_upper_s']} s, lower side extra {summ['total_lower_s']} s, "
              f"privacy/TPR rows {summ['total_rows_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
