"""The signer's spool: each signature is written down, durably, before anyone hears of it.

    put(spool, job, entry)   # atomic and fsynced: `entry` is on disk whole, or not at all
    get(spool, job)          # the entry, or None (none, unreadable, or for another request)
    drop(spool, job)

A job is signed once. The signer (service.signer) spools the envelope it made for a job before it prints
its audit line and answers its worker; a worker that claims a job first looks here, and records a spooled
envelope instead of computing and signing the job again. So a server killed between the signature and the
database write (the job is re-queued when it restarts) costs no second, different certificate for the
same job: the re-run records the first. An entry names its request by its key (service.store.request_key);
one for another request under the same id (a database replaced under the server) is ignored. The worker
drops the entry once the job's outcome is recorded; the pool drops the entries of finished jobs at start-up.
"""
from __future__ import annotations

import json
import os
import re

from service.store import request_key

_JOB = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_ENTRY = 16 << 20   # bytes: an entry is an envelope and a few fields


def spool_of(db: str) -> str:
    """The spool directory that belongs to the database at `db`."""
    return db + ".signed"


def job_ok(job) -> bool:
    """Whether `job` can name a spool entry (the store's ids do: "c" and hex digits)."""
    return isinstance(job, str) and _JOB.fullmatch(job) is not None


def _path(spool: str, job: str) -> str:
    if not job_ok(job):
        raise ValueError(f"not a job id: {job!r}")
    return os.path.join(spool, job + ".json")


def put(spool: str, job: str, entry: dict) -> None:
    """Write `entry` for `job` atomically (temporary file, fsync, rename, fsync of the directory).
    OSError when the disk refuses: nothing is then spooled."""
    os.makedirs(spool, mode=0o700, exist_ok=True)
    final = _path(spool, job)
    tmp = f"{final}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(entry, sort_keys=True).encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dfd = os.open(spool, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def get(spool: str, job: str, req: dict | None = None) -> dict | None:
    """The entry spooled for `job` (for request `req`, when given), or None."""
    try:
        path = _path(spool, job)
        if os.path.getsize(path) > MAX_ENTRY:
            return None
        with open(path, "rb") as f:
            entry = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("envelope"), str):
        return None
    if req is not None and entry.get("request") != request_key(req):
        return None
    return entry


def drop(spool: str, job: str) -> None:
    try:
        os.unlink(_path(spool, job))
    except (OSError, ValueError):
        pass


def jobs(spool: str) -> list[str]:
    """The ids of the jobs with a spooled entry."""
    try:
        names = os.listdir(spool)
    except OSError:
        return []
    return [n[:-5] for n in names if n.endswith(".json") and _JOB.fullmatch(n[:-5])]
