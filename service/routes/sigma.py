"""GET /v1/sigma: the closed-form sigma at once and the exact sigma (computed once, cached), per scheme."""
from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from service.errors import ApiError
from service.state import ServiceState, get_state
from service.validate import kind_of, shape_of

router = APIRouter()


@router.get("/v1/sigma", summary="closed-form and exact sigma for a cell and scheme (cached); or the exact sigma "
                                 "of a dp (epsilon, delta) or tpr (fpr, tpr) target")
async def sigma(steps: str, target: str | None = None, epochs: str | None = None, scheme: str | None = None,
                iterations: str | None = None, epsilon: str | None = None, delta: str | None = None,
                fpr: str | None = None, tpr: str | None = None, state: ServiceState = Depends(get_state)):
    bounds = state.config.limits
    shape = shape_of(steps, epochs, scheme, iterations, bounds)
    k = kind_of({"target": target, "epsilon": epsilon, "delta": delta, "fpr": fpr, "tpr": tpr}, bounds)
    m, e, sch, t = shape["steps"], shape["epochs"], shape["scheme"], k["target"]
    if "kind" in k:                   # dp / tpr: the exact sigma only (docs/targets.md; no TV closed form)
        ex = await state.sigma.exact(m, e, t, sch, k["kind"])
        body = {**shape, "kind": k["kind"], "target": t, **ex, "resolution": ex.get("resolution", "1e-6")}
        if shape["iterations"] is None:
            del body["iterations"]
        if ex.get("exact_status") == "pending":
            return JSONResponse(body, 202, headers={"Retry-After": "10"})
        return body
    from certifier.errors import NumericsUnreliable
    from certifier.numerics.schemes import closed_form_sigma_up
    try:
        closed = str(closed_form_sigma_up(m, e, t, sch))  # Corollary 3.4 rounded up to 1e-6 (fixed bins: sqrt(E) x)
    except (ValueError, ArithmeticError, OverflowError, NumericsUnreliable) as err:
        raise ApiError(422, f"closed form undefined for this cell: {err}") from None
    ex = await state.sigma.exact(m, e, t, sch)  # Theorem 4.1
    body = {**shape, "target": t, "closed_form": closed, **ex, "resolution": ex.get("resolution", "1e-6")}
    if shape["iterations"] is None:
        del body["iterations"]
    if ex.get("exact_status") == "pending":
        return JSONResponse(body, 202, headers={"Retry-After": "10"})
    return body
