"""`sigmacert keygen`: an Ed25519 key pair that signs certificates, or an ECDSA key pair that signs releases."""
from __future__ import annotations

import json
import os

from certifier.door import keygen


def run_keygen(args) -> int:
    kid = keygen(args.output, force=args.force, kind=args.kind)
    d = os.path.abspath(args.output)
    if args.json:
        print(json.dumps({"keyid": kid, "private": os.path.join(d, "private.pem"),
                          "public": os.path.join(d, "public.pem")}))
    else:
        print(f"key id {kid}" + ("" if args.kind == "ed25519" else f" ({args.kind}: a release key)"))
        print(f"  private key: {os.path.join(d, 'private.pem')} (mode 0600; keep it secret, never commit it)")
        print(f"  public key : {os.path.join(d, 'public.pem')}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("keygen", help="create an Ed25519 key pair DIR/private.pem, DIR/public.pem (or an ECDSA "
                                      "release key: --kind ecdsa-p256)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the key pair")
    p.add_argument("--kind", choices=("ed25519", "ecdsa-p256", "ecdsa-p384", "ecdsa-p521"), default="ed25519",
                   help="ed25519 signs certificates (default); an ECDSA key signs releases (docs/release.md)")
    p.add_argument("--force", action="store_true", help="replace an existing key pair in DIR")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_keygen)
