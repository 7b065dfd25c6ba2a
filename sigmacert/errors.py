"""The exceptions sigmacert raises: one base class, `SigmacertError`, and a few subclasses.

    SigmacertError          base; str(err) is one line, err.exit_code the CLI's exit status
    ├── ParameterError      bad input (also a ValueError)
    ├── CannotCertify       no certificate within the budget; says why and what would work
    ├── NumericsUnreliable  a numerical value not computable to its accuracy (also an ArithmeticError)
    ├── KeyFileError        missing, malformed or wrong-type key file
    └── EnvelopeError       malformed or badly signed certificate envelope

The independent verifier reports rejections as results, not exceptions
(`sigmacert.verify(...).accepted`), and keeps its own `verifier.Reject` internally.
"""
from certifier.errors import (
                              CannotCertify,
                              EnvelopeError,
                              KeyFileError,
                              NumericsUnreliable,
                              ParameterError,
                              SigmacertError,
)

__all__ = ["SigmacertError", "ParameterError", "CannotCertify", "NumericsUnreliable", "KeyFileError",
           "EnvelopeError"]
