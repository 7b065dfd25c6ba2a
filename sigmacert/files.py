"""Files the face reads and writes.

Reading: every file named on the command line (a certificate, a key, a subject, a tokens file) is
opened non-blocking (a FIFO cannot hang the open), checked to be a regular file (a device such as
/dev/zero, a directory or a socket could be read forever) of bounded size, and refused otherwise in
one line (`ParameterError`). Writing: atomically, through a synced temporary file in the same
directory and a rename, so a reader (or a run interrupted at any point) sees the old file or the new
one, never a torn one; an existing output path that is not a regular file is refused, never replaced.
One overwrite rule for every file the face writes (certificates, reports, keys): an existing file is
kept and the write refused, unless the caller forces it (`--force`, `force=True`).
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile

from certifier.errors import ParameterError

TMP_PREFIX = ".sigmacert-tmp-"
MAX_CERTIFICATE = 4 * 1024 * 1024  # bytes of a certificate file (the verifier's own limit)
MAX_SMALL = 64 * 1024              # bytes of a key file or a tokens file
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def open_regular(path, what: str) -> tuple[int, os.stat_result]:
    """(fd, stat) of `path` opened read-only without blocking; ParameterError unless a regular file."""
    name = os.fspath(path)
    try:
        fd = os.open(name, _FLAGS)
    except OSError as err:
        raise ParameterError(f"cannot read {what} {name}: {err.strerror or err}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise ParameterError(f"{what} {name} is {kind}")
    os.set_blocking(fd, True)
    return fd, st


def read_regular(path, what: str, limit: int = MAX_SMALL) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them (ParameterError beyond)."""
    fd, st = open_regular(path, what)
    try:
        if st.st_size > limit:
            raise ParameterError(f"{what} {os.fspath(path)} is larger than {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise ParameterError(f"cannot read {what} {os.fspath(path)}: {err.strerror or err}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while being read
        raise ParameterError(f"{what} {os.fspath(path)} is larger than {limit} bytes")
    return data


def sha256_regular(path, what: str = "subject file") -> str:
    """SHA-256 (hex) of a regular file of any size, reading no more than the size it had when opened."""
    fd, st = open_regular(path, what)
    h, left = hashlib.sha256(), st.st_size
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    break
                h.update(chunk)
                left -= len(chunk)
    except OSError as err:
        raise ParameterError(f"cannot read {what} {os.fspath(path)}: {err.strerror or err}") from None
    finally:
        os.close(fd)
    return h.hexdigest()


def check_output(path) -> None:
    """ParameterError when `path` exists and is not a regular file (a device, a FIFO, a directory)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise ParameterError(f"cannot write {os.fspath(path)}: {err.strerror or err}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ParameterError(f"refusing to write {os.fspath(path)}: it exists and is not a regular file")


def refuse_existing(path: str, force: bool, how: str = "--force") -> None:
    """ParameterError when `path` exists and the write is not forced (check before long work), or
    when it exists and is not a regular file (never replaced, forced or not)."""
    check_output(path)
    if not force and os.path.lexists(path):
        raise ParameterError(f"{path} exists; refusing to overwrite it ({how} replaces it)")


def write_atomic(path: str, data: bytes, *, force: bool = True, how: str = "--force") -> None:
    """Write `data` to `path` (mode 0644) through a synced temporary file and os.replace; with
    force=False an existing `path` is never replaced (hard link, which fails if it exists)."""
    refuse_existing(path, force, how)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        if force:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # atomic and never clobbers: a file that appeared meanwhile is kept
            except FileExistsError:
                raise ParameterError(f"{path} exists; refusing to overwrite it ({how} replaces it)") from None
            os.unlink(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
