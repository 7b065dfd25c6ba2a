"""The `sigmacert` command line: a thin dispatcher over one module per command group.

Each module of COMMAND_MODULES defines `register(subparsers)`, which adds its
sub-commands with `set_defaults(run=...)`; `run(args)` returns an exit code.
Every failure is a `SigmacertError` (sigmacert.errors) and is reported as one
line on stderr with its exit code -- never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from certifier.door import __version__
from certifier.errors import RefusedError, SigmacertError

# One module per group of sub-commands; add a module here to add commands.
COMMAND_MODULES = (
    "sigmacert.cli.core", "sigmacert.cli.certify", "sigmacert.cli.train", "sigmacert.cli.service",
    "sigmacert.cli.report", "sigmacert.cli.atlas", "sigmacert.cli.targets", "sigmacert.cli.pld", "sigmacert.audits.cli",
    "sigmacert.cli.release", "sigmacert.cli.log",
)


class CliError(SigmacertError):
    """A command-line failure to report as one line; `code` is the exit status."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


# The exit status of each failure (first match): a refused run 1, every other failure 2.
EXIT_CODES = ((RefusedError, 1), (SigmacertError, 2))


def exit_code(err: SigmacertError) -> int:
    if isinstance(err, CliError):
        return err.code
    return next(code for kind, code in EXIT_CODES if isinstance(err, kind))


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage too)
        for action in self._actions:  # a missing command: name the commands there are
            if isinstance(action, argparse._SubParsersAction) and message.endswith(f"required: {action.metavar}"):
                message = (f"no {action.metavar} given; one of: {', '.join(action.choices)} "
                           f"(`{self.prog} {action.metavar} --help` tells more)")
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
    except SigmacertError as err:
        print(f"sigmacert: error: {err}", file=sys.stderr)
        return exit_code(err)
    except KeyboardInterrupt:
        print("sigmacert: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `sigmacert ... --json | head -c 10`
        sys.stderr.close()
        return 1
    except OSError as err:
        print(f"sigmacert: error: {err.strerror or err}", file=sys.stderr)
        return 2
    except MemoryError:
        print("sigmacert: error: out of memory", file=sys.stderr)
        return 2
    except Exception as err:  # last resort: a bug is still one line (SIGMACERT_DEBUG=1 shows the traceback)
        if os.environ.get("SIGMACERT_DEBUG") == "1":
            raise
        print(f"sigmacert: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return 70
