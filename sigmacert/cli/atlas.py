"""`sigmacert atlas`: certify a grid of cells (M, E, target) on a Dask cluster (docs/atlas.md); the target of one
kind per atlas: --targets (TV lambda), --epsilon with --delta ((eps, delta)-DP), or --fpr with --tpr."""
from __future__ import annotations

import json
import os

from certifier.door import RANDOM_ALLOCATION, SCHEMES, load_private
from certifier.params import parse_count
from sigmacert.atlas.cells import grid_cells
from sigmacert.atlas.cluster import dask_client
from sigmacert.atlas.engine import run_atlas as run
from sigmacert.atlas.index import cell_of
from sigmacert.atlas.progress import Progress

MAX_LOCAL_WORKERS = 256


def run_atlas(args) -> int:

    cells = grid_cells(args.steps, args.epochs, args.targets, epsilon=args.epsilon, delta=args.delta, fpr=args.fpr,
                       tpr=args.tpr)
    workers = parse_count("workers", args.workers, MAX_LOCAL_WORKERS) if args.workers else (os.cpu_count() or 1)
    key = load_private(args.key)  # fail early, before any cluster starts; it never leaves this process
    progress = Progress(len(cells), quiet=args.quiet)
    try:
        with dask_client(args.scheduler, workers) as client:
            index = run(client, cells, scheme=args.scheme, key=key, out_dir=args.output, progress=progress)
    finally:
        progress.close()
    out = os.path.abspath(args.output)
    s = index["summary"]
    failures = [{k: c[k] for k in ("M", "E", "kind", "lambda", "epsilon", "delta", "fpr", "tpr", "reason") if k in c}
                for c in index["cells"] if c["status"] == "failed"]
    if args.json:
        print(json.dumps({"output": out, "index": os.path.join(out, "index.json"), "kind": index.get("kind", "tv"),
                          **s, "seconds": index["seconds"],
                          "keyid": index["keyid"], "heatmap": os.path.join(out, index["heatmap"]),
                          "failures": failures}))
    else:
        kind = {"dp": " for (eps, delta)-DP", "tpr": " for TPR at FPR"}.get(index.get("kind", "tv"), "")
        print(f"atlas {out}: {s['certified']}/{s['cells']} cells certified{kind} ({s['reused']} reused), "
              f"{s['failed']} failed, in {index['seconds']:.1f} s")
        for c in index["cells"]:
            if c["status"] == "failed":
                print(f"  failed {cell_of(c).label()}: {c['reason']}")
        print(f"  index {os.path.join(out, 'index.json')}, heatmap {os.path.join(out, index['heatmap'])}, "
              f"public key {os.path.join(out, 'public.pem')} (key id {index['keyid']})")
    return 0 if s["certified"] == s["cells"] else 1


def register(sub) -> None:
    p = sub.add_parser("atlas", help="certify every cell of a grid (M, E, target) on a Dask cluster (local by "
                                     "default); one target kind: --targets, --epsilon/--delta or --fpr/--tpr")
    p.add_argument("--steps", "-M", required=True, metavar="LIST", help="steps per epoch M, comma-separated: 50,100")
    p.add_argument("--epochs", "-E", required=True, metavar="LIST", help="epochs E, comma-separated: 1,10,100")
    p.add_argument("--targets", "-l", metavar="LIST", help="TV targets lambda, comma-separated: 0.05,0.1")
    p.add_argument("--epsilon", metavar="LIST", help="dp kind: epsilons (with --delta; every pair is a panel): 1,4")
    p.add_argument("--delta", metavar="LIST", help="dp kind: deltas, (eps, delta)-DP both directions: 1e-5")
    p.add_argument("--fpr", metavar="LIST", help="tpr kind: false-positive rates alpha (with --tpr): 0.001")
    p.add_argument("--tpr", metavar="LIST", help="tpr kind: TPR bounds beta, every test with FPR alpha: 0.002")
    p.add_argument("--scheme", choices=SCHEMES, default=RANDOM_ALLOCATION,
                   help=f"sampling scheme (default {RANDOM_ALLOCATION})")
    p.add_argument("--key", required=True, metavar="PRIVATE.pem",
                   help="Ed25519 private key; only this process reads it (workers never see it)")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="atlas directory (created; an existing one is resumed: verified certificates are kept)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="an existing Dask scheduler")
    where.add_argument("--workers", metavar="N",
                       help="worker processes of the local cluster (default: the number of CPUs)")
    p.add_argument("--json", action="store_true", help="one JSON summary on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_atlas)
