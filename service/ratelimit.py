"""A token bucket per client address (POST /v1/verify)."""
from __future__ import annotations

import threading
import time


class RateLimiter:
    """Token bucket per client address: `per_minute` refill, `burst` capacity."""

    def __init__(self, per_minute: float, burst: int):
        self.per_minute = per_minute
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
