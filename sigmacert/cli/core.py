"""`sigmacert sigma` and `sigmacert tv`: the closed form and the exact TV, for either sampling scheme."""
from __future__ import annotations

import json
import math
import sys
import time
from decimal import ROUND_CEILING, Decimal

from flint import fmpq

from certifier import door
from certifier.door import ONE_KIND, Run, closed_form_sigma_product, monte_carlo_tv, resolution_label
from certifier.params import (
    ParameterError,
    decimal_str,
    parse_count,
    parse_decimal,
    parse_epochs,
    parse_sigma,
    parse_steps,
    parse_target,
)


def _emit(args, obj: dict, lines: list[str]) -> int:
    print(json.dumps(obj, indent=2) if args.json else "\n".join(lines))
    return 0


def run_shape(args) -> tuple[int, int, str, int | None]:
    """(M, E, scheme, iterations) from --steps, --epochs / --iterations and --scheme."""
    scheme = door.parse_scheme(args.scheme)
    m = parse_steps(args.steps)
    e = None if args.epochs is None else parse_epochs(args.epochs)
    t = None if args.iterations is None else parse_count("iterations", args.iterations, 10**12)
    return m, parse_epochs(door.resolve_epochs(m, e, scheme, t)), scheme, t


def _scheme_line(m: int, e: int, scheme: str, t: int | None) -> str:
    if scheme == door.RANDOM_ALLOCATION:
        return f"M={m} E={e} (random allocation, Algorithm 1: a fresh allocation every epoch)"
    rounds = f"{t} iterations, E = ceil({t}/{m}) = {e}" if t is not None else f"E={e}"
    return (f"M={m} bins, {rounds} (fixed bins: one bin per record for the whole run; "
            f"the pair is the one-epoch pair at sigma/sqrt({e}))")


def _shape_json(m: int, e: int, scheme: str, t: int | None) -> dict:
    obj = {"steps": m, "epochs": e, "scheme": scheme}
    if t is not None:
        obj["iterations"] = t
    return obj


def _accuracy_up(tv: float, places: int) -> str:
    """1/2 + tv/2 rounded UP, with at least four significant digits of tv/2 (a tiny TV stays visible)."""
    half = Decimal(tv) / 2  # exact: a float is a dyadic rational
    digits = places if half <= 0 else max(places, 4 - math.floor(math.log10(half)))
    return str((Decimal("0.5") + half).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_CEILING))


def _tv_text(tv: float, places: int) -> str:
    return f"{tv:.{places}f}" if tv >= 1e-3 else f"{tv:.{places - 2}e}"


def run_of(args, per_stage) -> Run:
    """The run the arguments name (their form read by door.given_form): --stages (a run in stages; per_stage: True a
    sigma on every stage, False none, None either) or --steps with --epochs / --iterations and --scheme (a block).
    Refuses --stages together with --steps/--epochs/--iterations/--scheme."""
    def block():
        if args.steps is None:
            raise ParameterError("give --steps (with --epochs) or --stages")
        return Run.block(*run_shape(args))

    def staged(spec):
        if args.scheme != door.DEFAULT_SCHEME:
            raise ParameterError("--stages is for random allocation (Algorithm 1) only")
        return Run.composed(spec, per_stage)
    return door.given_form(args.stages, (args.steps, args.epochs, args.iterations),
                           "--stages replaces --steps, --epochs and --iterations").pick(block, staged)


def shape_line(run: Run, each: str) -> str:
    """The run in words, a command's first line (each: what a stage carries, as "M x E @ sigma each")."""
    return run.pick(lambda m, e, scheme: _scheme_line(m, e, scheme, run.iterations),
                    lambda stages: f"stages {','.join(map(str, stages))} ({each}, random allocation)")


def _closed_forms(run: Run, lam_q: fmpq, exact: str) -> tuple[dict, list, float]:
    """The closed forms beside the exact sigma: of a block Corollary 3.4 (rounded up: a proven bound) and the
    GDP limit; of a run in stages Theorem 3.3 on the product's chi-square (a float estimate); and the exact TV
    at the exact sigma (a block's sigma may lie beyond what a run takes: its scheme's exact TV reads it)."""
    def block(m, e, scheme):
        tv_x = door.exact_tv_scheme(m, e, float(exact), scheme, check=False).tv
        closed = door.closed_form_sigma_up(m, e, lam_q, scheme)
        tv_c = door.exact_tv_scheme(m, e, float(closed), scheme, check=False).tv
        gdp = door.gdp_limit_sigma(m, e, float(lam_q), scheme)
        return {"closed_form": str(closed), "gdp_limit": gdp}, [
            f"  closed-form sigma (Cor. 3.4, a proven bound)    : {closed}  "
            f"(+{100 * (float(closed) / float(exact) - 1):.2f} % noise; exact TV {_tv_text(tv_c, 6)}, "
            f"accuracy <= {_accuracy_up(tv_c, 6)})",
            f"  GDP-limit sigma (App. B.3, a limit, NOT a bound): {gdp:.6f}"], tv_x

    def product(stages):
        closed = closed_form_sigma_product(stages, float(lam_q))
        return {"closed_form_estimate": closed}, [
            f"  chi-square sigma (Thm 3.3 on the product's chi-square, float)  : {closed:.6f}"], \
            door.exact_tv(run.at(exact), check=False).tv
    return run.pick(block, product)


def run_sigma(args) -> int:
    """`sigma -l`: the exact sigma of a TV target (shared by the stages of a run in stages) and its closed forms."""
    if args.target is None:  # --epsilon/--delta and --fpr/--tpr are sigmacert.cli.targets' (it wraps this)
        raise ParameterError(ONE_KIND)
    run = run_of(args, False)
    lam_q = parse_target(args.target)
    exact = door.exact_sigma(run, door.TV(decimal_str(lam_q)))   # res(sigma): certifier.resolution
    closed, lines, tv_x = _closed_forms(run, lam_q, exact)
    obj = {**run.to_json(), "target": args.target, "exact": exact, **closed}
    if args.json:
        return _emit(args, obj, [])
    label = resolution_label(parse_decimal("sigma", exact))
    return _emit(args, obj, [
        shape_line(run, "M x E each") + ", one sigma shared" * run.staged,
        f"target lambda={args.target} (every membership test: accuracy <= {decimal_str(fmpq(1, 2) + lam_q / 2)})",
        *lines[:1],
        f"  exact {'shared ' * run.staged}sigma (Thm 4.1, rounded up to {label}){' ' * max(0, 11 - len(label))}: "
        f"{exact}  "
        f"(exact TV {_tv_text(tv_x, 10)}, accuracy <= {_accuracy_up(tv_x, 10)}; "
        f"certify it with `sigmacert certify`)",
        *lines[1:],
    ])


def _bounds_at(run: Run) -> tuple[dict, list]:
    """Beside a block's exact TV, its chi-square (eq. 9) and the bound U(chi2) (Thm 3.3); none for stages."""
    def block(m, e, scheme):
        sigma = run.sigma_float()
        c, bound = door.chi2(m, e, sigma, scheme), door.tv_bound(m, e, sigma, scheme)
        return {"tv_bound": bound, "chi2": c, "accuracy_bound": 0.5 + 0.5 * bound}, [
            f"  chi-square (eq. 9)        : {c:.6g}",
            f"  bound U(chi2) (Thm 3.3)   : {bound:.12f}",
            f"  attack accuracy, bound    : {0.5 + 0.5 * bound:.12f}"]
    return run.pick(block, lambda stages: ({}, []))


def run_tv(args) -> int:
    """`tv`: the exact TV at sigma (a block at --sigma; a run in stages at its stages' sigmas or --sigma shared)."""
    run = run_of(args, None).with_sigma(args.sigma, "--sigma")
    res = door.exact_tv(run)
    extra, lines = _bounds_at(run)
    obj = {**run.to_json(), "sigma": args.sigma, "tv_exact": res.tv, "tv_error": res.error, "method": res.method,
           **extra, "accuracy_exact": 0.5 + 0.5 * res.tv}
    return _emit(args, obj, [
        shape_line(run, "M x E @ sigma each") + f", sigma={args.sigma}" * (not run.staged),
        f"  exact TV (Thm 4.1)        : {res.tv:.12f}  (error estimate {res.error:.1e}, numerical, not certified)",
        *lines[:2],
        f"  attack accuracy, exact    : {0.5 + 0.5 * res.tv:.12f}",
        *lines[2:],
    ])


def add_scheme_arguments(p) -> None:
    """--scheme and --iterations, shared by sigma, tv and certify."""
    p.add_argument("--scheme", default=door.DEFAULT_SCHEME, choices=door.SCHEMES,
                   help="sampling scheme: random-allocation (Algorithm 1, default) or fixed-bins "
                        "(jax_privacy BallsInBinsSampling: one bin per record for the whole run)")
    p.add_argument("--iterations", "-T", help="fixed-bins only: total iterations T instead of --epochs "
                                              "(E = ceil(T/M))")


def register(sub) -> None:
    p = sub.add_parser("sigma", help="closed-form, exact and GDP-limit sigma for a target lambda "
                                     "(or --epsilon/--delta, or --fpr/--tpr)")
    p.add_argument("--steps", "-M", help="steps per epoch M (fixed-bins: number of bins)")
    p.add_argument("--stages", help="a run in stages M x E, one sigma shared: 100x5,400x5 (instead of -M/-E)")
    p.add_argument("--epochs", "-E", help="epochs E (fixed-bins: rounds per bin)")
    p.add_argument("--target", "-l", help="TV target lambda in (0, 1)")
    add_scheme_arguments(p)
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_sigma)
    p = sub.add_parser("tv", help="exact TV and the closed-form bound at a given sigma")
    p.add_argument("--steps", "-M", help="steps per epoch M (fixed-bins: number of bins)")
    p.add_argument("--stages", help="a run in stages M x E @ sigma: 100x5@1.2,400x5@1.5 (instead of -M/-E/-s)")
    p.add_argument("--epochs", "-E", help="epochs E (fixed-bins: rounds per bin)")
    p.add_argument("--sigma", "-s", help="noise multiplier sigma > 0")
    add_scheme_arguments(p)
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_tv)
    register_mc(sub)


def run_mc(args) -> int:
    m, e = parse_steps(args.steps), parse_epochs(args.epochs)
    sigma = float(parse_sigma(args.sigma))
    n = parse_count("samples", args.samples, 10**10)
    if m * e > 10**6:
        raise ParameterError("Monte Carlo needs M*E <= 1e6 normals per sample")
    seed = parse_count("seed", args.seed, 2**63) if args.seed != "0" else 0
    start, live, shown = time.monotonic(), sys.stderr.isatty(), [-1]
    quiet = args.json or args.quiet

    def progress(frac):  # a terminal gets a live line; a log gets one line per tenth done
        text = f"mc: {100 * frac:5.1f} %  {time.monotonic() - start:6.1f} s"
        if quiet or (not live and int(10 * frac) == shown[0]):
            return
        shown[0] = int(10 * frac)
        print(f"\r{text}" if live else text, end="" if live else "\n", file=sys.stderr, flush=True)
    r = monte_carlo_tv(m, e, sigma, n, seed=seed, progress=progress)
    if live and not quiet:
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
