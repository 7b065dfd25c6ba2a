"""`sigmacert audit --claims FILE.csv`: audit every row of a CSV of claims, resumably (docs/audit.md).

Columns (header row, any order; empty cells are absent): steps (M), epochs (E) or iterations (fixed bins), or stages
("50x4,200x2" quoted, or "50x4;200x2": a run in stages at the row's one sigma) instead of both, scheme
(random-allocation, the default, or fixed-bins), sigma, kind (tv, dp or tpr; optional, checked against the
parameters), the kind's parameters (target | epsilon, delta | fpr, tpr) and source. The output directory holds one
certificate a row (row-0001.json, with --key), progress.jsonl (one line per finished row, appended and synced
before the next row starts: a killed run loses at most the rows in flight, and a rerun skips every row whose line
is there and whose content is unchanged) and index.json (every row in order, rewritten at the end). Workers never
see the key: a row's predicate is computed (in-process, or on Dask with --scheduler) and signed here.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys

from certifier import door
from certifier.door import audit as run_audit
from certifier.door import build_audit as build
from certifier.door import key_id, sign
from certifier.errors import ParameterError, SigmacertError
from sigmacert.atlas.cluster import dask_client
from sigmacert.audits.api import stated
from sigmacert.files import read_regular, write_atomic

COLUMNS = ("steps", "epochs", "iterations", "stages", "scheme", "sigma", "kind", "target", "epsilon", "delta", "fpr",
           "tpr", "source")
KIND_OF = {frozenset({"target"}): "tv", frozenset({"epsilon", "delta"}): "dp", frozenset({"fpr", "tpr"}): "tpr"}
MAX_CLAIMS_BYTES = 4 << 20
PROGRESS, INDEX = "progress.jsonl", "index.json"


def read_claims(path: str) -> list[dict]:
    """The rows of a claims CSV: [{"row": n, "key": sha256 of the row, column: text, ...}]; one-line refusals."""
    text = read_regular(path, "claims file", MAX_CLAIMS_BYTES).decode("utf-8-sig", errors="strict")
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    unknown = [h for h in header if h not in COLUMNS]
    if not header or unknown:
        raise ParameterError(f"{path}: unknown or missing columns {unknown or '(no header)'}; known: "
                             f"{', '.join(COLUMNS)}")
    reader.fieldnames = header
    rows = []
    for n, raw in enumerate(reader, start=1):
        if None in raw:
            raise ParameterError(f"{path}: row {n} has more cells than the header")
        row = {k: v.strip() for k, v in raw.items() if v is not None and v.strip()}
        if not row:
            continue
        key = hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()
        rows.append({"row": n, "key": key, **row})
    if not rows:
        raise ParameterError(f"{path}: no claims")
    return rows


def kind_of(row: dict) -> str:
    """The kind the row's parameters name (and its kind column, when given, must agree)."""
    named = frozenset(k for k in ("target", "epsilon", "delta", "fpr", "tpr") if k in row)
    kind = KIND_OF.get(named)
    if kind is None:
        got = ", ".join(sorted(named)) or "none"
        raise ParameterError(f"give target, or epsilon and delta, or fpr and tpr (got {got})")
    if row.get("kind", kind).lower() != kind:
        raise ParameterError(f"kind {row['kind']!r} does not match the parameters given ({kind})")
    return kind


def _stage_cell(row: dict):
    """The row's stages cell as `stated` takes it: "50x4,200x2" (quoted in the CSV) or "50x4;200x2"; None without."""
    return door.given_form(row.get("stages")).pick(lambda: None, lambda cell: cell.replace(";", ","))


def _run_cells(c: dict) -> str:
    """The table's run columns of a claim row: its stages, or M and E (or iterations)."""
    return door.given_form(c.get("stages")).pick(
        lambda: f"{c.get('steps', ''):>6} {c.get('epochs', c.get('iterations', '')):>5}",
        lambda cell: f"{cell.replace(';', ','):>12}")


def audit_row(row: dict, width: str) -> dict:
    """Audit one row (runs on a worker: no key): {"ok": True, "predicate", "summary"} or {"ok": False, "error"}."""
    try:
        kind_of(row)
        st = stated(row.get("steps"), row.get("epochs"), row.get("sigma"), target=row.get("target"),
                    epsilon=row.get("epsilon"), delta=row.get("delta"), fpr=row.get("fpr"), tpr=row.get("tpr"),
                    scheme=row.get("scheme", "random-allocation"), iterations=row.get("iterations"),
                    stages=_stage_cell(row), source=row.get("source", ""))
        out = run_audit(st, width=width)
    except SigmacertError as err:
        return {"ok": False, "error": str(err)}
    return {"ok": True, "predicate": build(out),
            "summary": {"verdict": out.verdict, "quantity": out.quantity, "interval": list(out.interval),
                        "relative_width": out.relative_width, "numerical": out.numerical,
                        "fix_sigma": out.fix_sigma, "seconds": out.seconds["total"]}}


def _done(out_dir: str) -> dict:
    """key -> entry of the rows a previous run finished (a torn last line is ignored)."""
    path = os.path.join(out_dir, PROGRESS)
    done = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:
                    continue                     # a line cut by a kill: that row is audited again
                done[e["key"]] = e
    return done


def _append(out_dir: str, entry: dict) -> None:
    with open(os.path.join(out_dir, PROGRESS), "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _finish(row: dict, result: dict, out_dir: str, key) -> dict:
    """Sign and write a row's certificate (driver side), and its progress entry."""
    entry = {k: row[k] for k in ("row", "key")}
    entry["claim"] = {k: v for k, v in row.items() if k not in ("row", "key")}
    if not result["ok"]:
        entry.update(verdict="REFUSED", error=result["error"], certificate=None)
        return entry
    entry.update(result["summary"])
    entry["certificate"] = None
    if key is not None:
        name = f"row-{row['row']:04d}.json"
        write_atomic(os.path.join(out_dir, name), sign(result["predicate"], key)[0] + b"\n", force=True)
        entry["certificate"] = name
    return entry


def _results(rows: list, width: str, scheduler: str | None):
    """(row, result) as each row finishes: in-process in order, or on Dask (as completed)."""
    if not scheduler:
        for row in rows:
            yield row, audit_row(row, width)
        return
    from distributed import as_completed

    with dask_client(scheduler, 1) as client:
        futures = {client.submit(audit_row, row, width, pure=False): row for row in rows}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()


def table(entries: list) -> list[str]:
    """The audit table, one line a row."""
    head = f"{'row':>4} {'M':>6} {'E':>5} {'sigma':>10} {'claim':<24} {'verdict':<10} {'certified interval':<30} source"
    out = [head, "-" * len(head)]
    for e in entries:
        c = e["claim"]
        claim = (f"TV <= {c.get('target')}" if "target" in c else f"eps <= {c.get('epsilon')} @ {c.get('delta')}"
                 if "epsilon" in c else f"TPR <= {c.get('tpr')} @ {c.get('fpr')}")
        iv = f"[{e['interval'][0]}, {e['interval'][1]}]" if "interval" in e else e.get("error", "")[:60]
        out.append(f"{e['row']:>4} {_run_cells(c)} {c.get('sigma', ''):>10} {claim:<24} {e['verdict']:<10} {iv:<30} "
                   f"{c.get('source', '')}")
    return out


def say(args, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr, flush=True)


def run_bulk(args) -> int:
    from sigmacert.audits.api import private_key
    rows = read_claims(args.claims)
    out_dir = args.out_dir or os.path.splitext(args.claims)[0] + ".audit"
    os.makedirs(out_dir, exist_ok=True)
    key = private_key(args.key) if args.key else None
    done = _done(out_dir)
    todo = [r for r in rows if r["key"] not in done]
    say(args, f"{len(rows)} claims, {len(rows) - len(todo)} done before, {len(todo)} to audit -> {out_dir}")
    for row, result in _results(todo, args.width, args.scheduler):
        entry = _finish(row, result, out_dir, key)
        _append(out_dir, entry)
        done[row["key"]] = entry
        say(args, f"row {row['row']}: {entry['verdict']}")
    entries = [done[r["key"]] for r in rows]
    index = {"claims": os.path.basename(args.claims), "rows": entries,
             "keyid": None if key is None else key_id(key.public_key())}
    write_atomic(os.path.join(out_dir, INDEX), (json.dumps(index, indent=1, sort_keys=True) + "\n").encode(),
                 force=True)
    if args.json:
        print(json.dumps(index))
    else:
        print("\n".join(table(entries)))
        print(f"index: {os.path.join(out_dir, INDEX)}")
    return 0
