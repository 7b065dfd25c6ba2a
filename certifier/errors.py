"""One exception hierarchy for everything sigmacert raises (re-exported as `sigmacert.errors`).

Every error's str() is a one-line message meant for the user. What a command exits with is the
command line's business (sigmacert.cli.EXIT_CODES), not this package's. The independent verifier
keeps its own `verifier.Reject` (it shares no code with this package).
"""
from __future__ import annotations


class SigmacertError(Exception):
    """Base class: a failure reported as one line, never a traceback."""


class ParameterError(SigmacertError, ValueError):
    """A bad user input (M, E, sigma, lambda, a grid parameter, a file argument)."""


class CannotCertifyError(SigmacertError):
    """No certificate can be issued within the budget; the message says why and what would work."""


class NumericsUnreliableError(SigmacertError, ArithmeticError):
    """A numerical value (exact TV, exact sigma) could not be computed to its stated accuracy."""


class KeyFileError(SigmacertError, ValueError):
    """A key file is missing, malformed, of the wrong type, or would be overwritten."""


class EnvelopeError(SigmacertError, ValueError):
    """A certificate file is not a well-formed, correctly signed DSSE envelope."""


class RefusedError(SigmacertError):
    """A run is refused: no verified certificate covers it (or no longer does)."""


class CertificateRefusedError(RefusedError):
    """The certificate was rejected by the verifier, or is not for the run it is asked to drive."""


# The names before they ended in Error, for code written against them on other branches.
CannotCertify, NumericsUnreliable = CannotCertifyError, NumericsUnreliableError
