"""GET /v1/sigma: the closed-form sigma at once and the exact sigma (computed once, cached), per scheme;
for a run in stages (stages=100x5,400x5) the exact sigma they share and the closed form of the product."""
from __future__ import annotations

import math

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from certifier.door import closed_form_sigma_product, closed_form_sigma_up
from certifier.errors import NumericsUnreliable
from service.errors import ApiError
from service.job import request_run
from service.state import ServiceState, get_state
from service.validate import kind_of, run_of

router = APIRouter()


def _closed_form(shape: dict, target: str) -> str:
    """Corollary 3.4 rounded up to 1e-6 (fixed bins: sqrt(E) x); a run in stages: U(c) = lambda for the
    product's chi-square (Theorem 3.3 for any pair), rounded up to 1e-6."""
    try:
        return request_run(shape).pick(
            lambda m, e, scheme: str(closed_form_sigma_up(m, e, target, scheme)),
            lambda stages: f"{math.ceil(closed_form_sigma_product(stages, float(target)) * 1e6) / 1e6:.6f}")
    except (ValueError, ArithmeticError, OverflowError, NumericsUnreliable) as err:
        raise ApiError(422, f"closed form undefined for this cell: {err}") from None


@router.get("/v1/sigma", summary="closed-form and exact sigma for a cell and scheme (cached); or the exact sigma "
                                 "of a dp (epsilon, delta) or tpr (fpr, tpr) target; stages=100x5,400x5 for a run "
                                 "in stages (one sigma shared)")
async def sigma(steps: str | None = None, target: str | None = None, epochs: str | None = None,
                scheme: str | None = None, iterations: str | None = None, epsilon: str | None = None,
                delta: str | None = None, fpr: str | None = None, tpr: str | None = None,
                stages: str | None = None, state: ServiceState = Depends(get_state)):
    bounds = state.config.limits
    shape = run_of(stages, steps, epochs, scheme, iterations, bounds)
    k = kind_of({"target": target, "epsilon": epsilon, "delta": delta, "fpr": fpr, "tpr": tpr}, bounds)
    m, e, sch, t = shape["steps"], shape["epochs"], shape["scheme"], k["target"]
    body = {key: v for key, v in shape.items() if v is not None}    # a run in stages: stages and the total epochs
    if "kind" in k:                   # dp / tpr: the exact sigma only (docs/targets.md; no TV closed form)
        ex = await state.sigma.exact(m, e, t, sch, k["kind"], shape.get("stages"))
        body = {**body, "kind": k["kind"], "target": t, **ex, "resolution": ex.get("resolution", "1e-6")}
    else:
        closed = _closed_form(shape, t)
        ex = await state.sigma.exact(m, e, t, sch, stages=shape.get("stages"))  # Theorem 4.1 (a product)
        body = {**body, "target": t, "closed_form": closed, **ex, "resolution": ex.get("resolution", "1e-6")}
    if ex.get("exact_status") == "pending":
        return JSONResponse(body, 202, headers={"Retry-After": "10"})
    return body
