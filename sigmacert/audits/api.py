"""`sigmacert.audit(...)`: certify or refute someone else's privacy claim at the sigma it states (docs/audit.md).

The face of certifier.audit: parses the claim exactly (one target kind, as `certify` takes it), runs both sides
at the claimed sigma, and returns a frozen `Audit` -- the verdict (HOLDS / FALSE / TOO CLOSE), the certified
interval and, with a key, the signed format-v6 certificate; with fix=True a FALSE claim also gets a certificate
at the least sigma that meets it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Mapping

from certifier.audit import DEFAULT_LIMIT, DEFAULT_WIDTH, Stated
from certifier.audit import audit as run_audit
from certifier.errors import ParameterError
from certifier.numerics import schemes
from certifier.params import (
    as_decimal_text,
    decimal_str,
    parse_count,
    parse_decimal,
    parse_epochs,
    parse_sigma,
    parse_steps,
)
from sigmacert import kinds
from sigmacert.files import write_atomic


@dataclass(frozen=True)
class Audit:
    """An audited claim: `verdict` HOLDS (the upper side at sigma proves it), FALSE (the lower side at sigma
    proves it fails) or TOO CLOSE (neither: the claim lies within the certified interval); `interval` the
    certified (lower, upper) of `quantity` (eps at the claimed delta, TV, or TPR at the claimed FPR)."""
    verdict: str
    quantity: str
    interval: tuple            # (Decimal, Decimal), both ends proven
    claim: str                 # the claim in words
    kind: str
    params: Mapping            # the claim's parameters as exact decimal texts (target / epsilon, delta / fpr, tpr)
    steps: int
    epochs: int
    sigma: Decimal
    scheme: str
    source: str
    numerical: float           # the numerical value on the same axis (not a proof)
    fix_sigma: Decimal | None  # FALSE: the least sigma meeting the claim (numerical, rounded up)
    seconds: Mapping
    predicate: Mapping
    envelope: bytes | None = None
    keyid: str | None = None
    fix_certificate: object = None   # fix=True and FALSE: sigmacert.Certificate at fix_sigma

    @property
    def relative_width(self) -> float:
        lo, hi = self.interval
        return float((hi - lo) / hi) if hi > 0 else float("inf")

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "claim": self.claim, "kind": self.kind, "params": dict(self.params),
                "steps": self.steps, "epochs": self.epochs, "sigma": str(self.sigma), "scheme": self.scheme,
                "source": self.source, "quantity": self.quantity,
                "interval": [str(self.interval[0]), str(self.interval[1])], "relative_width": self.relative_width,
                "numerical": self.numerical, "fix_sigma": None if self.fix_sigma is None else str(self.fix_sigma),
                "upper_value": self.predicate["upper"]["value"], "lower_value": self.predicate["lower"]["value"],
                "seconds": dict(self.seconds), "keyid": self.keyid}

    def write(self, path, *, force: bool = False) -> None:
        """Write the signed audit certificate to `path` (refuses an existing file unless force=True)."""
        if self.envelope is None:
            raise ParameterError("this audit is not signed (pass key= to audit)")
        write_atomic(os.fspath(path), self.envelope + b"\n", force=force, how="write(path, force=True)")


def stated(steps, epochs, sigma, *, target=None, epsilon=None, delta=None, fpr=None, tpr=None,
           scheme=schemes.DEFAULT_SCHEME, iterations=None, source: str = "") -> tuple[Stated, kinds.Kind]:
    """The claim as stated, parsed exactly (certifier.audit.Stated) and its face kind."""
    scheme = schemes.parse_scheme(scheme)
    if steps is None or sigma is None or (epochs is None and iterations is None):
        raise ParameterError("an audit needs steps, epochs (or iterations) and sigma")
    m = parse_steps(as_decimal_text("steps", steps))
    e = None if epochs is None else parse_epochs(as_decimal_text("epochs", epochs))
    t = None if iterations is None else parse_count("iterations", as_decimal_text("iterations", iterations), 10**12)
    e = parse_epochs(schemes.resolve_epochs(m, e, scheme, t))
    s = parse_sigma(as_decimal_text("sigma", sigma))
    kind = kinds.parse_kind(target, epsilon=epsilon, delta=delta, fpr=fpr, tpr=tpr)
    params = () if kind.PARAM is None else ((kind.PARAM, kind.param),)
    if not isinstance(source, str) or len(source) > 500:
        raise ParameterError("source must be text of at most 500 characters")
    return Stated(m, e, s, kind.name, params, kind.value, scheme, t, source), kind


def audit(steps=None, epochs=None, sigma=None, *, target=None, epsilon=None, delta=None, fpr=None, tpr=None,
          scheme=schemes.DEFAULT_SCHEME, iterations=None, stages=None, width=DEFAULT_WIDTH, key=None,
          source: str = "", fix: bool = False, limit: float = DEFAULT_LIMIT, progress=None) -> Audit:
    """Audit the claim "the run (steps, epochs, sigma[, scheme]) meets the target" (one kind: target=lambda, or
    epsilon with delta, or fpr with tpr). width: the certified interval's relative width (default 1e-3).
    key: a private key (path or Ed25519PrivateKey) to sign the format-v6 certificate. fix: when FALSE, also
    certify the least sigma meeting the claim (needs key). Raises ParameterError for bad input and
    CannotCertifyError where a side finds no grid."""
    if stages is not None:
        raise ParameterError("an audit of a run in stages is not implemented yet (give steps and epochs)")
    st, kind = stated(steps, epochs, sigma, target=target, epsilon=epsilon, delta=delta, fpr=fpr, tpr=tpr,
                      scheme=scheme, iterations=iterations, source=source)
    w = parse_decimal("width", as_decimal_text("width", width))
    priv = None if key is None else private_key(key)
    if fix and priv is None:
        raise ParameterError("fix=True certifies the least sigma: it needs key=")
    out = run_audit(st, width=w, limit=limit, progress=progress)
    from certifier.certificate.audit import build
    pred = build(out)
    envelope = keyid = None
    if priv is not None:
        from certifier.certificate.envelope import key_id, sign_certificate
        envelope, keyid = sign_certificate(pred, priv), key_id(priv.public_key())
    fixed = None
    if fix and out.verdict == "FALSE" and out.fix_sigma is not None:
        from sigmacert.api import certify
        fixed = certify(st.steps, None if st.iterations else st.epochs, sigma=out.fix_sigma, key=priv,
                        scheme=st.scheme, iterations=st.iterations, **dict(kind.params))
    return Audit(out.verdict, out.quantity, tuple(Decimal(x) for x in out.interval), st.words(), kind.name,
                 MappingProxyType(dict(kind.params)), st.steps, st.epochs, Decimal(decimal_str(st.sigma)), st.scheme,
                 st.source, out.numerical, None if out.fix_sigma is None else Decimal(out.fix_sigma),
                 MappingProxyType(dict(out.seconds)), MappingProxyType(pred), envelope, keyid, fixed)


def private_key(key):
    """An Ed25519 private key from a PKCS#8 PEM path (mode 0600) or the key itself."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from certifier.certificate.keys import load_private
    from certifier.errors import KeyFileError
    if isinstance(key, Ed25519PrivateKey):
        return key
    if isinstance(key, (str, os.PathLike)):
        return load_private(os.fspath(key))
    raise KeyFileError(f"key must be a path to a PKCS#8 PEM file or an Ed25519PrivateKey, got {type(key).__name__}")
