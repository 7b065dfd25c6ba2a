"""Benchmark: two-sided certificates at the tails (large eps, small delta, low FPR) through the CLI.

    python benchmarks/bench_tail_certificates.py [--cells 0,3] [--out DIR] [--json] [--small]

Each cell runs `python -m sigmacert certify ... --json` in its own child process (one at a time; the
exact sigma found first, two-sided by default), then `python -m verifier --json` on the certificate.
For each child the CPU seconds (user + sys) and the peak RSS come from os.wait4's rusage of that child
alone. Columns: the cell, sigma, sigma_low and their gap in resolution steps, the certified upper and
lower values of the kind's functional, certify CPU s, its peak RSS, verify CPU s, the ratio verify /
certify, and the machine's load (1-minute average) before each cell.

Goals (docs/two-sided.md, "Tail certificates"): two-sided with sigma - sigma_low = one resolution step,
certify <= 300 CPU s and <= 4 GB, verify <= 1.2x certify's time.
`--small` runs one tiny cell (M=3, E=2, eps 1, delta 1e-6) in seconds, to check that the benchmark runs.
"""
from __future__ import annotations

import argparse
import json
import os
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


def run_child(args: list[str], env: dict) -> tuple[int, str, float, int]:
    """(exit code, stdout, CPU seconds, peak RSS bytes) of one child process (its own rusage)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return p.returncode, out.read(), ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024


def run_cell(label: str, args: list[str], keys: str, out_dir: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    cert = os.path.join(out_dir, label.replace(" ", "_").replace(",", "-") + ".json")
    load = os.getloadavg()[0]
    rc, text, cpu, rss = run_child(["-m", "sigmacert", "certify", *args, "--key", os.path.join(keys, "private.pem"),
                                    "-o", cert, "--force", "--json", "--quiet"], env)
    row = {"cell": label, "exit": rc, "cpu_seconds": round(cpu, 2), "peak_rss": rss, "load": round(load, 2)}
    try:
        f = json.loads(text)
    except ValueError:
        return {**row, "certified": False, "error": text.strip()[:200]}
    row.update(certified=f.get("certified"), two_sided=f.get("two_sided"), sigma=f.get("sigma"),
               sigma_low=f.get("sigma_low"), upper=f.get("bound"), lower=f.get("bound_lower_at_sigma_low"),
               steps_apart=_steps_apart(f.get("sigma"), f.get("sigma_low")))
    if os.path.exists(cert):
        vrc, vtext, vcpu, vrss = run_child(["-m", "verifier", "--key", os.path.join(keys, "public.pem"), "--json",
                                            cert], env)
        try:
            accepted = json.loads(vtext).get("accepted")
        except ValueError:
            accepted = False
        row.update(verify_cpu_seconds=round(vcpu, 2), verify_peak_rss=vrss, accepted=bool(accepted and vrc == 0),
                   ratio=round(vcpu / cpu, 3) if cpu > 0 else None)
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
        lines.append(f"| {r['cell']} | {r.get('sigma') or '-'} | {r.get('sigma_low') or '-'} | "
                     f"{r.get('steps_apart') or '-'} | {r.get('upper') or '-'} | {r.get('lower') or '-'} | "
                     f"{r['cpu_seconds']} | {rss} | {r.get('verify_cpu_seconds', '-')} | {r.get('ratio', '-')} | "
                     f"{r['load']} | {'yes' if goals(r) else 'no'} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", help="comma-separated indices into the cells (default: all)")
    ap.add_argument("--out", help="write the certificates to this directory (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="one JSON object with the rows")
    ap.add_argument("--small", action="store_true", help="one tiny tail cell (seconds): checks the benchmark runs")
    a = ap.parse_args()
    cells = SMALL if a.small else CELLS
    if a.cells:
        cells = [cells[int(i)] for i in a.cells.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        from certifier.certificate.keys import keygen
        keys = os.path.join(tmp, "keys")
        keygen(keys)
        out_dir = a.out or os.path.join(tmp, "certs")
        os.makedirs(out_dir, exist_ok=True)
        rows = []
        for label, args in cells:
            rows.append(run_cell(label, args, keys, out_dir))
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
