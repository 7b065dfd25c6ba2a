"""GET /v1/sigma: the closed-form sigma at once and the exact sigma (computed once, cached)."""
from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from service.errors import ApiError
from service.state import ServiceState, get_state
from service.validate import epochs_of, steps_of, target_of

router = APIRouter()


@router.get("/v1/sigma", summary="closed-form and exact sigma for a cell (cached)")
async def sigma(steps: str, epochs: str, target: str, state: ServiceState = Depends(get_state)):
    bounds = state.config.limits
    m, e, t = steps_of(steps, bounds), epochs_of(epochs, bounds), target_of(target, bounds)
    from certifier.closed_form import closed_form_sigma
    try:
        closed = closed_form_sigma(m, e, float(t))  # Corollary 3.4
    except (ValueError, ArithmeticError, OverflowError) as err:
        raise ApiError(422, f"closed form undefined for this cell: {err}") from None
    ex = await state.sigma.exact(m, e, t)  # Theorem 4.1
    body = {"steps": m, "epochs": e, "target": t, "closed_form": closed, **ex, "resolution": "1e-6"}
    if ex.get("exact_status") == "pending":
        return JSONResponse(body, 202, headers={"Retry-After": "10"})
    return body
