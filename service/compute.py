"""Off-request computations: exact sigma (cached) and verification, in small process pools.

Neither runs in the event loop: each pool has its own process(es), each task a
hard time limit (SIGALRM in the pool process), and the number of computations in
flight is capped (429 beyond it). /v1/verify is also rate limited per client.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import multiprocessing
import os
import signal
import threading
import time


class Busy(Exception):
    """Too many computations in flight (429)."""


# ----------------------------------------------------------------------------- in the pool process

def _pool_init(parent: int) -> None:
    from service.worker import die_with_parent
    die_with_parent(parent)


class _Alarm:
    def __init__(self, seconds: float):
        self.seconds = seconds

    def _fire(self, signum, frame):
        raise TimeoutError(f"computation exceeded {self.seconds:g} s")

    def __enter__(self):
        signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        return False


def exact_sigma_task(steps: int, epochs: int, target: str, limit: float) -> dict:
    from certifier.exact import exact_sigma
    from certifier.params import parse_target
    t0 = time.perf_counter()
    try:
        with _Alarm(limit):
            s = exact_sigma(steps, epochs, parse_target(target))
        return {"exact": s, "exact_status": "done", "exact_seconds": round(time.perf_counter() - t0, 3)}
    except TimeoutError as err:
        return {"exact": None, "exact_status": "timeout", "exact_error": str(err)}
    except (ArithmeticError, ValueError, OverflowError, MemoryError) as err:
        return {"exact": None, "exact_status": "error", "exact_error": f"{type(err).__name__}: {err}"[:300]}


def verify_task(data: bytes, pems: list[bytes], subject: str | None, limit: float) -> dict:
    from verifier import load_public_key, verify_bytes
    keys = [load_public_key(p) for p in pems]
    try:
        with _Alarm(limit):
            r = verify_bytes(data, keys, subject)
    except TimeoutError as err:
        return {"result": "REJECT", "accepted": False, "reason": "timeout", "detail": str(err)}
    out = r.as_dict()
    if out.get("reason") == "internal-error" and "TimeoutError" in (out.get("detail") or ""):
        out["reason"] = "timeout"
    return out


# ----------------------------------------------------------------------------- in the server

class Pool:
    """A spawn-context process pool that is rebuilt if one of its processes dies."""

    def __init__(self, workers: int, max_pending: int):
        self.workers, self.max_pending = workers, max_pending
        self.pending = 0
        self._pool = None
        self._lock = threading.Lock()

    def _get(self):
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                initializer=_pool_init, initargs=(os.getpid(),))
        return self._pool

    async def run(self, fn, *args, timeout: float):
        with self._lock:
            if self.pending >= self.max_pending:
                raise Busy()
            self.pending += 1
        try:
            for attempt in (0, 1):
                try:
                    fut = self._get().submit(fn, *args)
                    return await asyncio.wait_for(asyncio.wrap_future(fut), timeout)
                except cf.process.BrokenProcessPool:
                    with self._lock:
                        self._pool = None
                    if attempt:
                        raise
        finally:
            with self._lock:
                self.pending -= 1

    def submit_background(self, fn, *args) -> cf.Future:
        with self._lock:
            if self.pending >= self.max_pending:
                raise Busy()
            self.pending += 1
        try:
            fut = self._get().submit(fn, *args)
        except cf.process.BrokenProcessPool:
            with self._lock:
                self._pool = None
            fut = self._get().submit(fn, *args)
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
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            for p in list(getattr(self._pool, "_processes", {}).values()):
                p.kill()
            self._pool = None


class SigmaService:
    """GET /v1/sigma: closed form at once; exact sigma from the cache, else computed once per cell.

    A request waits up to `wait` seconds for a new computation, then answers 202 with
    `exact_status: pending`; the computation goes on and lands in the cache (memory and
    SQLite, so it survives restarts). Errors and timeouts are cached for `error_ttl` s only.
    """

    def __init__(self, store, pool: Pool, wait: float, limit: float, error_ttl: float = 600.0):
        self.store, self.pool, self.wait, self.limit, self.error_ttl = store, pool, wait, limit, error_ttl
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
            res = fut.result()
        except BaseException as err:  # the pool died: not cached, the next request retries
            res = {"exact": None, "exact_status": "error", "exact_error": type(err).__name__}
            self.failures[cell] = (time.monotonic() - self.error_ttl + 30.0, res)
            return
        if res.get("exact_status") == "done":
            self.cache[cell] = res
            try:
                self.store.sigma_put(cell, res)
            except Exception:
                pass  # memory cache still serves it
        else:
            self.failures[cell] = (time.monotonic(), res)

    async def exact(self, steps: int, epochs: int, target: str) -> dict:
        cell = f"{steps}/{epochs}/{target}"
        hit = self.cached(cell)
        if hit is not None:
            return {**hit, "cached": True}
        stored = await asyncio.to_thread(self.store.sigma_get, cell)
        if stored is not None:
            self.cache[cell] = stored
            return {**stored, "cached": True}
        with self._lock:
            fut = self.inflight.get(cell)
            if fut is None:
                fut = self.pool.submit_background(exact_sigma_task, steps, epochs, target, self.limit)
                self.inflight[cell] = fut
                fut.add_done_callback(lambda f, c=cell: self._landed(c, f))
        try:
            res = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), self.wait)
        except asyncio.TimeoutError:
            return {"exact": None, "exact_status": "pending", "cached": False}
        except Exception as err:
            return {"exact": None, "exact_status": "error", "exact_error": type(err).__name__, "cached": False}
        return {**res, "cached": False}


class RateLimiter:
    """Token bucket per client address: `per_minute` refill, `burst` capacity."""

    def __init__(self, per_minute: float, burst: int):
        self.rate, self.burst = per_minute / 60.0, max(1, burst)
        self.buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, client: str) -> float:
        """0 if allowed, else seconds until a token is available."""
        now = time.monotonic()
        with self._lock:
            if len(self.buckets) > 10_000:
                self.buckets.clear()
            tokens, last = self.buckets.get(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self.buckets[client] = (tokens - 1.0, now)
                return 0.0
            self.buckets[client] = (tokens, now)
            return (1.0 - tokens) / self.rate if self.rate > 0 else 3600.0
