"""sigmacert-verify CERT.json --key PUBLIC.pem [--key ...] [--subject FILE] [--json]

Exit status: 0 ACCEPT, 1 REJECT, 2 usage or I/O error.  Never a traceback."""
from __future__ import annotations

import argparse
import json
import sys

from .core import verify_file


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="sigmacert-verify", description="Verify a sigmacert "
                                 "certificate by replaying Lemma C.5 independently.")
    ap.add_argument("certificate", help="DSSE envelope (JSON)")
    ap.add_argument("--key", action="append", required=True, help="trusted Ed25519 public key (PEM)")
    ap.add_argument("--subject", help="file whose SHA-256 must be a subject of the Statement")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args(argv)  # exits 2 on usage errors
    try:
        res = verify_file(args.certificate, args.key, args.subject)
    except (OSError, ValueError, TypeError) as e:
        msg = f"sigmacert-verify: cannot read input: {e}"
        print(json.dumps({"result": "ERROR", "detail": msg}) if args.json else msg, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 2
    except Exception as e:  # last resort: never a traceback
        res = None
        msg = f"sigmacert-verify: internal error: {type(e).__name__}: {e}"
        print(json.dumps({"result": "ERROR", "detail": msg}) if args.json else msg, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res.as_dict(), sort_keys=True))
    else:
        print(f"{'ACCEPT' if res.accepted else 'REJECT'} ({res.reason}): {res.detail}")
        if res.replayed_bound is not None:
            print(f"  replayed bound on TV: {res.replayed_bound}   recorded bound: {res.recorded_bound}")
        if res.replayed_lower is not None:
            print(f"  replayed lower bound on TV at sigma_low: {res.replayed_lower}")
        for m in res.mismatches:
            print(f"  mismatch (not a rejection): {m}")
        print(f"  time: {res.seconds:.2f} s")
    return 0 if res.accepted else 1
