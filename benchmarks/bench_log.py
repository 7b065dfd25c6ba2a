"""The service's certificate log at scale (docs/release.md "The log"): tests/service/test_service_log.py with
N certificates issued (default 50; M = 1 cells): every inclusion proof verified offline, a consistency proof
across a restart, a replaced archive entry detected. Prints wall and CPU seconds (this process and its
children: the server, its workers and signers) and the machine's load.

    python benchmarks/bench_log.py [--n 50] [--small]      # --small: N = 4, to check the benchmark runs
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50, help="certificates to issue (default 50)")
    ap.add_argument("--small", action="store_true", help="N = 4")
    args = ap.parse_args(argv)
    n = 4 if args.small else args.n
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                        str(ROOT / "tests/service/test_service_log.py")], cwd=ROOT,
                       env={**os.environ, "SIGMACERT_LOG_TEST_N": str(n)}, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print("| certificates | result | wall s | CPU s (user+sys, all processes) | load before |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| {n} (+3 after restarts) | {'pass' if r.returncode == 0 else 'FAIL'} | {wall:.1f} | "
          f"{ru.ru_utime + ru.ru_stime:.1f} | {load:.2f} |")
    if r.returncode:
        print(r.stdout[-3000:], r.stderr[-2000:])
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
