"""The detail view of an archived certificate: its audit report (HTML) and the report's plots (SVG).

Both are what `sigmacert report` produces for the certificate file (the bytes GET .../envelope
downloads), verified against this issuer's keys, retired ones included; computed once
(service.reports) and served as they are.
"""
from __future__ import annotations

import html

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, Response

from service.errors import ApiError
from service.routes.certificates import job_or_404
from service.state import ServiceState, get_state
from service.views import envelope_file

router = APIRouter()
PLOTS = ("tv", "tradeoff", "epsilon", "profile", "tradeoff-kind")  # the last two: dp and tpr certificates
# the report is self-contained: inline CSS and SVG, no script, no URL; the page shows it in a frame
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"
PENDING = """<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>sigmacert report: preparing</title></head><body style="font: 15px system-ui, sans-serif">
<p id="pending">Verifying certificate {jid} and drawing its plots&hellip; this page reloads by itself.</p>
</body></html>
"""


async def _report(jid: str, state: ServiceState) -> dict:
    row = job_or_404(jid, state)
    if state.reports.entry is None:
        raise ApiError(404, "this server renders no reports (start it with `sigmacert serve`)")
    if row["status"] != "done":
        raise ApiError(409, f"certificate {jid} is {row['status']}, not done: no report yet")
    pems = [k["public_pem"] for k in state.store.keys()]
    r = await state.reports.get(envelope_file(row), pems)
    if r["status"] == "failed":
        raise ApiError(409, f"the report of {jid} could not be computed: {r['reason']}")
    return r


@router.get("/v1/certificates/{jid}/report", summary="the certificate's audit report (HTML, as `sigmacert report`)")
async def report(jid: str, state: ServiceState = Depends(get_state)):
    r = await _report(jid, state)
    headers = {"Content-Security-Policy": REPORT_CSP, "X-Frame-Options": "SAMEORIGIN"}
    if r["status"] == "pending":
        return Response(PENDING.format(jid=html.escape(jid)), 202, media_type="text/html; charset=utf-8",
                        headers={**headers, "Retry-After": "2"})
    return Response(r["html"], media_type="text/html; charset=utf-8",
                    headers={**headers, "X-Sigmacert-Verdict": r["verdict"]})


@router.get("/v1/certificates/{jid}/plots/{name}.svg", summary="one plot of the report (SVG): tv, tradeoff, epsilon; "
                                                          "profile (dp), tradeoff-kind (tpr)")
async def plot(jid: str, name: str, state: ServiceState = Depends(get_state)):
    if name not in PLOTS:
        raise ApiError(404, f"no plot {name[:40]!r}; the plots are {', '.join(PLOTS)}")
    r = await _report(jid, state)
    if r["status"] == "pending":
        return JSONResponse({"detail": f"the report of {jid} is being prepared; retry in a few seconds"}, 202,
                            headers={"Retry-After": "2"})
    if name not in r["svgs"]:
        raise ApiError(404, f"the report of {jid} has no plots (verdict {r['verdict']}: {r['reason']})")
    return Response(r["svgs"][name], media_type="image/svg+xml",
                    headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"})
