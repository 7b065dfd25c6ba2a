"""Error answers: every failure is a JSON `detail` of one line with a 4xx, never a traceback."""
from __future__ import annotations

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

    @app.exception_handler(Exception)
    async def _internal(request, exc):  # last resort: logged by uvicorn, never shown
        return JSONResponse({"detail": "internal error"}, 500)
