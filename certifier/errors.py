"""One exception hierarchy for everything sigmacert raises (re-exported as `sigmacert.errors`).

Every error's str() is a one-line message meant for the user; `exit_code` is the
status the command line exits with. The independent verifier keeps its own
`verifier.Reject` (it shares no code with this package).
"""
from __future__ import annotations


class SigmacertError(Exception):
    """Base class: a failure reported as one line, never a traceback."""
    exit_code = 2


class ParameterError(SigmacertError, ValueError):
    """A bad user input (M, E, sigma, lambda, a grid parameter, a file argument)."""


class CannotCertify(SigmacertError):
    """No certificate can be issued within the budget; the message says why and what would work."""


class NumericsUnreliable(SigmacertError, ArithmeticError):
    """A numerical value (exact TV, exact sigma) could not be computed to its stated accuracy."""


class KeyFileError(SigmacertError, ValueError):
    """A key file is missing, malformed, of the wrong type, or would be overwritten."""


class EnvelopeError(SigmacertError, ValueError):
    """A certificate file is not a well-formed, correctly signed DSSE envelope."""
