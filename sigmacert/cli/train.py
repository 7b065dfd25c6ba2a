"""`sigmacert train` (Algorithm 1 from a verified certificate) and `sigmacert audit-linear`
(the linear-model membership-inference audit of Section 5.3); see docs/trainer.md."""
from __future__ import annotations

import json
import math

from certifier.params import parse_sigma
from sigmacert.cli import CliError
from sigmacert.cli.release import print_sealed
from trainer.audit import audit
from trainer.seal import seal


def _cli_error(msg: str, code: int = 2):
    return CliError(msg, code)


def _positive_float(name: str, text) -> float:
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise _cli_error(f"{name} must be a number, got {text!r}") from None
    if not (x > 0 and math.isfinite(x)):
        raise _cli_error(f"{name} must be a positive finite number, got {text!r}")
    return x


def _int(name: str, text, minimum: int = 0) -> int:
    try:
        x = int(str(text).strip())
    except ValueError:
        raise _cli_error(f"{name} must be an integer, got {text!r}") from None
    if x < minimum:
        raise _cli_error(f"{name} must be at least {minimum}, got {text!r}")
    return x


def run_train(args) -> int:
    try:
        from trainer.release import train_release
    except ImportError as err:  # pragma: no cover - numpy is a core dependency
        raise _cli_error(f"trainer unavailable: {err}") from None
    n0 = None if args.n0 is None else _int("--n0", args.n0, 1)
    man = train_release(certificate=args.certificate, public_key=args.key, dataset=args.dataset,
                        outdir=args.output, clip_norm=_positive_float("--clip", args.clip), n0=n0,
                        seed=_int("--seed", args.seed), model_name=args.model,
                        lr=_positive_float("--lr", args.lr), sign_key=args.sign_key, seed_opening=args.seed_opening)
    if args.release is not None:
        man["sealed"] = seal(args.output, certificate=args.certificate, key=args.release, card=args.card)
    if args.json:
        print(json.dumps(man, sort_keys=True))
    else:
        t = man["training"]
        print(f"trained {man['model']['architecture']} on {man['dataset']['name']} "
              f"({man['dataset']['size']} records, N0={t['n0']}) with sigma {t['sigma']}, "
              f"M={t['steps']}, E={t['epochs']}: {t['updates']} updates, "
              f"test accuracy {man['test_accuracy']:.4f}")
        print(f"  release: {args.output}/release.json (model sha256 {man['model']['sha256'][:16]}...)")
        if "signed_manifest" in man:
            print(f"  signed manifest: {args.output}/{man['signed_manifest']}")
        if "sealed" in man:
            print_sealed(man["sealed"], False)
    return 0


def run_audit(args) -> int:
    parse_sigma(args.sigma)  # one-line error on bad input
    steps = _int("--steps", args.steps, 1)
    epochs = _int("--epochs", args.epochs, 1)
    trials = _int("--trials", args.trials, 2)
    if trials * max(steps, 1) > 10**7:
        raise _cli_error("--trials x --steps too large (at most 1e7)")
    r = audit(float(args.sigma), steps, epochs, trials, zero_target=args.zero_target,
              seed=_int("--seed", args.seed), clip_norm=_positive_float("--clip", args.clip))
    if args.json:
        print(json.dumps({"sigma": args.sigma, "steps": steps, "epochs": epochs, "trials": trials,
                          "zero_target": args.zero_target, "measured": r.measured, "se": r.se,
                          "optimal": r.optimal, "pair": r.pair, "bound": r.bound, "tpr": r.tpr,
                          "tnr": r.tnr, "seconds": round(r.seconds, 3)}, sort_keys=True))
    else:
        tgt = "x*=0" if args.zero_target else "2C*x_hat"
        print(f"linear audit M={steps} E={epochs} sigma={args.sigma} target {tgt}, {trials} trials")
        print(f"  measured {r.measured:.4f} +- {r.se:.4f}   optimal {r.optimal:.4f}   "
              f"pair {r.pair:.4f}   bound {r.bound:.4f}   ({r.seconds:.1f} s)")
    return 0


def register(sub) -> None:
    p = sub.add_parser("train", help="train with Algorithm 1 at a verified certificate's sigma, M, E")
    p.add_argument("--certificate", required=True, metavar="CERT.json", help="signed certificate")
    p.add_argument("--key", required=True, metavar="PUBLIC.pem", help="public key to verify it with")
    p.add_argument("--dataset", required=True, help="data set name (digits)")
    p.add_argument("--clip", default="1.0", metavar="C", help="clipping norm C (default 1.0)")
    p.add_argument("--n0", default=None, metavar="N0",
                   help="public data set size N0 (default: the training split size)")
    p.add_argument("--seed", default="0", help="seed for order, allocation, noise and initial model")
    p.add_argument("--model", choices=("logreg", "mlp", "gn-cnn"), default="logreg",
                   help="model (default logreg; gn-cnn is a GroupNorm CNN in PyTorch, extra torch)")
    p.add_argument("--lr", default="0.5", help="SGD learning rate (default 0.5)")
    p.add_argument("--sign-key", default=None, metavar="PRIVATE.pem",
                   help="also write release.dsse.json, a signed in-toto Statement about the model file")
    p.add_argument("--release", metavar="PRIVATE.pem", default=None,
                   help="then seal OUTDIR as a release with this ECDSA key (as `sigmacert release`; docs/release.md)")
    p.add_argument("--card", action="store_true", help="with --release: also write a Hugging Face model card")
    p.add_argument("--seed-opening", metavar="FILE", default=None,
                   help="where the seed's opening goes (default OUTDIR.seed-opening.json; the release holds its "
                        "commitment)")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output directory")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(run=run_train)

    p = sub.add_parser("audit-linear", help="membership-inference audit of the linear model (Table 2)")
    p.add_argument("--sigma", required=True, help="noise multiplier")
    p.add_argument("--steps", default="128", help="steps per epoch M (default 128)")
    p.add_argument("--epochs", default="125", help="epochs E (default 125)")
    p.add_argument("--trials", default="300", help="paired trials (default 300)")
    p.add_argument("--zero-target", action="store_true", help="use the all-zero target x*=0")
    p.add_argument("--seed", default="0", help="seed (default 0)")
    p.add_argument("--clip", default="1.0", metavar="C", help="clipping norm C (default 1.0)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_audit)
