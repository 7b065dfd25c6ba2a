"""Bearer tokens: printed once at creation, only their SHA-256 hashes are stored.

Tokens file: one line per token, `<sha256 hex of the token> <name>`; `#` starts a
comment. The server re-reads the file when it changes, so tokens can be added or
revoked (delete the line) without a restart.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
import time

from certifier.errors import SigmacertError

PREFIX = "sct_"
_NAME = re.compile(r"[A-Za-z0-9._@+-]{1,64}")
_LINE = re.compile(r"([0-9a-f]{64})\s+(\S+)\s*")


class TokenFileError(SigmacertError, ValueError):
    """A malformed tokens file or name (one-line message)."""


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def create_token(path: str, name: str | None = None) -> str:
    """Append the hash of a fresh random token (and its name) to `path`; return the token."""
    name = name or time.strftime("token-%Y%m%dT%H%M%SZ", time.gmtime())
    if not _NAME.fullmatch(name):
        raise TokenFileError("token name must be 1-64 characters of A-Z a-z 0-9 . _ @ + -")
    if os.path.exists(path):
        load_hashes(path)  # refuse to append to a file we could not read back
    token = PREFIX + secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, f"{digest(token).hex()} {name}\n".encode())
    finally:
        os.close(fd)
    return token


def load_hashes(path: str) -> list[tuple[bytes, str]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = _LINE.fullmatch(line)
            if not m:
                raise TokenFileError(f"{path}:{n}: expected '<64 hex sha256> <name>'")
            out.append((bytes.fromhex(m.group(1)), m.group(2)))
    return out


class Tokens:
    """The accepted token hashes, reloaded when the file changes (checked at most once a second)."""

    def __init__(self, path: str | None):
        self.path = path
        self._entries: list[tuple[bytes, str]] = []
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
            try:
                self._entries = load_hashes(self.path) if stamp is not None else []
                self._stamp = stamp
            except (OSError, UnicodeDecodeError, TokenFileError):
                pass  # keep the last good set while the file is being edited

    @property
    def configured(self) -> bool:
        self._refresh()
        return bool(self._entries)

    def check(self, authorization: str | None) -> str | None:
        """The token's name if `Authorization: Bearer <token>` matches a stored hash, else None."""
        self._refresh()
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > 512:
            return None
        d = digest(token)
        found = None
        for h, name in self._entries:  # compare against every entry: no early exit
            if hmac.compare_digest(h, d):
                found = name
        return found
