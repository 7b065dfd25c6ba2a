"""Benchmark: the audit report of each committed certificate (artifacts/certificates/*.json).

    python benchmarks/bench_report.py [--cert FILE ... --key PUBLIC.pem] [--small]

Prints, per certificate: the verdict, the independent verifier's replay and the rest of the report
(curves, plots, page), each in wall and CPU seconds, and the page size. Target: the report's own
part stays under 10 CPU seconds per certificate (CPU, because the shared machine's wall clock is
noisy); the replay is the verifier's and is benchmarked in bench_certify.py. `--small` certifies
one tiny cell (M=1, E=4, lambda=0.3, a throw-away key) and reports it: seconds, to check the
benchmark runs.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent


def small_certificate(folder: Path) -> tuple[list[Path], Path]:
    """One two-sided certificate of a tiny cell, signed with a fresh key kept in `folder`."""
    import sigmacert
    from certifier.certificate.keys import keygen
    keygen(str(folder / "keys"))
    cert = sigmacert.certify(1, 4, "0.3", key=folder / "keys" / "private.pem")
    cert.write(str(folder / "M1_E4.json"))
    return [folder / "M1_E4.json"], folder / "keys" / "public.pem"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cert", action="append", type=Path,
                    help="a certificate to report (repeatable; default: artifacts/certificates/*.json)")
    ap.add_argument("--key", type=Path, default=ROOT / "artifacts" / "keys" / "public.pem",
                    help="the issuer's public key (default: artifacts/keys/public.pem)")
    ap.add_argument("--small", action="store_true", help="one tiny certificate (seconds): checks the benchmark runs")
    args = ap.parse_args(argv)

    import verifier
    from sigmacert.report import render
    tmp = tempfile.TemporaryDirectory()
    if args.small:
        certs, key = small_certificate(Path(tmp.name))
    else:
        certs, key = args.cert or sorted((ROOT / "artifacts" / "certificates").glob("*.json")), args.key
    real, ok = verifier.verify_bytes, True
    print(f"{'':<22} {'verify (s)':>14} {'report (s)':>14}")
    print(f"{'certificate':<14} {'verdict':<7} {'wall':>7} {'CPU':>6} {'wall':>7} {'CPU':>6} {'total (s)':>9} "
          f"{'page (kB)':>9}")
    for cert in certs:
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
    tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
