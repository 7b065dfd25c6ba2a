"""The certificate log: signed tree head, inclusion and consistency proofs (RFC 9162; docs/release.md)."""
from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from service.state import ServiceState, get_state

router = APIRouter()


@router.get("/v1/log/head", summary="the latest signed tree head (size, root, time) of the certificate log")
def head(state: ServiceState = Depends(get_state)):
    return state.log.head()


@router.get("/v1/log/proof/{jid}", summary="a certificate's inclusion proof under the latest signed head")
def proof(jid: str, state: ServiceState = Depends(get_state)):
    return state.log.proof(jid)


@router.get("/v1/log/consistency", summary="the consistency proof between two tree sizes (with their signed heads)")
def consistency(old: int = Query(..., alias="from", ge=1, le=10**12), new: int | None = Query(None, alias="to", ge=1,
                                                                                               le=10**12),
                state: ServiceState = Depends(get_state)):
    return state.log.consistency(old, new)
