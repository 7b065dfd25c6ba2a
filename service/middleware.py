"""Pure ASGI middleware: the body size cap (413) and the rendered-bytes cache of /v1/sigma."""
from __future__ import annotations

from fastapi import HTTPException
from fastapi.responses import JSONResponse


class BodyLimit:
    """Pure ASGI: refuse bodies over the cap (413) by Content-Length or by counting the stream."""

    class TooLargeError(HTTPException):
        def __init__(self, limit):
            super().__init__(413, f"request body larger than {limit} bytes")

    def __init__(self, app, default: int, verify: int):
        self.app, self.default, self.verify = app, default, verify

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.verify if scope["path"] == "/v1/verify" else self.default
        for k, v in scope["headers"]:
            if k == b"content-length":
                if not v.isdigit() or int(v) > limit:
                    code, msg = (413, f"request body larger than {limit} bytes") if v.isdigit() else \
                        (400, "bad Content-Length")
                    return await JSONResponse({"detail": msg}, code)(scope, receive, send)
        seen = 0

        async def counted():
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise BodyLimit.TooLargeError(limit)
            return msg

        async def with_headers(msg):
            if msg["type"] == "http.response.start":
                msg.setdefault("headers", [])
                msg["headers"] = list(msg["headers"]) + [(b"x-content-type-options", b"nosniff")]
            await send(msg)

        return await self.app(scope, counted, with_headers)


class SigmaCache:
    """Pure ASGI: answer a repeated GET /v1/sigma from the rendered bytes of its cached answer.

    Only answers the handler marked `"cached":true` (final, exact sigma known) are kept,
    keyed by the raw query string; at most `size` entries (cleared when full)."""

    def __init__(self, app, size: int = 4096):
        self.app, self.size, self.hits = app, size, {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/v1/sigma" or scope["method"] != "GET":
            return await self.app(scope, receive, send)
        qs = scope["query_string"]
        body = self.hits.get(qs)
        if body is not None:
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                (b"x-content-type-options", b"nosniff")]})
            await send({"type": "http.response.body", "body": body})
            return
        status, parts = [0], []

        async def capture(msg):
            if msg["type"] == "http.response.start":
                status[0] = msg["status"]
            elif msg["type"] == "http.response.body":
                parts.append(msg.get("body", b""))
                if not msg.get("more_body") and status[0] == 200:
                    out = b"".join(parts)
                    if b'"cached":true' in out and len(qs) <= 256:
                        if len(self.hits) >= self.size:
                            self.hits.clear()
                        self.hits[qs] = out
            await send(msg)

        return await self.app(scope, receive, capture)
