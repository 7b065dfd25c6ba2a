"""The dispatcher (sigmacert.cli): COMMANDS names the modules of every command, a command built alone parses as in
the whole parser, and a command that reads keys or certificates does not load the numerics."""
from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from sigmacert.cli import COMMAND_MODULES, COMMANDS, build_parser, modules_for


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_commands_name_every_command_of_the_modules():
    """The whole parser's commands are COMMANDS' keys, and every module of COMMANDS is one of COMMAND_MODULES."""
    assert set(_commands(build_parser())) == set(COMMANDS)
    assert {m for mods in COMMANDS.values() for m in mods} == set(COMMAND_MODULES)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_built_alone_parses_as_in_the_whole_parser(command):
    """Its help (every option, in order) and its options' defaults are those of the whole parser."""
    alone, whole = _commands(build_parser([command]))[command], _commands(build_parser())[command]
    assert alone.format_help() == whole.format_help()
    assert {a.dest: a.default for a in alone._actions} == {a.dest: a.default for a in whole._actions}


def test_the_command_is_the_first_word_that_is_no_option():
    assert modules_for(["report", "c.json", "--key", "k.pem"]) == COMMANDS["report"]
    assert modules_for(["--help"]) == modules_for([]) == modules_for(["--version", "--help"]) == COMMAND_MODULES
    assert modules_for(["--version"]) == ()
    assert modules_for(["no-such-command"]) == COMMAND_MODULES


NUMERICS = ("scipy", "certifier.numerics.schemes", "certifier.run")


@pytest.mark.parametrize("argv", [["report", "c.json"], ["token", "create"], ["keygen", "-o", "d"],
                                  ["serve"], ["log", "verify"]])
def test_a_command_that_reads_files_loads_no_numerics(argv):
    """In a fresh interpreter, the parser for a key, certificate, token or log command imports neither scipy nor the
    certifier's numerics (the start-up every CLI call pays)."""
    code = (f"import sys; from sigmacert.cli import build_parser; build_parser({argv!r}); "
            f"print([m for m in {NUMERICS!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_a_numeric_command_loads_the_numerics():
    """The check above can fail: `sigma` needs the numerics and loads them."""
    code = ("import sys; from sigmacert.cli import build_parser; build_parser(['sigma']); "
            f"print([m for m in {NUMERICS!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "scipy" in out.stdout, out.stdout
