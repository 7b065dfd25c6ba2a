"""Benchmark: the Lemma C.5 certificate at the nine cells of Table 4 (lambda = 0.1, paper's exact sigma).

    python benchmarks/bench_certify.py [--cells 0,3] [--key PRIVATE.pem --out DIR] [--json]

Each cell runs in its own subprocess (one at a time), so `peak MB` is that cell's
peak resident memory. `seconds` is the whole `certify` call at the given sigma
(exact-TV numerics for the margin, grid choice, the rigorous bound, every retry);
`bound s` is the rigorous computation alone; `cpu s` is the process CPU time of
the whole call (robust when the machine is shared). With --key/--out the certificates are
signed and written as DIR/M{M}_E{E}.json. These are one-sided (v1) certificates; the
two-sided (v2) ones, with sigma_low, eps(delta) and TPR rows, come from
benchmarks/bench_two_sided.py (which wrote the committed artifacts/certificates/).

Targets (one core): median <= 5 s per cell, hardest (M=250, E=10) <= 60 s, all nine
<= 3 min, memory <= 4 GB, every cell certified on the first try with bound <= 0.1;
the independent verifier's replay (`replay s`, `replay cpu`, in its own process) within
1.2x the certifier's time for the same grid (`ratio` = replay s / bound s, both wall
clock, measured back to back) and accepting every certificate.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

CELLS = [(100, 10, "1.426215"), (100, 20, "1.907073"), (100, 40, "2.610518"),
         (250, 10, "1.024495"), (250, 20, "1.309428"), (250, 40, "1.732809"),
         (500, 10, "0.834432"), (500, 20, "1.025964"), (500, 40, "1.310146")]
TARGET = "0.1"


def replay(cert_path: str, public_pem: str) -> dict:
    """The independent verifier's replay of a written certificate, in its own process."""
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--replay", cert_path, "--pub", public_pem],
                       capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        return {"accepted": False, "seconds": float("nan"), "cpu_seconds": float("nan")}
    return json.loads(p.stdout.strip().splitlines()[-1])


def _replay_child(cert_path: str, public_pem: str) -> dict:
    from verifier import verify_file
    t0, c0 = time.perf_counter(), time.process_time()
    r = verify_file(cert_path, [public_pem])
    return {"accepted": r.accepted, "reason": r.reason, "seconds": round(time.perf_counter() - t0, 2),
            "cpu_seconds": round(time.process_time() - c0, 2)}


def write_certificate(res, key: str, out: str) -> str:
    """Sign a successful Outcome's predicate and write OUT/M{M}_E{E}.json; returns the path."""
    from certifier.certificate.envelope import canonical_json, claim_subject, sign_envelope, statement
    from certifier.certificate.keys import load_private
    env = sign_envelope(statement(claim_subject(res.predicate["claim"]), res.predicate), load_private(key))
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"M{res.steps}_E{res.epochs}.json")
    with open(path, "wb") as f:
        f.write(canonical_json(env) + b"\n")
    return path


def run_cell(i: int, key: str | None, out: str | None) -> dict:
    from certifier.certify import certify
    from certifier.params import parse_decimal
    M, E, s = CELLS[i]
    t0, c0 = time.perf_counter(), time.process_time()
    res = certify(M, E, parse_decimal("target", TARGET), parse_decimal("sigma", s))
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0
    row = {"M": M, "E": E, "sigma": s, "certified": res.success, "bound": res.bound,
           "tries": len(res.tries), "seconds": round(secs, 2), "cpu_seconds": round(cpu, 2), "tv_exact": res.tv,
           "bound_seconds": res.tries[-1]["seconds"] if res.tries else None}
    t = res.tries[-1]
    row.update({k: t[k] for k in ("h", "eta", "cap", "prec", "tail_start", "tail_step", "lattice_schedule")})
    row["cert"] = write_certificate(res, key, out) if res.success and key and out else None
    row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default=",".join(str(i) for i in range(len(CELLS))))
    ap.add_argument("--key")
    ap.add_argument("--out")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode
    ap.add_argument("--replay", help=argparse.SUPPRESS)  # child mode
    ap.add_argument("--pub", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one is not None:
        print(json.dumps(run_cell(a.one, a.key, a.out)))
        return 0
    if a.replay:
        print(json.dumps(_replay_child(a.replay, a.pub)))
        return 0
    tmp = None
    if not (a.key and a.out):  # sign with a throw-away key so the verifier can replay
        import tempfile

        from certifier.certificate.keys import keygen
        tmp = tempfile.TemporaryDirectory()
        keygen(os.path.join(tmp.name, "keys"))
        a.key, a.out = os.path.join(tmp.name, "keys", "private.pem"), os.path.join(tmp.name, "certs")
    pub = os.path.join(os.path.dirname(a.key), "public.pem")
    rows = []
    hdr = (f"{'M':>4} {'E':>3} {'sigma':>9} {'h':>7} {'eta':>8} {'cap':>10} {'prec':>4} "
           f"{'bound':>13} {'tries':>5} {'seconds':>8} {'cpu s':>7} {'bound s':>8} {'peak MB':>8} {'replay s':>8} "
           f"{'replay cpu':>10} {'ratio':>5} {'ok':>3}")
    if not a.json:
        print(hdr, flush=True)
    for i in [int(x) for x in a.cells.split(",")]:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", str(i)]
        if a.key and a.out:
            cmd += ["--key", a.key, "--out", a.out]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if p.returncode != 0:
            print(f"cell {CELLS[i]} failed: {p.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
        rep = replay(r["cert"], pub)
        r["replay_seconds"], r["replay_cpu_seconds"], r["replay_accepted"] = rep["seconds"], rep["cpu_seconds"], rep["accepted"]
        r["replay_ratio"] = round(rep["seconds"] / r["bound_seconds"], 2)  # same grid: the rigorous part alone
        rows.append(r)
        if not a.json:
            print(f"{r['M']:>4} {r['E']:>3} {r['sigma']:>9} {r['h']:>7} {r['eta']:>8} {r['cap']:>10} "
                  f"{r['prec']:>4} {r['bound']:>13} {r['tries']:>5} {r['seconds']:>8.2f} {r['cpu_seconds']:>7.2f} "
                  f"{r['bound_seconds']:>8.2f} {r['peak_mb']:>8.1f} {r['replay_seconds']:>8.2f} {r['replay_cpu_seconds']:>10.2f} "
                  f"{r['replay_ratio']:>5.2f} {'yes' if r['replay_accepted'] else 'NO':>3}",
                  flush=True)
    secs = [r["seconds"] for r in rows]
    cpus = [r["cpu_seconds"] for r in rows]
    summ = {"cells": len(rows), "median_cpu_s": statistics.median(cpus), "max_cpu_s": max(cpus),
            "total_cpu_s": round(sum(cpus), 2), "all_certified_first_try": all(r["certified"] and r["tries"] == 1 for r in rows),
            "median_s": statistics.median(secs), "max_s": max(secs), "total_s": round(sum(secs), 2),
            "max_peak_mb": max(r["peak_mb"] for r in rows),
            "max_replay_ratio": max(r["replay_ratio"] for r in rows),
            "all_replays_accepted": all(r["replay_accepted"] for r in rows)}
    if a.json:
        print(json.dumps({"rows": rows, "summary": summ}, indent=1))
    else:
        print(f"median {summ['median_s']:.2f} s, max {summ['max_s']:.2f} s, total {summ['total_s']:.2f} s, "
              f"peak {summ['max_peak_mb']:.0f} MB; CPU: median {summ['median_cpu_s']:.2f} s, max "
              f"{summ['max_cpu_s']:.2f} s, total {summ['total_cpu_s']:.2f} s; all certified on the first try: "
              f"{summ['all_certified_first_try']}; replay/bound time ratio max {summ['max_replay_ratio']:.2f}, "
              f"all replays accepted: {summ['all_replays_accepted']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
