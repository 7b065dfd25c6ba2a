"""The service's append-only certificate log: every issued certificate is a leaf of an RFC 9162 Merkle tree
(docs/release.md "The log"; docs/service.md).

Leaf N is the certificate file of the N-th job found done (in order of finishing), exactly the bytes
GET /v1/certificates/{id}/envelope returns. The table log_leaves keeps only the order (index -> job id);
the tree is recomputed from the archived certificates whenever the server starts, so a certificate replaced
or removed from the archive changes every later root and the consistency proof from a head published
before does not verify. Heads (size, root, time) are signed by the signer process (service.signer, the only
process that reads the key) when the log grew; the log catches up with the archive at every log request.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time

from certifier.door import Tree, consistency_bundle, leaf_hash, proof_bundle, read_head
from service.errors import ApiError
from service.sandbox import Budget, run
from service.views import envelope_file

SCHEMA = """
CREATE TABLE IF NOT EXISTS log_leaves (idx INTEGER PRIMARY KEY, job_id TEXT NOT NULL UNIQUE, added_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS log_heads (size INTEGER PRIMARY KEY, envelope TEXT NOT NULL);
"""


def sign_tree_head(key_path: str, keyid: str, size: int, root: bytes) -> dict:
    """The signed head, from the signer process (the one small place a head is signed; the key never
    enters this process)."""
    out = run("head", {"key": key_path, "keyid": keyid, "size": size, "root": root.hex()}, Budget(1 << 30, 60.0),
              entry="service.signer")
    if out.result is None or "head" not in out.result:
        why = out.reason if out.result is None else out.result.get("refused")
        raise ApiError(503, f"the log's tree head could not be signed: {why}")
    return out.result["head"]


class CertificateLog:
    def __init__(self, db: str, key_path: str, keyid: str):
        self.db, self.key_path, self.keyid = db, key_path, keyid
        self.lock = threading.Lock()
        self.conn = sqlite3.connect(db, check_same_thread=False, timeout=30.0)
        self.conn.executescript(SCHEMA)
        self.ids: list[str] = []
        self.entries: list[bytes] = []
        self.tree = Tree()
        with self.lock:
            for (jid,) in self.conn.execute("SELECT job_id FROM log_leaves ORDER BY idx").fetchall():
                self._add(jid)

    def _certificate(self, jid: str) -> bytes:
        """The archived certificate file of a job; b"" when it is gone (the root then shows it)."""
        row = self.conn.execute("SELECT envelope FROM jobs WHERE id=? AND status='done'", (jid,)).fetchone()
        return b"" if row is None or row[0] is None else envelope_file({"envelope": row[0]})

    def _add(self, jid: str) -> None:
        self.ids.append(jid)
        self.entries.append(self._certificate(jid))
        self.tree.append(leaf_hash(self.entries[-1]))

    def sync(self) -> dict | None:
        """Append the jobs done since, sign a head if the log grew; the latest signed head (None: empty log)."""
        with self.lock:
            with self.conn:
                new = self.conn.execute(
                    "SELECT id FROM jobs WHERE status='done' AND envelope IS NOT NULL AND id NOT IN "
                    "(SELECT job_id FROM log_leaves) ORDER BY finished_at, id").fetchall()
                for (jid,) in new:
                    self.conn.execute("INSERT INTO log_leaves(idx, job_id, added_at) VALUES (?, ?, ?)",
                                      (len(self.ids), jid, time.time()))
                    self._add(jid)
            row = self.conn.execute("SELECT size, envelope FROM log_heads ORDER BY size DESC LIMIT 1").fetchone()
            if not self.ids:
                return None
            if row is None or row[0] < len(self.ids):
                head = sign_tree_head(self.key_path, self.keyid, len(self.ids), self.tree.root())
                with self.conn:
                    self.conn.execute("INSERT OR REPLACE INTO log_heads(size, envelope) VALUES (?, ?)",
                                      (len(self.ids), json.dumps(head, sort_keys=True)))
                return head
            return json.loads(row[1])

    def head(self) -> dict:
        head = self.sync()
        if head is None:
            raise ApiError(404, "the log is empty: no certificate has been issued yet")
        return head

    def proof(self, jid: str) -> dict:
        head = self.head()
        with self.lock:
            if jid not in self.ids:
                raise ApiError(404, f"certificate {jid[:64]!r} is not in the log (not issued, or not done)")
            i = self.ids.index(jid)
            return dict(proof_bundle(self.entries[i], i, self.tree, head), job=jid)

    def stored_head(self, size: int) -> dict | None:
        row = self.conn.execute("SELECT envelope FROM log_heads WHERE size=?", (size,)).fetchone()
        return None if row is None else json.loads(row[0])

    def consistency(self, old: int, new: int | None) -> dict:
        latest = self.head()
        new = read_head(latest)["size"] if new is None else new
        with self.lock:
            if not 0 < old <= new <= len(self.ids):
                raise ApiError(422, f"from and to must satisfy 0 < from <= to <= {len(self.ids)} (the log's size)")
            h1, h2 = self.stored_head(old), self.stored_head(new)
            if h1 is None or h2 is None:
                return {"format": "sigmacert-log-consistency/v1", "from": old, "to": new, "old_head": h1,
                        "new_head": h2, "proof": [h.hex() for h in self.tree.consistency(old, new)]}
            return consistency_bundle(self.tree, h1, h2)

    def close(self) -> None:
        self.conn.close()

