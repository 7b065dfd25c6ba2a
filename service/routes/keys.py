"""GET /v1/keys: the issuer's public keys, the active one first, then retired ones."""
from __future__ import annotations

from fastapi import APIRouter, Depends

from service.state import ServiceState, get_state
from service.views import key_view

router = APIRouter()


@router.get("/v1/keys", summary="issuer public keys, the active one first, then retired ones")
def keys(state: ServiceState = Depends(get_state)):
    return {"keys": [key_view(k) for k in state.store.keys()]}
