"""Off-request computations of the API: exact sigma (cached) and verification.

Neither runs in the event loop or in the server process: each computation is a limited
child process (service.sandbox: address-space cap, killed at the wall-clock limit),
started from a small thread lane that caps how many run at once and how many may be in
flight (429 beyond that).
"""
from __future__ import annotations

import asyncio
import base64
import concurrent.futures as cf
import threading
import time

from certifier.door import RANDOM_ALLOCATION
from certifier.errors import SigmacertError
from service.job import request_run
from service.sandbox import Budget, run


class BusyError(SigmacertError):
    """Too many computations in flight (429)."""


class Lane:
    """`running` threads, each waiting on one sandboxed child; at most `pending` in flight."""

    def __init__(self, name: str, running: int, pending: int):
        self.pending, self.max_pending = 0, pending
        self._pool = cf.ThreadPoolExecutor(running, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def sandboxed(self, task: str, payload: dict, budget: Budget, entry: str = "service.sandbox") -> cf.Future:
        """The Outcome of service.sandbox.run, as a future; BusyError when the lane is full."""
        with self._lock:
            if self.pending >= self.max_pending:
                raise BusyError()
            self.pending += 1
        try:
            fut = self._pool.submit(run, task, payload, budget, keep_going=lambda: not self._stop.is_set(),
                                    entry=entry)
        except BaseException:
            with self._lock:
                self.pending -= 1
            raise

        def done(_):
            with self._lock:
                self.pending -= 1
        fut.add_done_callback(done)
        return fut

    def shutdown(self) -> None:
        """Kill every running child within a tick; drop what has not started."""
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)


class Verifications:
    """POST /v1/verify: the independent verifier in a child under `budget`.

    A child killed at a limit answers like the verifier's own cost model: REJECT with
    `cost-exceeds-limit` and the limit in the detail (a 200, as every REJECT)."""

    def __init__(self, lane: Lane, budget: Budget):
        self.lane, self.budget = lane, budget

    async def verify(self, data: bytes, pems: list[str], subject: str | None) -> dict:
        payload = {"data": base64.b64encode(data).decode(), "keys": pems, "subject": subject,
                   "max_memory": self.budget.memory, "max_seconds": self.budget.seconds}
        try:
            out = await asyncio.wrap_future(self.lane.sandboxed("verify", payload, self.budget))
        except OSError:  # no process could be started now (fork refused): retryable, as a full lane
            raise BusyError() from None
        if out.result is not None:
            return out.result
        if out.failure in ("memory", "seconds"):
            reason, detail = "cost-exceeds-limit", (f"the verification {out.reason} of this service; "
                                                    "sigmacert-verify can check it offline with a larger budget")
        else:
            reason, detail = "internal-error", f"the verifier failed: {out.reason}"
        return {"result": "REJECT", "accepted": False, "reason": reason, "detail": detail,
                "seconds": round(out.seconds, 3)}


class SigmaService:
    """GET /v1/sigma: closed form at once; exact sigma from the cache, else computed once per cell.

    A request waits up to `wait` seconds for a new computation, then answers 202 with
    `exact_status: pending`; the computation goes on and lands in the cache (memory and
    SQLite, so it survives restarts). Errors and timeouts are cached for `error_ttl` s only.
    """

    def __init__(self, store, lane: Lane, budget: Budget, wait: float, error_ttl: float = 600.0):
        self.store, self.lane, self.budget, self.wait, self.error_ttl = store, lane, budget, wait, error_ttl
        self.cache: dict[str, dict] = {}
        self.failures: dict[str, tuple[float, dict]] = {}
        self.inflight: dict[str, cf.Future] = {}
        self._lock = threading.Lock()

    def cached(self, cell: str) -> dict | None:
        hit = self.cache.get(cell)
        if hit is not None:
            return hit
        bad = self.failures.get(cell)
        if bad is not None and time.monotonic() - bad[0] < self.error_ttl:
            return bad[1]
        return None

    def _landed(self, cell: str, fut: cf.Future) -> None:
        with self._lock:
            self.inflight.pop(cell, None)
        try:
            out = fut.result()
        except BaseException as err:  # could not start a child (or shutting down): the next request retries
            res = {"exact": None, "exact_status": "error", "exact_error": type(err).__name__}
            self.failures[cell] = (time.monotonic() - self.error_ttl + 30.0, res)
            return
        if out.result is None:
            status = "timeout" if out.failure == "seconds" else "error"
            self.failures[cell] = (time.monotonic(), {"exact": None, "exact_status": status,
                                                      "exact_error": out.reason})
            return
        res = out.result
        if res.get("exact_status") == "done":
            self.cache[cell] = res
            try:
                self.store.sigma_put(cell, res)
            except Exception:
                pass  # memory cache still serves it
        else:
            self.failures[cell] = (time.monotonic(), res)

    async def exact(self, steps: int | None, epochs: int, target: str, scheme: str = RANDOM_ALLOCATION,
                    kind: dict | None = None, stages: list | None = None) -> dict:
        """stages: a run in stages ([{"steps", "epochs"}, ...], steps None): the exact sigma they share."""
        asked = request_run({"steps": steps, "epochs": epochs, "scheme": scheme, "stages": stages})
        cell = asked.pick(lambda m, e, sch: f"{m}/{e}/{target}" + ("" if sch == RANDOM_ALLOCATION else f"/{sch}"),
                          lambda st: "stages:" + ",".join(map(str, st)) + f"/{target}")   # stages:100x5,400x5/0.1
        if kind is not None:          # a dp / tpr target: its own cache entry, e.g. 100/10/0.00001/dp:1
            cell += f"/{kind['name']}:{kind.get('epsilon', kind.get('fpr'))}"
        hit = self.cached(cell)
        if hit is not None:  # only a final answer is "cached" (service.middleware keeps those bytes for good)
            return {**hit, "cached": hit.get("exact_status") == "done"}
        stored = await asyncio.to_thread(self.store.sigma_get, cell)
        if stored is not None:
            self.cache[cell] = stored
            return {**stored, "cached": True}
        with self._lock:
            fut = self.inflight.get(cell)
            if fut is None:
                # the run's JSON: a block's steps, epochs and scheme (as given), a run in stages' list as well
                fut = self.lane.sandboxed("sigma", {"steps": steps, "epochs": epochs, "target": target,
                                                    "scheme": scheme, **({"kind": kind} if kind else {}),
                                                    **asked.to_json()},
                                          self.budget)
                self.inflight[cell] = fut
                fut.add_done_callback(lambda f, c=cell: self._landed(c, f))
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), self.wait)
        except asyncio.TimeoutError:
            return {"exact": None, "exact_status": "pending", "cached": False}
        except Exception as err:
            return {"exact": None, "exact_status": "error", "exact_error": type(err).__name__, "cached": False}
        res = self.cached(cell)
        return {**(res or {"exact": None, "exact_status": "error"}), "cached": False}
