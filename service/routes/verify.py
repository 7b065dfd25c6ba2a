"""POST /v1/verify: the independent verifier, rate limited, in a limited child process."""
from __future__ import annotations

import asyncio
import json

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from service.errors import ApiError
from service.state import ServiceState, get_state

router = APIRouter()


@router.post("/v1/verify", summary="verify a certificate (the DSSE envelope as the JSON body); rate limited")
async def verify(request: Request, subject_sha256: str | None = Query(None, pattern=r"^[0-9a-f]{64}$"),
                 state: ServiceState = Depends(get_state)):
    client = request.client.host if request.client else "?"
    wait = state.limiter.take(client)
    if wait > 0:
        return JSONResponse({"detail": f"rate limit: at most {state.limiter.per_minute:g} verifications "
                                       f"per minute; retry in {wait:.0f} s"}, 429,
                            headers={"Retry-After": str(max(1, int(wait + 0.999)))})
    data = await request.body()
    try:
        env = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deeply
        env = None
    if not isinstance(env, dict):
        raise ApiError(422, "body must be a certificate: a DSSE envelope JSON object")
    pems = [k["public_pem"] for k in await asyncio.to_thread(state.store.keys)]
    return await state.verifications.verify(data, pems, subject_sha256)
