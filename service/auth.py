"""Bearer tokens: printed once at creation, only their SHA-256 hashes are stored.

Tokens file: one line per token, `<sha256 hex of the token> <name> [team=<team>] [role=admin]`;
`#` starts a comment. A token belongs to a team (its name when no team is given): the team owns the
jobs its tokens submit; an admin token may cancel any job. The server re-reads the file when it
changes, so tokens can be added or revoked (delete the line) without a restart. A file that cannot
be read or parsed fails closed: no token is accepted until it is fixed, and the server says why in
its log.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
import sys
import threading
import time
from dataclasses import dataclass

from certifier.errors import SigmacertError

PREFIX = "sct_"
_NAME = re.compile(r"[A-Za-z0-9._@+-]{1,64}")
_LINE = re.compile(r"([0-9a-f]{64})\s+([A-Za-z0-9._@+-]{1,64})((?:\s+(?:team=[A-Za-z0-9._@+-]{1,64}|role=admin))*)\s*")
MAX_FILE = 1 << 20  # bytes of a tokens file


@dataclass(frozen=True)
class Caller:
    """Who presented a valid token: its name, its team (the owner of the jobs it submits), admin or not."""
    name: str
    team: str
    admin: bool = False


class TokenFileError(SigmacertError, ValueError):
    """A malformed tokens file or name (one-line message)."""


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def create_token(path: str, name: str | None = None, team: str | None = None, admin: bool = False) -> str:
    """Append the hash of a fresh random token (its name, team, role) to `path`; return the token."""
    name = name or time.strftime("token-%Y%m%dT%H%M%SZ", time.gmtime())
    for what, v in (("token name", name), ("team", team)):
        if v is not None and not _NAME.fullmatch(v):
            raise TokenFileError(f"{what} must be 1-64 characters of A-Z a-z 0-9 . _ @ + -")
    if os.path.lexists(path):
        load_hashes(path)  # refuse to append to a file we could not read back (or not a regular file)
    token = PREFIX + secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TokenFileError(f"{path} is not a regular file")
        extra = (f" team={team}" if team else "") + (" role=admin" if admin else "")
        os.write(fd, f"{digest(token).hex()} {name}{extra}\n".encode())
    finally:
        os.close(fd)
    return token


def _read(path: str) -> str:
    """The tokens file's text: opened without blocking, a regular file of at most MAX_FILE bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE:
            raise TokenFileError(f"{path} is not a regular file of at most {MAX_FILE} bytes")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE:
        raise TokenFileError(f"{path} is larger than {MAX_FILE} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TokenFileError(f"{path} is not UTF-8 text") from None


def load_hashes(path: str) -> list[tuple[bytes, Caller]]:
    """(sha256, caller) per line; TokenFileError (one line) for any malformed line, OSError if unreadable."""
    out = []
    for n, line in enumerate(_read(path).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.fullmatch(line)
        if not m:
            raise TokenFileError(f"{path}:{n}: expected '<64 hex sha256> <name> [team=<team>] [role=admin]'")
        opts = m.group(3).split()
        team = next((o[5:] for o in opts if o.startswith("team=")), m.group(2))
        out.append((bytes.fromhex(m.group(1)), Caller(m.group(2), team, "role=admin" in opts)))
    return out


class Tokens:
    """The accepted token hashes, reloaded when the file changes (checked at most once a second)."""

    def __init__(self, path: str | None, log=None):
        self.path = path
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.problem: str | None = None  # why no token is accepted now (a bad file), for /healthz
        self._entries: list[tuple[bytes, Caller]] = []
        self._stamp = None
        self._checked = 0.0
        self._lock = threading.Lock()
        if path is not None:
            self._entries = load_hashes(path)  # fail at start-up on a bad file
            self._stamp = self._file_stamp()

    def _file_stamp(self):
        try:
            st = os.stat(self.path)
            return (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            return None

    def _refresh(self) -> None:
        now = time.monotonic()
        if self.path is None or now - self._checked < 1.0:
            return
        with self._lock:
            self._checked = now
            stamp = self._file_stamp()
            if stamp == self._stamp:
                return
            self._stamp = stamp
            try:
                if stamp is None:
                    raise TokenFileError(f"{self.path} is missing")
                self._entries = load_hashes(self.path)
                if self.problem is not None:
                    self.log(f"sigmacert serve: tokens file {self.path} readable again: "
                             f"{len(self._entries)} token(s)")
                self.problem = None
            except (OSError, TokenFileError) as err:  # fail closed: a revocation must never be missed
                self._entries = []
                self.problem = str(err) if isinstance(err, TokenFileError) else \
                    f"cannot read {self.path}: {err.strerror or err}"
                self.log(f"sigmacert serve: tokens file refused, no token is accepted until it is fixed: "
                         f"{self.problem}")

    @property
    def configured(self) -> bool:
        self._refresh()
        return bool(self._entries)

    def check(self, authorization: str | None) -> Caller | None:
        """The token's caller if `Authorization: Bearer <token>` matches a stored hash, else None."""
        self._refresh()
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > 512:
            return None
        d = digest(token)
        found = None
        for h, who in self._entries:  # compare against every entry: no early exit
            if hmac.compare_digest(h, d):
                found = who
        return found
