"""`sigmacert release MODEL_DIR --certificate CERT.json --key PRIVATE.pem [--card]` (docs/release.md)."""
from __future__ import annotations

import json

from trainer.seal import seal


def print_sealed(out: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(out, sort_keys=True))
        return
    r = out["run"]
    print(f"release sealed in {out['directory']} (release key id {out['release_keyid'][:16]}...)")
    print(f"  run: {r.get('scheme')} M={r.get('steps')} E={r.get('epochs')} sigma={r.get('sigma')}, "
          f"{r.get('steps_done')} steps done = the certificate's claim")
    print(f"  manifest subjects (model files): {', '.join(s['name'] for s in out['subjects'])}")
    print(f"  certificate sha256 {out['certificate_sha256'][:16]}... "
          f"(issuer key id {out['certificate_keyid'][:16]}...)")
    print(f"  files signed by model.sig: {', '.join(out['files'])}")


def run_release(args) -> int:
    print_sealed(seal(args.model_dir, certificate=args.certificate, key=args.key, card=args.card), args.json)
    return 0


def register(sub) -> None:
    p = sub.add_parser("release", help="seal a trained model's directory: certificate, signed training manifest, "
                                       "model card, OpenSSF model-signing signature")
    p.add_argument("model_dir", metavar="MODEL_DIR", help="the directory `sigmacert train` wrote (release.json)")
    p.add_argument("--certificate", required=True, metavar="CERT.json", help="the certificate the model was trained at")
    p.add_argument("--key", required=True, metavar="PRIVATE.pem",
                   help="ECDSA P-256/384/521 release key (sigmacert keygen --kind ecdsa-p256)")
    p.add_argument("--card", action="store_true", help="also write a Hugging Face model card (README.md)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(run=run_release)
