"""Certification jobs and the archive: request, watch, download, cancel, list.

A job belongs to the team of the token that first submitted it (service.auth): only that team or an
admin token cancels it or queues it again; views without the owner's token show no requester and no
subject name. Before a job is queued its cost is predicted by the certifier's own cost model
(service.admission: 422 above the per-job limit) and the queue cap and the team's quota are checked
(429 with Retry-After).
"""
from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from certifier.params import ParameterError
from service.admission import admit
from service.auth import Caller
from service.errors import ApiError
from service.state import ServiceState, caller, get_state, viewer
from service.store import (
    ACTIVE,
    EVERY_RUN,
    IN_STAGES,
    NOT_IN_STAGES,
    RETRYABLE,
    RefusedSubmissionError,
    StagesFilter,
)
from service.validate import (
    CertificateRequest,
    describe_errors,
    epochs_of,
    normalise,
    stages_json,
    stages_of,
    steps_of,
    strict_json,
    target_of,
)
from service.views import envelope_file, job_view

router = APIRouter()
STATUSES = ("queued", "running", "done", "failed", "cancelled")
KINDS = ("tv", "dp", "tpr")
FILTER_WORDS = {None: EVERY_RUN, "any": IN_STAGES, "none": NOT_IN_STAGES}   # the listing's stages= words
BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": CertificateRequest.model_json_schema(ref_template="#/components/schemas/{model}")}}}}


def job_or_404(jid: str, state: ServiceState) -> dict:
    row = state.store.get(jid) if len(jid) <= 64 else None
    if row is None:
        raise ApiError(404, f"no certificate job {jid[:64]!r}")
    return row


def owns(who: Caller | None, row: dict) -> bool:
    return who is not None and (who.admin or who.team == (row.get("team") or row.get("requested_by")))


@router.post("/v1/certificates", status_code=202, summary="request a certificate (bearer token)", openapi_extra=BODY)
async def submit(request: Request, who: Caller = Depends(caller), state: ServiceState = Depends(get_state)):
    try:  # read strictly: duplicate keys refused, decimals kept as written (never rounded through float)
        body = CertificateRequest.model_validate(strict_json(await request.body()))
    except ValidationError as err:
        raise ApiError(422, describe_errors(err.errors())) from None
    req = normalise(body, state.config.limits)
    cfg = state.config
    row = await asyncio.to_thread(state.store.find, req)
    if row is None or row["status"] == "cancelled" or (row["status"] == "failed" and row["error_kind"] in RETRYABLE):
        await asyncio.to_thread(admit, req, cfg.max_predicted_seconds, cfg.job.memory)  # 422 with the prediction
    try:
        row, created = await asyncio.to_thread(
            state.store.submit, req, who.name, who.team, admin=who.admin, max_queued=cfg.max_queued,
            max_per_team=cfg.max_queued_per_team, max_resubmits=cfg.max_resubmits)
    except RefusedSubmissionError as r:
        headers = {"Retry-After": str(r.retry_after)} if r.retry_after else None
        raise ApiError(r.status, r.reason, headers) from None
    if row["status"] in ("done", "failed"):  # the archived answer, at once
        return JSONResponse(job_view(row, viewer_owns=owns(who, row)), 200)
    return JSONResponse({"id": row["id"], "status": row["status"], "created": created}, 202,
                        headers={"Location": f"/v1/certificates/{row['id']}"})


@router.get("/v1/certificates/{jid}", summary="status, progress, reason or the signed envelope")
def get_job(jid: str, who: Caller | None = Depends(viewer), state: ServiceState = Depends(get_state)):
    row = job_or_404(jid, state)
    return job_view(row, viewer_owns=owns(who, row))


@router.get("/v1/certificates/{jid}/envelope", summary="the certificate file (DSSE envelope); with log_proof=true "
            "its log inclusion proof bundle (the certificate, the proof, the signed tree head)")
def get_envelope(jid: str, log_proof: bool = False, state: ServiceState = Depends(get_state)):
    row = job_or_404(jid, state)
    if row["status"] != "done":
        raise ApiError(409, f"certificate {jid} is {row['status']}, not done")
    if log_proof:
        return JSONResponse(state.log.proof(jid), headers={"Content-Disposition":
                                                           f'attachment; filename="{jid}.log-proof.json"'})
    return Response(envelope_file(row), media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{jid}.json"'})


@router.delete("/v1/certificates/{jid}", summary="cancel a queued or running job (its team's token or an admin's)")
def cancel(jid: str, who: Caller = Depends(caller), state: ServiceState = Depends(get_state)):
    row = job_or_404(jid, state)
    if not owns(who, row):
        raise ApiError(403, f"certificate job {jid} belongs to another team; only its team or an admin can cancel it")
    changed, status = state.store.cancel(jid)
    if not changed:
        raise ApiError(409, f"certificate {jid} is {status}; only queued or running jobs can be cancelled")
    return job_view(state.store.get(jid), full=False, viewer_owns=True)


@router.get("/v1/certificates", summary="archive listing (newest first, paginated)")
def listing(steps: str | None = None, epochs: str | None = None, target: str | None = None,
            status: str | None = None, kind: str | None = None,
            stages: str | None = Query(None, description="a stage list (100x5,400x5): its runs only; \"any\": every "
                                                         "run in stages; \"none\": no run in stages"),
            limit: int = Query(50, ge=1, le=200),
            offset: int = Query(0, ge=0, le=10**9), who: Caller | None = Depends(viewer),
            state: ServiceState = Depends(get_state)):
    if status is not None and status not in STATUSES:
        raise ParameterError(f"status must be one of {', '.join(STATUSES)}")
    if kind is not None and kind not in KINDS:
        raise ParameterError(f"kind must be one of {', '.join(KINDS)}")
    bounds = state.config.limits
    rows, total = state.store.listing(steps=None if steps is None else steps_of(steps, bounds),
                                      epochs=None if epochs is None else epochs_of(epochs, bounds),
                                      target=None if target is None else target_of(target, bounds),
                                      status=status, kind=kind, stages=stages_filter(stages, bounds),
                                      limit=limit, offset=offset)
    nxt = offset + limit if offset + limit < total else None
    return {"items": [job_view(r, full=False, viewer_owns=owns(who, r)) for r in rows], "total": total,
            "limit": limit, "offset": offset, "next_offset": nxt}


def stages_filter(text: str | None, bounds) -> StagesFilter:
    """The listing's stages= filter, read once: absent, "any", "none" or a stage list (100x5,400x5)."""
    return FILTER_WORDS[text] if text in FILTER_WORDS else StagesFilter.runs(stages_json(stages_of(text, bounds)))


__all__ = ["router", "job_or_404", "ACTIVE", "stages_filter"]
