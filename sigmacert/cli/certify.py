"""`sigmacert keygen`, `sigmacert certify`, `sigmacert show` (docs/certificate.md)."""
from __future__ import annotations

import json
import os
import sys

from certifier import door
from certifier.door import curve_of, load_envelope, load_private, read_unverified
from certifier.errors import EnvelopeError
from certifier.params import ParameterError, parse_decimal, parse_sigma
from sigmacert import kinds
from sigmacert.api import issue
from sigmacert.cli.core import add_scheme_arguments, run_of
from sigmacert.cli.targets import add_kind_arguments
from sigmacert.files import MAX_CERTIFICATE, read_regular, refuse_existing, sha256_regular, write_atomic
from sigmacert.kinds import certified_sides, claim_statement

# ----------------------------------------------------------------------------- certify

class _Progress:
    """Progress on stderr: stage, percent, elapsed. On a terminal one line per stage,
    updated in place; otherwise (logs, CI) a line per stage and per 10 % step."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.last = (None, -100.0)
        self.tty = sys.stderr.isatty()

    def __call__(self, stage: str, pct: float, elapsed: float) -> None:
        if self.quiet:
            return
        st, lp = self.last
        line = f"[{elapsed:7.1f}s] {stage:<30} {pct:5.1f}%"
        if self.tty:
            end = "\n" if pct >= 100.0 else ""
            if st is not None and stage != st and lp < 100.0:
                print(file=sys.stderr)  # the previous stage stopped short of 100 %
            print("\r" + line, end=end, file=sys.stderr, flush=True)
            self.last = (stage, pct)
            return
        if stage == st and pct - lp < 10.0 and pct < 100.0:
            return
        self.last = (stage, pct)
        print(line, file=sys.stderr, flush=True)


def _opt_decimal(name, text):
    if text is None:
        return None
    q = parse_decimal(name, text)
    if q <= 0:
        raise ParameterError(f"{name} must be > 0, got {text}")
    return text.strip()


NO_SIGMA_LOW = "no sigma_low could be certified to miss the target (see lower_tries)"
_GRID_KEYS = ("method", "h", "mantissa_bits", "eta", "cap", "top_octave", "lattice_schedule")


def _grid(t: dict) -> str:
    """The grid of one try, as `key=value` pairs of whatever the method records."""
    return " ".join(f"{k}={t[k]}" for k in _GRID_KEYS if k in t)


def _try_line(t: dict) -> str:
    at = f" at sigma {t['sigma']}" if "sigma" in t else ""
    if "skipped" in t:
        return f"try {t['try']}{at}: not run: {t['skipped']}"
    if "calibration" in t:
        return (f"calibration ({t['calibration']}): mantissa_bits={t['mantissa_bits']} eta={t['eta']} -> loss model "
                f"x {t['k_scale']} ({t['seconds']} s)")
    kind = next((k for k in ("dp_bound", "tpr_bound") if k in t), None)  # a dp / tpr try: its own bound first
    bound = f"{kind.removesuffix('_bound')} bound {t[kind]} (TV {t['bound']})" if kind else f"bound {t['bound']}"
    return f"try {t['try']}{at}: {_grid(t)} -> {bound} ({t['seconds']} s)"


def _lower_line(t: dict) -> str:
    if "calibration" in t or t.get("try") == 0:
        return _try_line(t)
    if "skipped" in t:
        return f"lower side at sigma_low {t.get('sigma_low', '-')}: not run: {t['skipped']}"
    kind = next((k for k in ("dp_lower", "tpr_lower") if k in t), None)  # a dp / tpr try: its own bound first
    if kind:
        return (f"lower side at sigma_low {t['sigma_low']} try {t['try']}: {_grid(t)} -> "
                f"{kind.removesuffix('_lower')} >= {t[kind]} (TV >= {t['tv_lower']}) ({t.get('seconds', 0)} s)")
    if "tv_lower" in t:
        return (f"lower side at sigma_low {t['sigma_low']} try {t['try']}: {_grid(t)} -> TV >= {t['tv_lower']} "
                f"({t.get('seconds', 0)} s)")
    return (f"lower side at sigma_low {t['sigma_low']} try {t['try']}: {_grid(t)} -> "
            f"{t.get('bound_lower', '-')} ({t.get('seconds', 0)} s)")


def _lower_value(res) -> str | None:
    """The certified lower value of the kind's functional at sigma_low (tv: the lower TV)."""
    return getattr(res, "bound_lower", None) or res.tv_lower


def _options(args) -> dict:
    """certify's grid options (h, eta, cap as exact decimal text, prec) from the command line, checked."""
    h, eta, cap = (_opt_decimal("h", args.h), _opt_decimal("eta", args.eta), _opt_decimal("cap", args.cap))
    prec = None
    if args.prec is not None:
        try:
            prec = int(args.prec)
        except ValueError:
            raise ParameterError(f"prec must be an integer, got {args.prec!r}") from None
        if not 32 <= prec <= 4096:
            raise ParameterError("prec must lie in [32, 4096]")
    if h and cap and (parse_decimal("cap", cap) / parse_decimal("h", h)).q != 1:
        raise ParameterError(f"cap {cap} must be a multiple of h {h}")
    return {"h": h, "eta": eta, "cap": cap, "prec": prec}


def run_certify(args) -> int:
    """`certify`: a block (-M, -E, a scheme) or a run in stages (--stages; format v5, method v2, one shared sigma
    two-sided by default, or a sigma per stage, 100x5@1.2,400x5@1.5, one-sided), any target kind."""
    run = run_of(args, None)
    kind = kinds.parse_kind(args.target, epsilon=args.epsilon, delta=args.delta, fpr=args.fpr, tpr=args.tpr)
    door.admit(run, kind, h=args.h, eta=args.eta, cap=args.cap, prec=args.prec)
    run.refuse_shared(args.sigma, "--sigma")
    if args.two_sided and run.one_sided_reason:
        raise ParameterError(f"{run.one_sided_reason}, so the certificate is one-sided only: drop --two-sided")
    options = _options(args)
    sigma = parse_sigma(args.sigma) if args.sigma is not None else None
    key = load_private(args.key)  # fail early, before the long computation
    subject_digest = sha256_regular(args.subject) if args.subject else None
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise ParameterError(f"output directory does not exist: {out_dir}")
    refuse_existing(args.output, args.force)  # before the long computation
    subject = ({"name": os.path.basename(args.subject), "digest": {"sha256": subject_digest}} if args.subject
               else None)
    try:
        issued = issue(run, kind, sigma, key=key, subject=subject, progress=_Progress(args.quiet),
                       two_sided=not args.one_sided and not run.one_sided_reason, **options)
    except ValueError as err:
        raise ParameterError(str(err)) from None
    res = issued.outcome
    value, lower = kind.numbers(res.tv, res.tv_error, res.tv_lower)
    one_sided = run.one_sided_reason or (None if res.two_sided or args.one_sided or not res.success else NO_SIGMA_LOW)
    summary = {"certified": res.success, **run.to_json(), "iterations": run.iterations, **kind.summary(),
               "sigma": res.sigma, "sigma_per_stage": run.sigma_per_stage, "target": res.target,
               "bound": kinds.bound_reached(res, kind), "tries": res.tries, **value, "output": None,
               "two_sided": res.two_sided, "one_sided_reason": one_sided, "sigma_low": res.sigma_low,
               **lower, "bound_lower_at_sigma_low": _lower_value(res), "lower_tries": res.lower_tries,
               "lower_seconds": res.lower_seconds,
               "epsilon_at_delta": ({k: v["epsilon"] for k, v in res.privacy["epsilon_at_delta"].items()}
                                    if res.privacy else None),
               "tpr_at_fpr": {k: v["tpr"] for k, v in res.tpr.items()} if res.tpr else None,
               "rows_not_certified": res.rows_missing, "sigma_steps": res.sigma_steps}
    at = run.where(res.sigma)
    if not res.success:
        if args.json:
            print(json.dumps(summary))
        else:
            for t in res.tries:
                print(_try_line(t))
            print(f"NOT certified: the bound reached, {kinds.bound_reached(res, kind)}, exceeds the target "
                  f"{res.target}{kind.aside()} at {at}; no certificate written")
        return 1
    write_atomic(args.output, issued.envelope + b"\n", force=args.force)
    summary.update(output=os.path.abspath(args.output), keyid=issued.keyid)
    if args.json:
        print(json.dumps(summary))
        return 0
    for t in res.tries:
        print(_try_line(t))
    for t in res.lower_tries:
        print(_lower_line(t))
    f = kind.FUNCTIONAL_WORDS
    print(f"certified: {f} <= {res.bound} <= {res.target} at {at}")
    if res.two_sided:
        print(f"certified: {f} >= {_lower_value(res)} > {res.target} at sigma_low {res.sigma_low}, so "
              f"{res.sigma_low} < {kind.least_sigma_words(shared=run.staged)} <= {res.sigma}")
    elif run.one_sided_reason:
        print("  one-sided: the sigmas are given per stage, so the certificate proves the target at them (upper "
              "side only); no single sigma steps down to a lower side")
    elif not args.one_sided:
        print(f"  two-sided: {NO_SIGMA_LOW}; the certificate is one-sided")
    _print_rows(res, args.output, summary["keyid"])
    return 0


def _print_rows(res, output: str, keyid: str) -> None:
    """The certified rows, the rows left out with their reasons, and where the certificate went."""
    for d, row in ((res.privacy or {}).get("epsilon_at_delta") or {}).items():
        print(f"  certified ({row['epsilon']}, {d})-DP (both directions)")
    for a, row in (res.tpr or {}).items():
        print(f"  certified TPR <= {row['tpr']} at FPR {a}")
    for what, why in (res.rows_missing or {}).items():
        for k, reason in why.items():
            print(f"  not certified: the {what} row at {k} ({reason}); recorded in the certificate")
    print(f"  certificate: {output}  (key id {keyid})")


# ----------------------------------------------------------------------------- show

def _flat(env: dict, stmt: dict) -> dict:
    p = stmt["predicate"]
    c, mth = p["claim"], p["method"]
    grid = {k: mth.get(k) for k in ("h", "eta", "cap", "prec", "tail_start", "tail_step", "lattice_schedule",
                                    "k_minus", "k_plus", "fixed_point_bits", "trim", "mantissa_bits",
                                    "top_octave", "k_top")}
    sides = certified_sides(p)
    steps, epochs, stages, sigma = _shape(c.get("stages")).run(c)
    return {"steps": steps, "epochs": epochs, "stages": stages, "statement": c.get("statement"), "sigma": sigma,
            "target": c["target"],
            "kind": sides["kind"], "scheme": c.get("scheme", "random-allocation"), "iterations": c.get("iterations"),
            "bound": sides["upper"], **grid, "method": f"{mth['name']} v{mth['version']}", "method_object": mth,
            "keyid": env["signatures"][0]["keyid"], "issued_at": p["issued_at"],
            "subject": stmt["subject"][0]["name"], "predicate_type": stmt["predicateType"],
            "tv_exact": p.get("numerics", {}).get("tv_exact"), "verified": False,
            "sigma_low": p["lower"]["sigma_low"] if "lower" in p else None,
            "tv_lower_at_sigma_low": p["lower"].get("tv_lower") if "lower" in p else None,
            "bound_lower_at_sigma_low": sides["lower"],
            "lower_method": (f"{p['lower']['method']['name']} v{p['lower']['method']['version']}"
                             if "lower" in p else None),
            "epsilon_at_delta": ({k: v["epsilon"] for k, v in p["privacy"]["epsilon_at_delta"].items()}
                                 if "privacy" in p else None),
            "tpr_at_fpr": {k: v["tpr"] for k, v in p["tpr"].items()} if "tpr" in p else None,
            "rows_not_certified": p.get("rows_not_certified")}


def _show_kind(f: dict) -> None:
    """The claim lines of a dp or tpr certificate (format v4)."""
    run = (f"M={f['steps']} bins, E={f['epochs']} rounds per bin ({f['iterations']} iterations), fixed bins"
           if f["scheme"] == "fixed-bins" else
           f"M={f['steps']} steps/epoch, E={f['epochs']} epochs, random allocation")
    print(f"  claim   : {claim_statement(f['kind'], f['target'])}")
    print(f"            for DP-SGD, zero-out, {run}, sigma={f['sigma']}")


class _Block:
    """`show` of a block's claim (formats v1-v4): M, E and sigma."""

    @staticmethod
    def run(c: dict) -> tuple:
        """(steps, epochs, stages, sigma) of the flat form."""
        return c["steps"], c["epochs"], None, c["sigma"]

    @staticmethod
    def claim(f: dict, curve) -> None:
        """The claim lines: a dp or tpr claim on its curve, or a TV claim and what it means for an attacker."""
        if curve is not None:
            _show_kind(f)
            return
        if f["scheme"] == "fixed-bins":
            print(f"  claim   : TV <= {f['target']} for DP-SGD with fixed bins (each record in one bin for the "
                  "whole run), zero-out")
            print(f"            M={f['steps']} bins, E={f['epochs']} rounds per bin ({f['iterations']} iterations), "
                  f"sigma={f['sigma']}: the one-epoch pair at sigma/sqrt(E)")
        else:
            print(f"  claim   : TV(P_M^E, Q_M^E) <= {f['target']} for DP-SGD with random allocation, zero-out")
            print(f"            M={f['steps']} steps/epoch, E={f['epochs']} epochs, sigma={f['sigma']}")
        print(f"            so every membership-inference test has accuracy <= 1/2 + {f['target']}/2")


class _Staged:
    """`show` of a run in stages (format v5): no steps/epochs of its own, a stage may carry its own sigma."""

    @staticmethod
    def run(c: dict) -> tuple:
        """(steps, epochs, stages, sigma) of the flat form: no steps, the total epochs, the stage list."""
        stages = [{"steps": int(s["steps"]), "epochs": int(s["epochs"]), **({"sigma": str(s["sigma"])}
                   if "sigma" in s else {})} for s in c["stages"]]
        return None, sum(s["epochs"] for s in stages), stages, c.get("sigma")

    @staticmethod
    def claim(f: dict, curve) -> None:
        """The claim lines: the claim's own statement and its stage list."""
        own = any("sigma" in s for s in f["stages"])
        listed = ",".join(f"{s['steps']}x{s['epochs']}" + (f"@{s['sigma']}" if own else "") for s in f["stages"])
        print(f"  claim   : {f['statement']}")
        print(f"            target {f['target']}, stages {listed} (M x E" + (" @ sigma" if own else "")
              + ", random allocation)" + ("" if own else f", sigma={f['sigma']}"))


def _shape(stages):
    """How `show` reads and words a claim's run, from its stage list (None: a block), as door.given_form reads it."""
    return door.given_form(stages).shape(_Block, _Staged)


def run_show(args) -> int:
    data = read_regular(args.certificate, "certificate", MAX_CERTIFICATE)
    try:
        env = load_envelope(data)
        stmt = read_unverified(env)
        flat = _flat(env, stmt)
    except EnvelopeError:
        raise
    except RecursionError:
        raise ParameterError("certificate is nested too deeply to be a sigmacert statement") from None
    except (KeyError, TypeError, IndexError, AttributeError, ValueError):  # ValueError: also a huge integer
        raise ParameterError("certificate payload is not a sigmacert statement") from None
    if args.json:
        print(json.dumps(flat))
        return 0
    f = flat
    curve = curve_of(f["kind"])   # None: a TV claim
    print("sigmacert certificate (NOT verified by `show`; run the verifier for that)")
    _shape(f["stages"]).claim(f, curve)
    print(f"  bound   : {f['bound']}  ({f['method']})")
    if f["sigma_low"] is not None and curve is not None:
        print(f"  lower   : {f['bound_lower_at_sigma_low']} > {f['target']} at sigma_low={f['sigma_low']} "
              f"({f['lower_method']})")
        print(f"  interval: {f['sigma_low']} < the least sigma meeting the target <= {f['sigma']}")
    elif f["sigma_low"] is not None:
        print(f"  lower   : TV >= {f['tv_lower_at_sigma_low']} > {f['target']} at sigma_low={f['sigma_low']} "
              f"({f['lower_method']})")
        print(f"  interval: {f['sigma_low']} < sigma_lambda <= {f['sigma']}")
    for d, eps in (f["epsilon_at_delta"] or {}).items():
        print(f"  privacy : ({eps}, {d})-DP, both directions (hockey-stick bounds from the same computation)")
    for a, tpr in (f["tpr_at_fpr"] or {}).items():
        print(f"  tpr     : every test with FPR {a} has TPR <= {tpr}")
    for kind, why in (f["rows_not_certified"] or {}).items():
        for k, reason in why.items():
            print(f"  missing : the {kind} row at {k} is not certified ({reason})")
    params = " ".join(f"{k}={v}" for k, v in f["method_object"].items() if k not in ("name", "version"))
    print(f"  method  : {f['method']}: {params}")
    print(f"  issuer  : key id {f['keyid']}, issued {f['issued_at']}, subject {f['subject']!r}")
    return 0


# ----------------------------------------------------------------------------- registration

def register(sub) -> None:
    p = sub.add_parser("certify", help="certify TV <= lambda, (eps, delta)-DP or TPR <= beta at FPR alpha at sigma "
                                       "(Lemma C.5) and sign a certificate")
    p.add_argument("--steps", "-M", help="steps per epoch M (fixed-bins: number of bins)")
    p.add_argument("--epochs", "-E", help="epochs E (fixed-bins: rounds per bin)")
    p.add_argument("--stages", help="a run in stages M x E at one sigma, 100x5,400x5, or with a sigma per stage, "
                                    "100x5@1.2,400x5@1.5 (one-sided) (instead of -M/-E; any target kind, method v2, "
                                    "a format-v5 certificate)")
    add_scheme_arguments(p)
    p.add_argument("--target", "-l", help="TV target lambda in (0, 1) (or a dp / tpr target below)")
    add_kind_arguments(p)
    p.add_argument("--sigma", "-s", help="noise multiplier (default: the exact sigma, found first)")
    p.add_argument("--key", required=True, metavar="PRIVATE.pem", help="Ed25519 private key (PKCS#8 PEM)")
    p.add_argument("-o", "--output", required=True, metavar="CERT.json", help="certificate to write")
    p.add_argument("--force", action="store_true", help="replace CERT.json if it exists (default: refuse)")
    p.add_argument("--subject", metavar="FILE", help="file the certificate is about (default: the claim)")
    p.add_argument("--h", help="step (i) grid spacing (default: automatic)")
    p.add_argument("--eta", help="step (iii) log-grid spacing (default: automatic)")
    p.add_argument("--cap", help="cap on Y (default: automatic)")
    p.add_argument("--prec", help="arb precision in bits (default 100)")
    side = p.add_mutually_exclusive_group()
    side.add_argument("--two-sided", action="store_true",
                      help="also certify that sigma - resolution misses the target, with certified (eps, delta) "
                           "and TPR rows (the default; tv: a v2/v3 certificate, dp/tpr: v4)")
    side.add_argument("--one-sided", action="store_true", help="only the upper bound (tv: a v1 certificate)")
    p.add_argument("--json", action="store_true", help="one JSON summary on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_certify)

    p = sub.add_parser("show", help="print a certificate's claim, grid, bound and issuer (no verification)")
    p.add_argument("certificate", metavar="CERT.json")
    p.add_argument("--json", action="store_true", help="one flat JSON object on stdout")
    p.set_defaults(run=run_show)
