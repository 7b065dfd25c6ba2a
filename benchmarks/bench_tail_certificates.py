"""Benchmark: two-sided certificates at the tails (large eps, small delta, low FPR) through the CLI.

    python benchmarks/bench_tail_certificates.py [--cells 0,3] [--out DIR] [--json] [--small]
    python benchmarks/bench_tail_certificates.py --scan [--sample N] [--seed S] [--no-corners] [--log FILE]

Each cell runs `python -m sigmacert certify ... --json` in its own child process (one at a time; the
exact sigma found first, two-sided by default), then `python -m verifier --json` on the certificate.
For each child the CPU seconds (user + sys) and the peak RSS come from os.wait4's rusage of that child
alone. Columns: the cell, sigma, sigma_low and their gap in resolution steps, the certified upper and
lower values of the kind's functional, certify CPU s, its peak RSS, verify CPU s, the ratio verify /
certify, and the machine's load (1-minute average) before each cell.

Goals (docs/two-sided.md, "Tail certificates"): two-sided with sigma - sigma_low = one resolution step,
certify <= 300 CPU s and <= 4 GB, verify <= 1.2x certify's time.
`--small` runs one tiny cell (M=3, E=2, eps 1, delta 1e-6) in seconds, to check that the benchmark runs.

`--scan` runs the stated target domain instead (docs/coverage.md, "The target domain"): eps in [0.01, 20],
delta in [1e-12, 0.1], FPR in [1e-8, 0.5] with TPR in (FPR, 1), M in [1, 1e7], E in [1, 1e4], fixed bins and
stages at one sigma: its corners (`corners()`, unless --no-corners) and N cells drawn at random (`sample()`,
log-uniform in every range, seed S: a fixed seed reproduces the cells, a new one draws cells nobody has seen).
Each child gets a CPU limit of SCAN_CPU_LIMIT seconds (a cell over the goal is not waited for to the end).
--log FILE appends one JSON row per cell as it finishes (a long scan keeps what it measured).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (label, certify arguments): the tail cells
CELLS = (
    ("100,10 eps8 d1e-5", ["-M", "100", "-E", "10", "--epsilon", "8", "--delta", "1e-5"]),
    ("1000,10 eps4 d1e-8", ["-M", "1000", "-E", "10", "--epsilon", "4", "--delta", "1e-8"]),
    ("1e6,100 eps2 d1e-10", ["-M", "1000000", "-E", "100", "--epsilon", "2", "--delta", "1e-10"]),
    ("100,10 fpr1e-7 tpr1e-5", ["-M", "100", "-E", "10", "--fpr", "1e-7", "--tpr", "1e-5"]),
    ("50x4,200x2 eps2 d1e-8", ["--stages", "50x4,200x2", "--epsilon", "2", "--delta", "1e-8"]),
)
SMALL = (("3,2 eps1 d1e-6", ["-M", "3", "-E", "2", "--epsilon", "1", "--delta", "1e-6"]),)
LIMIT_SECONDS, LIMIT_BYTES, LIMIT_RATIO = 300.0, 4 << 30, 1.2
SCAN_CPU_LIMIT = 420            # --scan: a child's CPU seconds (RLIMIT_CPU) before it is stopped
SCAN_MEMORY_LIMIT = 6 << 30     # --scan: a child's address space (RLIMIT_AS)

# the stated target domain (docs/coverage.md): ranges of the scan
EPS, DELTA, FPR, STEPS, EPOCHS = (0.01, 20.0), (1e-12, 0.1), (1e-8, 0.5), (1, 10**7), (1, 10**4)


def _g(x: float) -> str:
    """A short exact decimal for the CLI (three significant digits)."""
    return f"{float(f'{x:.3g}'):g}"


def corners() -> list[tuple[str, list[str]]]:
    """The domain's corners: dp at the four (M, E) corners x (eps, delta) corners, tpr at the (M, E) corners x
    (FPR, TPR) corners (TPR a factor above FPR and near 1), fixed bins and stages at a few corners."""
    cells = []
    for M in STEPS:
        for E in EPOCHS:
            for eps in EPS:
                for d in DELTA:
                    cells.append((f"{M},{E} eps{_g(eps)} d{_g(d)}", ["-M", str(M), "-E", str(E), "--epsilon",
                                                                      _g(eps), "--delta", _g(d)]))
            for a, b in ((1e-8, 1e-7), (1e-8, 0.99), (0.5, 0.51), (0.5, 0.99)):
                cells.append((f"{M},{E} fpr{_g(a)} tpr{_g(b)}", ["-M", str(M), "-E", str(E), "--fpr", _g(a),
                                                                   "--tpr", _g(b)]))
    for M, T in ((1, 10**4), (10**4, 10**4), (10**7, 10**7)):
        for eps, d in ((20.0, 1e-12), (0.01, 0.1)):
            cells.append((f"bins {M},T{T} eps{_g(eps)} d{_g(d)}", ["-M", str(M), "--iterations", str(T), "--scheme",
                                                                   "fixed-bins", "--epsilon", _g(eps), "--delta", _g(d)]))
    for st in ("1x1,10000000x1", "10x5000,10000x5000"):
        for eps, d in ((20.0, 1e-12), (0.01, 0.1)):
            cells.append((f"{st} eps{_g(eps)} d{_g(d)}", ["--stages", st, "--epsilon", _g(eps), "--delta", _g(d)]))
    return cells


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def sample(n: int, seed: int) -> list[tuple[str, list[str]]]:
    """n cells drawn log-uniformly from the domain (seed fixed: the same cells): 60 % dp, 20 % tpr, 10 % fixed
    bins (dp), 10 % two stages (dp, one sigma)."""
    rng, cells = random.Random(seed), []
    M_ = lambda: str(round(_log_uniform(rng, STEPS[0], STEPS[1])))            # noqa: E731
    E_ = lambda: str(round(_log_uniform(rng, EPOCHS[0], EPOCHS[1])))          # noqa: E731
    for _ in range(n):
        u = rng.random()
        eps, d = _g(_log_uniform(rng, *EPS)), _g(_log_uniform(rng, *DELTA))
        if u < 0.6:
            M, E = M_(), E_()
            cells.append((f"{M},{E} eps{eps} d{d}", ["-M", M, "-E", E, "--epsilon", eps, "--delta", d]))
        elif u < 0.8:
            M, E = M_(), E_()
            a = _log_uniform(rng, *FPR)
            b = _g(math.exp(math.log(a) * rng.uniform(0.05, 0.95)))     # log-uniform in (FPR, 1)
            cells.append((f"{M},{E} fpr{_g(a)} tpr{b}", ["-M", M, "-E", E, "--fpr", _g(a), "--tpr", b]))
        elif u < 0.9:
            M, E = M_(), E_()
            cells.append((f"bins {M},E{E} eps{eps} d{d}", ["-M", M, "-E", E, "--scheme", "fixed-bins", "--epsilon",
                                                             eps, "--delta", d]))
        else:
            st = f"{M_()}x{E_()},{M_()}x{E_()}"
            cells.append((f"{st} eps{eps} d{d}", ["--stages", st, "--epsilon", eps, "--delta", d]))
    return cells


def _limits(cpu: int | None):
    """preexec_fn of a scan child: its CPU seconds and address space capped."""
    if cpu is None:
        return None

    def set_limits():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_AS, (SCAN_MEMORY_LIMIT, SCAN_MEMORY_LIMIT))
    return set_limits


def run_child(args: list[str], env: dict, cpu_limit: int | None = None) -> tuple[int, str, float, int, str]:
    """(exit code, stdout, CPU seconds, peak RSS bytes, last stderr line) of one child process (its own
    rusage); with cpu_limit the child is stopped after that many CPU seconds."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=out, stderr=err,
                             preexec_fn=_limits(cpu_limit))
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        tail = (err.read().strip().splitlines() or [""])[-1]
        return p.returncode, out.read(), ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, tail


def run_cell(label: str, args: list[str], keys: str, out_dir: str, cpu_limit: int | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    cert = os.path.join(out_dir, label.replace(" ", "_").replace(",", "-") + ".json")
    load = os.getloadavg()[0]
    rc, text, cpu, rss, tail = run_child(["-m", "sigmacert", "certify", *args, "--key",
                                          os.path.join(keys, "private.pem"), "-o", cert, "--force", "--json",
                                          "--quiet"], env, cpu_limit)
    row = {"cell": label, "exit": rc, "cpu_seconds": round(cpu, 2), "peak_rss": rss, "load": round(load, 2)}
    try:
        f = json.loads(text)
    except ValueError:
        why = "stopped at the CPU limit" if rc in (-24, -9) and cpu >= (cpu_limit or math.inf) else tail
        return {**row, "certified": False, "error": (text.strip() or why)[:300]}
    row.update(certified=f.get("certified"), two_sided=f.get("two_sided"), sigma=f.get("sigma"),
               sigma_low=f.get("sigma_low"), upper=f.get("bound"), lower=f.get("bound_lower_at_sigma_low"),
               steps_apart=_steps_apart(f.get("sigma"), f.get("sigma_low")))
    if not f.get("certified", True) or rc != 0:
        row["error"] = (f.get("error") or f.get("reason") or tail or "")[:300]
    if os.path.exists(cert) and rc == 0:
        vrc, vtext, vcpu, vrss, _ = run_child(["-m", "verifier", "--key", os.path.join(keys, "public.pem"),
                                               "--json", cert], env, cpu_limit)
        try:
            v = json.loads(vtext)
        except ValueError:
            v = {}
        row.update(verify_cpu_seconds=round(vcpu, 2), verify_peak_rss=vrss,
                   accepted=bool(v.get("accepted") and vrc == 0), ratio=round(vcpu / cpu, 3) if cpu > 0 else None)
        if not row["accepted"]:
            row["verify_reason"] = f"{v.get('reason')}: {str(v.get('detail'))[:200]}"
    return row


def _steps_apart(sigma: str | None, low: str | None) -> int | None:
    """(sigma - sigma_low) / res(sigma), the resolution rule of docs/two-sided.md §5."""
    if not (sigma and low):
        return None
    from certifier.params import parse_decimal
    from certifier.resolution import sigma_resolution
    s, lo = parse_decimal("sigma", sigma), parse_decimal("sigma", low)
    k = (s - lo) / sigma_resolution(s)
    return int(k.p) if k.q == 1 else None


def goals(row: dict) -> bool:
    return bool(row.get("certified") and row.get("two_sided") and row.get("steps_apart") == 1
                and row["cpu_seconds"] <= LIMIT_SECONDS and row["peak_rss"] <= LIMIT_BYTES and row.get("accepted")
                and row.get("ratio") is not None and row["ratio"] <= LIMIT_RATIO)


def table(rows: list[dict]) -> str:
    head = ("| cell | sigma | sigma_low | steps | upper | lower | certify CPU s | peak RSS | verify CPU s | ratio "
            "| load | goals |")
    lines = [head, "|" + " --- |" * 12]
    for r in rows:
        rss = f"{r['peak_rss'] / 2**30:.2f} GB"
        why = "" if goals(r) else f" ({(r.get('error') or r.get('verify_reason') or '')[:120]})".replace(" ()", "")
        lines.append(f"| {r['cell']} | {r.get('sigma') or '-'} | {r.get('sigma_low') or '-'} | "
                     f"{r.get('steps_apart') or '-'} | {r.get('upper') or '-'} | {r.get('lower') or '-'} | "
                     f"{r['cpu_seconds']} | {rss} | {r.get('verify_cpu_seconds', '-')} | {r.get('ratio', '-')} | "
                     f"{r['load']} | {'yes' if goals(r) else 'no' + why} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", help="comma-separated indices into the cells (default: all)")
    ap.add_argument("--out", help="write the certificates to this directory (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="one JSON object with the rows")
    ap.add_argument("--small", action="store_true", help="one tiny tail cell (seconds): checks the benchmark runs")
    ap.add_argument("--scan", action="store_true", help="the target domain: its corners and --sample random cells")
    ap.add_argument("--sample", type=int, default=12, help="--scan: cells drawn at random (default 12)")
    ap.add_argument("--seed", type=int, default=20261205, help="--scan: the random cells' seed")
    ap.add_argument("--no-corners", action="store_true", help="--scan: the random cells only")
    ap.add_argument("--list", action="store_true", help="print the cells (index and label) and stop")
    ap.add_argument("--log", help="append one JSON row per finished cell to this file")
    a = ap.parse_args()
    if a.scan:
        cells = ([] if a.no_corners else corners()) + sample(a.sample, a.seed)
    else:
        cells = list(SMALL if a.small else CELLS)
    if a.cells:
        try:
            cells = [cells[int(i)] for i in a.cells.split(",")]
        except (ValueError, IndexError):
            print(f"bench_tail_certificates: error: --cells takes indices 0..{len(cells) - 1}", file=sys.stderr)
            return 2
    if a.list:
        for i, (label, args) in enumerate(cells):
            print(f"{i}\t{label}\t{' '.join(args)}")
        return 0
    limit = SCAN_CPU_LIMIT if a.scan else None
    with tempfile.TemporaryDirectory() as tmp:
        from certifier.certificate.keys import keygen
        keys = os.path.join(tmp, "keys")
        keygen(keys)
        out_dir = a.out or os.path.join(tmp, "certs")
        os.makedirs(out_dir, exist_ok=True)
        rows = []
        for label, args in cells:
            rows.append(run_cell(label, args, keys, out_dir, limit))
            if a.log:
                with open(a.log, "a") as f:
                    f.write(json.dumps({"args": args, **rows[-1]}) + "\n")
            if not a.json:
                print(f"# {label}: done ({rows[-1]['cpu_seconds']} CPU s)", file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps({"rows": rows, "all_goals": all(goals(r) for r in rows)}))
    else:
        print(table(rows))
        print(f"\nall within the goals: {all(goals(r) for r in rows)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main())
