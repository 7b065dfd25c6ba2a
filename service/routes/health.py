"""GET /healthz: the truth about this server: the archive is writable (its own write, and no API write refused
for storage in the last RECENT seconds), workers are alive, tokens load.

200 {"ok": true, ...} when all hold; 503 {"ok": false, "reasons": [...]} (one line each) otherwise."""
from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from certifier.door import __version__
from service.errors import one_line
from service.state import ServiceState, get_state

router = APIRouter()
RECENT = 5.0  # seconds a storage failure answered by the API keeps /healthz at 503


@router.get("/healthz", summary="liveness: database writable, workers alive, queue counts")
def healthz(request: Request, state: ServiceState = Depends(get_state)):
    reasons, counts = [], None
    try:
        state.store.ping()  # a write in a transaction, as a job submission does
        counts = state.store.counts()
    except Exception as err:  # sqlite3.Error, OSError: the archive cannot be written
        reasons.append(f"database not writable: {one_line(err)}")
    failed = getattr(request.app.state, "storage_failure", None)
    if failed is not None and time.monotonic() - failed[0] < RECENT and not reasons:
        reasons.append(f"database not writable: a write failed {time.monotonic() - failed[0]:.1f} s ago: {failed[1]}")
    alive = state.workers.alive()
    if alive < state.workers.n:
        reasons.append(f"{alive} of {state.workers.n} workers alive")
    _ = state.tokens.configured  # re-read the tokens file if it changed
    if state.tokens.problem is not None:
        reasons.append("tokens file invalid: no token is accepted until it is fixed")
    body = {"ok": not reasons, "version": __version__, "keyid": state.keyid, "workers": alive, "jobs": counts}
    if reasons:
        body["reasons"] = reasons
        return JSONResponse(body, 503, headers={"Retry-After": "10"})
    return body
