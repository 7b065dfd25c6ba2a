"""The `sigmacert` command line: a thin dispatcher over one module per command group.

Each module of COMMAND_MODULES defines `register(subparsers)`, which adds its
sub-commands with `set_defaults(run=...)`; `run(args)` returns an exit code.
COMMANDS names the modules each command needs: a command loads only those
(`sigmacert report` never loads the numerics), `--help` and a bad command all.
Every failure is a `SigmacertError` (sigmacert.errors) and is reported as one
line on stderr with its exit code -- never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from certifier import __version__
from certifier.errors import RefusedError, SigmacertError

# One module per group of sub-commands, in the order they register; add a module here and its commands to COMMANDS.
COMMAND_MODULES = (
    "sigmacert.cli.core", "sigmacert.cli.keys", "sigmacert.cli.certify", "sigmacert.cli.train", "sigmacert.cli.service",
    "sigmacert.cli.report", "sigmacert.cli.atlas", "sigmacert.cli.targets", "sigmacert.cli.pld", "sigmacert.audits.cli",
    "sigmacert.cli.release", "sigmacert.cli.log",
)
_CORE, _TARGETS = "sigmacert.cli.core", "sigmacert.cli.targets"   # targets adds the kind flags to core's `sigma`
# Each command -> the modules that register it (tests/sigmacert/cli/test_cli.py holds this to the modules)
COMMANDS = {
    "sigma": (_CORE, _TARGETS), "tv": (_CORE,), "mc": (_CORE,), "dp": (_CORE, _TARGETS),
    "keygen": ("sigmacert.cli.keys",), "certify": ("sigmacert.cli.certify",), "show": ("sigmacert.cli.certify",),
    "train": ("sigmacert.cli.train",), "audit-linear": ("sigmacert.cli.train",),
    "serve": ("sigmacert.cli.service",), "token": ("sigmacert.cli.service",), "report": ("sigmacert.cli.report",),
    "atlas": ("sigmacert.cli.atlas",), "pld": ("sigmacert.cli.pld",), "audit": ("sigmacert.audits.cli",),
    "release": ("sigmacert.cli.release",), "log": ("sigmacert.cli.log",),
}


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


def modules_for(argv) -> tuple[str, ...]:
    """The modules to register for argv: its command's (the first word that is not an option; the top level takes
    no option with a value), none for `--version` alone, all of them for `--help`, no command or an unknown one."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command is None and "--version" in argv and not {"-h", "--help"} & set(argv):
        return ()
    return COMMANDS.get(command, COMMAND_MODULES)


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The parser with the commands argv needs (None: every command)."""
    parser = _Parser(prog="sigmacert", description="Certified noise multipliers for DP-SGD with random allocation.")
    parser.add_argument("--version", action="version", version=f"sigmacert {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES if argv is None else modules_for(argv):
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
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
