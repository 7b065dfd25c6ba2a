"""Audits of someone else's privacy claim (docs/audit.md): `audit` for one claim, `bulk` for a CSV of claims,
`frameworks` for an Opacus accountant history or a jax_privacy BallsInBinsSampling configuration."""
from sigmacert.audits.api import Audit, audit

__all__ = ["Audit", "audit"]
