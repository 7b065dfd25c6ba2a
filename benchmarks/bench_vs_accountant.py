"""Side by side: sigmacert's certificate vs the Feldman-Shenfeld accountant (PLD_accounting).

Needs the optional extra: `pip install -e ".[bench]"` (PyPI `PLD_accounting`).
For each cell, at the exact sigma (Table 4), in one run of this script:
  * the accountant's upper bound on TV = delta(eps = 0) of its dominating
    directional PLD (both directions: each bounds the same TV, so the smaller
    one counts), by its FFT route and its default (GEOM) route, each run in a
    child process killed at the per-run time limit;
  * sigmacert's Lemma C.5 certificate (certifier.certify);
and prints bound reached, whether it certifies lambda, seconds and the time
ratio; then the smallest sigma each certifies within the same time budget.

    python benchmarks/bench_vs_accountant.py [--limit 120] [--search-steps 5] [--small]

`--small`: one tiny cell (M=5, E=2 at its exact sigma), the coarsest discretization of each
route and one bisection step (seconds), to check the benchmark runs.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time

CELLS = {(100, 10): "1.426215", (250, 20): "1.309428", (500, 40): "1.310146"}
SMALL = {(5, 2): "2.589777"}
LAM = 0.1


def _delta0(dist) -> float:
    """delta(0) = E (1 - e^{-loss})_+ + mass at +infinity, for a PLD on losses."""
    import numpy as np
    x, p = dist.x_array, dist.prob_arr
    pos = x > 0
    return float(np.dot(p[pos], -np.expm1(-x[pos])) + dist.p_max)


def _accountant_run(steps, epochs, sigma, route, discretization, queue):
    import PLD_accounting as P
    t0 = time.perf_counter()
    params = P.PrivacyParams(sigma=sigma, num_steps=steps, num_epochs=epochs)  # eps=0 is read off the PLD
    method = P.ConvolutionMethod.FFT if route == "fft" else P.ConvolutionMethod.GEOM
    kw = {"max_grid_fft": 10**9} if route == "fft" else {}
    cfg = P.AllocationSchemeConfig(loss_discretization=discretization, convolution_method=method, **kw)
    out = []
    for direction in (P.Direction.REMOVE, P.Direction.ADD):
        d = P.gaussian_allocation_directional_pld(params=params, config=cfg, direction=direction)
        out.append(_delta0(d))
    queue.put((min(out), out, time.perf_counter() - t0))


def accountant(steps, epochs, sigma: float, route: str, discretization: float, limit: float):
    """(bound, per-direction bounds, seconds) or (None, None, limit) on time-out."""
    q = mp.get_context("fork").Queue()
    p = mp.get_context("fork").Process(target=_accountant_run, args=(steps, epochs, sigma, route, discretization, q))
    t0 = time.perf_counter()
    p.start()
    p.join(limit)
    if p.is_alive():
        p.kill()
        p.join()
        return None, None, time.perf_counter() - t0
    if q.empty():
        return None, None, time.perf_counter() - t0
    return q.get()


def best_accountant(steps, epochs, sigma, limit, ladder):
    """Finest discretization of each route that finishes within `limit` seconds."""
    results = {}
    for route in ("fft", "geom"):
        best = None
        for disc in ladder[route]:
            bound, dirs, secs = accountant(steps, epochs, sigma, route, disc, limit)
            if bound is None:
                break
            best = (bound, dirs, secs, disc)
            if bound <= LAM:
                break
        results[route] = best
    return results


def sigmacert_run(steps, epochs, sigma_s):
    from certifier.certify import certify
    from certifier.params import parse_decimal
    t0 = time.perf_counter()
    out = certify(steps, epochs, parse_decimal("target", "0.1"), parse_decimal("sigma", sigma_s))
    return out.bound, out.success, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=120.0, help="seconds per accountant run (default 120)")
    ap.add_argument("--search-steps", type=int, default=5, help="bisection steps for the smallest sigma")
    ap.add_argument("--small", action="store_true", help="one tiny cell, coarse grids (seconds): checks the "
                                                         "benchmark runs")
    args = ap.parse_args(argv)
    try:
        import PLD_accounting  # noqa: F401
    except ImportError:
        print("bench_vs_accountant: needs the `bench` extra (pip install -e '.[bench]')", file=sys.stderr)
        return 2
    ladder = {"fft": [1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6], "geom": [1e-2, 3e-3]}
    cells = CELLS
    if args.small:
        cells, ladder, args.search_steps = SMALL, {"fft": [1e-3], "geom": [1e-2]}, 1
    print(f"per-run time limit {args.limit:.0f} s; accountant bound = min over REMOVE/ADD of delta(0)")
    print(f"{'M':>4} {'E':>3} {'sigma':>9} | {'route':<10} {'disc':>7} {'bound':>12} {'cert?':>5} {'s':>7} | "
          f"{'sigmacert bound':>15} {'cert?':>5} {'s':>6} | {'time ratio':>10}")
    rows = []
    for (m, e), sig in cells.items():
        b_ours, ok_ours, t_ours = sigmacert_run(m, e, sig)
        res = best_accountant(m, e, float(sig), args.limit, ladder)
        for route, r in res.items():
            if r is None:
                print(f"{m:>4} {e:>3} {sig:>9} | {route:<10} {'-':>7} {'timeout':>12} {'no':>5} {args.limit:>7.1f} | "
                      f"{b_ours:>15} {'yes' if ok_ours else 'no':>5} {t_ours:>6.1f} | {'>' + format(args.limit / t_ours, '.1f'):>10}")
                continue
            bound, dirs, secs, disc = r
            print(f"{m:>4} {e:>3} {sig:>9} | {route:<10} {disc:>7.0e} {bound:>12.8f} {'yes' if bound <= LAM else 'no':>5} "
                  f"{secs:>7.1f} | {b_ours:>15} {'yes' if ok_ours else 'no':>5} {t_ours:>6.1f} | {secs / t_ours:>10.1f}")
        rows.append(((m, e), sig, res, t_ours))
    print("\nsmallest sigma certified within the time budget (accountant: bisection on its finest route that "
          "finishes; sigmacert: the exact sigma, certified above)")
    for (m, e), sig, res, _t_ours in rows:
        lo, hi = float(sig), float(sig) * 1.10
        route_ok = None
        for route in ("fft", "geom"):
            disc = res[route][3] if res[route] else ladder[route][0]
            bound, _, _ = accountant(m, e, hi, route, disc, args.limit)
            if bound is not None and bound <= LAM:
                route_ok = (route, disc)
                break
        if route_ok is None:
            print(f"  M={m} E={e}: accountant certifies nothing up to sigma {hi:.6f} within {args.limit:.0f} s; sigmacert {sig}")
            continue
        for _ in range(args.search_steps):
            mid = 0.5 * (lo + hi)
            bound, _, _ = accountant(m, e, mid, *route_ok, args.limit)
            if bound is not None and bound <= LAM:
                hi = mid
            else:
                lo = mid
        print(f"  M={m} E={e}: accountant ({route_ok[0]}, disc {route_ok[1]:.0e}) certifies sigma {hi:.6f} "
              f"(+{100 * (hi / float(sig) - 1):.2f} % over exact); sigmacert certifies {sig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
