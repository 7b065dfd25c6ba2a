"""`sigmacert sigma --epsilon/--delta | --fpr/--tpr` and `sigmacert dp`: the dp and tpr target kinds, for one
block (-M, -E) or a run in stages (--stages)."""
from __future__ import annotations

import json

from certifier.door import Run
from certifier.errors import ParameterError
from certifier.numerics.schemes import RANDOM_ALLOCATION
from certifier.params import parse_decimal, parse_sigma
from sigmacert import kinds
from sigmacert.cli.core import add_scheme_arguments, run_shape, stages_json, stages_of


def _emit(args, obj: dict, lines: list[str]) -> int:
    print(json.dumps(obj, indent=2) if args.json else "\n".join(lines))
    return 0


def _shape_json(m: int, e: int, scheme: str, t: int | None) -> dict:
    return {"steps": m, "epochs": e, "scheme": scheme, **({"iterations": t} if t is not None else {})}


def _scheme_line(m: int, e: int, scheme: str, t: int | None) -> str:
    if scheme == RANDOM_ALLOCATION:
        return f"M={m} E={e} (random allocation, Algorithm 1: a fresh allocation every epoch)"
    rounds = f"{t} iterations, E = ceil({t}/{m}) = {e}" if t is not None else f"E={e}"
    return (f"M={m} bins, {rounds} (fixed bins: one bin per record for the whole run; "
            f"the pair is the one-epoch pair at sigma/sqrt({e}))")


def add_kind_arguments(p) -> None:
    """--epsilon/--delta (dp) and --fpr/--tpr (tpr) on `sigma`: exactly one kind per call."""
    p.add_argument("--epsilon", help="dp target: epsilon in [0.01, 20] (with --delta)")
    p.add_argument("--delta", help="dp target: delta in [1e-12, 0.1] (with --epsilon)")
    p.add_argument("--fpr", help="tpr target: false-positive rate alpha in [1e-8, 0.5] (with --tpr)")
    p.add_argument("--tpr", help="tpr target: true-positive rate beta in (alpha, 1) (with --fpr)")


def _stages_name(stages) -> str:
    return ",".join(map(str, stages))


def run_sigma_kind_stages(args, stages) -> int:
    """The exact sigma shared by the stages for a dp or tpr target (the product pair, docs/targets.md)."""
    kind = kinds.parse_kind(args.target, epsilon=args.epsilon, delta=args.delta, fpr=args.fpr, tpr=args.tpr)
    run = Run.in_stages(stages)
    exact = kinds.exact_sigma(run, kind)
    at = kinds.value_at(run.at(exact), kind)
    quick, omitted = kinds.quick_bounds(run, kind, exact)
    obj = {"stages": stages_json(stages), "scheme": RANDOM_ALLOCATION, "kind": kind.name, **kind.params,
           "exact": exact, "value_at_exact": at.value, "value_error": at.error, "quick_bounds": quick,
           "quick_bounds_omitted": omitted}
    target = kind.target
    names = {"rdp_qp": "RDP sigma (R2 on the product, delta_Q||P only, proven)",
             "rdp": "RDP trade-off sigma (R3 on the product, proven)"}
    return _emit(args, obj, [
        f"stages {_stages_name(stages)} (M x E each, random allocation), one sigma shared",
        f"target {kind.describe()}",
        f"  exact shared sigma (Thm 4.1 with a product, rounded up): {exact}  "
        f"({kind.FUNCTIONAL_WORDS} = {at.value:.6e} <= {target}, error estimate {at.error:.1e}; numerical, not "
        "certified)",
        *(f"  {names[k]}: {v}  (+{100 * (float(v) / float(exact) - 1):.2f} % noise)" for k, v in quick.items()),
        *(f"  {names[k]}: left out ({why})" for k, why in omitted.items()),
    ])


def run_sigma_kind(args) -> int:
    stages = stages_of(args, False)
    if stages is not None:
        return run_sigma_kind_stages(args, stages)
    m, e, scheme, t = run_shape(args)
    kind = kinds.parse_kind(args.target, epsilon=args.epsilon, delta=args.delta, fpr=args.fpr, tpr=args.tpr)
    run = Run.block(m, e, scheme, t)
    exact = kinds.exact_sigma(run, kind)
    quick, omitted = kinds.quick_bounds(run, kind, exact)
    at = kinds.value_at(run.at(exact), kind, check=False)  # the search's line, as for TV
    obj = {**_shape_json(m, e, scheme, t), "kind": kind.name, **kind.params, "exact": exact,
           "value_at_exact": at.value, "value_error": at.error, "quick_bounds": quick,
           "quick_bounds_omitted": omitted}
    if args.json:
        return _emit(args, obj, [])
    lines = [f"{_scheme_line(m, e, scheme, t)}",
             f"target {kind.describe()}",
             f"  exact sigma (rounded up to 1e-6)               : {exact}  "
             f"({kind.FUNCTIONAL_WORDS} = {at.value:.6e} <= {kind.target}, error estimate {at.error:.1e}; numerical)"]
    names = {"rdp_qp": "RDP sigma (R2, delta_Q||P only, proven)",
             "rdp": "RDP trade-off sigma (R3, a proven bound)",
             "closed_form": "closed-form sigma (Prop. B.2, a proven bound)"}
    for k, v in quick.items():
        lines.append(f"  {names[k]:<46}: {v}  (+{100 * (float(v) / float(exact) - 1):.2f} % noise)")
    for k, why in omitted.items():
        lines.append(f"  {names[k]:<46}: left out ({why})")
    if "rdp_qp" in quick or "rdp_qp" in omitted:
        lines.append("  (no closed form bounds delta_P||Q; the exact sigma covers both directions)")
    return _emit(args, obj, lines)


def run_dp_stages(args, stages, deltas, epsilons, fprs) -> int:
    """eps at delta, delta at eps and the TPR at FPR of a run in stages (each stage its sigma, or --sigma)."""
    if stages[0].sigma is None:
        if args.sigma is None:
            raise ParameterError("give a sigma per stage (100x5@1.2,400x5@1.5) or --sigma")
        stages = tuple(s.with_sigma(args.sigma) for s in stages)
    elif args.sigma is not None:
        raise ParameterError("the stages carry their sigma already: drop --sigma")
    p = kinds.privacy_at(Run.in_stages(stages), deltas=deltas, epsilons=epsilons, fprs=fprs)
    fl = lambda name, x: float(parse_decimal(name, x))  # noqa: E731
    rows_eps = [{"delta": d, "epsilon": p.epsilon[fl("delta", d)].value, "error": p.epsilon[fl("delta", d)].error}
                for d in deltas]
    rows_delta = [{"epsilon": x, "delta": p.delta[fl("epsilon", x)].value, "error": p.delta[fl("epsilon", x)].error}
                  for x in epsilons]
    rows_tpr = [{"fpr": a, "tpr": p.tpr[fl("fpr", a)].value, "error": p.tpr[fl("fpr", a)].error} for a in fprs]
    obj = {"stages": stages_json(stages), "scheme": RANDOM_ALLOCATION, "method": p.method, "tv": p.tv.value,
           "tv_error": p.tv.error, "epsilon_at_delta": rows_eps, "delta_at_epsilon": rows_delta, "tpr_at_fpr": rows_tpr}
    lines = [f"stages {_stages_name(stages)} (M x E @ sigma each, random allocation)  (numerical, not certified; "
             f"routes {p.method})",
             f"  exact TV = delta(0)              : {p.tv.value:.12f}  (error estimate {p.tv.error:.1e})"]
    lines += [f"  eps at delta = {r['delta']:<8}          : {r['epsilon']:.8f}  (both directions; error estimate "
              f"{r['error']:.1e})" for r in rows_eps]
    lines += [f"  delta at eps = {r['epsilon']:<8}          : {r['delta']:.6e}  (error estimate {r['error']:.1e})"
              for r in rows_delta]
    lines += [f"  TPR at FPR {r['fpr']:<8}              : {r['tpr']:.10f}  (error estimate {r['error']:.1e})"
              for r in rows_tpr]
    return _emit(args, obj, lines)


def run_dp(args) -> int:
    deltas, fprs, epsilons = args.delta or [], args.fpr or [], args.epsilon or []
    if not (deltas or fprs or epsilons):
        raise ParameterError("give at least one --delta (eps at delta), --epsilon (delta at eps) or --fpr "
                             "(TPR at FPR)")
    stages = stages_of(args, None)
    if stages is not None:
        return run_dp_stages(args, stages, deltas, epsilons, fprs)
    if args.sigma is None:
        raise ParameterError("--sigma is required")
    m, e, scheme, t = run_shape(args)
    sigma_q = parse_sigma(args.sigma)
    sigma = float(sigma_q)
    p = kinds.privacy_at(Run.block(m, e, scheme, t, args.sigma), deltas=deltas, epsilons=epsilons, fprs=fprs)
    fl = lambda name, x: float(parse_decimal(name, x))  # noqa: E731
    rows_eps = [{"delta": d, "epsilon": p.epsilon[fl("delta", d)].value,
                 "error": p.epsilon[fl("delta", d)].error} for d in deltas]
    rows_delta = []
    for x in epsilons:
        v = p.delta[fl("epsilon", x)]
        rows_delta.append({"epsilon": x, "delta": v.value, "error": v.error,
                           "rdp_bound_qp": kinds.rdp_delta_qp(m, e, sigma, fl("epsilon", x), scheme)})
    rows_tpr = []
    for a in fprs:
        v = p.tpr[fl("fpr", a)]
        rows_tpr.append({"fpr": a, "tpr": v.value, "error": v.error,
                         **{f"{k}_bound": b for k, b in kinds.tpr_bounds(m, e, sigma, fl("fpr", a), scheme).items()}})
    obj = {**_shape_json(m, e, scheme, t), "sigma": args.sigma, "method": p.method,
           "tv": p.tv.value, "tv_error": p.tv.error, "epsilon_at_delta": rows_eps, "delta_at_epsilon": rows_delta,
           "tpr_at_fpr": rows_tpr}
    lines = [f"{_scheme_line(m, e, scheme, t)}, sigma={args.sigma}  (numerical, not certified; routes {p.method})",
             f"  exact TV = delta(0)              : {p.tv.value:.12f}  (error estimate {p.tv.error:.1e})"]
    for r in rows_eps:
        lines.append(f"  eps at delta = {r['delta']:<8}          : {r['epsilon']:.8f}  "
                     f"(both directions; error estimate {r['error']:.1e})")
    for r in rows_delta:
        lines.append(f"  delta at eps = {r['epsilon']:<8}          : {r['delta']:.6e}  "
                     f"(error estimate {r['error']:.1e}; RDP bound on delta_Q||P {r['rdp_bound_qp']:.3e})")
    for r in rows_tpr:
        extra = ", ".join(f"{k.replace('_bound', '')} bound {v:.6g}" for k, v in r.items() if k.endswith("_bound"))
        lines.append(f"  TPR at FPR {r['fpr']:<8}              : {r['tpr']:.10f}  "
                     f"(error estimate {r['error']:.1e}; {extra})")
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


__all__ = ["add_kind_arguments", "run_sigma_kind", "run_sigma_kind_stages", "run_dp", "run_dp_stages", "register"]
