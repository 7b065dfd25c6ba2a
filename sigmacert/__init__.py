"""sigmacert: certified noise multipliers for DP-SGD with random allocation (balls-and-bins).

    >>> import sigmacert
    >>> sigmacert.closed_form_sigma(100, 10, "0.1")     # Corollary 3.4: a proven bound, microseconds
    Decimal('1.736983')
    >>> sigmacert.exact_sigma(100, 10, "0.1")           # Theorem 4.1: the least sigma any accountant can certify
    Decimal('1.426215')
    >>> cert = sigmacert.certify(100, 10, "0.1", key="keys/private.pem")   # Appendix C.5, signed
    >>> sigmacert.verify(cert, "keys/public.pem").accepted                  # the independent verifier
    True

Paper: "Closed-Form Noise Calibration Against Membership Inference for Random-Allocation
DP-SGD" (arXiv 2610.09651). Packages: `certifier` (mathematics and certificates),
`verifier` (independent replay), `trainer` (Algorithm 1), `service` (HTTP), `proofs` (sympy).
"""
import importlib

from certifier import __version__
from sigmacert.errors import (
                           CannotCertify,
                           CannotCertifyError,
                           CertificateRefusedError,
                           EnvelopeError,
                           KeyFileError,
                           NumericsUnreliable,
                           NumericsUnreliableError,
                           ParameterError,
                           RefusedError,
                           SigmacertError,
)

# the names of the computing modules, imported on first use (PEP 562): `sigmacert.cli` and `sigmacert.files` do not
# load the numerics
_HOMES = {
    "sigmacert.api": ("DEFAULT_SCHEME", "SCHEMES", "Certificate", "ExactTV", "Stage", "Verification", "certify",
                      "closed_form_sigma", "exact_privacy", "exact_sigma", "exact_tv", "require_verified", "verify"),
    "sigmacert.audits": ("Audit", "audit"),
    "sigmacert.pld_export": ("pld", "read_pld"),
}
_WHERE = {name: home for home, names in _HOMES.items() for name in names}

__all__ = ["__version__", "closed_form_sigma", "exact_tv", "exact_sigma", "exact_privacy", "certify", "verify",
           "require_verified", "pld", "read_pld", "ExactTV", "Stage", "Certificate", "Verification", "SigmacertError",
           "ParameterError", "CannotCertifyError", "NumericsUnreliableError", "KeyFileError", "EnvelopeError",
           "RefusedError", "CertificateRefusedError", "CannotCertify", "NumericsUnreliable", "SCHEMES",
           "DEFAULT_SCHEME", "audit", "Audit"]


def __getattr__(name: str):
    """A computing name from its home module, kept here after the first look-up."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
