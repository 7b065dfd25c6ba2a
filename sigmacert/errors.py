"""The exceptions sigmacert raises: one base class, `SigmacertError`, and a few subclasses.

    SigmacertError               base; str(err) is one line (the CLI maps it to an exit status)
    ├── ParameterError           bad input (also a ValueError)
    ├── CannotCertifyError       no certificate within the budget; says why and what would work
    ├── NumericsUnreliableError  a numerical value not computable to its accuracy (also an ArithmeticError)
    ├── KeyFileError             missing, malformed or wrong-type key file
    ├── EnvelopeError            malformed or badly signed certificate envelope
    └── RefusedError             a run no verified certificate covers
        └── CertificateRefusedError   rejected by the verifier, or for another run (sigmacert.require_verified)

`sigmacert.verify(...)` reports a rejection as a result (`.accepted`); its raising twin
`sigmacert.require_verified(...)` raises CertificateRefusedError. The independent verifier keeps
its own `verifier.Reject`. CannotCertify and NumericsUnreliable are the old names of two of them.
"""
from certifier.errors import (
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

__all__ = ["SigmacertError", "ParameterError", "CannotCertifyError", "NumericsUnreliableError", "KeyFileError",
           "EnvelopeError", "RefusedError", "CertificateRefusedError", "CannotCertify", "NumericsUnreliable"]
