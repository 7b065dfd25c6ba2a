"""The in-toto Statement v1 around a tv-certificate predicate, and the dispatch on its format
version: FORMATS maps each predicateType to its exact schema and its static checks."""
from __future__ import annotations

import hashlib
import re

from . import v1, v2, v3, v4, v5, v6
from .schema import check_balls
from .strict import Reject, canonical, load_json

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
# predicateType -> (typed predicate from the raw one, static checks of the typed predicate)
FORMATS = {v1.PREDICATE_TYPE: (v1.typed_v1, v1.check_claim_and_method),
           v2.PREDICATE_TYPE_V2: (v2.typed_v2, v2.check_format_v2),
           v3.PREDICATE_TYPE_V3: (v3.typed, v3.check_v3),
           v4.PREDICATE_TYPE_V4: (v4.typed, v4.check_v4),
           v5.PREDICATE_TYPE_V5: (v5.typed, v5.check),
           v6.PREDICATE_TYPE_V6: (v6.typed, v6.check)}


def parse_statement(payload: bytes, subject_digest: str | None = None):
    """Parse and check the Statement; return (raw predicate, typed predicate)."""
    st = load_json(payload, "payload")
    if not isinstance(st, dict) or set(st) != {"_type", "subject", "predicateType", "predicate"}:
        raise Reject("statement-fields", "Statement must have exactly _type, subject, predicateType, predicate")
    if payload not in (canonical(st), canonical(st, ascii_only=True)):
        raise Reject("payload-not-canonical", "payload is not canonical JSON (sorted keys, no spaces)")
    if st["_type"] != STATEMENT_TYPE:
        raise Reject("statement-type", f"_type {st['_type']!r} != {STATEMENT_TYPE!r}")
    if st["predicateType"] not in FORMATS:
        raise Reject("predicate-type", f"unknown predicateType {st['predicateType']!r}")
    subj = st["subject"]
    if (not isinstance(subj, list) or not subj or any(
            not isinstance(s, dict) or set(s) != {"name", "digest"} or not isinstance(s["name"], str)
            or not isinstance(s["digest"], dict) or set(s["digest"]) != {"sha256"}
            or not isinstance(s["digest"]["sha256"], str)
            or not re.fullmatch(r"[0-9a-f]{64}", s["digest"]["sha256"]) for s in subj)):
        raise Reject("statement-fields", "subject must be a list of {name, digest: {sha256: 64 hex}}")
    raw = st["predicate"]
    typed, check = FORMATS[st["predicateType"]]
    pred = typed(raw)
    digests = {s["digest"]["sha256"] for s in subj}
    if subject_digest is not None and subject_digest not in digests:
        raise Reject("subject-digest", "no subject has the SHA-256 of the given --subject file")
    claim_digest = hashlib.sha256(canonical(raw["claim"])).hexdigest()
    for s in subj:
        if s["name"] == "claim" and s["digest"]["sha256"] != claim_digest:
            raise Reject("subject-digest", "subject 'claim' digest != SHA-256 of canonical predicate.claim")
    check_balls(pred)
    check(pred)
    return raw, pred
