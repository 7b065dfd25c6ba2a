"""Benchmark: exact sigma vs. closed form on the nine cells of Table 4 (lambda = 0.1).

Prints, per cell: exact sigma (and whether it equals Table 4), closed-form sigma,
closed-form excess in %, exact TV at the closed-form sigma, seconds to find the
exact sigma; then the closed-form call time. Targets: exact sigma
equal to Table 4; excess 14.9-25.3 %; TV at closed form 0.0787-0.0789
(Section 5.2); <= 1 s median per cell; closed form <= 2 us per call.
"""
import statistics
import sys
import time
import timeit

from certifier.numerics.closed_form import closed_form_sigma
from certifier.numerics.exact import exact_sigma, exact_tv

TABLE_4 = {(100, 10): "1.426215", (100, 20): "1.907073", (100, 40): "2.610518",
           (250, 10): "1.024495", (250, 20): "1.309428", (250, 40): "1.732809",
           (500, 10): "0.834432", (500, 20): "1.025964", (500, 40): "1.310146"}


def main() -> int:
    lam = 0.1
    print(f"{'M':>4} {'E':>3} {'exact sigma':>12} {'Table 4':>9} {'closed form':>12} {'excess %':>9} "
          f"{'TV at closed':>13} {'find (s)':>9}")
    times, ok = [], True
    for (m, e), paper in TABLE_4.items():
        t0 = time.perf_counter()
        exact = exact_sigma(m, e, "0.1")
        dt = time.perf_counter() - t0
        times.append(dt)
        closed = closed_form_sigma(m, e, lam)
        tv_closed = exact_tv(m, e, closed, check=False).tv
        same = exact == paper
        ok &= same
        print(f"{m:>4} {e:>3} {exact:>12} {'=' if same else paper:>9} {closed:>12.6f} "
              f"{100 * (closed / float(exact) - 1):>9.2f} {tv_closed:>13.6f} {dt:>9.2f}")
    n = 200_000
    per_call = timeit.timeit(lambda: closed_form_sigma(250, 20, 0.1), number=n) / n
    print(f"median seconds per exact sigma: {statistics.median(times):.2f} (max {max(times):.2f})")
    print(f"closed-form sigma: {per_call * 1e6:.2f} us per call")
    print("all nine exact sigma equal Table 4" if ok else "MISMATCH with Table 4")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
