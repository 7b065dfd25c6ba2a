"""Utility report: test accuracy at the closed-form sigma vs the exact sigma.

For three (M, E) cells at lambda = 0.1, train Algorithm 1 (NumPy logistic regression on
scikit-learn's digits, N0 = training split size, C = 1) at the closed-form sigma of Corollary 3.4 and
at the exact sigma of Theorem 4.1 (root search, rounded up to 1e-6), three seeds each, and print
mean +- sd test accuracy.  Run: .venv/bin/python benchmarks/bench_utility.py [--model mlp]
"""
from __future__ import annotations

import argparse
import statistics
import time

from certifier.numerics.closed_form import closed_form_sigma
from certifier.numerics.exact import exact_sigma
from trainer import algorithm, data, models

CELLS = ((10, 5), (25, 10), (50, 20))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=tuple(models.MODELS), default="logreg")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--clip", type=float, default=1.0)
    args = ap.parse_args(argv)
    ds = data.load("digits")
    n0 = len(ds.X_train)
    print(f"digits: {n0} train / {len(ds.X_test)} test, N0={n0}, C={args.clip}, lr={args.lr}, "
          f"model={args.model}, lambda={args.lam}, {args.seeds} seeds")
    print(f"{'M':>4} {'E':>4} {'sigma_cf':>9} {'sigma_ex':>9} {'extra':>7} {'acc @ closed form':>18} "
          f"{'acc @ exact':>14} {'gain (pts)':>10}")
    for m, e in CELLS:
        t0 = time.perf_counter()
        s_cf = closed_form_sigma(m, e, args.lam)
        s_ex = float(exact_sigma(m, e, args.lam))
        accs = {}
        for name, s in (("cf", s_cf), ("ex", s_ex)):
            accs[name] = []
            for seed in range(args.seeds):
                model = models.make_model(args.model, ds.n_features, ds.n_classes)
                r = algorithm.train(model, ds.X_train, ds.y_train, n0=n0, steps=m, epochs=e, sigma=s,
                                    clip_norm=args.clip, lr=args.lr, seed=seed)
                accs[name].append(100 * algorithm.accuracy(model, r.theta, ds.X_test, ds.y_test))
        f = lambda xs: f"{statistics.mean(xs):6.2f} +- {statistics.stdev(xs):4.2f}"
        print(f"{m:>4} {e:>4} {s_cf:>9.4f} {s_ex:>9.4f} {100 * (s_cf / s_ex - 1):>6.1f}% {f(accs['cf']):>18} "
              f"{f(accs['ex']):>14} {statistics.mean(accs['ex']) - statistics.mean(accs['cf']):>+10.2f}"
              f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
