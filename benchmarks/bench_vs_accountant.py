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

`--question dp`: the (eps, delta) question instead, in one run. For (M, E) in (100, 10), (250, 20),
(1000, 1), eps in 1, 4, delta = 1e-5, and the tails (100, 10, eps 8, delta 1e-5), (1000, 10, eps 4,
delta 1e-8), per cell: sigmacert's exact sigma; its signed two-sided
certificate (sigmacert.certify(M, E, epsilon=, delta=)) in a child killed at `--cert-budget` CPU s,
replayed by the independent verifier in a child killed at `--verify-budget`; then the smallest sigma
the accountant certifies (its upper eps at delta <= eps, default route
`gaussian_allocation_epsilon_range`) by a bracketing search in [exact sigma, hi] (no sound accountant
certifies below the exact sigma), each run a child killed at `--budget` CPU s, the whole search at
`--search-budget`: noise ratio and time ratio. Every child dies with the benchmark (also when it is
killed). `--json PATH` appends each finished cell's record; a rerun with the same PATH skips them.

    python benchmarks/bench_vs_accountant.py --question dp [--budget 240] [--search-budget 900] [--tol 1e-3]
        [--cert-budget 600] [--verify-budget 300] [--json PATH] [--cells 100x10] [--small]
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
DELTA = "1e-5"
# (M, E, eps, delta): the delta = 1e-5 grid, then the tails (large eps, small delta)
DP_CELLS = [(100, 10, 1, DELTA), (100, 10, 4, DELTA), (250, 20, 1, DELTA), (250, 20, 4, DELTA), (1000, 1, 1, DELTA),
            (1000, 1, 4, DELTA), (100, 10, 8, "1e-5"), (1000, 10, 4, "1e-8")]
DP_SMALL = [(5, 2, 1, DELTA)]


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


def _loadavg() -> str:
    try:
        with open("/proc/loadavg") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "-"


def _stamp() -> str:
    return time.strftime("%H:%M:%S", time.gmtime())


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


def fs_search(steps, epochs, eps, delta, exact: float, tol: float, budget: float, max_runs: int,
              search_budget: float = float("inf"), first_step: float = 1e-2):
    """The smallest sigma whose accountant run certifies eps, as a bracket (lo, hi]: hi the smallest
    sigma certified, lo the largest not certified (within the budgets).

    The bracket starts at lo = `exact` (sigmacert's exact sigma) without running the accountant there:
    sigma_exact - 1e-6 misses the target (the two-sided certificate proves it), so an accountant whose
    upper bound is sound certifies nothing below sigma_exact; starting there saves runs and does not
    move the accountant's answer. The first run is at exact * (1 + first_step); upward steps until one
    certifies (aimed by eps ~ 1/sigma, doubling where a run gave no bound), then Illinois steps on
    log(upper / eps) against log sigma where both ends have an upper bound, bisection in log sigma
    otherwise, until hi / lo - 1 <= tol ("bracket"), `max_runs` runs ("max-runs"), or the cell's CPU
    seconds reach `search_budget` ("budget"; each run gets at most `budget` and what the cell has left).
    Returns (lo, hi, runs, stop); hi is None if nothing certified."""
    import math
    runs = []
    lo, hi = (exact, None), None          # (sigma, log(upper/eps) or None)
    spent = 0.0

    def stopped():
        if hi is not None and hi[0] / lo[0] - 1 <= tol:
            return "bracket"
        if len(runs) >= max_runs:
            return "max-runs"
        if search_budget - spent < min(budget, search_budget) * 0.05:
            return "budget"
        return None

    def run(s):
        nonlocal spent, lo, hi
        left = search_budget - spent
        r = fs_certifies(steps, epochs, s, eps, delta, min(budget, left))
        r["sigma"], r["limit"] = s, min(budget, left)
        spent += r["seconds"]
        runs.append(r)
        print(f"  run M={steps} E={epochs} eps={eps:g} sigma={s:.6f}: upper {_fmt(r['upper'])} lower "
              f"{_fmt(r['lower'])} disc {_fmt(r['disc'], '.3g')} {r['status']:<8} {r['seconds']:7.1f} s "
              f"certified={'yes' if r['certified'] else 'no'}  [{_stamp()}, cell {spent:.0f}/{search_budget:.0f} "
              f"CPU s, load {_loadavg()}]", flush=True)
        f = math.log(r["upper"] / eps) if r["upper"] else None
        if r["certified"]:
            if hi is None or s < hi[0]:
                hi = (s, f)
        elif s > lo[0]:
            lo = (s, f)
        return r["certified"], f

    s, step = exact * (1 + first_step), first_step
    while hi is None and stopped() is None:  # upward until one run certifies
        ok, f = run(s)
        if ok:
            break
        if f is not None:  # aim a little past the root (eps ~ 1/sigma there)
            s = max(s * math.exp(f) * (1 + tol), s * (1 + tol))
        else:
            step *= 2
            s = s * (1 + step)
    weight = [1.0, 1.0]     # Illinois: halve the weight of an end kept twice
    last = None
    while hi is not None and stopped() is None:
        (a, fa), (b, fb) = lo, hi
        if fa is not None and fb is not None and fa > 0 >= fb:
            la, lb = math.log(a), math.log(b)
            wa, wb = fa * weight[0], fb * weight[1]
            s = math.exp(la - wa * (lb - la) / (wb - wa))
        else:
            s = math.sqrt(a * b)
        width = b - a
        s = min(max(s, a + 0.1 * width, a * (1 + tol / 2)), b - 0.1 * width, b * (1 - tol / 2))
        ok, _ = run(s)
        end = "hi" if ok else "lo"
        if end == "hi":
            weight = [weight[0] / 2 if last == "hi" else weight[0], 1.0]
        else:
            weight = [1.0, weight[1] / 2 if last == "lo" else weight[1]]
        last = end
    return lo[0], (hi[0] if hi else None), runs, stopped()


def _budgeted(target, args, budget: float):
    """target(*args, queue) in a tied child, killed once its CPU time reaches `budget` seconds:
    (message or None, CPU seconds, "ok" | "budget" | "died")."""
    import queue as queue_mod
    q = mp.get_context("fork").Queue()
    p = _child(target, (*args, q))
    cpu, msg, status = 0.0, None, "ok"
    while True:
        try:
            msg = q.get(timeout=0.5)
            break
        except queue_mod.Empty:
            cpu = max(cpu, _cpu_seconds(p.pid))
            if cpu >= budget:
                status = "budget"
                break
            if not p.is_alive():
                status = "died"
                break
    cpu = max(cpu, _cpu_seconds(p.pid))
    if p.is_alive():
        p.kill()
    p.join()
    return msg, cpu, status


def _certificate_run(steps, epochs, eps, delta, two_sided, queue):
    """In a child: sigmacert.certify(M, E, epsilon=, delta=) two-sided at its own exact sigma, signed with
    a key made here (it never leaves this child); ("ok", fields, envelope, public key PEM) or
    ("refused", reason) to the queue."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    import sigmacert
    from sigmacert.errors import SigmacertError
    key = Ed25519PrivateKey.generate()
    pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    t0, shown = time.perf_counter(), [0.0]

    def progress(stage, percent, seconds):  # a progress line every 60 s at most
        if time.perf_counter() - shown[0] >= 60:
            shown[0] = time.perf_counter()
            print(f"    certificate M={steps} E={epochs} eps={eps}: {stage} {percent:.0f} % "
                  f"({time.perf_counter() - t0:.0f} s wall) [{_stamp()}, load {_loadavg()}]", flush=True)
    try:
        c = sigmacert.certify(steps, epochs, epsilon=str(eps), delta=delta, key=key, two_sided=two_sided,
                              progress=progress)
    except SigmacertError as err:
        queue.put(("refused", str(err).splitlines()[0]))
        return
    fields = {"sigma": str(c.sigma), "two_sided": bool(c.two_sided), "bound": str(c.bound),
              "sigma_low": None if c.sigma_low is None else str(c.sigma_low),
              "bound_lower": None if c.bound_lower is None else str(c.bound_lower), "kind": c.kind}
    queue.put(("ok", fields, c.envelope, pub))


def _verify_run(envelope, public_pem, queue):
    """In a child: the independent verifier's replay of the envelope (sigmacert.verify -> verifier)."""
    import sigmacert
    v = sigmacert.verify(envelope, public_pem)
    queue.put(("ok", {"accepted": bool(v.accepted), "reason": v.reason,
                      "replayed_bound": None if v.replayed_bound is None else str(v.replayed_bound),
                      "replayed_lower": None if v.replayed_lower is None else str(v.replayed_lower)}))


def exact_dp(steps, epochs, eps: int, delta: str):
    """sigmacert's exact sigma (numerical) and its CPU seconds (this process)."""
    import sigmacert
    t0 = time.process_time()
    exact = sigmacert.exact_sigma(steps, epochs, epsilon=eps, delta=float(delta))
    return exact, time.process_time() - t0


def sigmacert_dp(steps, epochs, eps: int, delta: str, cert_budget: float, verify_budget: float,
                 two_sided: bool = True) -> dict:
    """sigmacert's two-sided (eps, delta) certificate at its exact sigma, signed, then replayed by the
    independent verifier; each in a child killed at its CPU budget. status: "two-sided", "one-sided"
    (the lower side could not be certified and certify kept the upper), "refused", "budget", "died"."""
    side = "two-sided" if two_sided else "upper side"
    print(f"  sigmacert M={steps} E={epochs} eps={eps}: {side} certificate (budget {cert_budget:.0f} CPU s) "
          f"[{_stamp()}, load {_loadavg()}]", flush=True)
    msg, cpu, status = _budgeted(_certificate_run, (steps, epochs, eps, delta, two_sided), cert_budget)
    out = {"status": status, "seconds": cpu, "verify": None}
    if msg is None:
        print(f"  sigmacert M={steps} E={epochs} eps={eps}: certificate {status} after {cpu:.1f} CPU s", flush=True)
        return out
    if msg[0] == "refused":
        out.update(status="refused", reason=msg[1])
        print(f"  sigmacert M={steps} E={epochs} eps={eps}: refused after {cpu:.1f} CPU s: {msg[1]}", flush=True)
        return out
    _, fields, envelope, pub = msg
    out.update(fields, status="two-sided" if fields["two_sided"] else "one-sided")
    print(f"  sigmacert M={steps} E={epochs} eps={eps}: {out['status']} certificate at sigma {fields['sigma']} "
          f"(sigma_low {fields['sigma_low']}), delta <= {fields['bound']}, {cpu:.1f} CPU s; verifying (budget "
          f"{verify_budget:.0f} CPU s)", flush=True)
    vmsg, vcpu, vstatus = _budgeted(_verify_run, (envelope, pub), verify_budget)
    out["verify"] = {"status": vstatus, "seconds": vcpu, **(vmsg[1] if vmsg else {})}
    verdict = (("accepted" if vmsg[1]["accepted"] else f"REJECTED ({vmsg[1]['reason']})") if vmsg else vstatus)
    print(f"  verifier M={steps} E={epochs} eps={eps}: {verdict} in {vcpu:.1f} CPU s", flush=True)
    return out


def _fmt(x, spec=".6f"):
    return "-" if x is None else format(x, spec)


def dp_cell(m, e, eps, args, tol, delta: str = DELTA) -> dict:
    """One cell of the (eps, delta) question, all its figures in one record (CPU seconds)."""
    rec = {"M": m, "E": e, "epsilon": eps, "delta": delta, "start": _stamp(), "load_start": _loadavg()}
    exact, t_exact = exact_dp(m, e, eps, delta)
    rec.update(exact_sigma=str(exact), exact_seconds=t_exact)
    print(f"  sigmacert M={m} E={e} eps={eps}: exact sigma {exact} in {t_exact:.2f} CPU s", flush=True)
    rec["certificate"] = sigmacert_dp(m, e, eps, delta, args.cert_budget, args.verify_budget, args.sides == "two")
    lo, hi, runs, stop = fs_search(m, e, eps, float(delta), float(exact), tol, args.budget, args.max_runs,
                                   args.search_budget, args.first_step)
    rec["fs"] = {"sigma": hi, "lo": lo, "width": None if hi is None else hi / lo - 1, "stop": stop,
                 "seconds": sum(r["seconds"] for r in runs), "runs": runs, "eval_budget": args.budget,
                 "search_budget": args.search_budget, "tol": tol, "max_runs": args.max_runs}
    rec["end"], rec["load_end"] = _stamp(), _loadavg()
    return rec


def _ratios(rec):
    """(noise ratio text, time ratio text, vs-exact text) of a record; '>'/'<' where a side hit its budget."""
    fs, cert = rec["fs"], rec["certificate"]
    exact = float(rec["exact_sigma"])
    noise = (f">{fs['lo'] / exact:.5f}" if fs["sigma"] is None else f"{fs['sigma'] / exact:.5f}")
    t_fs = fs["seconds"]
    fs_more = fs["sigma"] is None or fs["stop"] != "bracket"   # the accountant's search did not finish
    ours = rec["exact_seconds"] + cert["seconds"]
    ours_more = cert["status"] in ("budget", "died", "refused") or cert["status"] == "one-sided"
    mark = ">" if fs_more and not ours_more else "<" if ours_more and not fs_more else "~" if fs_more else ""
    time_ratio = f"{mark}{t_fs / max(ours, 1e-9):.3g}"
    vs_exact = f"{'>' if fs_more else ''}{t_fs / max(rec['exact_seconds'], 1e-9):.3g}"
    return noise, time_ratio, vs_exact


DP_HEAD = (f"{'M':>4} {'E':>3} {'eps':>3} {'delta':>5} | {'exact sigma':>11} {'certificate':<9} {'cert sigma':>10} "
           f"{'cert delta':>12} {'s':>6} {'verify':>8} {'s':>6} | {'F&S sigma':>9} {'F&S lo':>9} {'width':>8} "
           f"{'runs':>4} {'stop':>8} {'s':>7} | {'noise ratio':>11} {'time ratio':>10} {'vs exact':>9}")


def dp_row(rec) -> str:
    fs, cert = rec["fs"], rec["certificate"]
    v = cert.get("verify") or {}
    verdict = "-" if not v else v["status"] if v["status"] != "ok" else ("accepted" if v["accepted"] else "REJECTED")
    bound = cert.get("bound")
    noise, time_ratio, vs_exact = _ratios(rec)
    return (f"{rec['M']:>4} {rec['E']:>3} {rec['epsilon']:>3} {rec['delta']:>5} | {rec['exact_sigma']:>11} {cert['status']:<9} "
            f"{cert.get('sigma') or '-':>10} {'-' if bound is None else format(float(bound), '.6e'):>12} "
            f"{cert['seconds']:>6.1f} {verdict:>8} {v.get('seconds', 0.0):>6.1f} | {_fmt(fs['sigma']):>9} "
            f"{_fmt(fs['lo']):>9} {_fmt(fs['width'], '.2e'):>8} {len(fs['runs']):>4} {fs['stop'] or '-':>8} "
            f"{fs['seconds']:>7.1f} | {noise:>11} {time_ratio:>10} {vs_exact:>9}")


def _resumed(path) -> dict:
    """The cells already in the --json file (one JSON record a line), keyed by (M, E, eps, delta)."""
    import json
    import os
    done = {}
    if path and os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                    done[(rec["M"], rec["E"], rec["epsilon"], rec["delta"])] = rec
                except (ValueError, KeyError, TypeError):
                    continue    # a line cut by a crash: that cell runs again
    return done


def _append(path, rec) -> None:
    import json
    import os
    with open(path, "a") as fh:
        fh.write(json.dumps(rec, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def run_dp(args) -> int:
    cells, tol = (DP_SMALL, args.tol or 3e-2) if args.small else (DP_CELLS, args.tol or 1e-3)
    if args.cells:
        try:
            keep = {tuple(int(x) for x in c.split("x")) for c in args.cells.split(",")}
        except ValueError:
            print(f"bench_vs_accountant: --cells takes MxE[xEPS][,...], got {args.cells!r}", file=sys.stderr)
            return 2
        cells = [c for c in cells if c[:2] in keep or c[:3] in keep]   # MxE, or MxExeps for one eps
    done = _resumed(args.json)
    print(f"(eps, delta; delta = {DELTA} unless the row says): accountant = PLD_accounting gaussian_allocation_epsilon_range (default "
          f"route), certifies sigma when its upper eps <= target; bracket from sigmacert's exact sigma; per-run "
          f"budget {args.budget:.0f} CPU s, per-cell search budget {args.search_budget:.0f} CPU s, bracket "
          f"tolerance {tol:g} relative, at most {args.max_runs} runs per cell; sigmacert: two-sided certificate "
          f"budget {args.cert_budget:.0f} CPU s, verifier budget {args.verify_budget:.0f} CPU s")
    print(f"start {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load average {_loadavg()}", flush=True)
    records = []
    for m, e, eps, delta in cells:
        key = (m, e, eps, delta)
        if key in done:
            print(f"  M={m} E={e} eps={eps}: resumed from {args.json}", flush=True)
            records.append(done[key])
            continue
        rec = dp_cell(m, e, eps, args, tol, delta)
        if args.json:
            _append(args.json, rec)
        records.append(rec)
        print(DP_HEAD + "\n" + dp_row(rec) + f"\n  [{_stamp()}, load average {_loadavg()}]", flush=True)
    print("\n" + DP_HEAD)
    print("\n".join(dp_row(r) for r in records))
    print("noise ratio = F&S sigma / exact sigma (F&S sigma: the smallest sigma its upper bound certified; F&S lo: "
          "the largest it did not, or the exact sigma where the bracket starts; '>' where it certified nothing); "
          "time ratio = F&S search seconds / sigmacert seconds (exact sigma + two-sided certificate, without the "
          "verifier); '>' where the accountant's search stopped before its bracket tolerance, '<' where "
          "sigmacert's certificate did not finish, '~' both; vs exact = F&S search seconds / exact sigma seconds; "
          "all seconds are CPU seconds")
    print(f"end {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load average {_loadavg()}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--question", choices=("tv", "dp"), default="tv",
                    help="tv: TV <= 0.1 at Table 4's cells (default); dp: the (eps, delta) question")
    ap.add_argument("--budget", type=float, default=240.0,
                    help="dp: CPU seconds per accountant run (default 240); a run past it is killed and certifies "
                         "nothing")
    ap.add_argument("--search-budget", type=float, default=900.0,
                    help="dp: CPU seconds for the accountant's whole search per cell (default 900); when it runs "
                         "out the table shows the bracket reached and 'budget'")
    ap.add_argument("--first-step", type=float, default=1e-2,
                    help="dp: the first accountant run is at exact sigma * (1 + this) (default 0.01)")
    ap.add_argument("--tol", type=float, default=None,
                    help="dp: relative width of the accountant's final bracket (default 1e-3; --small 3e-2)")
    ap.add_argument("--cells", default=None,
                    help="dp: a subset of the cells, e.g. 1000x1,100x10 or 100x10x4 (one eps; default: all)")
    ap.add_argument("--cert-budget", type=float, default=600.0,
                    help="dp: CPU seconds for sigmacert's signed two-sided certificate per cell (default 600); "
                         "past it the cell says 'budget'")
    ap.add_argument("--verify-budget", type=float, default=300.0,
                    help="dp: CPU seconds for the independent verifier's replay per cell (default 300)")
    ap.add_argument("--sides", choices=("two", "one"), default="two",
                    help="dp: sigmacert's certificate two-sided (default) or the upper side only")
    ap.add_argument("--json", default=None, metavar="PATH",
                    help="dp: append one JSON record per finished cell to PATH; cells already in PATH are not "
                         "run again (a crashed run resumes)")
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
