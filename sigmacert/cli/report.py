"""`sigmacert report`: verify a certificate independently and write its audit report (one HTML file)."""
from __future__ import annotations

import json
import os
import sys

import verifier
from certifier.params import ParameterError
from sigmacert.files import MAX_CERTIFICATE, read_regular, refuse_existing, write_atomic
from verifier import Reject, load_public_key
from verifier.release import verify_release
from verifier.transparency import verify_log_proof


def _default_output(cert: str) -> str:
    """CERT.json -> CERT.html, next to the certificate."""
    stem, ext = os.path.splitext(cert)
    return (stem if ext.lower() == ".json" else cert) + ".html"


def _progress(stage: str) -> None:
    what = {"verifying": "replaying the certificate with the independent verifier",
            "plotting": "computing the curves and drawing the plots"}
    print(f"report: {what.get(stage, stage)} ...", file=sys.stderr, flush=True)


def _release(args, data: bytes) -> dict:
    """sigmacert-verify --release's verdict on the directory whose certificate is CERT.json."""
    if not args.release_key:
        raise ParameterError("--release needs --release-key PUBLIC.pem (the release's ECDSA key)")
    try:
        res = verify_release(args.release, args.release_key + args.key, lambda d, k: verifier.verify_bytes(d, k))
    except (OSError, ValueError) as err:
        raise ParameterError(str(err)) from None
    with open(os.path.join(args.release, "certificate.json"), "rb") as f:
        if f.read() != data:
            res.failures.append({"reason": "manifest-certificate", "detail": f"{args.certificate} is not the "
                                 "release's certificate.json"})
            res.accepted = False
    return res.as_dict()


def _log(args, data: bytes) -> dict:
    """The --log-proof check for CERT.json."""
    keys = [load_public_key(read_regular(k, "public key", 64 * 1024)) for k in args.key]
    try:
        proof = json.loads(read_regular(args.log_proof, "log proof", MAX_CERTIFICATE))
        inc = verify_log_proof(proof, keys, data)
    except ValueError:
        return {"accepted": False, "reason": "log-proof", "detail": f"{args.log_proof} is not JSON"}
    except Reject as r:
        return {"accepted": False, "reason": r.reason, "detail": r.detail}
    return {"accepted": True, "reason": "included", "inclusion": inc,
            "detail": f"leaf {inc['index']} of the log's tree of size {inc['size']}"}


def run_report(args) -> int:
    try:
        from sigmacert.report import render
    except ModuleNotFoundError as err:
        if err.name != "matplotlib":
            raise
        raise ParameterError("`sigmacert report` needs matplotlib: pip install 'sigmacert[report]'") from None
    output = args.output or _default_output(args.certificate)
    if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise ParameterError(f"output directory does not exist: {os.path.dirname(os.path.abspath(output))}")
    refuse_existing(output, args.force)
    data = read_regular(args.certificate, "certificate", MAX_CERTIFICATE)
    release = None if args.release is None else _release(args, data)
    log = None if args.log_proof is None else _log(args, data)
    try:
        r = render(data, args.key, subject=args.subject, progress=None if args.json or args.quiet else _progress,
                   release=release, log=log)
    except RecursionError:  # a hostile certificate that the verifier's replay let through to the plots
        raise ParameterError("certificate is nested too deeply") from None
    write_atomic(output, r.html.encode("utf-8"), force=args.force)
    path = os.path.abspath(output)
    if args.json:
        print(json.dumps({"verdict": r.verdict, "reason": r.reason, "detail": r.detail, "output": path,
                          "sha256": r.sha256}))
    else:
        print(f"{r.verdict} ({r.reason}): {r.detail}")
        print(f"report: {path}")
    return 0 if r.accepted else 1


def register(sub) -> None:
    p = sub.add_parser("report", help="verify a certificate and write a self-contained HTML audit report with plots")
    p.add_argument("certificate", metavar="CERT.json")
    p.add_argument("--key", required=True, action="append", metavar="PUBLIC.pem",
                   help="issuer's Ed25519 public key (repeat for several)")
    p.add_argument("-o", "--output", metavar="REPORT.html", help="report to write (default: CERT.html beside CERT)")
    p.add_argument("--force", action="store_true", help="replace REPORT.html if it exists (default: refuse)")
    p.add_argument("--subject", metavar="FILE", help="file whose SHA-256 must be the certificate's subject")
    p.add_argument("--release", metavar="MODEL_DIR", help="also check and show the release CERT.json belongs to "
                                                         "(docs/release.md)")
    p.add_argument("--release-key", action="append", metavar="PUBLIC.pem", help="the release's ECDSA public key")
    p.add_argument("--log-proof", metavar="PROOF.json", help="also check and show CERT.json's inclusion in a log")
    p.add_argument("--json", action="store_true", help="one JSON object: verdict, reason, detail, output, sha256")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_report)
