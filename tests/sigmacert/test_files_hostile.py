"""Every command that reads a file, against hostile files: each refuses in bounded time, with a non-zero
exit, without a traceback and with (at most) one line on stderr.

Hostile kinds: a FIFO (an open would block forever), /dev/zero (a read never ends), a symlink to
/dev/zero, a directory, a file larger than the command's bound, and for certificates JSON nested 10^6
deep and an integer of 5000 digits (RecursionError, ValueError in Python's int conversion), and a
rejected envelope whose payloadType is 3 MB (its rejection detail must stay short).
The commands: sigmacert show / report (certificate, --key, --subject, -o) / certify (--key, --subject,
-o) / train --certificate / serve (--tokens, --key) / token create --tokens, and sigmacert-verify
(certificate, --key, --subject).
"""
from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest
from service_fixtures import SIGMACERT, VERIFY, free_port

TIMEOUT = 60  # seconds: every refusal is immediate; a hang is killed here and fails the test


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A real certificate (M=2, E=4, lambda=0.2, sigma=4, one-sided: about a second), its keys, hostile files."""
    d = tmp_path_factory.mktemp("hostile")
    run([*SIGMACERT, "keygen", "-o", str(d / "keys")])
    cert = d / "cert.json"
    out = run([*SIGMACERT, "certify", "-M", "2", "-E", "4", "-l", "0.2", "--sigma", "4", "--one-sided",
               "--key", str(d / "keys" / "private.pem"), "-o", str(cert), "--quiet"])
    assert out.returncode == 0, out.stderr
    fifo = d / "fifo"
    os.mkfifo(fifo)
    os.symlink("/dev/zero", d / "zero-link")
    device = own_device(d)
    (d / "adir").mkdir()
    (d / "huge.json").write_bytes(b" " * (5 * 1024 * 1024))   # over the 4 MiB certificate bound
    (d / "huge.pem").write_bytes(b"-" * (200 * 1024))          # over the 64 KiB key bound
    (d / "nested.json").write_bytes(b"[" * 10**6 + b"]" * 10**6)
    (d / "digits.json").write_bytes(b'{"payloadType": ' + b"9" * 5000 + b', "payload": "", "signatures": []}')
    env = json.loads(cert.read_text())
    (d / "long-type.json").write_text(json.dumps({**env, "payloadType": "x" * (3 << 20)}))
    return {"dir": d, "cert": str(cert), "pub": str(d / "keys" / "public.pem"), "priv": str(d / "keys" / "private.pem"),
            "fifo": str(fifo), "device": device, "zero": "/dev/zero", "zero-link": str(d / "zero-link"),
            "dir-arg": str(d / "adir"),
            "huge-cert": str(d / "huge.json"), "huge-key": str(d / "huge.pem"), "nested": str(d / "nested.json"),
            "digits": str(d / "digits.json"), "long-type": str(d / "long-type.json")}


def own_device(d) -> str:
    """A character device of our own (/dev/full's numbers) in the test's directory when we may make one
    (root), else a symlink to /dev/full: an output test may destroy it, never the machine's /dev."""
    path = d / "full"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except PermissionError:
        os.symlink("/dev/full", path)
    return str(path)


def run(argv, timeout=TIMEOUT):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def refused(out: subprocess.CompletedProcess, one_line: bool = True) -> None:
    assert out.returncode != 0, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr + out.stdout, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    if one_line:
        assert len(lines) == 1, out.stderr[-2000:]
    else:
        assert len(lines) <= 1, out.stderr[-2000:]
    assert len(out.stderr) < 2000 and len(out.stdout) < 5000, (len(out.stderr), len(out.stdout))


FILE_KINDS = ["fifo", "zero", "zero-link", "dir-arg"]
CERT_KINDS = [*FILE_KINDS, "huge-cert"]
CONTENT_KINDS = ["nested", "digits", "long-type"]  # regular files: a reader must parse them and refuse


def certify_argv(w, key=None, subject=None, output=None):
    argv = [*SIGMACERT, "certify", "-M", "2", "-E", "4", "-l", "0.2", "--sigma", "4", "--one-sided", "--quiet",
            "--key", key or w["priv"], "-o", output or str(w["dir"] / "out.json")]
    return argv + (["--subject", subject] if subject else [])


COMMANDS = {  # name -> (argv builder given the hostile path, hostile kinds)
    "show CERT": (lambda w, p: [*SIGMACERT, "show", p], CERT_KINDS),
    "report CERT": (lambda w, p: [*SIGMACERT, "report", p, "--key", w["pub"], "--quiet",
                                  "-o", str(w["dir"] / "r.html"), "--force"], CERT_KINDS),
    "report --key": (lambda w, p: [*SIGMACERT, "report", w["cert"], "--key", p, "--quiet",
                                   "-o", str(w["dir"] / "r.html"), "--force"], [*FILE_KINDS, "huge-key"]),
    "report --subject": (lambda w, p: [*SIGMACERT, "report", w["cert"], "--key", w["pub"], "--subject", p,
                                       "--quiet", "-o", str(w["dir"] / "r.html"), "--force"], FILE_KINDS),
    # -o: never a real device path (a writer that replaced it would destroy the machine's /dev/zero)
    "report -o": (lambda w, p: [*SIGMACERT, "report", w["cert"], "--key", w["pub"], "--quiet", "-o", p],
                  ["fifo", "device", "zero-link", "dir-arg"]),
    "certify --key": (lambda w, p: certify_argv(w, key=p), [*FILE_KINDS, "huge-key"]),
    "certify --subject": (lambda w, p: certify_argv(w, subject=p), FILE_KINDS),
    "certify -o": (lambda w, p: certify_argv(w, output=p), ["fifo", "device", "zero-link"]),
    "train --certificate": (lambda w, p: [*SIGMACERT, "train", "--certificate", p, "--key", w["pub"],
                                          "--dataset", "digits", "-o", str(w["dir"] / "train")], CERT_KINDS),
    "train --key": (lambda w, p: [*SIGMACERT, "train", "--certificate", w["cert"], "--key", p,
                                  "--dataset", "digits", "-o", str(w["dir"] / "train")], [*FILE_KINDS, "huge-key"]),
    "serve --tokens": (lambda w, p: [*SIGMACERT, "serve", "--port", str(free_port()), "--db", str(w["dir"] / "s.db"),
                                     "--key", w["priv"], "--tokens", p], [*FILE_KINDS, "huge-key"]),
    "serve --key": (lambda w, p: [*SIGMACERT, "serve", "--port", str(free_port()), "--db", str(w["dir"] / "s.db"),
                                  "--key", p], [*FILE_KINDS, "huge-key"]),
    "token create --tokens": (lambda w, p: [*SIGMACERT, "token", "create", "--tokens", p, "--name", "x"],
                              FILE_KINDS),
    "sigmacert-verify CERT": (lambda w, p: [*VERIFY, p, "--key", w["pub"]], FILE_KINDS),
    "sigmacert-verify --key": (lambda w, p: [*VERIFY, w["cert"], "--key", p], [*FILE_KINDS, "huge-key"]),
    "sigmacert-verify --subject": (lambda w, p: [*VERIFY, w["cert"], "--key", w["pub"], "--subject", p], FILE_KINDS),
}
CASES = [(name, kind) for name, (_, kinds) in COMMANDS.items() for kind in kinds]


@pytest.mark.parametrize("name,kind", CASES, ids=[f"{n}:{k}" for n, k in CASES])
def test_a_hostile_file_is_refused_in_one_line(world, name, kind):
    build, _ = COMMANDS[name]
    out = run(build(world, world[kind]))
    refused(out)
    if kind == "device":
        assert stat.S_ISCHR(os.stat(world["device"]).st_mode)  # never replaced by -o


CONTENT = [("show CERT", k) for k in CONTENT_KINDS] + [("report CERT", k) for k in CONTENT_KINDS] + \
          [("sigmacert-verify CERT", k) for k in [*CONTENT_KINDS, "huge-cert"]] + \
          [("train --certificate", k) for k in CONTENT_KINDS]


@pytest.mark.parametrize("name,kind", CONTENT, ids=[f"{n}:{k}" for n, k in CONTENT])
def test_a_hostile_certificate_is_refused_without_traceback_or_megabytes(world, name, kind):
    """show refuses in one line (exit 2); report and the verifier REJECT (exit 1, the verdict on stdout,
    at most one line on stderr; sigmacert-verify rejects an envelope over 4 MiB, envelope-too-large);
    train refuses to train. The reason stays short (< 5000 characters)."""
    build, _ = COMMANDS[name]
    out = run(build(world, world[kind]))
    refused(out, one_line=name in ("show CERT", "train --certificate"))
    if name in ("report CERT", "sigmacert-verify CERT"):
        assert out.stdout.startswith("REJECT"), out.stdout[:300]


def test_report_refuses_to_replace_a_device_as_output(world):
    out = run([*SIGMACERT, "report", world["cert"], "--key", world["pub"], "--quiet", "-o", world["device"]])
    refused(out)
    assert "not a regular file" in out.stderr
    assert stat.S_ISCHR(os.stat(world["device"]).st_mode)


def test_a_group_readable_private_key_is_refused(world, tmp_path):
    key = tmp_path / "loose.pem"
    key.write_bytes(open(world["priv"], "rb").read())
    os.chmod(key, 0o640)
    for argv in (certify_argv(world, key=str(key)),
                 [*SIGMACERT, "serve", "--port", str(free_port()), "--db", str(tmp_path / "s.db"), "--key", str(key)]):
        out = run(argv)
        refused(out)
        assert "accessible by group or others" in out.stderr and "chmod 600" in out.stderr
    assert not (tmp_path / "s.db").exists()
