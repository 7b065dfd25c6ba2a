"""Coverage benchmark: exact sigma and a two-sided certificate at it, over a published grid of cells.

    python benchmarks/bench_coverage.py [--quick | --small | --cells M,E,L ...] [--json out.json] [--timeout S]
    python benchmarks/bench_coverage.py --markdown out.json   # the table of docs/coverage.md
    python benchmarks/bench_coverage.py --edges [--cells M,E,L ...] [--json out.json]   # the domain's corners

--edges: the cells of the edges issue, four cells just outside the domain and 23 corners of the stated domain
(--full-grid: all of M in {1, 2, 3, 100, 10^4, 10^6, 10^7} x E in {1, 100, 10^4} x lambda in {1e-4, 1e-3, 0.1,
0.999});
each cell runs `certify` as a user does (exact sigma found, two-sided) in its own subprocess and prints the
method, the tries (upper/lower, and the sigma steps), seconds, peak MB, the verifier's seconds and verdict --
or the one-line refusal. Goals (docs/coverage.md): every cell inside the domain two-sided in <= 300 s and
<= 4 GB on one core, the verifier within 1.2x of certify; every cell outside refused in one line.

Grid: M in {1, 3, 10, 100, 1000, 10^4} x E in {1, 10, 100} x lambda in {0.05, 0.1, 0.3, 0.5, 0.9}
(--quick: 15 cells spread over it; --small: 2 tiny cells, seconds, to check the benchmark runs). Each cell runs in its own subprocess (peak memory per cell) and
prints: the exact sigma and its seconds, the certified bound and lower bound (sigma_low), seconds of
the upper side (calibration included), the lower side and the privacy rows, the independent
verifier's seconds and verdict, and peak MB.
Goals (docs/coverage.md): every cell certified two-sided at the exact sigma on the first try;
M <= 1000: <= 60 s per cell; M = 10^4: <= 300 s; sigma_high - sigma_low = 1e-6.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

STEPS = (1, 3, 10, 100, 1000, 10**4)
EPOCHS = (1, 10, 100)
TARGETS = ("0.05", "0.1", "0.3", "0.5", "0.9")
QUICK = [(1, 1, "0.9"), (1, 100, "0.05"), (3, 10, "0.5"), (3, 1, "0.1"), (10, 1, "0.3"), (10, 100, "0.9"),
         (100, 1, "0.1"), (100, 10, "0.5"), (100, 100, "0.05"), (1000, 10, "0.1"), (1000, 1, "0.9"),
         (1000, 100, "0.3"), (10**4, 10, "0.1"), (10**4, 1, "0.5"), (10**4, 100, "0.9")]
SMALL = [(3, 1, "0.3"), (1, 2, "0.3")]  # method v2 and the Gaussian shift, a few seconds in all

CHILD = r"""
import json, resource, sys, time
from certifier.certify import certify
from certifier.certificate.envelope import sign_certificate
from certifier.numerics.schemes import exact_sigma
from certifier.certificate.keys import load_private
from certifier.params import parse_decimal
M, E, lam, key, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
target = parse_decimal("target", lam)
t0 = time.perf_counter()
sigma = parse_decimal("sigma", exact_sigma(M, E, target))
t_sigma = time.perf_counter() - t0
t1 = time.perf_counter()
res = certify(M, E, target, sigma, two_sided=True)
t_cert = time.perf_counter() - t1
row = {"M": M, "E": E, "lambda": lam, "sigma": res.sigma, "sigma_s": round(t_sigma, 2),
       "certified": res.success, "two_sided": res.two_sided, "bound": res.bound, "sigma_low": res.sigma_low,
       "tv_lower": res.tv_lower, "tv": res.tv, "method": res.method, "certify_s": round(t_cert, 2),
       "lower_s": res.lower_seconds, "rows_s": res.privacy_seconds,
       "upper_tries": sum(1 for t in res.tries if "calibration" not in t),
       "lower_tries": sum(1 for t in res.lower_tries if "calibration" not in t and "sigma_low" in t),
       "tries": res.tries, "lower_tries_detail": res.lower_tries,
       "epsilon": {k: v["epsilon"] for k, v in res.privacy["epsilon_at_delta"].items()} if res.privacy else None}
row["upper_s"] = round(t_cert - (res.lower_seconds or 0) - (res.privacy_seconds or 0), 2)
if res.success:
    env = sign_certificate(res.predicate, load_private(key))
    with open(out, "wb") as f:
        f.write(env)
    try:
        from verifier import verify_file
        t2 = time.perf_counter()
        v = verify_file(out, [key.replace("private.pem", "public.pem")])
        row["verify_s"], row["verdict"] = round(time.perf_counter() - t2, 2), v.reason
    except Exception as err:  # the verifier may not know this format yet
        row["verify_s"], row["verdict"] = None, f"{type(err).__name__}: {err}"
row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
print("ROW " + json.dumps(row))
"""


EDGE_STEPS = (1, 2, 3, 100, 10**4, 10**6, 10**7)
EDGE_EPOCHS = (1, 100, 10**4)
EDGE_TARGETS = ("0.0001", "0.001", "0.1", "0.999")
ISSUE = [(100, 10, "0.001"), (100, 10, "0.005"), (1000, 10, "0.002"), (100, 1000, "0.1"), (100, 10, "0.999"),
         (10**6, 1, "0.1"), (100, 10, "0.01"), (10**5, 100, "0.1")]
OUTSIDE = [(2 * 10**7, 1, "0.1"), (100, 2 * 10**4, "0.1"), (100, 10, "0.00001"), (100, 10, "0.9995")]
# the corners run by default (--full-grid: every cell of EDGE_STEPS x EDGE_EPOCHS x EDGE_TARGETS)
CORNERS = [(1, 1, "0.0001"), (1, 10**4, "0.999"), (1, 10**4, "0.0001"), (2, 1, "0.999"), (2, 10**4, "0.0001"),
           (2, 100, "0.001"), (3, 1, "0.0001"), (3, 10**4, "0.999"), (3, 100, "0.1"), (100, 10**4, "0.0001"),
           (100, 10**4, "0.999"), (100, 1, "0.0001"), (100, 1, "0.999"), (10**4, 1, "0.999"), (10**4, 10**4, "0.1"),
           (10**4, 100, "0.0001"), (10**6, 1, "0.999"), (10**6, 100, "0.1"), (10**6, 10**4, "0.0001"),
           (10**7, 1, "0.999"), (10**7, 1, "0.5"), (10**7, 100, "0.001"), (10**7, 10**4, "0.0001")]

EDGE_CHILD = r"""
import json, resource, sys, time
from certifier.certify import certify
from certifier.errors import SigmacertError
from certifier.certificate.envelope import canonical_json, claim_subject, sign_envelope, statement
from certifier.certificate.keys import load_private
from certifier.params import parse_decimal
M, E, lam, key, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
t0 = time.perf_counter()
row = {"M": M, "E": E, "lambda": lam}
try:
    res = certify(M, E, parse_decimal("target", lam), None, two_sided=True)
except SigmacertError as err:
    row.update(refused=str(err), certify_s=round(time.perf_counter() - t0, 2))
    print("ROW " + json.dumps(row))
    sys.exit(0)
row.update(certify_s=round(time.perf_counter() - t0, 2), sigma=res.sigma, certified=res.success,
           two_sided=res.two_sided, method=res.method, bound=res.bound, sigma_low=res.sigma_low,
           sigma_steps=res.sigma_steps, rows_missing=res.rows_missing,
           upper_tries=sum(1 for t in res.tries if "calibration" not in t),
           lower_tries=sum(1 for t in res.lower_tries if "calibration" not in t and "sigma_low" in t))
ru = resource.getrusage(resource.RUSAGE_SELF)
row["certify_mb"], row["certify_cpu_s"] = round(ru.ru_maxrss / 1024, 1), round(ru.ru_utime + ru.ru_stime, 2)
if res.success:
    env = sign_envelope(statement(claim_subject(res.predicate["claim"]), res.predicate), load_private(key))
    with open(out, "wb") as f:
        f.write(canonical_json(env))
print("ROW " + json.dumps(row))
"""

VERIFY_CHILD = r"""
import json, resource, sys, time
from verifier import verify_file
t0 = time.perf_counter()
v = verify_file(sys.argv[1], [sys.argv[2]])
ru = resource.getrusage(resource.RUSAGE_SELF)
print("ROW " + json.dumps({"verify_s": round(time.perf_counter() - t0, 2), "verdict": v.reason,
                           "verify_mb": round(ru.ru_maxrss / 1024, 1), "verify_cpu_s": round(ru.ru_utime + ru.ru_stime, 2)}))
"""


def _child(code, args, timeout):
    try:
        p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    for line in p.stdout.splitlines():
        if line.startswith("ROW "):
            return json.loads(line[4:])
    return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1]}


def run_edge(M, E, lam, key, outdir, timeout):
    """One cell as a user runs it (certify finds sigma), then the verifier in a process of its own."""
    out = os.path.join(outdir, f"M{M}_E{E}_L{lam}.json")
    row = {"M": M, "E": E, "lambda": lam, **_child(EDGE_CHILD, [str(M), str(E), lam, key, out], timeout)}
    if row.get("certified"):
        row.update(_child(VERIFY_CHILD, [out, key.replace("private.pem", "public.pem")], timeout))
    row["load"] = os.getloadavg()[0]
    return row


def fmt_edge(r) -> str:
    head = f"{r['M']:>8} {r['E']:>5} {r['lambda']:>7}"
    if "error" in r:
        return f"{head}  ERROR {r['error']}"
    if "refused" in r:
        return f"{head}  refused in {r['certify_s']:.1f} s: {r['refused']}"
    f = lambda x, spec: "-" if x is None else format(x, spec)
    return (f"{head} {r['sigma']:>13} {_m(r['method'])} {'2-sided' if r['two_sided'] else '1-sided'} "
            f"{r['upper_tries']}/{r['lower_tries']}/{r['sigma_steps']} {r['certify_s']:>7.1f} {r['certify_mb']:>7.0f} "
            f"{f(r.get('verify_s'), '7.1f')} {f(r.get('verify_mb'), '7.0f')} {str(r.get('verdict'))[:12]:>12} "
            f"{r['load']:>5.2f}  cpu s {f(r.get('certify_cpu_s'), '.1f')}/{f(r.get('verify_cpu_s'), '.1f')}"
            + ("  rows missing: " + json.dumps(r["rows_missing"]) if r["rows_missing"] else ""))


def markdown_edges(rows) -> str:
    out = ["| M | E | λ | σ | method | sides | tries u/l/σ-steps | certify s | MB | verify s | verify MB | verdict "
           "| load |", "|" + " --- |" * 13]
    for r in rows:
        if "error" in r or "refused" in r:
            out.append(f"| {r['M']} | {r['E']} | {r['lambda']} | " + (f"error: {r['error']}" if "error" in r else
                       f"refused ({r['certify_s']:.1f} s): {r['refused']}") + " |" * 10)
            continue
        f = lambda x, spec: "–" if x is None else format(x, spec)
        out.append(f"| {r['M']} | {r['E']} | {r['lambda']} | {r['sigma']} | {_m(r['method'])} "
                   f"| {2 if r['two_sided'] else 1} | {r['upper_tries']}/{r['lower_tries']}/{r['sigma_steps']} "
                   f"| {r['certify_s']:.1f} | {r['certify_mb']:.0f} | {f(r.get('verify_s'), '.1f')} "
                   f"| {f(r.get('verify_mb'), '.0f')} | {r.get('verdict')} | {r['load']:.2f} |")
    return "\n".join(out)


def edges(args) -> int:
    if args.cells:
        cells = [(int(float(c.split(",")[0])), int(c.split(",")[1]), c.split(",")[2]) for c in args.cells]
    elif args.full_grid:
        cells = ISSUE + OUTSIDE + [(m, e, lam) for m in EDGE_STEPS for e in EDGE_EPOCHS for lam in EDGE_TARGETS]
    else:
        cells = ISSUE + OUTSIDE + CORNERS
    rows = []
    with tempfile.TemporaryDirectory() as d:
        from certifier.certificate.keys import keygen
        keygen(os.path.join(d, "keys"))
        key = os.path.join(d, "keys", "private.pem")
        print(f"{'M':>8} {'E':>5} {'lambda':>7} {'sigma':>13} mth sides   u/l/s {'cert_s':>7} {'MB':>7} "
              f"{'verif_s':>7} {'MB':>7} {'verdict':>12} {'load':>5}", flush=True)
        for M, E, lam in cells:
            r = run_edge(M, E, lam, key, d, args.timeout)
            rows.append(r)
            print(fmt_edge(r), flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"rows": rows, "load": os.getloadavg()}, f, indent=1)
    if args.json:
        print("\n" + markdown_edges(rows))
    return 0


def run_cell(M, E, lam, key, outdir, timeout):
    out = os.path.join(outdir, f"M{M}_E{E}_L{lam}.json")
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, str(M), str(E), lam, key, out], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"M": M, "E": E, "lambda": lam, "error": f"timeout after {timeout} s"}
    for line in p.stdout.splitlines():
        if line.startswith("ROW "):
            row = json.loads(line[4:])
            row["wall_s"] = round(time.perf_counter() - t0, 2)
            return row
    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"M": M, "E": E, "lambda": lam, "error": err, "wall_s": round(time.perf_counter() - t0, 2)}


def _m(method) -> str:
    """Short method label: v1, v2 or gs (gaussian-shift)."""
    return "-" if not method else ("gs" if method.startswith("gaussian") else method.split()[-1])


def fmt(r) -> str:
    if "error" in r:
        return f"{r['M']:>6} {r['E']:>4} {r['lambda']:>5}  ERROR {r['error']}"
    f = lambda x, spec: "-" if x is None else format(x, spec)
    return (f"{r['M']:>6} {r['E']:>4} {r['lambda']:>5} {r['sigma']:>10} {r['sigma_s']:>6.1f} {_m(r['method'])} "
            f"{str(r['bound']):>13} {str(r['sigma_low']):>10} {str(r['tv_lower']):>13} "
            f"{r['upper_s']:>7.1f} {f(r['lower_s'], '7.1f')} {f(r['rows_s'], '5.1f')} "
            f"{r['upper_tries']}/{r['lower_tries']} {f(r.get('verify_s'), '7.1f')} {str(r.get('verdict'))[:12]:>12} "
            f"{r['peak_mb']:>7.0f} {r['wall_s']:>7.1f}")


def markdown(path: str) -> str:
    """The rows of a --json file as the markdown table of docs/coverage.md."""
    rows = json.load(open(path))["rows"]
    out = ["| M | E | λ | exact σ | s | method | bound | σ_low | tv_lower | upper s | lower s | tries u/l "
           "| verify s | verdict | peak MB | wall s | load |", "|" + " --- |" * 17]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['M']} | {r['E']} | {r['lambda']} | error: {r['error'][:60]} |" + " |" * 13)
            continue
        f = lambda x, spec: "–" if x is None else format(x, spec)
        out.append(f"| {r['M']} | {r['E']} | {r['lambda']} | {r['sigma']} | {r['sigma_s']:.1f} | {_m(r['method'])} "
                   f"| {r['bound']} | {r['sigma_low']} | {r['tv_lower']} | {r['upper_s']:.1f} "
                   f"| {f(r['lower_s'], '.1f')} | {r['upper_tries']}/{r['lower_tries']} | {f(r.get('verify_s'), '.1f')} "
                   f"| {r.get('verdict')} | {r['peak_mb']:.0f} | {r['wall_s']:.1f} | {r.get('load', 0):.1f} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the 15-cell subset")
    ap.add_argument("--small", action="store_true", help="2 tiny cells (seconds): checks the benchmark runs")
    ap.add_argument("--cells", nargs="*", help="cells as M,E,lambda")
    ap.add_argument("--json", help="write all rows to this file")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per cell")
    ap.add_argument("--markdown", metavar="JSON", help="print the rows of an earlier --json file as markdown "
                    "(with --edges: of an --edges run)")
    ap.add_argument("--edges", action="store_true", help="the corners of the stated domain (see the docstring)")
    ap.add_argument("--full-grid", action="store_true", help="with --edges: every cell of the corner grid")
    args = ap.parse_args()
    if args.markdown and args.edges:     # the rows of an earlier --edges --json run
        with open(args.markdown) as f:
            print(markdown_edges(json.load(f)["rows"]))
        return 0
    if args.edges:
        return edges(args)
    if args.markdown:
        print(markdown(args.markdown))
        return 0
    if args.cells:
        cells = [(int(c.split(",")[0]), int(c.split(",")[1]), c.split(",")[2]) for c in args.cells]
    elif args.quick or args.small:
        cells = QUICK if args.quick else SMALL
    else:
        cells = [(m, e, lam) for m in STEPS for e in EPOCHS for lam in TARGETS]
    with tempfile.TemporaryDirectory() as d:
        from certifier.certificate.keys import keygen
        keygen(os.path.join(d, "keys"))
        key = os.path.join(d, "keys", "private.pem")
        print(f"{'M':>6} {'E':>4} {'lam':>5} {'sigma':>10} {'sig_s':>6} mth {'bound':>13} {'sigma_low':>10} "
              f"{'tv_lower':>13} {'upper_s':>7} {'lower_s':>7} {'rows':>5} u/l {'verif_s':>7} {'verdict':>12} "
              f"{'peakMB':>7} {'wall_s':>7}", flush=True)
        rows = []
        for M, E, lam in cells:
            r = run_cell(M, E, lam, key, d, args.timeout)
            r["load"] = os.getloadavg()[0]  # 1-minute load average when the cell ended
            rows.append(r)
            print(fmt(r), flush=True)
            if args.json:  # after every cell: a long run that is interrupted keeps its rows
                with open(args.json, "w") as f:
                    json.dump({"rows": rows, "load": os.getloadavg()}, f, indent=1)
    ok = [r for r in rows if "error" not in r]
    first = [r for r in ok if r["certified"] and r["two_sided"] and r["upper_tries"] == 1 and r["lower_tries"] == 1]
    print(f"\n{len(ok)}/{len(rows)} cells ran; {sum(r['certified'] and r['two_sided'] for r in ok)} certified "
          f"two-sided; {len(first)} on the first try; total wall {sum(r.get('wall_s', 0) for r in rows):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
