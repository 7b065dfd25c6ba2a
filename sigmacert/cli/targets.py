"""`sigmacert sigma --epsilon/--delta | --fpr/--tpr` and `sigmacert dp`: the dp and tpr target kinds, for one
block (-M, -E) or a run in stages (--stages)."""
from __future__ import annotations

import json

from certifier.door import Run
from certifier.errors import ParameterError
from certifier.params import parse_decimal
from sigmacert import kinds
from sigmacert.cli.core import add_scheme_arguments, run_of, shape_line


def _emit(args, obj: dict, lines: list[str]) -> int:
    print(json.dumps(obj, indent=2) if args.json else "\n".join(lines))
    return 0


def add_kind_arguments(p) -> None:
    """--epsilon/--delta (dp) and --fpr/--tpr (tpr) on `sigma`: exactly one kind per call."""
    p.add_argument("--epsilon", help="dp target: epsilon in [0.01, 20] (with --delta)")
    p.add_argument("--delta", help="dp target: delta in [1e-12, 0.1] (with --epsilon)")
    p.add_argument("--fpr", help="tpr target: false-positive rate alpha in [1e-8, 0.5] (with --tpr)")
    p.add_argument("--tpr", help="tpr target: true-positive rate beta in (alpha, 1) (with --fpr)")


QUICK_NAMES = {"rdp_qp": "RDP sigma (R2, delta_Q||P only, proven)", "rdp": "RDP trade-off sigma (R3, a proven bound)",
               "closed_form": "closed-form sigma (Prop. B.2, a proven bound)"}


def run_sigma_kind(args) -> int:
    """`sigma --epsilon/--delta | --fpr/--tpr`: the exact sigma of a dp or tpr target (shared by the stages of a
    run in stages: the product pair, docs/targets.md) and the proven quick bounds beside it."""
    run = run_of(args, False)
    kind = kinds.parse_kind(args.target, epsilon=args.epsilon, delta=args.delta, fpr=args.fpr, tpr=args.tpr)
    exact = kinds.exact_sigma(run, kind)
    quick, omitted = kinds.quick_bounds(run, kind, exact)
    # a block reads the search's own line at the answer (as for TV); the product checks its second route
    at = kinds.value_at(run.at(exact), kind, check=run.staged)
    # within 3 estimates of the target the search stops in the values' noise (numerics.targets.Curve.in_noise)
    decided = abs(at.value - float(kind.value)) > 3.0 * at.error
    obj = {**run.to_json(), "kind": kind.name, **kind.params, "exact": exact,
           "value_at_exact": at.value, "value_error": at.error, "value_decided": decided, "quick_bounds": quick,
           "quick_bounds_omitted": omitted}
    if args.json:
        return _emit(args, obj, [])
    lines = [shape_line(run, "M x E each") + ", one sigma shared" * run.staged,
             f"target {kind.describe()}",
             f"  exact {'shared ' * run.staged}sigma (rounded up to 1e-6)".ljust(49) + f": {exact}  "
             f"({kind.FUNCTIONAL_WORDS} = {at.value:.6e} <= {kind.target}, error estimate {at.error:.1e}; numerical)"]
    if not decided:
        lines.append("  (that value lies within 3 estimates of the target: the least grid sigma is known to the "
                     "numerics' noise here, `certify` decides on certified bounds)")
    for k, v in quick.items():
        lines.append(f"  {QUICK_NAMES[k]:<46}: {v}  (+{100 * (float(v) / float(exact) - 1):.2f} % noise)")
    for k, why in omitted.items():
        lines.append(f"  {QUICK_NAMES[k]:<46}: left out ({why})")
    if "rdp_qp" in quick or "rdp_qp" in omitted:
        lines.append("  (no closed form bounds delta_P||Q; the exact sigma covers both directions)")
    return _emit(args, obj, lines)


def _closed_bounds(run: Run, sigma: float | None):
    """Beside a block's exact rows, the proven closed-form bounds at each parameter: (R2) on delta_Q||P at eps,
    Proposition B.2 and (R3) on the TPR at FPR; none for a run in stages."""
    return run.pick(lambda m, e, scheme: (
        lambda eps: {"rdp_bound_qp": kinds.rdp_delta_qp(m, e, sigma, eps, scheme)},
        lambda a: {f"{k}_bound": b for k, b in kinds.tpr_bounds(m, e, sigma, a, scheme).items()}),
        lambda stages: (lambda eps: {}, lambda a: {}))


def run_dp(args) -> int:
    """`dp`: eps at delta, delta at eps and the TPR at FPR of the run's pair at its sigma (a block at --sigma; a
    run in stages at its stages' sigmas or --sigma shared)."""
    deltas, fprs, epsilons = args.delta or [], args.fpr or [], args.epsilon or []
    if not (deltas or fprs or epsilons):
        raise ParameterError("give at least one --delta (eps at delta), --epsilon (delta at eps) or --fpr "
                             "(TPR at FPR)")
    run = run_of(args, None).with_sigma(args.sigma, "--sigma")
    p = kinds.privacy_at(run, deltas=deltas, epsilons=epsilons, fprs=fprs)
    delta_bounds, tpr_bounds = _closed_bounds(run, run.sigma and run.sigma_float())
    fl = lambda name, x: float(parse_decimal(name, x))  # noqa: E731
    rows_eps = [{"delta": d, "epsilon": p.epsilon[fl("delta", d)].value,
                 "error": p.epsilon[fl("delta", d)].error} for d in deltas]
    rows_delta = [{"epsilon": x, "delta": p.delta[fl("epsilon", x)].value, "error": p.delta[fl("epsilon", x)].error,
                   **delta_bounds(fl("epsilon", x))} for x in epsilons]
    rows_tpr = [{"fpr": a, "tpr": p.tpr[fl("fpr", a)].value, "error": p.tpr[fl("fpr", a)].error,
                 **tpr_bounds(fl("fpr", a))} for a in fprs]
    obj = {**run.to_json(), "sigma": args.sigma, "method": p.method,
           "tv": p.tv.value, "tv_error": p.tv.error, "epsilon_at_delta": rows_eps, "delta_at_epsilon": rows_delta,
           "tpr_at_fpr": rows_tpr}
    lines = [shape_line(run, "M x E @ sigma each") + f", sigma={args.sigma}" * (not run.staged)
             + f"  (numerical, not certified; routes {p.method})",
             f"  exact TV = delta(0)              : {p.tv.value:.12f}  (error estimate {p.tv.error:.1e})"]
    for r in rows_eps:
        lines.append(f"  eps at delta = {r['delta']:<8}          : {r['epsilon']:.8f}  "
                     f"(both directions; error estimate {r['error']:.1e})")
    for r in rows_delta:
        rdp = f"; RDP bound on delta_Q||P {r['rdp_bound_qp']:.3e}" if "rdp_bound_qp" in r else ""
        lines.append(f"  delta at eps = {r['epsilon']:<8}          : {r['delta']:.6e}  "
                     f"(error estimate {r['error']:.1e}{rdp})")
    for r in rows_tpr:
        extra = "".join(f", {k.replace('_bound', '')} bound {v:.6g}" for k, v in r.items() if k.endswith("_bound"))
        lines.append(f"  TPR at FPR {r['fpr']:<8}              : {r['tpr']:.10f}  "
                     f"(error estimate {r['error']:.1e}{extra.replace(', ', '; ', 1)})")
    return _emit(args, obj, lines)


KIND_FLAGS = ("epsilon", "delta", "fpr", "tpr")


def register(sub) -> None:
    """Adds the kind flags to `sigma` (registered by sigmacert.cli.core, earlier in COMMAND_MODULES) and
    the `dp` command."""
    sigma = sub.choices["sigma"]
    add_kind_arguments(sigma)
    tv_run = sigma.get_default("run")
    sigma.set_defaults(run=lambda args: run_sigma_kind(args) if any(getattr(args, k) is not None for k in KIND_FLAGS)
                       else tv_run(args))
    p = sub.add_parser("dp", help="eps at delta, delta at eps and the TPR at given FPRs of the pair at sigma")
    p.add_argument("--steps", "-M", help="steps per epoch M (fixed-bins: number of bins)")
    p.add_argument("--stages", help="a run in stages M x E @ sigma: 100x5@1.2,400x5@1.5, or 100x5,400x5 with "
                                    "--sigma (instead of -M/-E)")
    p.add_argument("--epochs", "-E", help="epochs E (fixed-bins: rounds per bin)")
    p.add_argument("--sigma", "-s", help="noise multiplier sigma > 0")
    p.add_argument("--delta", action="append", help="print eps at this delta (repeatable)")
    p.add_argument("--epsilon", action="append", help="print delta at this eps (repeatable)")
    p.add_argument("--fpr", action="append", help="print the TPR at this false-positive rate (repeatable)")
    add_scheme_arguments(p)
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_dp)


__all__ = ["add_kind_arguments", "run_sigma_kind", "run_dp", "register"]
