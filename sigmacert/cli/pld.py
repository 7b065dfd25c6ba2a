"""`sigmacert pld`: the certified dominating PLD of a run, written for dp_accounting (docs/compose.md)."""
from __future__ import annotations

import json

from certifier import door
from certifier.params import ParameterError
from sigmacert.pld_export import dominating_product, dominating_run, to_dp_accounting, write_pld


def _dominating(args, interval: float):
    """The dominating PLD of the run the arguments name and the run in words (their form read by
    door.given_form): --stages (at --sigma shared or the stages' own) or --steps, --epochs and --sigma."""
    def block():
        if args.steps is None or args.epochs is None or args.sigma is None:
            raise ParameterError("give --steps, --epochs and --sigma (or --stages)")
        run = dominating_run(args.steps, args.epochs, args.sigma, target=args.target,
                             value_discretization_interval=interval)
        return run, f"M={run.steps} E={run.epochs} sigma={run.sigma}"

    def staged(spec):
        run = dominating_product(spec, args.sigma, value_discretization_interval=interval)
        return run, f"stages {run.stages}"
    return door.given_form(args.stages, (args.steps, args.epochs, args.target),
                           "--stages replaces --steps, --epochs and --target").pick(block, staged)


def run_pld(args) -> int:
    try:
        interval = float(args.interval)
    except ValueError:
        raise ParameterError(f"--interval must be a number, got {args.interval!r}") from None
    run, name = _dominating(args, interval)
    write_pld(run, args.output)
    eps = {}
    try:
        p = to_dp_accounting(run)
        eps = {d: p.get_epsilon_for_delta(float(d)) for d in ("1e-05", "1e-06")}
    except ParameterError:
        pass  # dp_accounting absent: the file is still written
    rows = (run.privacy or {}).get("epsilon_at_delta", {})
    obj = {"output": args.output, "stages": run.stages, "steps": run.steps, "epochs": run.epochs, "sigma": run.sigma,
           "target": run.target, "bound": run.bound, "method": run.method, "interval": interval,
           "infinity_mass": {"remove": run.remove.infinity_mass, "add": run.add.infinity_mass},
           "dp_accounting_epsilon": eps, "certified_epsilon": {d: r["epsilon"] for d, r in rows.items()}}
    if args.json:
        print(json.dumps(obj, indent=2))
        return 0
    print(f"{name}: dominating PLD (both directions) -> {args.output}")
    print(f"  from the certified bound TV <= {run.bound} ({run.method}, target {run.target}); loss grid {interval:g}")
    print(f"  mass at +inf: remove {run.remove.infinity_mass:.3g}, add {run.add.infinity_mass:.3g}")
    for d, e in eps.items():
        print(f"  eps({d}): dp_accounting on the PLD {e:.6f}   certified row {rows.get(d, {}).get('epsilon', '-')}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("pld", help="the certified dominating PLD of a run, a file dp_accounting can compose")
    p.add_argument("--steps", "-M", help="steps per epoch M (>= 2)")
    p.add_argument("--epochs", "-E", help="epochs E")
    p.add_argument("--sigma", "-s", help="noise multiplier sigma (with --stages: shared by the stages)")
    p.add_argument("--stages", help="a run in stages instead of -M/-E: 100x5,400x5 (with -s) or 100x5@1.2,400x5@1.5")
    p.add_argument("--target", "-l", help="TV target of the underlying bound (default: 1.001 x the exact TV); "
                                          "a smaller margin gives a finer grid")
    p.add_argument("--interval", default="1e-4", help="dp_accounting's value_discretization_interval (default 1e-4)")
    p.add_argument("--output", "-o", required=True, help="the JSON file to write (read it with sigmacert.read_pld)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_pld)
