"""Error answers: every failure is a JSON `detail` of one line with a 4xx, never a traceback."""
from __future__ import annotations

import sqlite3
import time

from fastapi import FastAPI, HTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from certifier.params import ParameterError
from service.compute import BusyError
from service.validate import describe_errors


class ApiError(HTTPException):
    """A 4xx with its one-line reason (and optional headers)."""


def install(app: FastAPI) -> None:
    """Bad input -> 422 with the reason; a full lane -> 429; anything unforeseen -> a bare 500."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc):
        return JSONResponse({"detail": describe_errors(exc.errors())}, 422)

    @app.exception_handler(ParameterError)
    async def _bad_param(request, exc):
        return JSONResponse({"detail": str(exc)}, 422)

    @app.exception_handler(BusyError)
    async def _busy(request, exc):
        return JSONResponse({"detail": "too many computations in flight; retry shortly"}, 429,
                            headers={"Retry-After": "5"})

    @app.exception_handler(sqlite3.Error)
    async def _storage(request, exc):  # the archive cannot be read or written: say so, retryable
        return storage_unavailable(request, exc)

    @app.exception_handler(Exception)
    async def _internal(request, exc):  # last resort: logged by uvicorn, never shown
        if isinstance(exc, OSError) or isinstance(exc.__cause__ or exc.__context__, sqlite3.Error):
            return storage_unavailable(request, exc)
        return JSONResponse({"detail": "internal error"}, 500)


def storage_unavailable(request, exc) -> JSONResponse:
    """503 with the reason; remembered (app.state.storage_failure) so that /healthz reports a write that just
    failed even when its own small write still fits (a full disk: SQLite's log may have room for one row)."""
    request.app.state.storage_failure = (time.monotonic(), one_line(exc))
    return JSONResponse({"detail": f"storage unavailable: {one_line(exc)}"}, 503, headers={"Retry-After": "30"})


def one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
