"""Benchmark: the exact privacy profile / trade-off curve and the exact sigma for the dp and tpr kinds.

    python benchmarks/bench_targets.py [--small] [--json FILE] [--sweep] [--certify]

Part 1 (evaluation, check=True): at the corners (M = 1, 2, 3, 10^3 - 10^6; E = 1 - 1000; small and
large sigma) eps at delta = 1e-5, delta(1) and the TPR at FPR 1e-3 with their error estimates, the
routes, and seconds per cell. Part 2 (exact sigma, primary route): dp targets (eps, 1e-5) and tpr
targets (1e-3, beta) with the proven quick bounds beside them, seconds per cell.
`--sweep` instead compares the primary and the second route over 147 cells (M = 2 ... 10^5,
E = 1, 10, 100, sigma = 0.15 ... 5) at delta(eps) both ways (eps = 0 ... 4) and TPR(alpha), and counts
disagreements beyond the summed estimates (goal: none).
`--certify` instead issues two-sided dp and tpr certificates (format v4) at the done-when cells
(100, 10, eps 1, delta 1e-5), (250, 20, eps 0.5, delta 1e-5), (100, 10, FPR 1e-3, TPR <= 0.002), signs each
with a throw-away key and verifies it: certify seconds (goal <= 120), sigma - sigma_low in resolution
steps (goal 1), the verifier's answer and seconds (with --small: two cells at M = 10, E = 5).
Goal (docs/targets.md): every cell answered, <= 2 s per exact sigma. The load average is printed
first and last: the machine is shared, so compare seconds within one run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from certifier.errors import NumericsUnreliableError  # noqa: E402
from certifier.numerics import quick_bounds as qb  # noqa: E402
from certifier.numerics.targets import exact_privacy, exact_sigma_dp, exact_sigma_tpr  # noqa: E402

EVAL = [(1, 10, 3.0), (2, 1, 0.7), (3, 1, 0.5), (3, 1000, 3.0), (100, 10, 0.3), (100, 10, 1.426215),
        (1000, 1, 0.3), (1000, 1, 0.1), (10**4, 1, 0.35), (10**4, 1000, 2.0), (10**5, 10, 0.45), (10**6, 1, 0.3),
        (10**6, 10, 1.0), (100, 1, 10.0)]
DP = [(100, 10, 1.0), (250, 20, 0.5), (1, 10, 1.0), (2, 1, 1.0), (3, 1000, 1.0), (100, 1000, 1.0),
      (1000, 1, 1.0), (1000, 1, 8.0), (10**4, 1, 1.0), (10**5, 1, 1.0), (10**6, 1, 4.0), (10**6, 10, 1.0)]
TPR = [(100, 10, 2e-3), (1, 10, 2e-3), (3, 1000, 2e-3), (1000, 1, 1e-2), (10**4, 10, 2e-3), (10**6, 1, 2e-3)]
SMALL = {"EVAL": EVAL[:5], "DP": DP[:4], "TPR": TPR[:3]}
# (M, E, kind, parameter, target) of the two-sided certificates of --certify
CERTIFY = [(100, 10, "dp", "1", "1e-5"), (250, 20, "dp", "0.5", "1e-5"), (100, 10, "tpr", "0.001", "0.002")]
CERTIFY_SMALL = [(10, 5, "dp", "1", "0.01"), (10, 5, "tpr", "0.01", "0.036")]


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def sweep() -> dict:
    """Primary against second route over the sweep grid: comparisons beyond the summed estimates."""
    from certifier.numerics.targets import route_at
    n = beyond = 0
    worst, worst_at, start = 0.0, None, time.perf_counter()
    cells = [(m, e, s) for m in (2, 3, 10, 100, 1000, 10**4, 10**5) for e in (1, 10, 100)
             for s in (0.15, 0.25, 0.4, 0.7, 1.2, 2.5, 5.0)]
    for m, e, s in cells:
        r, o = route_at(m, e, s)
        if o is None:
            continue
        pairs = [((r.delta_qp(x), o.delta_qp(x)), ("qp", x)) for x in (0.0, 0.5, 1.0, 2.0, 4.0)]
        pairs += [((r.delta_pq(x), o.delta_pq(x)), ("pq", x)) for x in (0.0, 0.5, 1.0, 2.0, 4.0)]
        pairs += [((r.tpr(a), o.tpr(a)), ("tpr", a)) for a in (0.1, 1e-3, 1e-5)]
        for (a, b), what in pairs:
            n += 1
            ratio = abs(a.value - b.value) / (a.error + b.error + 1e-300)
            beyond += ratio > 1
            if ratio > worst:
                worst, worst_at = ratio, (m, e, s, *what)
    return {"cells": len(cells), "comparisons": n, "beyond": beyond, "worst_ratio": worst, "worst_at": worst_at,
            "seconds": round(time.perf_counter() - start, 1)}


def _stages():
    """A progress callback printing each new stage with its elapsed seconds (to stderr)."""
    seen = set()

    def report(stage, pct, elapsed):
        key = stage.split(" (")[0] + (" (" + stage.split(" (")[-1] if "try" in stage else "")
        if key not in seen:
            seen.add(key)
            print(f"  {elapsed:8.1f} s  {stage}", file=sys.stderr, flush=True)
    return report


def certify_table(cells) -> list:
    """Two-sided certificates of the kinds, signed with a throw-away key and verified (a table)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from certifier.certificate.envelope import sign_certificate
    from certifier.certify import certify
    from certifier.params import parse_decimal
    from certifier.resolution import sigma_resolution
    from verifier.core import verify_bytes
    key, rows = Ed25519PrivateKey.generate(), []
    print("\n| M | E | kind | parameter | target | sigma | sigma - sigma_low | upper | lower at sigma_low | "
          "certify s | cpu s | verifier | verify s | verify cpu s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m, e, name, x, target in cells:
        key_name = "epsilon" if name == "dp" else "fpr"
        t, cpu = time.perf_counter(), time.process_time()
        out = certify(m, e, parse_decimal("target", target), kind_name=name, kind_params={key_name: x},
                      two_sided=True, progress=_stages())
        sec, cpu = time.perf_counter() - t, time.process_time() - cpu   # cpu: this process only (shared machine)
        steps = vsec = vcpu = None
        answer = "not certified"
        if out.success:
            sigma = parse_decimal("sigma", out.sigma)
            if out.sigma_low is not None:
                steps = (sigma - parse_decimal("sigma", out.sigma_low)) / sigma_resolution(sigma)
            cert = sign_certificate(out.predicate, key)
            t, vcpu = time.perf_counter(), time.process_time()
            r = verify_bytes(cert, [key.public_key()])
            vsec, vcpu = time.perf_counter() - t, time.process_time() - vcpu
            answer = "ACCEPT" if r.accepted else f"REJECT {r.reason}"
        rows.append({"M": m, "E": e, "kind": name, key_name: x, "target": target, "sigma": out.sigma,
                     "sigma_low": out.sigma_low, "steps": None if steps is None else str(steps),
                     "upper": out.bound, "lower": out.bound_lower, "certify_seconds": sec, "certify_cpu_seconds": cpu, "verifier": answer,
                     "verify_seconds": vsec, "verify_cpu_seconds": vcpu})
        print(f"| {m} | {e} | {name} | {key_name} {x} | {target} | {out.sigma} | "
              f"{'-' if steps is None else steps} | {out.bound} | {out.bound_lower or '-'} | {sec:.1f} | {cpu:.1f} | {answer} | "
              f"{'-' if vsec is None else f'{vsec:.1f}'} | {'-' if vcpu is None else f'{vcpu:.1f}'} |", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="a few cells of each table")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--sweep", action="store_true", help="primary vs second route over 147 cells")
    ap.add_argument("--certify", action="store_true", help="two-sided dp/tpr certificates, signed and verified")
    ap.add_argument("--cells", help="with --certify: comma-separated row numbers (0-based) of its table only")
    args = ap.parse_args(argv)
    if args.certify:
        print(load())
        cells = CERTIFY_SMALL if args.small else CERTIFY
        if args.cells:
            try:
                cells = [cells[int(k)] for k in args.cells.split(",")]
            except (ValueError, IndexError):
                ap.error(f"--cells takes row numbers 0..{len(cells) - 1}, got {args.cells!r}")
        rows = certify_table(cells)
        print("\n" + load())
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=2)
        return 0
    if args.sweep:
        print(load())
        print(json.dumps(sweep(), indent=2))
        print(load())
        return 0
    ev, dp, tpr = (SMALL["EVAL"], SMALL["DP"], SMALL["TPR"]) if args.small else (EVAL, DP, TPR)
    rows = {"eval": [], "dp": [], "tpr": []}
    print(load())
    print("\n| M | E | sigma | eps(1e-5) | delta(1) | TPR(1e-3) | errors (eps, delta, TPR) | routes | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m, e, s in ev:
        t = time.perf_counter()
        try:
            p = exact_privacy(m, e, s, deltas=[1e-5], epsilons=[1.0], fprs=[1e-3])
            eps, eps_err = p.epsilon[1e-5].value, p.epsilon[1e-5].error
            eps_text, err_text = f"{eps:.6f}", f"{eps_err:.1e}"
        except NumericsUnreliableError:  # eps beyond about 25: refused (docs/targets.md)
            p = exact_privacy(m, e, s, epsilons=[1.0], fprs=[1e-3])
            eps = eps_err = None
            eps_text, err_text = "refused (> 25)", "-"
        sec = time.perf_counter() - t
        rows["eval"].append({"M": m, "E": e, "sigma": s, "eps": eps, "eps_error": eps_err,
                             "delta1": p.delta[1.0].value, "delta1_error": p.delta[1.0].error,
                             "tpr": p.tpr[1e-3].value, "tpr_error": p.tpr[1e-3].error, "routes": p.method,
                             "seconds": sec})
        print(f"| {m} | {e} | {s} | {eps_text} | {p.delta[1.0].value:.4e} | {p.tpr[1e-3].value:.6g} | "
              f"{err_text}, {p.delta[1.0].error:.1e}, {p.tpr[1e-3].error:.1e} | {p.method} | {sec:.2f} |", flush=True)
    print("\n| M | E | eps | delta | exact sigma | s | RDP sigma (delta_Q||P) | +% |")
    print("|---|---|---|---|---|---|---|---|")
    for m, e, eps in dp:
        t = time.perf_counter()
        x = exact_sigma_dp(m, e, eps, 1e-5)
        sec = time.perf_counter() - t
        rdp = qb.rdp_sigma([(m, e)], eps, 1e-5, seed=float(x))
        rows["dp"].append({"M": m, "E": e, "eps": eps, "exact": x, "seconds": sec, "rdp_qp": rdp})
        print(f"| {m} | {e} | {eps} | 1e-5 | {x} | {sec:.2f} | {rdp} | {100 * (float(rdp) / float(x) - 1):.1f} |",
              flush=True)
    print("\n| M | E | FPR | TPR | exact sigma | s | RDP (R3) sigma | +% | Prop. B.2 sigma | +% |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m, e, beta in tpr:
        t = time.perf_counter()
        x = exact_sigma_tpr(m, e, 1e-3, beta)
        sec = time.perf_counter() - t
        rdp = qb.rdp_tpr_sigma([(m, e)], 1e-3, beta, seed=float(x))
        b2 = qb.tpr_bound_sigma(m, e, 1e-3, beta)
        rows["tpr"].append({"M": m, "E": e, "fpr": 1e-3, "tpr": beta, "exact": x, "seconds": sec, "rdp": rdp,
                            "closed_form": b2})
        print(f"| {m} | {e} | 1e-3 | {beta} | {x} | {sec:.2f} | {rdp} | {100 * (float(rdp) / float(x) - 1):.1f} | "
              f"{b2} | {100 * (float(b2) / float(x) - 1):.1f} |", flush=True)
    print("\n" + load())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
