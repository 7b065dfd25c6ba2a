"""The certification service: FastAPI app factory (docs/service.md).

    create_app(Config(db=..., key=..., tokens=...)) -> FastAPI

The lifespan takes an exclusive lock on the database, re-queues jobs left
`running` by a previous (killed) server, records the signing key (older keys
become retired) and starts the worker processes. Handlers only read and write
the store; certification runs in the workers, exact sigma and verification in
small process pools.
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import fcntl
import json
import os
from dataclasses import dataclass, field
from importlib import resources

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from swagger_ui_bundle import swagger_ui_path

from certifier import __version__
from certifier.params import ParameterError
from service.compute import Busy, Pool, RateLimiter, SigmaService, verify_task
from service.middleware import BodyLimit, SigmaCache
from service.store import Store
from service.validate import CertificateRequest, Limits, describe_errors, epochs_of, normalise, steps_of, target_of

MAX_ENVELOPE = 4 * 1024 * 1024
STATUSES = ("queued", "running", "done", "failed", "cancelled")


@dataclass
class Config:
    db: str
    key: str
    tokens: str | None = None
    workers: int = 1
    retired_keys: list = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    max_body: int = 64 * 1024
    verify_per_minute: float = 30.0
    verify_burst: int = 10
    verify_timeout: float = 600.0
    sigma_wait: float = 20.0
    sigma_timeout: float = 900.0


class ApiError(HTTPException):
    pass


def _iso(t):
    if t is None:
        return None
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_view(row: dict, full: bool = True) -> dict:
    req = json.loads(row["request"])
    out = {"id": row["id"], "status": row["status"], "request": req, "steps": row["steps"],
           "epochs": row["epochs"], "target": row["target"], "sigma": row["sigma"],
           "created_at": _iso(row["created_at"]), "finished_at": _iso(row["finished_at"])}
    if row.get("bound") is not None:
        out["bound"] = row["bound"]
    if row.get("keyid"):
        out["keyid"] = row["keyid"]
    if row["status"] in ("failed", "cancelled"):
        out["reason"] = row["reason"]
    if not full:
        return out
    out.update(updated_at=_iso(row["updated_at"]), attempts=row["attempts"], requested_by=row["requested_by"])
    if row["status"] == "running":
        out.update(stage=row["stage"], percent=row["percent"], elapsed=row["elapsed"])
    if row["status"] == "done":
        out["elapsed"] = row["elapsed"]
        out["envelope"] = json.loads(row["envelope"])
    return out


def _lock(db: str):
    fd = os.open(db + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RuntimeError(f"another sigmacert server is using {db}") from None
    return fd


def _page(name: str) -> bytes:
    return resources.files("service").joinpath("static", name).read_bytes()


def create_app(config: Config | None = None) -> FastAPI:
    if config is None:  # `uvicorn --factory service.app:create_app`: read the environment
        config = Config(db=os.environ.get("SIGMACERT_DB", "sigmacert.db"),
                        key=os.environ.get("SIGMACERT_KEY", "keys/private.pem"),
                        tokens=os.environ.get("SIGMACERT_TOKENS"),
                        workers=int(os.environ.get("SIGMACERT_WORKERS", "1")))
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    from certifier.envelope import key_id
    from certifier.keys import load_private, load_public
    from service.auth import Tokens
    from service.worker import WorkerPool

    limits = config.limits
    tokens = Tokens(config.tokens)
    state: dict = {}

    @contextlib.asynccontextmanager
    async def lifespan(app):
        lock = _lock(config.db)
        store = Store(config.db)
        for pem_path in config.retired_keys:
            pub = load_public(pem_path)
            pem = pub.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()
            store.add_retired_key(key_id(pub), pem)
        pub = load_private(config.key).public_key()  # only the public half stays in this process
        state["keyid"] = key_id(pub)
        store.set_active_key(state["keyid"], pub.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode())
        n = store.requeue()
        if n:
            print(f"sigmacert serve: {n} job(s) left running by a previous server re-queued", flush=True)
        pool = WorkerPool(store, config.db, config.key, config.workers, state["keyid"])
        pool.start()
        sigma_pool, verify_pool = Pool(1, 8), Pool(1, 4)
        state.update(store=store, workers=pool, sigma=SigmaService(store, sigma_pool, config.sigma_wait,
                                                                   config.sigma_timeout),
                     verify_pool=verify_pool, limiter=RateLimiter(config.verify_per_minute, config.verify_burst))
        try:
            yield
        finally:
            pool.stop()
            sigma_pool.shutdown()
            verify_pool.shutdown()
            os.close(lock)

    app = FastAPI(title="sigmacert certification service", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # /docs is served below from local assets (no CDN)
                  description="Issues, archives and verifies certificates that a noise multiplier meets a "
                              "TV target for DP-SGD with random allocation (docs/service.md).")
    app.add_middleware(BodyLimit, default=config.max_body, verify=MAX_ENVELOPE + 1024)
    app.add_middleware(SigmaCache)  # outermost: a cached sigma never reaches the framework

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc):
        return JSONResponse({"detail": describe_errors(exc.errors())}, 422)

    @app.exception_handler(ParameterError)
    async def _bad_param(request, exc):
        return JSONResponse({"detail": str(exc)}, 422)

    @app.exception_handler(Busy)
    async def _busy(request, exc):
        return JSONResponse({"detail": "too many computations in flight; retry shortly"}, 429,
                            headers={"Retry-After": "5"})

    @app.exception_handler(Exception)
    async def _internal(request, exc):  # last resort: logged by uvicorn, never shown
        return JSONResponse({"detail": "internal error"}, 500)

    def store() -> Store:
        return state["store"]

    def caller(authorization: str | None = Header(None, include_in_schema=False)) -> str:
        if not tokens.configured:
            raise ApiError(401, "this server has no API tokens (start it with --tokens FILE; "
                                "create one with `sigmacert token create`)", {"WWW-Authenticate": "Bearer"})
        name = tokens.check(authorization)
        if name is None:
            raise ApiError(401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"})
        return name

    def job_or_404(jid: str) -> dict:
        row = store().get(jid) if len(jid) <= 64 else None
        if row is None:
            raise ApiError(404, f"no certificate job {jid[:64]!r}")
        return row

    # ------------------------------------------------------------------ pages and health
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page():
        return Response(_page("index.html"), media_type="text/html; charset=utf-8", headers={
            "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                                       "img-src 'self' data:; frame-ancestors 'none'"})

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str):
        types = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
        if name not in types:
            raise ApiError(404, "not found")
        return Response(_page(name), media_type=types[name])

    @app.get("/docs", include_in_schema=False)
    def docs():  # Swagger UI from the swagger-ui-bundle package: works offline
        return get_swagger_ui_html(openapi_url="/openapi.json", title="sigmacert API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon-32x32.png")

    @app.get("/docs-assets/{name}", include_in_schema=False)
    def docs_assets(name: str):
        types = {"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
                 "swagger-ui.css": "text/css; charset=utf-8", "favicon-32x32.png": "image/png"}
        if name not in types:
            raise ApiError(404, "not found")
        return Response((swagger_ui_path / name).read_bytes(), media_type=types[name],
                        headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/healthz", summary="liveness and queue counts")
    def healthz():
        workers = state["workers"]
        alive = sum(p.poll() is None for p, _, _ in workers.procs.values())
        return {"ok": True, "version": __version__, "keyid": state["keyid"], "workers": alive,
                "jobs": store().counts()}

    # ------------------------------------------------------------------ certificates
    @app.post("/v1/certificates", status_code=202, summary="request a certificate (bearer token)")
    def submit(body: CertificateRequest, who: str = Depends(caller)):
        req = normalise(body, limits)
        row, created = store().submit(req, who)
        if row["status"] in ("done", "failed"):  # the archived answer, at once
            return JSONResponse(job_view(row), 200)
        return JSONResponse({"id": row["id"], "status": row["status"], "created": created}, 202,
                            headers={"Location": f"/v1/certificates/{row['id']}"})

    @app.get("/v1/certificates/{jid}", summary="status, progress, reason or the signed envelope")
    def get_job(jid: str):
        return job_view(job_or_404(jid))

    @app.get("/v1/certificates/{jid}/envelope", summary="the certificate file (DSSE envelope)")
    def get_envelope(jid: str):
        row = job_or_404(jid)
        if row["status"] != "done":
            raise ApiError(409, f"certificate {jid} is {row['status']}, not done")
        return Response(row["envelope"].encode() + b"\n", media_type="application/json",
                        headers={"Content-Disposition": f'attachment; filename="{jid}.json"'})

    @app.delete("/v1/certificates/{jid}", summary="cancel a queued or running job (bearer token)")
    def cancel(jid: str, who: str = Depends(caller)):
        job_or_404(jid)
        changed, status = store().cancel(jid)
        if not changed:
            raise ApiError(409, f"certificate {jid} is {status}; only queued or running jobs can be cancelled")
        return job_view(store().get(jid), full=False)

    @app.get("/v1/certificates", summary="archive listing (newest first, paginated)")
    def listing(steps: str | None = None, epochs: str | None = None, target: str | None = None,
                status: str | None = None, limit: int = Query(50, ge=1, le=200),
                offset: int = Query(0, ge=0, le=10**9)):
        if status is not None and status not in STATUSES:
            raise ParameterError(f"status must be one of {', '.join(STATUSES)}")
        flt = {"steps": None if steps is None else steps_of(steps, limits),
               "epochs": None if epochs is None else epochs_of(epochs, limits),
               "target": None if target is None else target_of(target, limits), "status": status}
        rows, total = store().listing(**flt, limit=limit, offset=offset)
        nxt = offset + limit if offset + limit < total else None
        return {"items": [job_view(r, full=False) for r in rows], "total": total, "limit": limit,
                "offset": offset, "next_offset": nxt}

    # ------------------------------------------------------------------ keys, verify, sigma
    @app.get("/v1/keys", summary="issuer public keys, the active one first, then retired ones")
    def keys():
        return {"keys": [{"keyid": k["keyid"], "public_pem": k["public_pem"],
                          "status": "retired" if k["retired_at"] else "active",
                          "added_at": _iso(k["added_at"]), "retired_at": _iso(k["retired_at"])}
                         for k in store().keys()]}

    @app.post("/v1/verify", summary="verify a certificate (the DSSE envelope as the JSON body); rate limited")
    async def verify(request: Request, subject_sha256: str | None = Query(None, pattern=r"^[0-9a-f]{64}$")):
        client = request.client.host if request.client else "?"
        wait = state["limiter"].take(client)
        if wait > 0:
            return JSONResponse({"detail": f"rate limit: at most {config.verify_per_minute:g} verifications "
                                           f"per minute; retry in {wait:.0f} s"}, 429,
                                headers={"Retry-After": str(max(1, int(wait + 0.999)))})
        data = await request.body()
        try:
            env = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            env = None
        if not isinstance(env, dict):
            raise ApiError(422, "body must be a certificate: a DSSE envelope JSON object")
        pems = [k["public_pem"].encode() for k in await asyncio.to_thread(store().keys)]
        try:
            return await state["verify_pool"].run(verify_task, data, pems, subject_sha256,
                                                  config.verify_timeout, timeout=config.verify_timeout + 30)
        except asyncio.TimeoutError:
            raise ApiError(422, "verification did not finish in time") from None

    @app.get("/v1/sigma", summary="closed-form and exact sigma for a cell (cached)")
    async def sigma(steps: str, epochs: str, target: str):
        m, e, t = steps_of(steps, limits), epochs_of(epochs, limits), target_of(target, limits)
        from certifier.closed_form import closed_form_sigma
        try:
            closed = closed_form_sigma(m, e, float(t))
        except (ValueError, ArithmeticError, OverflowError) as err:
            raise ApiError(422, f"closed form undefined for this cell: {err}") from None
        ex = await state["sigma"].exact(m, e, t)
        body = {"steps": m, "epochs": e, "target": t, "closed_form": closed, **ex,
                "resolution": "1e-6"}
        if ex.get("exact_status") == "pending":
            return JSONResponse(body, 202, headers={"Retry-After": "10"})
        return body

    return app
