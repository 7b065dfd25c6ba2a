"""The `sigmacert` command line: a thin dispatcher over certifier.commands.*.

Each command module defines `register(subparsers)`, which adds its
sub-commands with `set_defaults(run=...)`; `run(args)` returns an exit code.
Bad input raises ParameterError (or another CliError) and is reported as one
line on stderr with exit code 2 -- never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from certifier import __version__
from certifier.params import ParameterError

# One module per group of sub-commands; add a module here to add commands.
COMMAND_MODULES = (
    "certifier.commands.core", "certifier.commands.certify", "certifier.commands.train",
    "certifier.commands.service",
)


class CliError(Exception):
    """A failure to report as one line; `code` is the exit status."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sigmacert", description="Certified noise multipliers for DP-SGD with random allocation.")
    parser.add_argument("--version", action="version", version=f"sigmacert {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except (ParameterError, CliError) as err:
        print(f"sigmacert: error: {err}", file=sys.stderr)
        return getattr(err, "code", 2)
    except KeyboardInterrupt:
        print("sigmacert: interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, OverflowError, MemoryError) as err:
        print(f"sigmacert: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # `python -m certifier.cli`: run the imported module, so its
    from certifier.cli import main as _main  # CliError is the class the commands raise

    sys.exit(_main())
