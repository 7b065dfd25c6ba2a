"""/healthz remembers a write the API just refused for storage (service/errors.py, service/routes/health.py):
on a full disk SQLite's log may still hold the health check's one row while a job's write fails, and an "ok"
then would be false. Called directly with stand-ins for the request and the state."""
from __future__ import annotations

import sqlite3
import time
from types import SimpleNamespace

from service.errors import storage_unavailable
from service.routes import health


def fakes():
    app = SimpleNamespace(state=SimpleNamespace())
    store = SimpleNamespace(ping=lambda: None, counts=lambda: {"queued": 0})
    state = SimpleNamespace(store=store, workers=SimpleNamespace(alive=lambda: 2, n=2), keyid="k",
                            tokens=SimpleNamespace(configured=True, problem=None))
    return SimpleNamespace(app=app), state


def test_healthz_says_503_for_RECENT_seconds_after_a_refused_write(monkeypatch):
    request, state = fakes()
    assert health.healthz(request, state)["ok"] is True
    r = storage_unavailable(request, sqlite3.OperationalError("database or disk is full"))
    assert r.status_code == 503 and b"storage unavailable: OperationalError: database or disk is full" in r.body
    h = health.healthz(request, state)
    assert h.status_code == 503 and b"a write failed" in h.body and b"disk is full" in h.body
    t0 = request.app.state.storage_failure[0]
    monkeypatch.setattr(time, "monotonic", lambda: t0 + health.RECENT + 0.1)
    assert health.healthz(request, state)["ok"] is True   # remembered for RECENT seconds only
