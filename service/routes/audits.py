"""Audits of a claim at its sigma (docs/audit.md): request, watch, download, list.

An audit is a job of the certificate queue (the same store, workers, sandbox and signer): its request carries
`audit` ({"width", "source"}) beside the run and the claim, it is admitted as the certificate job of its run, target
and sigma would be (service.admission: 422 with the prediction above the per-job limit), its worker task is
service.tasks.audit_job, and the signer signs the format-v6 predicate only after the independent verifier replayed
it and its claim is the one requested. The archive lists audits beside certificates (GET /v1/certificates shows
both; GET /v1/audits only audits). Bad input is 4xx with its reason.
"""
from __future__ import annotations

import asyncio
import base64
import json
from typing import Optional

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field, StrictStr, ValidationError

from certifier.params import ParameterError, as_decimal_text, parse_decimal
from service.admission import admit
from service.auth import Caller
from service.errors import ApiError
from service.routes.certificates import owns
from service.state import ServiceState, caller, get_state, viewer
from service.store import RETRYABLE, RefusedSubmissionError
from service.validate import CertificateRequest, Decimal, describe_errors, normalise, strict_json
from service.views import envelope_file, job_view

router = APIRouter()
MAX_SOURCE = 500


class AuditRequest(CertificateRequest):
    """POST /v1/audits: the run (steps, epochs | iterations, scheme; or stages at the one claimed sigma), the
    claimed sigma and one claim (target, or epsilon with delta, or fpr with tpr), optionally the interval's
    relative width and where the claim comes from."""
    width: Optional[Decimal] = Field(None, description="relative width of the certified interval (default 0.001)")
    source: Optional[StrictStr] = Field(None, description="where the claim comes from (recorded in the certificate)")


BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": AuditRequest.model_json_schema(ref_template="#/components/schemas/{model}")}}}}


def audit_request(body: AuditRequest, limits) -> dict:
    """The normalised audit request: the certificate request's run and claim, sigma required, `audit` added."""
    if body.sigma is None:
        raise ParameterError("sigma: an audit needs the claimed noise multiplier")
    if body.subject is not None:
        raise ParameterError("subject: an audit is about its claim (no subject file)")
    req = normalise(CertificateRequest(**body.model_dump(exclude={"width", "source"})), limits)
    width = "0.001" if body.width is None else as_decimal_text("width", body.width)
    if not 0 < parse_decimal("width", width) < 1:
        raise ParameterError(f"width must lie strictly between 0 and 1, got {width}")
    source = body.source or ""
    if len(source) > MAX_SOURCE or any(ord(ch) < 32 for ch in source):
        raise ParameterError(f"source must be one line of at most {MAX_SOURCE} characters")
    return {**req, "audit": {"width": width, "source": source}}


def priced_as(req: dict) -> dict:
    """The certificate job an audit is priced as (service.admission): the two-sided certificate of the same run,
    target and sigma -- the same planners for both sides (an audit's lower side runs at sigma itself, a
    certificate's one resolution step below it)."""
    return {k: v for k, v in req.items() if k != "audit"}


def audit_view(row: dict, full: bool, viewer_owns: bool) -> dict:
    """A job's view with, once done, the verdict and the certified interval read from the signed predicate."""
    out = job_view(row, full=full, viewer_owns=viewer_owns)
    out["type"] = "audit"
    if row["status"] == "done" and row.get("envelope"):
        env = json.loads(row["envelope"])
        a = json.loads(base64.b64decode(env["payload"]))["predicate"]["audit"]
        out.update(verdict=a["verdict"], interval=[a["interval"]["lower"], a["interval"]["upper"]],
                   quantity=a["quantity"])
    return out


def audit_or_404(jid: str, state: ServiceState) -> dict:
    row = state.store.get(jid) if len(jid) <= 64 else None
    if row is None or "audit" not in json.loads(row["request"]):
        raise ApiError(404, f"no audit {jid[:64]!r}")
    return row


@router.post("/v1/audits", status_code=202, summary="audit a claim at its sigma (bearer token)", openapi_extra=BODY)
async def submit(request: Request, who: Caller = Depends(caller), state: ServiceState = Depends(get_state)):
    try:
        body = AuditRequest.model_validate(strict_json(await request.body()))
    except ValidationError as err:
        raise ApiError(422, describe_errors(err.errors())) from None
    req = audit_request(body, state.config.limits)
    cfg = state.config
    row = await asyncio.to_thread(state.store.find, req)
    if row is None or row["status"] == "cancelled" or (row["status"] == "failed" and row["error_kind"] in RETRYABLE):
        await asyncio.to_thread(admit, priced_as(req), cfg.max_predicted_seconds, cfg.job.memory)   # 422: the reason
    try:
        row, created = await asyncio.to_thread(
            state.store.submit, req, who.name, who.team, admin=who.admin, max_queued=cfg.max_queued,
            max_per_team=cfg.max_queued_per_team, max_resubmits=cfg.max_resubmits)
    except RefusedSubmissionError as r:
        headers = {"Retry-After": str(r.retry_after)} if r.retry_after else None
        raise ApiError(r.status, r.reason, headers) from None
    if row["status"] in ("done", "failed"):
        return JSONResponse(audit_view(row, True, owns(who, row)), 200)
    return JSONResponse({"id": row["id"], "status": row["status"], "created": created}, 202,
                        headers={"Location": f"/v1/audits/{row['id']}"})


@router.get("/v1/audits/{jid}", summary="status, verdict, interval or the signed audit certificate")
def get_audit(jid: str, who: Caller | None = Depends(viewer), state: ServiceState = Depends(get_state)):
    row = audit_or_404(jid, state)
    return audit_view(row, True, owns(who, row))


@router.get("/v1/audits/{jid}/envelope", summary="the audit certificate file (DSSE envelope)")
def get_envelope(jid: str, state: ServiceState = Depends(get_state)):
    row = audit_or_404(jid, state)
    if row["status"] != "done":
        raise ApiError(409, f"audit {jid} is {row['status']}, not done")
    return Response(envelope_file(row), media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{jid}.json"'})


@router.get("/v1/audits", summary="the audits of the archive (newest first, paginated)")
def listing(limit: int = Query(50, ge=1, le=200), offset: int = Query(0, ge=0, le=10**9),
            who: Caller | None = Depends(viewer), state: ServiceState = Depends(get_state)):
    rows, total = state.store.listing(audit=True, limit=limit, offset=offset)
    nxt = offset + limit if offset + limit < total else None
    return {"items": [audit_view(r, False, owns(who, r)) for r in rows], "total": total, "limit": limit,
            "offset": offset, "next_offset": nxt}
