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

`--question dp`: the (eps, delta) question instead. For (M, E) in (100, 10), (250, 20), (1000, 1),
eps in 1, 4, delta = 1e-5: the smallest sigma the accountant certifies (its upper bound on eps at
delta <= eps) by a bracketing search on its default route (`gaussian_allocation_epsilon_range`,
adaptive GEOM refinement) from sigmacert's exact sigma, each run a child process killed at
`--budget` CPU seconds, then sigmacert's certificate at the exact sigma in a child killed at
`--cert-budget` (two-sided, else the upper side, reported as such; `--sides one`: the upper side
only): noise ratio and time ratio. Every child dies with the benchmark (also when it is killed).

    python benchmarks/bench_vs_accountant.py --question dp [--budget 240] [--tol 1e-3] [--cert-budget S]
        [--sides two|one] [--small]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time

CELLS = {(100, 10): "1.426215", (250, 20): "1.309428", (500, 40): "1.310146"}
SMALL = {(5, 2): "2.589777"}
LAM = 0.1


def _die_with_parent(parent: int) -> None:
    """In a child: end as soon as the parent does, however it ends (SIGKILL included), so a killed
    benchmark leaves no accountant or certifier running. Linux's prctl(PR_SET_PDEATHSIG, SIGKILL)
    through libc, then a watcher thread polling getppid() (any POSIX system; also covers a parent
    that died before prctl took effect)."""
    import ctypes
    import os
    import signal
    import threading
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the watcher alone

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _child_main(parent, target, args):
    import signal
    for sig in (signal.SIGTERM, signal.SIGHUP):  # not the parent's SystemExit handler: a terminate() must kill
        signal.signal(sig, signal.SIG_DFL)       # at once, even inside a long C call
    _die_with_parent(parent)
    target(*args)


def _child(target, args):
    """A started forked child running target(*args), tied to this process: it dies with it (see
    _die_with_parent), and as a daemon it is also killed when this process exits normally."""
    import os
    p = mp.get_context("fork").Process(target=_child_main, args=(os.getpid(), target, args), daemon=True)
    p.start()
    return p


def _exit_on_signals() -> None:
    """SIGTERM and SIGHUP end the benchmark through SystemExit, so multiprocessing's exit hook kills
    the daemon children as well (the children also watch their parent)."""
    import signal

    def stop(signum, _frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup's ignored SIGHUP stays ignored
            signal.signal(sig, stop)


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
    p = _child(_accountant_run, (steps, epochs, sigma, route, discretization, q))
    t0 = time.perf_counter()
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

# ---------------------------------------------------------------------------------------------
# The (eps, delta) question
# ---------------------------------------------------------------------------------------------
DP_CELLS = [(100, 10, 1), (100, 10, 4), (250, 20, 1), (250, 20, 4), (1000, 1, 1), (1000, 1, 4)]
DP_SMALL = [(5, 2, 1)]
DELTA = "1e-5"


class _Decided(Exception):
    """Raised in the child once the accountant's run has decided `upper <= eps` either way."""


def _fs_run(steps, epochs, sigma, eps, delta, queue):
    """The accountant's default route at sigma; every refinement's (upper, lower) goes to the queue.

    The run stops early once its answer to `upper <= eps` is fixed: the route keeps the best
    bounds over its refinements, so an upper bound <= eps stays <= eps, and a lower bound > eps
    keeps every later upper bound > eps. The dominating PLD is built first (the route's order), so
    a certifying run skips the dominated one."""
    import warnings

    import PLD_accounting as P
    import PLD_accounting.random_allocation_api as api
    warnings.simplefilter("ignore", RuntimeWarning)  # "did not converge": reported through the queue
    build = api.gaussian_allocation_pld
    t0 = time.perf_counter()

    def traced(*, params, config, bound_type):
        pld = build(params=params, config=config, bound_type=bound_type)
        e = float(pld.get_epsilon_for_delta(delta))
        side = "upper" if bound_type == P.BoundType.DOMINATES else "lower"
        queue.put((side, e, config.loss_discretization, time.perf_counter() - t0))
        if (side == "upper" and e <= eps) or (side == "lower" and e > eps):
            raise _Decided
        return pld

    api.gaussian_allocation_pld = traced
    try:
        up, lo = P.gaussian_allocation_epsilon_range(delta=delta, sigma=sigma, num_steps=steps, num_epochs=epochs)
        queue.put(("done", up, lo, time.perf_counter() - t0))
    except _Decided:
        queue.put(("decided", None, None, time.perf_counter() - t0))


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc), 0.0 once it is gone."""
    import os
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def fs_certifies(steps, epochs, sigma: float, eps: float, delta: float, budget: float):
    """One accountant run: dict(certified, upper, lower, seconds, status, disc); killed once its CPU
    time reaches `budget` seconds (CPU, not wall: the machine is shared, wall time is not ours)."""
    import queue as queue_mod
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = _child(_fs_run, (steps, epochs, sigma, eps, delta, q))
    up = lo = disc = None
    status, cpu = "timeout", 0.0
    while True:
        try:
            msg = q.get(timeout=0.5)
        except queue_mod.Empty:
            cpu = max(cpu, _cpu_seconds(p.pid))
            if cpu >= budget:
                break
            if not p.is_alive():
                status = "died"
                break
            continue
        kind = msg[0]
        if kind == "upper":
            up, disc = msg[1] if up is None else min(up, msg[1]), msg[2]
        elif kind == "lower":
            lo = msg[1] if lo is None else max(lo, msg[1])
        else:
            status = "done" if kind == "done" else "decided"
            if kind == "done":
                up, lo = msg[1], msg[2]
            cpu = max(cpu, _cpu_seconds(p.pid))
            break
    if p.is_alive():
        p.kill()
    p.join()
    certified = status in ("done", "decided") and up is not None and up <= eps
    return {"certified": certified, "upper": up, "lower": lo, "seconds": cpu, "status": status, "disc": disc}


def fs_search(steps, epochs, eps, delta, start: float, tol: float, budget: float, max_runs: int):
    """The smallest sigma whose accountant run certifies eps: a bracket [lo, hi] with hi certified and
    lo not (within the budget), searched from `start` (sigmacert's exact sigma) by Illinois steps on
    log(upper / eps) against log sigma (bisection when a side has no upper bound), until
    hi / lo - 1 <= tol or `max_runs` runs. Returns (lo, hi, runs); lo or hi is None if never found."""
    import math
    runs = []
    lo = hi = None          # (sigma, log(upper/eps) or None)

    def run(s):
        r = fs_certifies(steps, epochs, s, eps, delta, budget)
        r["sigma"] = s
        runs.append(r)
        print(f"  run M={steps} E={epochs} eps={eps:g} sigma={s:.6f}: upper {_fmt(r['upper'])} lower "
              f"{_fmt(r['lower'])} disc {_fmt(r['disc'], '.3g')} {r['status']:<8} {r['seconds']:7.1f} s "
              f"certified={'yes' if r['certified'] else 'no'}", flush=True)
        f = math.log(r["upper"] / eps) if r["upper"] else None
        return r["certified"], f

    s = start
    ok, f = run(s)
    side = "hi" if ok else "lo"
    if ok:
        hi = (s, f)
    else:
        lo = (s, f)
    step = 0.01
    while (lo is None or hi is None) and len(runs) < max_runs:  # expand until the bracket closes
        if f is not None:  # eps ~ 1/sigma near the root: aim a little past it
            s = s * math.exp(f) * (1 + (tol if side == "lo" else -tol))
            s = max(s, runs[-1]["sigma"] * (1 + tol)) if side == "lo" else min(s, runs[-1]["sigma"] * (1 - tol))
        else:
            s = s * (1 + step) if side == "lo" else s * (1 - step)
            step *= 2
        ok, f = run(s)
        if ok:
            hi = (s, f)
        else:
            lo = (s, f)
    weight = [1.0, 1.0]     # Illinois: halve the weight of an end kept twice
    last = None
    while lo is not None and hi is not None and hi[0] / lo[0] - 1 > tol and len(runs) < max_runs:
        (a, fa), (b, fb) = lo, hi
        if fa is not None and fb is not None and fa > 0 >= fb:
            la, lb = math.log(a), math.log(b)
            wa, wb = fa * weight[0], fb * weight[1]
            s = math.exp(la - wa * (lb - la) / (wb - wa))
        else:
            s = math.sqrt(a * b)
        width = b - a
        s = min(max(s, a + 0.1 * width, a * (1 + tol / 2)), b - 0.1 * width, b * (1 - tol / 2))
        ok, f = run(s)
        if ok:
            hi = (s, f)
            weight = [weight[0] / 2 if last == "hi" else weight[0], 1.0]
            last = "hi"
        else:
            lo = (s, f)
            weight = [1.0, weight[1] / 2 if last == "lo" else weight[1]]
            last = "lo"
    return (lo[0] if lo else None), (hi[0] if hi else None), runs


def _certify_run(steps, epochs, eps, delta, two_sided, queue):
    """In a child: sigmacert's dp certificate at its own exact sigma; ("ok", bound, success,
    two_sided) or ("refused", reason) to the queue."""
    from certifier.certify import certify
    from certifier.errors import CannotCertifyError
    from certifier.params import parse_decimal
    # sigma None: the certifier's own exact sigma, one resolution step up where the margin at it is too thin
    # for any grid (certifier.resolution), as `sigmacert certify` does
    try:
        out = certify(steps, epochs, parse_decimal("delta", delta), None, two_sided=two_sided,
                      kind_name="dp", kind_params={"epsilon": str(eps)})
    except CannotCertifyError as err:
        queue.put(("refused", str(err)))
        return
    queue.put(("ok", out.bound, bool(out.success), bool(out.two_sided)))


def _budgeted(target, args, budget: float):
    """target(*args, queue) in a tied child, killed once its CPU time reaches `budget` seconds:
    (message or None on time-out, CPU seconds)."""
    import queue as queue_mod
    q = mp.get_context("fork").Queue()
    p = _child(target, (*args, q))
    cpu, msg = 0.0, None
    while True:
        try:
            msg = q.get(timeout=0.5)
            break
        except queue_mod.Empty:
            cpu = max(cpu, _cpu_seconds(p.pid))
            if cpu >= budget or not p.is_alive():
                break
    cpu = max(cpu, _cpu_seconds(p.pid))
    if p.is_alive():
        p.kill()
    p.join()
    return msg, cpu


def exact_dp(steps, epochs, eps: int, delta: str):
    """sigmacert's exact sigma (numerical) and its CPU seconds (this process)."""
    import sigmacert
    t0 = time.process_time()
    exact = sigmacert.exact_sigma(steps, epochs, epsilon=eps, delta=float(delta))
    return exact, time.process_time() - t0


def sigmacert_dp(steps, epochs, eps: int, delta: str, budget: float = float("inf"), exact=None,
                 sides=(True, False)):
    """sigmacert's exact sigma and its dp certificate there, the certificate in a child killed at
    `budget` CPU seconds: two-sided, else (refused or past the budget) the upper side, reported as
    such (`sides`: which to try, in order). (exact, sides, bound, ok, seconds, s_exact)."""
    if exact is None:
        exact, t_exact = exact_dp(steps, epochs, eps, delta)
    else:
        exact, t_exact = exact
    spent = t_exact
    for two_sided in sides:
        msg, cpu = _budgeted(_certify_run, (steps, epochs, eps, delta, two_sided), budget)
        spent += cpu
        side = "two-sided" if two_sided else "upper side"
        if msg is None:
            why = (f"passed the budget of {budget:.0f} CPU s" if cpu >= budget else
                   f"ended without a result after {cpu:.0f} CPU s (its traceback is above)")
            print(f"  sigmacert M={steps} E={epochs} eps={eps}: the {side} certificate {why}", flush=True)
            continue
        if msg[0] == "refused":
            print(f"  sigmacert M={steps} E={epochs} eps={eps}: {side} certificate refused: {msg[1]}", flush=True)
            if two_sided and "lower side" in msg[1]:
                continue
            return exact, "no certificate", None, False, spent, t_exact
        _, bound, ok, two = msg
        print(f"  sigmacert M={steps} E={epochs} eps={eps}: {side} certificate in {cpu:.1f} CPU s", flush=True)
        return exact, ("two-sided" if two else "upper side only"), bound, ok, spent, t_exact
    return exact, "not issued", None, False, spent, t_exact


def _fmt(x, spec=".6f"):
    return "-" if x is None else format(x, spec)


def run_dp(args) -> int:
    cells, tol = (DP_SMALL, args.tol or 3e-2) if args.small else (DP_CELLS, args.tol or 1e-3)
    delta = float(DELTA)
    if args.cells:
        try:
            keep = {tuple(int(x) for x in c.split("x")) for c in args.cells.split(",")}
        except ValueError:
            print(f"bench_vs_accountant: --cells takes MxE[xEPS][,...], got {args.cells!r}", file=sys.stderr)
            return 2
        cells = [c for c in cells if c[:2] in keep or c in keep]   # MxE, or MxExeps for one eps
    print(f"(eps, delta = {DELTA}): accountant = PLD_accounting gaussian_allocation_epsilon_range (default "
          f"route), certifies sigma when its upper eps <= target; per-run budget {args.budget:.0f} CPU s, bracket "
          f"tolerance {tol:g} relative, at most {args.max_runs} runs per cell")
    print(f"load average at start: {open('/proc/loadavg').read().split()[0:3]}", flush=True)
    head = (f"{'M':>4} {'E':>3} {'eps':>3} | {'exact sigma':>11} {'certificate':<15} {'cert delta':>12} "
            f"{'cert?':>5} {'s':>6} | {'F&S sigma':>9} {'F&S lo':>9} {'width':>8} {'runs':>4} {'s':>7} | "
            f"{'noise ratio':>11} {'F&S>=exact':>10} {'time ratio':>10} {'vs exact':>8}")
    rows = []
    order = (True, False) if args.sides == "two" else (False,)
    for m, e, eps in cells:
        found = exact_dp(m, e, eps, DELTA)           # the accountant's search starts at the exact sigma
        print(f"  sigmacert M={m} E={e} eps={eps}: exact sigma {found[0]} in {found[1]:.2f} CPU s", flush=True)
        lo, hi, runs = fs_search(m, e, eps, delta, float(found[0]), tol, args.budget, args.max_runs)
        exact, sides, bound, ok, t_ours, t_exact = sigmacert_dp(m, e, eps, DELTA, args.cert_budget, found, order)
        t_fs = sum(r["seconds"] for r in runs)
        width = None if lo is None or hi is None else hi / lo - 1
        ratio = None if hi is None else hi / float(exact)
        consistent = None if hi is None else hi >= float(exact) * (1 - tol)
        rows.append(f"{m:>4} {e:>3} {eps:>3} | {str(exact):>11} {sides:<15} {_fmt(None if bound is None else float(bound), '.6e'):>12} "
                    f"{'yes' if ok else 'no':>5} {t_ours:>6.1f} | {_fmt(hi):>9} {_fmt(lo):>9} "
                    f"{_fmt(width, '.2e'):>8} {len(runs):>4} {t_fs:>7.1f} | {_fmt(ratio, '.5f'):>11} "
                    f"{'-' if consistent is None else ('yes' if consistent else 'NO'):>10} {t_fs / t_ours:>10.3g} {t_fs / max(t_exact, 1e-9):>8.3g}")
        print(head + "\n" + rows[-1], flush=True)
    print("\n" + head)
    print("\n".join(rows))
    print("noise ratio = F&S sigma / exact sigma (F&S sigma: the smallest sigma it certified; F&S lo: the "
          "largest it did not, within the budget); time ratio = F&S search seconds / sigmacert seconds "
          "(exact sigma + certificate, a certificate past --cert-budget counted at its budget); vs exact = F&S "
          "search seconds / sigmacert's exact sigma seconds; all seconds are CPU seconds")
    print(f"load average at end: {open('/proc/loadavg').read().split()[0:3]}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--question", choices=("tv", "dp"), default="tv",
                    help="tv: TV <= 0.1 at Table 4's cells (default); dp: the (eps, delta) question")
    ap.add_argument("--budget", type=float, default=240.0,
                    help="dp: CPU seconds per accountant run (default 240); a run past it certifies nothing")
    ap.add_argument("--tol", type=float, default=None,
                    help="dp: relative width of the accountant's final bracket (default 1e-3; --small 3e-2)")
    ap.add_argument("--cells", default=None,
                    help="dp: a subset of the cells, e.g. 1000x1,100x10 or 100x10x4 (one eps; default: all)")
    ap.add_argument("--cert-budget", type=float, default=float("inf"),
                    help="dp: CPU seconds for each sigmacert certificate (two-sided, then upper side; default none)")
    ap.add_argument("--sides", choices=("two", "one"), default="two",
                    help="dp: sigmacert's certificate two-sided (then the upper side if that fails; default) "
                         "or the upper side only")
    ap.add_argument("--max-runs", type=int, default=8, help="dp: accountant runs per cell at most (default 8)")
    ap.add_argument("--limit", type=float, default=120.0, help="seconds per accountant run (default 120)")
    ap.add_argument("--search-steps", type=int, default=5, help="bisection steps for the smallest sigma")
    ap.add_argument("--small", action="store_true", help="one tiny cell, coarse grids (seconds): checks the "
                                                         "benchmark runs")
    args = ap.parse_args(argv)
    _exit_on_signals()
    try:
        import PLD_accounting  # noqa: F401
    except ImportError:
        print("bench_vs_accountant: needs the `bench` extra (pip install -e '.[bench]')", file=sys.stderr)
        return 2
    if args.question == "dp":
        return run_dp(args)
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
