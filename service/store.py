"""The archive and job queue: one SQLite file in WAL mode (docs/service.md).

Jobs move queued -> running -> done | failed, or -> cancelled. A worker claims a
job with a lease (owner, expiry) inside one IMMEDIATE transaction and renews it
while it computes; every write a worker makes is fenced on (id, owner, status =
running), so a worker that lost its job (cancelled, or re-queued after a crash)
can never overwrite it. A server that starts re-queues every `running` job: the
file lock of the server (service.app) guarantees the previous owner is dead.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
import urllib.parse
from dataclasses import dataclass

from certifier.door import canonical_json
from certifier.errors import RefusedError
from service.job import request_run

MAX_ATTEMPTS = 5  # a job whose worker died this many times fails instead of looping forever
ACTIVE = ("queued", "running")
RETRYABLE = ("error", "crashed", "rejected", "limit")  # error kinds an identical request may queue again
# (at most max_resubmits times: a limit hit on a loaded machine may pass; a bound over the target is
# the answer, computing it again would give it again)


class RefusedSubmissionError(RefusedError):
    """A submission the store does not queue: `status` (409, 429) and a one-line reason."""

    def __init__(self, status: int, reason: str, retry_after: int | None = None):
        super().__init__(reason)
        self.status, self.reason, self.retry_after = status, reason, retry_after

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    request_key TEXT NOT NULL UNIQUE,
    request TEXT NOT NULL,
    steps INTEGER NOT NULL, epochs INTEGER NOT NULL, target TEXT NOT NULL, sigma TEXT,
    status TEXT NOT NULL,
    stage TEXT, percent REAL, elapsed REAL,
    reason TEXT, error_kind TEXT, bound TEXT, envelope TEXT, keyid TEXT,
    requested_by TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, started_at REAL, finished_at REAL,
    lease_owner TEXT, lease_expires REAL, attempts INTEGER NOT NULL DEFAULT 0,
    team TEXT, resubmits INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs(status, created_at);
CREATE INDEX IF NOT EXISTS jobs_cell ON jobs(steps, epochs, target);
CREATE TABLE IF NOT EXISTS keys (
    keyid TEXT PRIMARY KEY, public_pem TEXT NOT NULL, added_at REAL NOT NULL, retired_at REAL
);
CREATE TABLE IF NOT EXISTS sigma_cache (
    cell TEXT PRIMARY KEY, result TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS report_cache (
    report TEXT PRIMARY KEY, result TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS health (id INTEGER PRIMARY KEY CHECK (id = 1), checked_at REAL NOT NULL);
"""
# columns added after the first release: (name, definition), added to an older database at open
MIGRATIONS = (("team", "TEXT"), ("resubmits", "INTEGER NOT NULL DEFAULT 0"))


@dataclass(frozen=True)
class StagesFilter:
    """The archive listing's `stages=` filter as SQL: WHERE clauses on the request's stage list, their parameters."""
    clauses: tuple[str, ...] = ()
    args: tuple = ()

    @classmethod
    def runs(cls, stage_list: list) -> StagesFilter:
        """The runs in exactly these stages, in this order (a canonical stage list [{"steps", "epochs"}, ...])."""
        return cls(("json_extract(request, '$.stages')=?",), (canonical_json(stage_list).decode(),))


EVERY_RUN = StagesFilter()
IN_STAGES = StagesFilter(("json_extract(request, '$.stages') IS NOT NULL",))     # every run in stages
NOT_IN_STAGES = StagesFilter(("json_extract(request, '$.stages') IS NULL",))     # every block

_CACHES = {"sigma_cache": "cell", "report_cache": "report"}  # table -> its key column
_LIST_COLUMNS = ("id, status, steps, epochs, target, sigma, bound, keyid, reason, request, "
                 "requested_by, team, created_at, finished_at")


def _steps_column(req: dict) -> int:
    """The jobs table's steps M: a run in stages has none (steps is NOT NULL in older archives: 0)."""
    return request_run(req).pick(lambda steps, epochs, scheme: steps, lambda stages: 0)


def request_key(req: dict) -> str:
    """Idempotency key: SHA-256 of the canonical JSON of the normalised request."""
    return hashlib.sha256(canonical_json(req)).hexdigest()


class Store:
    """One connection per thread on the same file; autocommit, explicit IMMEDIATE transactions."""

    def __init__(self, path: str, create: bool = True):
        """`create`: make the file (mode 0600) if missing; a worker opens only an existing archive."""
        self.path = path
        self._local = threading.local()
        self._inode = None
        if path != ":memory:":  # the archive is readable by its owner only (SQLite gives -wal, -shm its mode)
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if create else 0), 0o600)
            try:
                os.fchmod(fd, 0o600)
                self._inode = os.fstat(fd).st_ino
            finally:
                os.close(fd)
        c = self._conn()
        c.executescript(SCHEMA)
        have = {r[1] for r in c.execute("PRAGMA table_info(jobs)")}
        for name, decl in MIGRATIONS:
            if name not in have:
                c.execute(f"ALTER TABLE jobs ADD COLUMN {name} {decl}")
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.chmod(path + suffix, 0o600)

    # ------------------------------------------------------------------ plumbing
    def _conn(self) -> sqlite3.Connection:
        c = getattr(self._local, "conn", None)
        if c is None:
            target = self.path if self.path == ":memory:" else f"file:{urllib.parse.quote(self.path)}?mode=rw"
            # mode=rw: a removed archive is an error, never silently a new empty one
            c = sqlite3.connect(target, timeout=30.0, isolation_level=None, check_same_thread=False, uri=True)
            c.row_factory = sqlite3.Row
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: committed data survives a process kill
            c.execute("PRAGMA busy_timeout=30000")
            self._local.conn = c
        return c

    class _Tx:
        def __init__(self, conn):
            self.conn = conn

        def __enter__(self):
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, et, ev, tb):
            self.conn.execute("COMMIT" if et is None else "ROLLBACK")
            return False

    def _tx(self):
        self._same_file()
        return Store._Tx(self._conn())

    def _same_file(self) -> None:
        """OSError when the archive's file was removed or replaced while open (its writes would be lost)."""
        if self._inode is not None and os.stat(self.path).st_ino != self._inode:
            raise OSError(f"{self.path} was replaced while the server ran")

    def close(self) -> None:
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None

    # ------------------------------------------------------------------ jobs
    def find(self, req: dict) -> dict | None:
        """The job of this (normalised) request, if any."""
        row = self._conn().execute("SELECT * FROM jobs WHERE request_key=?", (request_key(req),)).fetchone()
        return dict(row) if row else None

    def submit(self, req: dict, requested_by: str | None, team: str | None = None, *, admin: bool = False,
               max_queued: int | None = None, max_per_team: int | None = None,
               max_resubmits: int = 3) -> tuple[dict, bool]:
        """(job, created). Identical requests share one job, owned by the team that first submitted it.

        A cancelled job, or one that failed for a retryable reason (RETRYABLE), is queued again by its
        owner's team (or an admin), a failed one at most `max_resubmits` times; another team gets
        RefusedSubmissionError(409). A new or re-queued job beyond `max_queued` active jobs, or `max_per_team` of
        this team's, is RefusedSubmissionError(429)."""
        key, now, team = request_key(req), time.time(), team or requested_by
        with self._tx() as c:
            row = c.execute("SELECT * FROM jobs WHERE request_key=?", (key,)).fetchone()
            requeue = row is not None and (row["status"] == "cancelled" or (
                row["status"] == "failed" and row["error_kind"] in RETRYABLE))
            if row is not None and not requeue:
                return dict(row), False
            if requeue:
                owner = row["team"] or row["requested_by"]
                if owner != team and not admin:
                    raise RefusedSubmissionError(
                        409, f"job {row['id']} is {row['status']} and belongs to another team; only "
                        "its team or an admin can submit it again")
                if row["status"] == "failed" and row["resubmits"] >= max_resubmits:
                    return dict(row), False  # the archived failure: not retried forever
            self._admit(c, team, max_queued, max_per_team)
            if requeue:
                c.execute("UPDATE jobs SET status='queued', stage=NULL, percent=NULL, elapsed=NULL, "
                          "reason=NULL, error_kind=NULL, bound=NULL, lease_owner=NULL, lease_expires=NULL, "
                          "attempts=0, started_at=NULL, finished_at=NULL, updated_at=?, created_at=?, "
                          "requested_by=?, resubmits=resubmits+? WHERE id=?",
                          (now, now, requested_by, int(row["status"] == "failed"), row["id"]))
                return dict(c.execute("SELECT * FROM jobs WHERE id=?", (row["id"],)).fetchone()), True
            jid = "c" + secrets.token_hex(10)
            c.execute("INSERT INTO jobs (id, request_key, request, steps, epochs, target, sigma, status, "
                      "requested_by, team, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                      (jid, key, canonical_json(req).decode(), _steps_column(req), req["epochs"], req["target"],
                       req.get("sigma"), "queued", requested_by, team, now, now))
            return dict(c.execute("SELECT * FROM jobs WHERE id=?", (jid,)).fetchone()), True

    @staticmethod
    def _admit(c, team, max_queued, max_per_team) -> None:
        active = "status IN ('queued', 'running')"
        n = c.execute(f"SELECT COUNT(*) FROM jobs WHERE {active}").fetchone()[0]
        if max_queued is not None and n >= max_queued:
            raise RefusedSubmissionError(
                429, f"the queue is full ({max_queued} jobs queued or running); retry later", 60)
        if max_per_team is not None and team is not None and c.execute(
                f"SELECT COUNT(*) FROM jobs WHERE {active} AND COALESCE(team, requested_by)=?",
                (team,)).fetchone()[0] >= max_per_team:
            raise RefusedSubmissionError(
                429, f"team {team} has {max_per_team} jobs queued or running, its quota; retry when "
                "one has finished", 60)

    def ping(self) -> None:
        """A write in a transaction: raises sqlite3.Error (or OSError) when the archive cannot be written,
        or when its file is no longer the one opened (removed or replaced: writes would be lost)."""
        with self._tx() as c:
            c.execute("INSERT OR REPLACE INTO health (id, checked_at) VALUES (1, ?)", (time.time(),))

    def get(self, jid: str) -> dict | None:
        row = self._conn().execute("SELECT * FROM jobs WHERE id=?", (jid,)).fetchone()
        return dict(row) if row else None

    def listing(self, *, steps=None, epochs=None, target=None, status=None, kind=None,
                stages: StagesFilter = EVERY_RUN, limit=50, offset=0, audit=None):
        """Jobs newest first and their total; a run in stages has steps 0 (matches no `steps`), its total epochs."""
        where, args = [], []
        if audit is not None:                 # audits (their request carries `audit`) or certificates only
            where.append("json_extract(request, '$.audit') IS " + ("NOT NULL" if audit else "NULL"))
        for col, val in (("steps", steps), ("epochs", epochs), ("target", target), ("status", status),
                         ("COALESCE(json_extract(request, '$.kind.name'), 'tv')", kind)):  # tv requests name none
            if val is not None:
                where.append(f"{col}=?")
                args.append(val)
        where.extend(stages.clauses)
        args.extend(stages.args)
        w = (" WHERE " + " AND ".join(where)) if where else ""
        c = self._conn()
        total = c.execute(f"SELECT COUNT(*) FROM jobs{w}", args).fetchone()[0]
        rows = c.execute(f"SELECT {_LIST_COLUMNS} FROM jobs{w} ORDER BY created_at DESC, rowid DESC "
                         "LIMIT ? OFFSET ?", [*args, limit, offset]).fetchall()
        return [dict(r) for r in rows], total

    def cancel(self, jid: str) -> tuple[bool, str] | None:
        """Cancel a queued or running job: (cancelled now?, status afterwards); None: no such job."""
        now = time.time()
        with self._tx() as c:
            row = c.execute("SELECT status FROM jobs WHERE id=?", (jid,)).fetchone()
            if row is None:
                return None
            if row["status"] in ACTIVE:
                c.execute("UPDATE jobs SET status='cancelled', reason='cancelled on request', "
                          "error_kind='cancelled', finished_at=?, updated_at=?, lease_expires=NULL "
                          "WHERE id=?", (now, now, jid))
                return True, "cancelled"
            return False, row["status"]

    def claim(self, owner: str, lease: float) -> dict | None:
        """Take the oldest queued job (or a running one whose lease expired)."""
        now = time.time()
        with self._tx() as c:
            while True:
                row = c.execute("SELECT id, attempts FROM jobs WHERE status='queued' OR "
                                "(status='running' AND lease_expires < ?) ORDER BY created_at, rowid LIMIT 1",
                                (now,)).fetchone()
                if row is None:
                    return None
                if row["attempts"] >= MAX_ATTEMPTS:
                    c.execute("UPDATE jobs SET status='failed', error_kind='crashed', reason=?, finished_at=?, "
                              "updated_at=?, lease_owner=NULL, lease_expires=NULL WHERE id=?",
                              (f"gave up after {row['attempts']} attempts: the worker stopped each time",
                               now, now, row["id"]))
                    continue
                c.execute("UPDATE jobs SET status='running', lease_owner=?, lease_expires=?, "
                          "attempts=attempts+1, started_at=COALESCE(started_at, ?), stage='starting', "
                          "percent=0, elapsed=0, updated_at=? WHERE id=?",
                          (owner, now + lease, now, now, row["id"]))
                return dict(c.execute("SELECT * FROM jobs WHERE id=?", (row["id"],)).fetchone())

    def heartbeat(self, jid: str, owner: str, lease: float, stage=None, percent=None, elapsed=None) -> bool:
        """Renew the lease and record progress; False when the job is no longer ours."""
        now = time.time()
        cur = self._conn().execute(
            "UPDATE jobs SET lease_expires=?, stage=COALESCE(?, stage), percent=COALESCE(?, percent), "
            "elapsed=COALESCE(?, elapsed), updated_at=? WHERE id=? AND lease_owner=? AND status='running'",
            (now + lease, stage, percent, elapsed, now, jid, owner))
        return cur.rowcount == 1

    def finish(self, jid: str, owner: str, status: str, *, reason=None, error_kind=None, bound=None,
               envelope=None, keyid=None, sigma=None, elapsed=None) -> bool:
        """Record the outcome, fenced on our lease; False when the job was taken from us."""
        now = time.time()
        cur = self._conn().execute(
            "UPDATE jobs SET status=?, reason=?, error_kind=?, bound=?, envelope=?, keyid=?, "
            "sigma=COALESCE(?, sigma), elapsed=COALESCE(?, elapsed), stage=?, percent=?, finished_at=?, "
            "updated_at=?, lease_expires=NULL WHERE id=? AND lease_owner=? AND status='running'",
            (status, reason, error_kind, bound, envelope, keyid, sigma, elapsed,
             "done" if status == "done" else None, 100.0 if status == "done" else None, now, now, jid, owner))
        return cur.rowcount == 1

    def requeue(self, owner: str | None = None) -> int:
        """Put running jobs back in the queue: all of them (server start) or one owner's."""
        now = time.time()
        q = ("UPDATE jobs SET status='queued', lease_owner=NULL, lease_expires=NULL, stage=NULL, "
             "percent=NULL, updated_at=? WHERE status='running'")
        args: tuple = (now,)
        if owner is not None:
            q += " AND lease_owner=?"
            args = (now, owner)
        with self._tx() as c:
            return c.execute(q, args).rowcount

    def counts(self) -> dict:
        rows = self._conn().execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall()
        return {r[0]: r[1] for r in rows}

    # ------------------------------------------------------------------ keys
    def set_active_key(self, keyid: str, public_pem: str) -> None:
        """The signing key of this run; every other recorded key becomes retired."""
        now = time.time()
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO keys (keyid, public_pem, added_at) VALUES (?,?,?)",
                      (keyid, public_pem, now))
            c.execute("UPDATE keys SET retired_at=NULL WHERE keyid=?", (keyid,))
            c.execute("UPDATE keys SET retired_at=? WHERE keyid<>? AND retired_at IS NULL", (now, keyid))

    def add_retired_key(self, keyid: str, public_pem: str) -> None:
        now = time.time()
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO keys (keyid, public_pem, added_at, retired_at) VALUES (?,?,?,?)",
                      (keyid, public_pem, now, now))

    def keys(self) -> list[dict]:
        rows = self._conn().execute("SELECT * FROM keys ORDER BY (retired_at IS NOT NULL), added_at DESC")
        return [dict(r) for r in rows.fetchall()]

    # ------------------------------------------------------------------ caches (exact sigma, reports)
    def _cached(self, table: str, key: str) -> dict | None:
        row = self._conn().execute(f"SELECT result FROM {table} WHERE {_CACHES[table]}=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def _cache(self, table: str, key: str, result: dict) -> None:
        self._conn().execute(f"INSERT OR REPLACE INTO {table} ({_CACHES[table]}, result, created_at) VALUES (?,?,?)",
                             (key, json.dumps(result), time.time()))

    def sigma_get(self, cell: str) -> dict | None:
        return self._cached("sigma_cache", cell)

    def sigma_put(self, cell: str, result: dict) -> None:
        self._cache("sigma_cache", cell, result)

    def report_get(self, report: str) -> dict | None:
        return self._cached("report_cache", report)

    def report_put(self, report: str, result: dict) -> None:
        self._cache("report_cache", report, result)

    def integrity(self) -> str:
        return self._conn().execute("PRAGMA integrity_check").fetchone()[0]
