"""`sigmacert audit`: certify or refute a privacy claim at its sigma (docs/audit.md).

One claim (-M, -E, --sigma and one target kind), a CSV of claims (--claims), an Opacus accountant history
(--opacus) or a jax_privacy BallsInBinsSampling configuration (--jax). The verdict comes first, then the
certified interval; a completed audit exits 0 whatever its verdict, bad input 2.
"""
from __future__ import annotations

import json
import os

from certifier import door
from certifier.errors import ParameterError
from sigmacert.audits.frameworks import audit_jax, audit_opacus
from sigmacert.cli.core import add_scheme_arguments
from sigmacert.files import read_regular, refuse_existing


def interval_text(target, interval) -> str:
    """'eps at delta = 1e-5 in [0.9425, 0.94295]' (or TV / TPR at FPR a)."""
    return f"{target.audit_axis_words()} in [{interval[0]}, {interval[1]}]"


def lines(a) -> list[str]:
    """The audit in words, the verdict first."""
    out = [f"{a.verdict}: {a.claim}"]
    if a.source:
        out.append(f"  source: {a.source}")
    out.append(f"  certified at sigma {a.sigma}: {interval_text(a.target, a.interval)} "
               f"(relative width {a.relative_width:.2g}; numerical {a.numerical:.6g})")
    p = a.predicate
    up, lo = {**p["upper"], "method": p["method"]}, p["lower"]
    what = a.target.FUNCTIONAL_WORDS
    out.append(f"  upper side ({up['method']['name']} v{up['method']['version']}): {what} <= {up['value']}")
    out.append(f"  lower side ({lo['method']['name']} v{lo['method']['version']}): {what} >= {lo['value']}")
    if a.verdict == "FALSE":
        fix = "not found by the numerics" if a.fix_sigma is None else f"{a.fix_sigma} (numerical, rounded up)"
        out.append(f"  the least sigma meeting the claim: {fix}")
    elif a.verdict == "TOO CLOSE":
        out.append("  the claim lies within the certified interval: neither side decides it at this width")
    return out


def run_audit(args) -> int:
    from sigmacert.audits import audit
    if args.claims:
        from sigmacert.audits.bulk import run_bulk
        return run_bulk(args)
    if args.output:
        if not args.key:
            raise ParameterError("-o writes a signed certificate: give --key")
        refuse_existing(args.output, args.force)
    if args.fix and not args.key:
        raise ParameterError("--fix certifies the least sigma: give --key")
    if args.opacus or args.jax:
        return run_framework(args)
    a = audit(args.steps, args.epochs, args.sigma, target=args.target, epsilon=args.epsilon, delta=args.delta,
              fpr=args.fpr, tpr=args.tpr, scheme=args.scheme, iterations=args.iterations, stages=args.stages,
              width=args.width, key=args.key, source=args.source or "", fix=args.fix)
    return emit(args, a)


def emit(args, a) -> int:
    """Write the certificate (-o) and the --fix certificate, print the audit (text or --json); exit 0."""
    written = []
    if args.output:
        a.write(args.output, force=args.force)
        written.append(args.output)
    if a.fix_certificate is not None:
        path = fix_path(args)
        a.fix_certificate.write(path, force=args.force)
        written.append(path)
    if args.json:
        print(json.dumps({**a.as_dict(), "output": args.output, "fix_output": written[1] if len(written) > 1
                          else None}))
        return 0
    print("\n".join(lines(a)))
    for w in written:
        print(f"  wrote {w}" + (f" (key id {a.keyid})" if a.keyid else ""))
    return 0


def fix_path(args) -> str:
    """Where --fix writes the certificate at the least sigma: FILE.fix.json beside -o, or fix.json."""
    if args.output:
        root, ext = os.path.splitext(args.output)
        return f"{root}.fix{ext or '.json'}"
    return "fix.json"


def register(sub) -> None:
    from sigmacert.cli.targets import add_kind_arguments
    p = sub.add_parser("audit", help="certify or refute a privacy claim at its sigma: HOLDS / FALSE / TOO CLOSE "
                                     "and a certified interval")
    p.add_argument("--steps", "-M", help="steps per epoch M (fixed-bins: number of bins)")
    p.add_argument("--epochs", "-E", help="epochs E (fixed-bins: rounds per bin)")
    p.add_argument("--stages", help="a run in stages at the one claimed sigma, e.g. 50x4,200x2 (M x E each, in order; "
                                    "instead of -M and -E)")
    add_scheme_arguments(p)
    p.add_argument("--sigma", "-s", help="the claimed noise multiplier")
    p.add_argument("--target", "-l", help="claimed TV bound lambda (or a dp / tpr claim below)")
    add_kind_arguments(p)
    p.add_argument("--width", default="0.001", help="relative width of the certified interval (default 0.001)")
    p.add_argument("--source", help="where the claim comes from (recorded in the certificate)")
    p.add_argument("--key", metavar="PRIVATE.pem", help="Ed25519 private key: sign the audit certificate")
    p.add_argument("-o", "--output", metavar="AUDIT.json", help="write the signed audit certificate (needs --key)")
    p.add_argument("--force", action="store_true", help="replace existing output files")
    p.add_argument("--fix", action="store_true", help="when FALSE, also certify the least sigma meeting the claim "
                                                      "(AUDIT.fix.json; needs --key)")
    p.add_argument("--claims", metavar="FILE.csv", help="audit every row of a CSV of claims (docs/audit.md)")
    p.add_argument("--out-dir", metavar="DIR", help="--claims: certificates, index and progress (default: "
                                                     "FILE.audit/ beside the CSV)")
    p.add_argument("--scheduler", help="--claims: a Dask scheduler address (as the atlas)")
    p.add_argument("--opacus", metavar="STATE", help="an Opacus accountant state_dict (torch.save file or JSON)")
    p.add_argument("--sampler", choices=("random-allocation", "poisson", "shuffle"),
                   help="--opacus: the sampler that made the batches, where the history's accountant does not say "
                        "(poisson and shuffle are other mechanisms: refused)")
    p.add_argument("--jax", metavar="CONFIG.json", help="a jax_privacy BallsInBinsSampling configuration (JSON)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_audit)


FRAMEWORK_GIVES_RUN = "--opacus / --jax give the run: drop --steps, --epochs, --iterations, --stages"


def _refuse_run(args) -> None:
    """--opacus / --jax give the run: the command line's run, in either form, is refused in one line."""
    def refuse(*_):
        raise ParameterError(FRAMEWORK_GIVES_RUN)

    def block():
        if args.steps or args.epochs or args.iterations:
            refuse()
    door.given_form(args.stages, (args.steps, args.epochs, args.iterations), FRAMEWORK_GIVES_RUN).pick(block, refuse)


def run_framework(args) -> int:
    """`sigmacert audit --opacus STATE` / `--jax CONFIG.json`: the run from the framework, the claim from the flags."""
    claim = dict(target=args.target, epsilon=args.epsilon, delta=args.delta, fpr=args.fpr, tpr=args.tpr,
                 width=args.width, key=args.key, fix=args.fix)
    _refuse_run(args)
    if args.opacus:
        if args.sigma:
            raise ParameterError("--opacus: the history gives sigma; drop --sigma")
        a = audit_opacus(args.opacus, sampler=args.sampler, source=args.source, **claim)
    else:
        try:
            config = json.loads(read_regular(args.jax, "jax configuration", 1 << 20))
        except (ValueError, UnicodeDecodeError):
            config = None
        if not isinstance(config, dict):
            raise ParameterError(f"{args.jax}: a BallsInBinsSampling configuration is a JSON object")
        a = audit_jax(config, args.sigma, source=args.source, **claim)
    return emit(args, a)
