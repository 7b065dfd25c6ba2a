"""Format v5: a run in stages (format/stages.py holds the schema and the checks)."""
from __future__ import annotations

from .stages import check, typed

PREDICATE_TYPE_V5 = "https://sigmacert.dev/certificate/v5"

__all__ = ["PREDICATE_TYPE_V5", "check", "typed"]
