"""Files written atomically: a synced temporary file in the same directory, then a rename, so a
reader (or a run interrupted at any point) sees the old file or the new one, never a torn one.

One overwrite rule for every file the face writes (certificates, reports, keys): an existing
file is kept and the write refused, unless the caller forces it (`--force`, `force=True`)."""
from __future__ import annotations

import os
import tempfile

from certifier.errors import ParameterError

TMP_PREFIX = ".sigmacert-tmp-"


def refuse_existing(path: str, force: bool, how: str = "--force") -> None:
    """ParameterError when `path` exists and the write is not forced (check before long work)."""
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
