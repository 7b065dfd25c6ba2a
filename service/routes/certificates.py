"""Certification jobs and the archive: request, watch, download, cancel, list."""
from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, Response

from certifier.params import ParameterError
from service.errors import ApiError
from service.state import ServiceState, caller, get_state
from service.validate import CertificateRequest, epochs_of, normalise, steps_of, target_of
from service.views import envelope_file, job_view

router = APIRouter()
STATUSES = ("queued", "running", "done", "failed", "cancelled")


def job_or_404(jid: str, state: ServiceState) -> dict:
    row = state.store.get(jid) if len(jid) <= 64 else None
    if row is None:
        raise ApiError(404, f"no certificate job {jid[:64]!r}")
    return row


@router.post("/v1/certificates", status_code=202, summary="request a certificate (bearer token)")
def submit(body: CertificateRequest, who: str = Depends(caller), state: ServiceState = Depends(get_state)):
    req = normalise(body, state.config.limits)
    row, created = state.store.submit(req, who)
    if row["status"] in ("done", "failed"):  # the archived answer, at once
        return JSONResponse(job_view(row), 200)
    return JSONResponse({"id": row["id"], "status": row["status"], "created": created}, 202,
                        headers={"Location": f"/v1/certificates/{row['id']}"})


@router.get("/v1/certificates/{jid}", summary="status, progress, reason or the signed envelope")
def get_job(jid: str, state: ServiceState = Depends(get_state)):
    return job_view(job_or_404(jid, state))


@router.get("/v1/certificates/{jid}/envelope", summary="the certificate file (DSSE envelope)")
def get_envelope(jid: str, state: ServiceState = Depends(get_state)):
    row = job_or_404(jid, state)
    if row["status"] != "done":
        raise ApiError(409, f"certificate {jid} is {row['status']}, not done")
    return Response(envelope_file(row), media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{jid}.json"'})


@router.delete("/v1/certificates/{jid}", summary="cancel a queued or running job (bearer token)")
def cancel(jid: str, who: str = Depends(caller), state: ServiceState = Depends(get_state)):
    job_or_404(jid, state)
    changed, status = state.store.cancel(jid)
    if not changed:
        raise ApiError(409, f"certificate {jid} is {status}; only queued or running jobs can be cancelled")
    return job_view(state.store.get(jid), full=False)


@router.get("/v1/certificates", summary="archive listing (newest first, paginated)")
def listing(steps: str | None = None, epochs: str | None = None, target: str | None = None,
            status: str | None = None, limit: int = Query(50, ge=1, le=200),
            offset: int = Query(0, ge=0, le=10**9), state: ServiceState = Depends(get_state)):
    if status is not None and status not in STATUSES:
        raise ParameterError(f"status must be one of {', '.join(STATUSES)}")
    bounds = state.config.limits
    rows, total = state.store.listing(steps=None if steps is None else steps_of(steps, bounds),
                                      epochs=None if epochs is None else epochs_of(epochs, bounds),
                                      target=None if target is None else target_of(target, bounds),
                                      status=status, limit=limit, offset=offset)
    nxt = offset + limit if offset + limit < total else None
    return {"items": [job_view(r, full=False) for r in rows], "total": total, "limit": limit,
            "offset": offset, "next_offset": nxt}
