"""Benchmark: exact sigma vs. closed form on the nine cells of Table 4 (lambda = 0.1).

    python benchmarks/bench_sigma.py [--small]

Prints, per cell: exact sigma (and whether it equals Table 4), closed-form sigma,
closed-form excess in %, exact TV at the closed-form sigma, seconds to find the
exact sigma; then the closed-form call time. Targets: exact sigma
equal to Table 4; excess 14.9-25.3 %; TV at closed form 0.0787-0.0789
(Section 5.2); <= 1 s median per cell; closed form <= 2 us per call. `--small`: two cells and
fewer timed calls (seconds), to check the benchmark runs. The closed form is printed as every
face prints it: rounded up to 1e-6 (certifier.numerics.schemes.closed_form_sigma_up).
"""
import argparse
import statistics
import sys
import time
import timeit

TABLE_4 = {(100, 10): "1.426215", (100, 20): "1.907073", (100, 40): "2.610518",
           (250, 10): "1.024495", (250, 20): "1.309428", (250, 40): "1.732809",
           (500, 10): "0.834432", (500, 20): "1.025964", (500, 40): "1.310146"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="two cells (seconds): checks the benchmark runs")
    args = ap.parse_args(argv)
    from certifier.numerics.closed_form import closed_form_sigma
    from certifier.numerics.exact import exact_sigma, exact_tv
    from certifier.numerics.schemes import closed_form_sigma_up
    cells = list(TABLE_4.items())[:2] if args.small else TABLE_4.items()
    print(f"{'M':>4} {'E':>3} {'exact sigma':>12} {'Table 4':>9} {'closed form':>12} {'excess %':>9} "
          f"{'TV at closed':>13} {'find (s)':>9}")
    times, ok = [], True
    for (m, e), paper in cells:
        t0 = time.perf_counter()
        exact = exact_sigma(m, e, "0.1")
        dt = time.perf_counter() - t0
        times.append(dt)
        closed = closed_form_sigma_up(m, e, "0.1")
        tv_closed = exact_tv(m, e, float(closed), check=False).tv
        same = exact == paper
        ok &= same
        print(f"{m:>4} {e:>3} {exact:>12} {'=' if same else paper:>9} {closed!s:>12} "
              f"{100 * (float(closed) / float(exact) - 1):>9.2f} {tv_closed:>13.6f} {dt:>9.2f}")
    n = 2_000 if args.small else 200_000
    per_call = timeit.timeit(lambda: closed_form_sigma(250, 20, 0.1), number=n) / n
    print(f"median seconds per exact sigma: {statistics.median(times):.2f} (max {max(times):.2f})")
    print(f"closed-form sigma: {per_call * 1e6:.2f} us per call")
    print(f"all {len(times)} exact sigma equal Table 4" if ok else "MISMATCH with Table 4")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
