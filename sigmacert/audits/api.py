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

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from certifier import door
from certifier.door import AUDIT_LIMIT as DEFAULT_LIMIT
from certifier.door import AUDIT_WIDTH as DEFAULT_WIDTH
from certifier.door import Stated, load_private, schemes
from certifier.door import audit as run_audit
from certifier.door import build_audit as build
from certifier.errors import KeyFileError, ParameterError
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
    stages: tuple = ()               # a run in stages: ((M_s, E_s), ...) at the one sigma (steps: the first M,
                                     # epochs: the total); () for a block

    @property
    def target(self):
        """The claim's Target (certifier.targets): its words and values."""
        return door.KINDS[self.kind].from_params(dict(self.params))

    @property
    def relative_width(self) -> float:
        lo, hi = self.interval
        return float((hi - lo) / hi) if hi > 0 else float("inf")

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "claim": self.claim, "kind": self.kind, "params": dict(self.params),
                "steps": self.steps, "epochs": self.epochs, "stages": [list(x) for x in self.stages] or None,
                "sigma": str(self.sigma), "scheme": self.scheme,
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
           scheme=schemes.DEFAULT_SCHEME, iterations=None, stages=None, source: str = "") -> Stated:
    """The claim as stated, parsed exactly (certifier.audit.Stated): the run (steps and epochs or iterations, or
    stages "50x4,200x2" at the one claimed sigma), the sigma and one target kind."""
    if sigma is None:
        raise ParameterError("an audit needs the claimed sigma")

    def staged(spec):
        if schemes.parse_scheme(scheme) != schemes.DEFAULT_SCHEME:
            raise ParameterError("a run in stages is audited for random allocation only (not fixed bins)")
        return door.Run.composed(spec, sigma_per_stage=False)

    def block():
        named = schemes.parse_scheme(scheme)
        if steps is None or (epochs is None and iterations is None):
            raise ParameterError("an audit needs steps and epochs (or iterations), or stages, and sigma")
        m = parse_steps(as_decimal_text("steps", steps))
        e = None if epochs is None else parse_epochs(as_decimal_text("epochs", epochs))
        t = None if iterations is None else parse_count("iterations", as_decimal_text("iterations", iterations),
                                                        10**12)
        return door.Run.block(m, parse_epochs(schemes.resolve_epochs(m, e, named, t)), named, t)
    run = door.given_form(stages, (steps, epochs, iterations), "give either stages or steps and epochs, not both"
                          ).pick(block, staged)
    s = parse_sigma(as_decimal_text("sigma", sigma))
    kind = kinds.parse_kind(target, epsilon=epsilon, delta=delta, fpr=fpr, tpr=tpr)
    if not isinstance(source, str) or len(source) > 500:
        raise ParameterError("source must be text of at most 500 characters")
    return Stated(run, s, kind, source)


def audit(steps=None, epochs=None, sigma=None, *, target=None, epsilon=None, delta=None, fpr=None, tpr=None,
          scheme=schemes.DEFAULT_SCHEME, iterations=None, stages=None, width=DEFAULT_WIDTH, key=None,
          source: str = "", fix: bool = False, limit: float = DEFAULT_LIMIT, progress=None) -> Audit:
    """Audit the claim "the run (steps, epochs, sigma[, scheme]) meets the target" (one kind: target=lambda, or
    epsilon with delta, or fpr with tpr); stages="50x4,200x2" (or [(50, 4), (200, 2)]) instead of steps and
    epochs: a run in stages at the one claimed sigma. width: the certified interval's relative width (default
    1e-3). key: a private key (path or Ed25519PrivateKey) to sign the format-v6 certificate. fix: when FALSE,
    also certify the least sigma meeting the claim (needs key). Raises ParameterError for bad input and
    CannotCertifyError where a side finds no grid."""
    st = stated(steps, epochs, sigma, target=target, epsilon=epsilon, delta=delta, fpr=fpr, tpr=tpr,
                scheme=scheme, iterations=iterations, stages=stages, source=source)
    w = parse_decimal("width", as_decimal_text("width", width))
    priv = None if key is None else private_key(key)
    if fix and priv is None:
        raise ParameterError("fix=True certifies the least sigma: it needs key=")
    out = run_audit(st, width=w, limit=limit, progress=progress)
    pred = build(out)
    envelope = keyid = None
    if priv is not None:
        envelope, keyid = door.sign(pred, priv)
    fixed = None
    if fix and out.verdict == "FALSE" and out.fix_sigma is not None:
        from sigmacert.api import certify
        run = st.run.pick(lambda m, e, scheme: dict(steps=m, epochs=None if st.iterations else e, scheme=scheme,
                                                    iterations=st.iterations),
                          lambda stages: dict(stages=st.stages))
        fixed = certify(sigma=out.fix_sigma, key=priv, **run, **st.target.params)
    kind = st.target
    return Audit(out.verdict, out.quantity, tuple(Decimal(x) for x in out.interval), st.words(), kind.name,
                 MappingProxyType(dict(kind.params)), st.steps, st.epochs, Decimal(decimal_str(st.sigma)), st.scheme,
                 st.source, out.numerical, None if out.fix_sigma is None else Decimal(out.fix_sigma),
                 MappingProxyType(dict(out.seconds)), MappingProxyType(pred), envelope, keyid, fixed, st.stages)


def private_key(key):
    """An Ed25519 private key from a PKCS#8 PEM path (mode 0600) or the key itself."""
    if isinstance(key, Ed25519PrivateKey):
        return key
    if isinstance(key, (str, os.PathLike)):
        return load_private(os.fspath(key))
    raise KeyFileError(f"key must be a path to a PKCS#8 PEM file or an Ed25519PrivateKey, got {type(key).__name__}")
