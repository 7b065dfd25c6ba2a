"""The certification service: FastAPI app factory (docs/service.md).

    create_app(Config(db=..., key=..., tokens=...)) -> FastAPI

The app is its routers (service/routes, one per feature), the error answers
(service/errors), two pure ASGI middlewares (body cap, rendered sigma cache) and a
lifespan that opens the explicit state (service/state: archive, key id, workers,
computation lanes, rate limiter) as `app.state.service` and closes it at shutdown.
Handlers only read and write the store; every computation runs in a child process
under a memory and a wall-clock limit (service/sandbox).
"""
from __future__ import annotations

import contextlib
import gc
import sqlite3
import sys

from fastapi import FastAPI

from certifier.door import __version__
from certifier.errors import SigmacertError
from service import errors
from service.config import MAX_ENVELOPE, Config
from service.middleware import BodyLimit, SigmaCache
from service.routes import ROUTERS
from service.state import ServiceState


def _from_environment() -> tuple[Config, ServiceState]:
    """Config and state for `uvicorn --factory`; a bad setting or an unusable archive/key is one line, exit 2."""
    try:
        config = Config.from_env()
        return config, ServiceState.open(config)  # opened here, not in the lifespan: its failures stay one line
    except (SigmacertError, RuntimeError, sqlite3.Error, OSError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(f"sigmacert service: error: {first}", file=sys.stderr)
        raise SystemExit(2) from None


def create_app(config: Config | None = None, state: ServiceState | None = None) -> FastAPI:
    """The app; `state` already opened (sigmacert serve: start-up failures are one line) or opened at start."""
    if config is None:  # `uvicorn --factory service.app:create_app`: read the environment
        config, state = _from_environment()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.service = state if state is not None else ServiceState.open(config)
        gc.freeze()  # start-up objects (modules, app, routes) live for good: keep full collections short
        try:
            yield
        finally:
            app.state.service.close()

    app = FastAPI(title="sigmacert certification service", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # /docs is served from local assets (no CDN)
                  description="Issues, archives and verifies certificates that a noise multiplier meets a "
                              "TV target for DP-SGD with random allocation (docs/service.md).")
    app.add_middleware(BodyLimit, default=config.max_body, verify=MAX_ENVELOPE + 1024)
    app.add_middleware(SigmaCache)  # outermost: a cached sigma never reaches the framework
    errors.install(app)
    for router in ROUTERS:
        app.include_router(router)
    return app
