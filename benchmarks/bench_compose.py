"""Benchmark: runs in stages and the certified dominating PLD (docs/compose.md).

    python benchmarks/bench_compose.py [--small] [--markdown]

Part 1: the exact TV (with its check route) and the exact shared sigma (lambda = 0.1) for 1, 2 and 5
stages of the same total epochs: (M, E) split as E = E_1 + ... + E_S of one M, and heterogeneous
stages (the batch count changing mid-run). Cost ratios against the one-stage run, in one process.
Part 2: eps(1e-5), eps(1e-6) that dp_accounting reads from the exported dominating PLD against the
certified eps rows of the same law (the certificate's rows), with the seconds of the bound and the
export. Part 3: the cost of a certificate for a run in stages (certifier.certify.certify_run, format v5) at
the exact shared sigma: two and five stages against the one stage of the same total epochs (upper side,
lower side, the verifier's replay), ratios in one process. Part 4: other kinds in stages (dp, tpr,
two-sided at the exact shared sigma) and a sigma per stage (tv and dp, one-sided). --small: tiny cells,
to check the benchmark runs (seconds; parts 3 and 4 one-sided).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SPLITS = {  # name: stages (M, E), all of the same total epochs per family
    "100x10": [(100, 10)], "100x5,100x5": [(100, 5), (100, 5)], "100x2 x5": [(100, 2)] * 5,
    "100x5,400x5": [(100, 5), (400, 5)], "50x2,100x2,200x2,400x2,800x2": [(50, 2), (100, 2), (200, 2), (400, 2),
                                                                       (800, 2)],
}
SMALL_SPLITS = {"10x4": [(10, 4)], "10x2,10x2": [(10, 2), (10, 2)], "10x2,40x2": [(10, 2), (40, 2)]}
PLD_CELLS = [(100, 10, "1.426215", "0.1"), (250, 10, "1.024495", "0.1"), (100, 20, "1.907073", "0.1")]
SMALL_PLD = [(20, 3, "1.2", None)]
SIGMA = "1.3"
CERT_SPLITS = {"100x10": [(100, 10)], "100x5,100x5": [(100, 5), (100, 5)], "100x2 x5": [(100, 2)] * 5}
SMALL_CERT = {"4x2": [(4, 2)], "4x1,4x1": [(4, 1), (4, 1)]}
# part 4: other kinds and a sigma per stage (one-sided); name -> stages, and name -> (kind, parameters, target)
KIND_CERT = {"100x5,400x5 dp": [(100, 5), (400, 5)], "100x5,400x5 tpr": [(100, 5), (400, 5)],
             "100x5@1.2,400x5@1.5": [(100, 5, "1.2"), (400, 5, "1.5")],
             "100x5@1.2,400x5@1.5 dp": [(100, 5, "1.2"), (400, 5, "1.5")]}
KINDS = {"100x5,400x5 dp": ("dp", {"epsilon": "0.5"}, "0.1"), "100x5,400x5 tpr": ("tpr", {"fpr": "0.1"}, "0.3"),
         "100x5@1.2,400x5@1.5 dp": ("dp", {"epsilon": "1"}, "1e-5")}
SMALL_KIND_CERT = {"4x1,8x1 dp": [(4, 1), (8, 1)], "4x1@1.2,8x1@1.5": [(4, 1, "1.2"), (8, 1, "1.5")]}
SMALL_KINDS = {"4x1,8x1 dp": ("dp", {"epsilon": "0.5"}, "0.1"), "4x1@1.2,8x1@1.5": ("tv", None, "0.3")}


def load() -> str:
    return "load average " + open("/proc/loadavg").read().split()[0]


def stages_table(splits, md: bool) -> None:
    from certifier.numerics.stages import exact_sigma_product, exact_tv_product
    exact_tv_product([(5, 2, "1"), (7, 2, "1")])  # warm-up: imports and first-call costs out of the ratios
    print(load())
    head = ("stages", "S", "exact TV", "error", "method", "TV s", "x 1-stage", "sigma(0.1)", "sigma s", "x 1-stage")
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head) if md else "  ".join(head))
    base = None
    for name, st in splits.items():
        t0 = time.perf_counter()
        r = exact_tv_product([(m, e, SIGMA) for m, e in st])
        t1 = time.perf_counter()
        s = exact_sigma_product(st, 0.1)
        t2 = time.perf_counter()
        if base is None:
            base = (t1 - t0, t2 - t1)
        row = (name, len(st), f"{r.tv:.12f}", f"{r.error:.1e}", r.method, f"{t1 - t0:.3f}",
               f"{(t1 - t0) / base[0]:.2f}", s, f"{t2 - t1:.3f}", f"{(t2 - t1) / base[1]:.2f}")
        print(("| " + " | ".join(map(str, row)) + " |") if md else "  ".join(map(str, row)), flush=True)


def pld_table(cells, md: bool) -> None:
    from sigmacert.pld_export import dominating_run, to_dp_accounting
    print(load())
    head = ("M", "E", "sigma", "target", "method", "losses", "inf mass", "eps(1e-5) PLD", "row", "rel",
            "eps(1e-6) PLD", "row", "rel", "bound+export s")
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head) if md else "  ".join(head))
    for m, e, s, target in cells:
        t0 = time.perf_counter()
        run = dominating_run(m, e, s, target=target)
        dt = time.perf_counter() - t0
        p = to_dp_accounting(run)
        rows = run.privacy["epsilon_at_delta"]
        cols = []
        for d in ("1e-05", "1e-06"):
            x, row = p.get_epsilon_for_delta(float(d)), float(rows[d]["epsilon"])
            cols += [f"{x:.6f}", rows[d]["epsilon"], f"{100 * (x / row - 1):+.3f} %"]
        out = (m, e, s, run.target, run.method.split()[-1], len(run.remove.probs),
               f"{max(run.remove.infinity_mass, run.add.infinity_mass):.1e}", *cols, f"{dt:.1f}")
        print(("| " + " | ".join(map(str, out)) + " |") if md else "  ".join(map(str, out)), flush=True)


def certificate_table(splits, target: str, two_sided: bool, md: bool, kinds: dict | None = None) -> None:
    """kinds: name -> (kind_name, kind_params, target) for rows of another kind (default: tv at `target`);
    a stage list with a sigma per stage is certified one-sided whatever two_sided says."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from certifier.certificate.envelope import claim_subject, sign_envelope, statement
    from certifier.certify import certify_run
    from certifier.params import parse_decimal
    from certifier.run import Run
    from verifier import verify_bytes
    print(load())
    head = ("stages", "S", "kind", "target", "sigma", "bound", "lower", "upper s", "lower s", "verify s", "total s",
            "x first", "verdict")
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head) if md else "  ".join(head))
    key, base = Ed25519PrivateKey.generate(), None
    for name, st in splits.items():
        t0 = time.perf_counter()
        kn, kp, tg = (kinds or {}).get(name, ("tv", None, target))
        own = len(st[0]) == 3
        out = certify_run(Run.composed(st), parse_decimal("target", tg), two_sided=two_sided and not own, kind_name=kn,
                             kind_params=kp)
        t1 = time.perf_counter()
        if not out.success:
            print(f"{name}: not certified ({out.tries})", flush=True)
            continue
        env = sign_envelope(statement(claim_subject(out.predicate["claim"]), out.predicate), key)
        r = verify_bytes(json.dumps(env).encode(), [key.public_key()])
        t2 = time.perf_counter()
        upper = sum(t.get("seconds", 0) for t in out.tries)
        total = t2 - t0
        base = base or total
        what = kn if kp is None else f"{kn} {','.join(f'{k}={v}' for k, v in kp.items())}"
        row = (name, len(st), what, tg, out.sigma or "per stage", out.bound, out.bound_lower or out.tv_lower or "-",
               f"{upper:.1f}",
               f"{out.lower_seconds or 0:.1f}", f"{t2 - t1:.1f}", f"{total:.1f}", f"{total / base:.2f}", r.reason)
        print(("| " + " | ".join(map(str, row)) + " |") if md else "  ".join(map(str, row)), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny cells (seconds): checks the benchmark runs")
    ap.add_argument("--markdown", action="store_true", help="tables in Markdown")
    args = ap.parse_args()
    stages_table(SMALL_SPLITS if args.small else SPLITS, args.markdown)
    pld_table(SMALL_PLD if args.small else PLD_CELLS, args.markdown)
    if args.small:
        certificate_table(SMALL_CERT, "0.3", False, args.markdown)
    else:
        certificate_table(CERT_SPLITS, "0.1", True, args.markdown)
    certificate_table(SMALL_KIND_CERT if args.small else KIND_CERT, "0.1", not args.small, args.markdown,
                      SMALL_KINDS if args.small else KINDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
