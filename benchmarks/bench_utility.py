"""Utility report: test accuracy at the closed-form sigma vs the exact sigma.

For three (M, E) cells at lambda = 0.1, train Algorithm 1 (NumPy logistic regression on
scikit-learn's digits, N0 = training split size, C = 1) at the closed-form sigma of Corollary 3.4 and
at the exact sigma of Theorem 4.1 (root search, rounded up to 1e-6), three seeds each, and print
mean +- sd test accuracy (sd "-" with one seed).

    python benchmarks/bench_utility.py [--model mlp] [--seeds 3] [--small]

`--small`: the first cell, one seed (seconds), to check the benchmark runs. Both sigma are the
decimals every face prints (closed form rounded up to 1e-6, exact sigma on the 1e-6 grid).
"""
from __future__ import annotations

import argparse
import statistics
import time

CELLS = ((10, 5), (25, 10), (50, 20))
MODELS = ("logreg", "mlp")  # trainer.models.MODELS, named here so that --help imports nothing


def mean_sd(xs: list[float]) -> str:
    sd = f"{statistics.stdev(xs):4.2f}" if len(xs) > 1 else "   -"
    return f"{statistics.mean(xs):6.2f} +- {sd}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=MODELS, default="logreg")
    ap.add_argument("--lam", default="0.1", help="TV target lambda (a decimal, read exactly)")
    ap.add_argument("--seeds", type=int, default=3, help="training seeds per sigma (>= 1)")
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--small", action="store_true", help="the first cell, one seed (seconds): checks the benchmark runs")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error("--seeds must be at least 1")
    from certifier.numerics.exact import exact_sigma
    from certifier.numerics.schemes import closed_form_sigma_up
    from certifier.params import parse_target
    from trainer import algorithm, data, models
    lam = parse_target(args.lam)
    seeds, cells = (1, CELLS[:1]) if args.small else (args.seeds, CELLS)
    ds = data.load("digits")
    n0 = len(ds.X_train)
    print(f"digits: {n0} train / {len(ds.X_test)} test, N0={n0}, C={args.clip}, lr={args.lr}, "
          f"model={args.model}, lambda={args.lam}, {seeds} seed(s)")
    print(f"{'M':>4} {'E':>4} {'sigma_cf':>9} {'sigma_ex':>9} {'extra':>7} {'acc @ closed form':>18} "
          f"{'acc @ exact':>14} {'gain (pts)':>10}")
    for m, e in cells:
        t0 = time.perf_counter()
        s_cf = float(closed_form_sigma_up(m, e, lam))
        s_ex = float(exact_sigma(m, e, lam))
        accs = {}
        for name, s in (("cf", s_cf), ("ex", s_ex)):
            accs[name] = []
            for seed in range(seeds):
                model = models.make_model(args.model, ds.n_features, ds.n_classes)
                r = algorithm.train(model, ds.X_train, ds.y_train, n0=n0, steps=m, epochs=e, sigma=s,
                                    clip_norm=args.clip, lr=args.lr, seed=seed)
                accs[name].append(100 * algorithm.accuracy(model, r.theta, ds.X_test, ds.y_test))
        print(f"{m:>4} {e:>4} {s_cf:>9.6f} {s_ex:>9.6f} {100 * (s_cf / s_ex - 1):>6.1f}% {mean_sd(accs['cf']):>18} "
              f"{mean_sd(accs['ex']):>14} {statistics.mean(accs['ex']) - statistics.mean(accs['cf']):>+10.2f}"
              f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
