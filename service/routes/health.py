"""GET /healthz: liveness, the active key, live workers and job counts."""
from __future__ import annotations

from fastapi import APIRouter, Depends

from certifier import __version__
from service.state import ServiceState, get_state

router = APIRouter()


@router.get("/healthz", summary="liveness and queue counts")
def healthz(state: ServiceState = Depends(get_state)):
    return {"ok": True, "version": __version__, "keyid": state.keyid, "workers": state.workers.alive(),
            "jobs": state.store.counts()}
