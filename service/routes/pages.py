"""The page (GET /, its script and style) and the API description (/docs, served offline)."""
from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from swagger_ui_bundle import swagger_ui_path

from service.errors import ApiError

router = APIRouter(include_in_schema=False)
STATIC = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
DOCS_ASSETS = {"swagger-ui-bundle.js": "text/javascript; charset=utf-8", "swagger-ui.css": "text/css; charset=utf-8",
               "favicon-32x32.png": "image/png"}
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "frame-ancestors 'none'")


def _static(name: str) -> bytes:
    return resources.files("service").joinpath("static", name).read_bytes()


@router.get("/", response_class=HTMLResponse)
def page():
    return Response(_static("index.html"), media_type="text/html; charset=utf-8",
                    headers={"Content-Security-Policy": CSP})


@router.get("/static/{name}")
def static(name: str):
    if name not in STATIC:
        raise ApiError(404, "not found")
    return Response(_static(name), media_type=STATIC[name])


@router.get("/docs")
def docs():  # Swagger UI from the swagger-ui-bundle package: works offline
    return get_swagger_ui_html(openapi_url="/openapi.json", title="sigmacert API",
                               swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                               swagger_css_url="/docs-assets/swagger-ui.css",
                               swagger_favicon_url="/docs-assets/favicon-32x32.png")


@router.get("/docs-assets/{name}")
def docs_assets(name: str):
    if name not in DOCS_ASSETS:
        raise ApiError(404, "not found")
    return Response((swagger_ui_path / name).read_bytes(), media_type=DOCS_ASSETS[name],
                    headers={"Cache-Control": "public, max-age=86400"})
