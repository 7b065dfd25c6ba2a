"""`sigmacert sigma` and `sigmacert tv`: the closed form and the exact TV."""
from __future__ import annotations

import json

from certifier import closed_form as cf
from certifier.exact import exact_sigma, exact_tv
from certifier.params import ParameterError, parse_epochs, parse_sigma, parse_steps, parse_target


def _emit(args, obj: dict, lines: list[str]) -> int:
    print(json.dumps(obj, indent=2) if args.json else "\n".join(lines))
    return 0


def run_sigma(args) -> int:
    m, e = parse_steps(args.steps), parse_epochs(args.epochs)
    lam_q = parse_target(args.target)
    lam = float(lam_q)
    closed, gdp = cf.closed_form_sigma(m, e, lam), cf.gdp_limit_sigma(m, e, lam)
    exact = exact_sigma(m, e, lam_q)
    obj = {"steps": m, "epochs": e, "target": args.target, "closed_form": closed,
           "exact": exact, "gdp_limit": gdp}
    if args.json:
        return _emit(args, obj, [])
    tv_x, tv_c = exact_tv(m, e, float(exact), check=False).tv, exact_tv(m, e, closed, check=False).tv
    return _emit(args, obj, [
        f"M={m} E={e} target lambda={args.target} (every membership test: accuracy <= {0.5 + lam / 2:.6g})",
        f"  closed-form sigma (Cor. 3.4, a proven bound)    : {closed:.6f}  "
        f"(+{100 * (closed / float(exact) - 1):.2f} % noise; exact TV {tv_c:.6f}, accuracy <= {0.5 + tv_c / 2:.6f})",
        f"  exact sigma (Thm 4.1, rounded up to 1e-6)       : {exact}  "
        f"(exact TV {tv_x:.10f}, accuracy <= {0.5 + tv_x / 2:.10f}; certify it with `sigmacert certify`)",
        f"  GDP-limit sigma (App. B.3, a limit, NOT a bound): {gdp:.6f}",
    ])


def run_tv(args) -> int:
    m, e = parse_steps(args.steps), parse_epochs(args.epochs)
    sigma = float(parse_sigma(args.sigma))
    res = exact_tv(m, e, sigma)
    c = cf.c_E(m, e, sigma)
    bound = cf.tv_bound(m, e, sigma)
    obj = {"steps": m, "epochs": e, "sigma": args.sigma, "tv_exact": res.tv, "tv_error": res.error,
           "tv_bound": bound, "chi2": c, "accuracy_bound": 0.5 + 0.5 * bound,
           "accuracy_exact": 0.5 + 0.5 * res.tv}
    return _emit(args, obj, [
        f"M={m} E={e} sigma={args.sigma}",
        f"  exact TV (Thm 4.1)        : {res.tv:.12f}  (error estimate {res.error:.1e}, numerical, not certified)",
        f"  chi-square c_E (eq. 9)    : {c:.6g}",
        f"  bound U(c_E) (Thm 3.3)    : {bound:.12f}",
        f"  attack accuracy, exact    : {0.5 + 0.5 * res.tv:.12f}",
        f"  attack accuracy, bound    : {0.5 + 0.5 * bound:.12f}",
    ])


def register(sub) -> None:
    p = sub.add_parser("sigma", help="closed-form, exact and GDP-limit sigma for a target lambda")
    p.add_argument("--steps", "-M", required=True, help="steps per epoch M")
    p.add_argument("--epochs", "-E", required=True, help="epochs E")
    p.add_argument("--target", "-l", required=True, help="TV target lambda in (0, 1)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_sigma)
    p = sub.add_parser("tv", help="exact TV and the closed-form bound at a given sigma")
    p.add_argument("--steps", "-M", required=True, help="steps per epoch M")
    p.add_argument("--epochs", "-E", required=True, help="epochs E")
    p.add_argument("--sigma", "-s", required=True, help="noise multiplier sigma > 0")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_tv)
    register_mc(sub)


def run_mc(args) -> int:
    from certifier.montecarlo import monte_carlo_tv
    from certifier.params import parse_count
    m, e = parse_steps(args.steps), parse_epochs(args.epochs)
    sigma = float(parse_sigma(args.sigma))
    n = parse_count("samples", args.samples, 10**10)
    if m * e > 10**6:
        raise ParameterError("Monte Carlo needs M*E <= 1e6 normals per sample")
    seed = parse_count("seed", args.seed, 2**63) if args.seed != "0" else 0
    import sys
    import time
    start = time.monotonic()

    def progress(frac):
        if not args.json and not args.quiet:
            print(f"\rmc: {100 * frac:5.1f} %  {time.monotonic() - start:6.1f} s", end="", file=sys.stderr, flush=True)
    r = monte_carlo_tv(m, e, sigma, n, seed=seed, progress=progress)
    if not args.json and not args.quiet:
        print(file=sys.stderr)
    return _emit(args, {"steps": m, "epochs": e, "sigma": args.sigma, "tv": r.tv, "se": r.se,
                        "samples": r.samples, "seed": seed},
                 [f"M={m} E={e} sigma={args.sigma}: Monte Carlo TV = {r.tv:.6f} +/- {r.se:.6f} "
                  f"(one standard error, {r.samples} samples, seed {seed})"])


def register_mc(sub) -> None:
    p = sub.add_parser("mc", help="Monte Carlo estimate of the TV, E_P (1 - Lambda)_+, with its standard error")
    p.add_argument("--steps", "-M", required=True)
    p.add_argument("--epochs", "-E", required=True)
    p.add_argument("--sigma", "-s", required=True)
    p.add_argument("--samples", "-n", required=True)
    p.add_argument("--seed", default="0")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_mc)
