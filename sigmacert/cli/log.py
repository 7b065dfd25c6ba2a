"""`sigmacert log append|proof|consistency|verify`: a local append-only archive of certificates with RFC 9162
inclusion and consistency proofs and signed tree heads (docs/release.md "The log")."""
from __future__ import annotations

import json

from certifier.door import append, consistency, entries, heads, load_private, prove, read_head
from certifier.door import log_audit as audit
from certifier.errors import ParameterError
from sigmacert.files import read_regular, write_atomic
from verifier import Reject, load_public_key
from verifier.transparency import open_head, verify_consistency_bundle, verify_log_proof


def _read_json(path: str) -> dict:
    try:
        return json.loads(read_regular(path, "JSON file", 4 << 20))
    except (ValueError, UnicodeDecodeError):
        raise ParameterError(f"{path} is not JSON") from None


def _out(obj: dict, path: str | None, force: bool, text: str, as_json: bool) -> None:
    if path:
        write_atomic(path, (json.dumps(obj, indent=2) + "\n").encode(), force=force)
    print(json.dumps(obj if not path else {"written": path}, sort_keys=True) if as_json else text)


def run_append(args) -> int:
    index, head = append(args.archive, read_regular(args.certificate, "certificate", 4 << 20), load_private(args.key))
    h = read_head(head)
    _out({"index": index, "head": head}, None, False, f"appended as leaf {index}; signed head: size {h['size']}, "
         f"root {h['root']}", args.json)
    return 0


def run_proof(args) -> int:
    if (args.index is None) == (args.certificate is None):
        raise ParameterError("give a certificate file or --index N")
    cert = None if args.certificate is None else read_regular(args.certificate, "certificate", 4 << 20)
    b = prove(args.archive, args.index, cert)
    _out(b, args.output, args.force, f"inclusion proof of leaf {b['index']} in the tree of size {b['size']}"
         + (f" written to {args.output}" if args.output else ""), args.json)
    return 0


def run_consistency(args) -> int:
    b = consistency(args.archive, _read_json(args.head))
    _out(b, args.output, args.force, f"consistency proof from size {b['from']} to {b['to']}"
         + (f" written to {args.output}" if args.output else ""), args.json)
    return 0


def run_verify(args) -> int:
    """Every stored head signed by the key and equal to the entries' tree; each --head (kept by an auditor)
    extended by the latest head (consistency proof); each entry's inclusion proof."""
    key = load_public_key(read_regular(args.key, "public key", 64 * 1024))
    problems = list(audit(args.archive))
    for size, env in sorted(heads(args.archive).items()):
        try:
            open_head(env, [key])
        except Reject as r:
            problems.append(f"head of size {size}: {r.detail}")
    n = len(entries(args.archive))
    for i in range(n):
        try:
            verify_log_proof(prove(args.archive, i), [key])
        except Reject as r:
            problems.append(f"entry {i}: {r.detail}")
    for path in args.head or []:
        try:
            verify_consistency_bundle(*(lambda b: (b["old_head"], b["new_head"], b["proof"], [key]))(
                consistency(args.archive, _read_json(path))))
        except (Reject, ValueError) as r:
            problems.append(f"{path}: {getattr(r, 'detail', r)}")
    out = {"result": "ACCEPT" if not problems else "REJECT", "entries": n, "problems": problems}
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        print(f"{out['result']} (log): {n} entries, every inclusion proof and head checked"
              + "".join(f"\n  {p}" for p in problems))
    return 0 if not problems else 1


def register(sub) -> None:
    p = sub.add_parser("log", help="a local append-only certificate archive (RFC 9162 Merkle log)")
    lsub = p.add_subparsers(dest="log_command", metavar="ACTION", parser_class=type(p))
    lsub.required = True
    a = lsub.add_parser("append", help="archive a certificate as the next leaf and sign the new tree head")
    a.add_argument("archive", metavar="ARCHIVE")
    a.add_argument("certificate", metavar="CERT.json")
    a.add_argument("--key", required=True, metavar="PRIVATE.pem", help="Ed25519 key that signs tree heads")
    a.set_defaults(run=run_append)
    a = lsub.add_parser("proof", help="the inclusion proof of a certificate against the latest signed head")
    a.add_argument("archive", metavar="ARCHIVE")
    a.add_argument("certificate", metavar="CERT.json", nargs="?")
    a.add_argument("--index", type=int, help="leaf index instead of a certificate file")
    a.set_defaults(run=run_proof)
    a = lsub.add_parser("consistency", help="the consistency proof from a kept signed head to the latest")
    a.add_argument("archive", metavar="ARCHIVE")
    a.add_argument("--head", required=True, metavar="HEAD.json", help="an earlier signed head")
    a.set_defaults(run=run_consistency)
    for a in lsub.choices.values():
        if a.prog.split()[-1] in ("proof", "consistency"):
            a.add_argument("-o", "--output", metavar="FILE", help="write the proof here")
            a.add_argument("--force", action="store_true", help="replace FILE if it exists")
    a = lsub.add_parser("verify", help="check every head, entry and (with --head) consistency with kept heads")
    a.add_argument("archive", metavar="ARCHIVE")
    a.add_argument("--key", required=True, metavar="PUBLIC.pem", help="the log's Ed25519 public key")
    a.add_argument("--head", action="append", metavar="HEAD.json", help="a signed head kept earlier")
    a.set_defaults(run=run_verify)
    for a in lsub.choices.values():
        a.add_argument("--json", action="store_true", help="one JSON object on stdout")
