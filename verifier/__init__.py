"""sigmacert-verify: an independent replay of sigmacert certificates (docs/verifier.md).

    from verifier import verify_file
    r = verify_file("cert.json", ["public.pem"], max_memory=2 << 30, max_seconds=600)
    r.accepted, r.reason, r.replayed_bound, r.cost
"""
from .core import Result, read_limited, subject_digest, verify_bytes, verify_file
from .cost import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS
from .format.envelope import keyid, load_public_key
from .format.strict import Reject

__all__ = ["DEFAULT_MAX_MEMORY", "DEFAULT_MAX_SECONDS", "Result", "Reject", "read_limited", "subject_digest",
           "verify_bytes", "verify_file", "keyid", "load_public_key"]
