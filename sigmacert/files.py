"""Files written atomically: a synced temporary file in the same directory, then a rename, so a
reader (or a run interrupted at any point) sees the old file or the new one, never a torn one."""
from __future__ import annotations

import os
import tempfile

TMP_PREFIX = ".sigmacert-tmp-"


def write_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` (mode 0644) through a synced temporary file and os.replace."""
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
