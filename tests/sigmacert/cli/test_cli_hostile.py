"""Every command of `sigmacert` and `sigmacert-verify` with hostile and extreme arguments: a non-zero exit and
one line on stderr, never a traceback (and never the last-resort "internal error")."""
from __future__ import annotations

import os

import pytest

from sigmacert.cli import main
from verifier.cli import main as verify_main

CELL = ["-M", "100", "-E", "10"]


def _files(tmp):
    os.makedirs(tmp / "dir", exist_ok=True)
    (tmp / "garbage.json").write_bytes(os.urandom(300))
    (tmp / "notenv.json").write_text('{"payload": 1, "signatures": []}')
    (tmp / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (tmp / "public.pem").write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    return {k: str(tmp / k) for k in ("dir", "garbage.json", "notenv.json", "deep.json", "public.pem")}


def _cases(f):
    key = ["--key", f["public.pem"], "-o", "/tmp/never-written.json"]
    return [
        # sigma / tv / mc
        ["sigma", "-M", "0", "-E", "1", "-l", "0.1"], ["sigma", "-M", "-5", "-E", "1", "-l", "0.1"],
        ["sigma", "-M", "1e400", "-E", "1", "-l", "0.1"], ["sigma", "-M", "abc", "-E", "1", "-l", "0.1"],
        ["sigma", "-M", "99999999999", "-E", "1", "-l", "0.1"], ["sigma", *CELL, "-l", "0"],
        ["sigma", *CELL, "-l", "1"], ["sigma", *CELL, "-l", "nan"], ["sigma", *CELL, "-l", "inf"],
        ["sigma", *CELL, "-l", "1e-400"], ["sigma", *CELL, "-l", ""], ["sigma", *CELL, "-l", "0x1p-3"],
        ["sigma", *CELL, "-l", "0.1", "--scheme", "bogus"], ["sigma", "-M", "10", "-l", "0.1", "--iterations", "0"],
        ["tv", *CELL, "--sigma", "0"], ["tv", *CELL, "--sigma", "-1"], ["tv", *CELL, "--sigma", "1e-300"],
        ["tv", *CELL, "--sigma", "1e300"], ["tv", *CELL, "--sigma", "nan"], ["tv", *CELL, "--sigma", "0.01"],
        ["mc", *CELL, "--sigma", "1.5", "--samples", "0"], ["mc", *CELL, "--sigma", "0", "--samples", "10"],
        ["mc", *CELL, "--sigma", "1.5", "--samples", "1e20"],
        # keygen / certify / show
        ["keygen", "-o", "/proc/forbidden"], ["keygen", "-o", f["garbage.json"]],
        ["certify", *CELL, "-l", "0.1", "--key", "/nonexistent.pem", "-o", "/tmp/x.json"],
        ["certify", *CELL, "-l", "0.1", "--key", f["dir"], "-o", "/tmp/x.json"],
        ["certify", *CELL, "-l", "0.1", *key], ["certify", *CELL, "-l", "0.1", "--key", f["garbage.json"], "-o", "x"],
        ["certify", *CELL, "-l", "0.1", "--h", "0", *key], ["certify", *CELL, "-l", "0.1", "--h", "-1", *key],
        ["certify", *CELL, "-l", "0.1", "--prec", "1", *key], ["certify", *CELL, "-l", "0.1", "--prec", "x", *key],
        ["certify", *CELL, "-l", "0.1", "--h", "0.003", "--cap", "0.004", *key],
        ["certify", "-M", "100", "-E", "20000", "-l", "0.1", *key], ["certify", *CELL, "-l", "0.00001", *key],
        ["certify", *CELL, "-l", "0.9999", *key], ["certify", *CELL, "-l", "0.1", "--sigma", "0.01", *key],
        ["show", "/nonexistent.json"], ["show", f["dir"]], ["show", "/dev/null"], ["show", f["garbage.json"]],
        ["show", f["notenv.json"]], ["show", f["deep.json"]],
        # report / train / audit / serve / token / atlas
        ["report", "/nonexistent.json", "--key", f["public.pem"]], ["report", f["garbage.json"], "--key", f["dir"]],
        ["report", f["notenv.json"], "--key", f["public.pem"]],
        ["train", "--certificate", "/nonexistent.json", "--key", f["public.pem"], "--dataset", "digits", "-o",
         "/tmp/never"],
        ["train", "--certificate", f["garbage.json"], "--key", f["public.pem"], "--dataset", "nope", "-o", "/tmp/n"],
        ["audit-linear", "--sigma", "0", "--steps", "8", "--epochs", "2", "--trials", "3"],
        ["audit-linear", "--sigma", "1", "--steps", "8", "--epochs", "2", "--trials", "0"],
        ["serve", "--tokens", "/nonexistent/tokens.txt"], ["serve", "--tokens", f["garbage.json"], "--workers", "0"],
        ["token", "create", "--tokens", "/proc/forbidden/t.txt", "--name", "x"],
        ["atlas", "--steps", "abc", "--epochs", "1", "--targets", "0.1", "--key", f["public.pem"], "-o", "/tmp/a"],
        ["atlas", "--steps", "10", "--epochs", "1", "--targets", "2", "--key", f["public.pem"], "-o", "/tmp/a"],
        ["--bogus"], ["sigma"], [],
    ]


def test_every_command_fails_in_one_line(tmp_path, capsys):
    f = _files(tmp_path)
    bad = []
    for argv in _cases(f):
        try:
            code = main(argv)
        except SystemExit as e:                 # argparse: usage errors exit 2 after one line
            code = e.code
        except Exception as e:                  # a traceback
            bad.append((argv, "raised", repr(e)))
            capsys.readouterr()
            continue
        err = capsys.readouterr().err.strip().splitlines()
        if code in (0, None) or len(err) != 1 or "internal error" in err[0] or "Traceback" in err[0]:
            bad.append((argv, code, err[:3]))
    assert not bad, bad


def test_the_verifier_fails_in_one_line(tmp_path, capsys):
    f = _files(tmp_path)
    cases = [["/nonexistent.json", "--key", f["public.pem"]], [f["dir"], "--key", f["public.pem"]],
             [f["garbage.json"], "--key", f["garbage.json"]], [f["notenv.json"], "--key", f["public.pem"]],
             [f["deep.json"], "--key", f["public.pem"]], ["/dev/null", "--key", "/dev/zero"], []]
    bad = []
    for argv in cases:
        try:
            code = verify_main(argv)
        except SystemExit as e:
            code = e.code
        except Exception as e:
            bad.append((argv, "raised", repr(e)))
            continue
        out = capsys.readouterr()
        lines = [x for x in out.err.strip().splitlines() if x]
        if code in (0, None) or len(lines) > 1 or "Traceback" in out.err:
            bad.append((argv, code, lines[:3]))
    assert not bad, bad


@pytest.mark.parametrize("argv", [["sigma", *CELL, "-l", "0.1", "--json"]])
def test_good_input_still_works(argv, capsys):
    assert main(argv) == 0 and capsys.readouterr().err == ""
