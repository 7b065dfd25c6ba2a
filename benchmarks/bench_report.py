"""Benchmark: the audit report of each committed certificate (artifacts/certificates/*.json).

Prints, per certificate: the verdict, the independent verifier's replay and the rest of the report
(curves, plots, page), each in wall and CPU seconds, and the page size. Target: the report's own
part stays under 10 CPU seconds per certificate (CPU, because the shared machine's wall clock is
noisy); the replay is the verifier's and is benchmarked in bench_certify.py.
"""
import sys
import time
from pathlib import Path
from unittest import mock

import verifier
from sigmacert.report import render

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    key = ROOT / "artifacts" / "keys" / "public.pem"
    real, ok = verifier.verify_bytes, True
    print(f"{'':<22} {'verify (s)':>14} {'report (s)':>14}")
    print(f"{'certificate':<14} {'verdict':<7} {'wall':>7} {'CPU':>6} {'wall':>7} {'CPU':>6} {'total (s)':>9} "
          f"{'page (kB)':>9}")
    for cert in sorted((ROOT / "artifacts" / "certificates").glob("*.json")):
        spent = {}

        def timed(*a, spent=spent):
            t, c = time.perf_counter(), time.process_time()
            r = real(*a)
            spent["wall"], spent["cpu"] = time.perf_counter() - t, time.process_time() - c
            return r
        with mock.patch.object(verifier, "verify_bytes", timed):
            t0, c0 = time.perf_counter(), time.process_time()
            r = render(cert.read_bytes(), str(key))
            total, cpu = time.perf_counter() - t0, time.process_time() - c0
        ok &= r.accepted and cpu - spent["cpu"] < 10
        print(f"{cert.stem:<14} {r.verdict:<7} {spent['wall']:>7.1f} {spent['cpu']:>6.1f} "
              f"{total - spent['wall']:>7.1f} {cpu - spent['cpu']:>6.1f} {total:>9.1f} {len(r.html) / 1000:>9.0f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
