"""sigmacert-verify: an independent replay of sigmacert certificates (docs/verifier.md).

    from verifier import verify_file
    r = verify_file("cert.json", ["public.pem"])
    r.accepted, r.reason, r.replayed_bound
"""
from .core import Result, read_limited, verify_bytes, verify_file
from .envelope import keyid, load_public_key
from .strict import Reject

__all__ = ["Result", "Reject", "read_limited", "verify_bytes", "verify_file", "keyid", "load_public_key"]
