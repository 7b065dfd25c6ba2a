"""Audit reports of archived certificates, for the page's detail view (docs/service.md).

The report is the one `sigmacert report` writes (the independent verifier's verdict, the claim, the
certified interval and rows, three plots): computed once per certificate and issuer key set in a
limited child process (service.sandbox, the module `entry` that `sigmacert serve` names), then
kept in SQLite. A request waits up to `wait` seconds for a new report, then is told it is pending;
the computation goes on. A report that fails (a limit) is remembered for `error_ttl` seconds.
"""
from __future__ import annotations

import asyncio
import base64
import concurrent.futures as cf
import hashlib
import threading
import time

from service.compute import Lane
from service.sandbox import Budget


def report_key(envelope: bytes, pems: list[str]) -> str:
    """SHA-256 over the certificate bytes and the keys it is verified against (the verdict depends on both)."""
    h = hashlib.sha256(envelope)
    for pem in sorted(pems):
        h.update(b"\0" + pem.encode())
    return h.hexdigest()


class Reports:
    def __init__(self, store, lane: Lane, budget: Budget, wait: float, entry: str | None,
                 error_ttl: float = 600.0):
        self.store, self.lane, self.budget, self.wait, self.entry = store, lane, budget, wait, entry
        self.error_ttl = error_ttl
        self.failures: dict[str, tuple[float, str]] = {}
        self.inflight: dict[str, cf.Future] = {}
        self._lock = threading.Lock()

    def _landed(self, key: str, fut: cf.Future) -> None:
        with self._lock:
            self.inflight.pop(key, None)
        try:
            out = fut.result()
        except BaseException as err:  # no child could be started, or shutting down: the next request retries
            self.failures[key] = (time.monotonic() - self.error_ttl + 30.0, type(err).__name__)
            return
        if out.result is None:
            self.failures[key] = (time.monotonic(), out.reason or out.failure or "failed")
            return
        try:
            self.store.report_put(key, out.result)
        except Exception as err:  # a busy database: not kept, computed again on the next request
            self.failures[key] = (time.monotonic() - self.error_ttl + 5.0, type(err).__name__)

    async def get(self, envelope: bytes, pems: list[str]) -> dict:
        """{"status": "done", "verdict", "html", "svgs", ...}, {"status": "pending"} or
        {"status": "failed", "reason"}."""
        key = report_key(envelope, pems)
        stored = await asyncio.to_thread(self.store.report_get, key)
        if stored is not None:
            return {"status": "done", **stored}
        bad = self.failures.get(key)
        if bad is not None and time.monotonic() - bad[0] < self.error_ttl:
            return {"status": "failed", "reason": bad[1]}
        with self._lock:
            fut = self.inflight.get(key)
            if fut is None:
                payload = {"data": base64.b64encode(envelope).decode(), "keys": pems}
                fut = self.lane.sandboxed("report", payload, self.budget, entry=self.entry)
                self.inflight[key] = fut
                fut.add_done_callback(lambda f, k=key: self._landed(k, f))
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), self.wait)
        except asyncio.TimeoutError:
            return {"status": "pending"}
        except Exception as err:
            return {"status": "failed", "reason": type(err).__name__}
        # _landed was registered before wrap_future's callback, so it has run: the cache has the answer
        stored = await asyncio.to_thread(self.store.report_get, key)
        if stored is not None:
            return {"status": "done", **stored}
        bad = self.failures.get(key)
        return {"status": "failed", "reason": bad[1] if bad else "failed"}
