"""The Starlette app of ``urna serve``: JSON API, OpenAPI document, the web page, and ``run``.

Routes are thin: read a bounded body, parse JSON, hand it to :mod:`urna.serve.corpora` in a
worker thread (searches are CPU work, kept off the event loop), and render the dict or the
:class:`ApiError`. Every failure a client can cause is a 4xx JSON error; an unexpected one
is a 500 with the same shape and no traceback in the body.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from importlib import resources
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .corpora import ApiError, Corpora
from .openapi import document

MAX_BODY = 1 << 20
"""Largest request body accepted, in bytes (a 4096-dim query in JSON is ~100 KB)."""
LOOPBACK = ("127.0.0.1", "::1", "localhost")
STATIC = resources.files("urna.serve") / "static"
log = logging.getLogger("urna.serve")


def _error(e: ApiError) -> JSONResponse:
    return JSONResponse(e.to_dict(), status_code=e.status)


async def _body(request: Request, limit: int) -> Any:
    """The JSON body, refused (413) past ``limit`` bytes before it is all read."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise ApiError(413, "BodyTooLarge", f"request body larger than {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "BodyTooLarge", f"request body larger than {limit} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        raise ApiError(400, "InvalidBody", "the request body is empty; send a JSON object")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ApiError(400, "InvalidJson", f"the request body is not valid JSON: {e}") from None


def create_app(corpora: Corpora, *, max_body: int = MAX_BODY, threads: int = 1) -> Starlette:
    """The ASGI app serving ``corpora`` (the caller owns them and closes them).

    At most ``threads`` searches run at once, the others wait their turn: a large exact scan
    is one BLAS call that already uses every core, and measured on 100,000 x 256 rows, 8
    concurrent scans took 4x longer in total than the same scans one after another.
    """
    limiter = anyio.CapacityLimiter(threads)

    async def in_worker(fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=limiter)

    def post(method: str) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                name = request.path_params["name"]
                corpora.get(name)  # an unknown corpus is a 404 before the body is read
                body = await _body(request, max_body)
                out = await in_worker(corpora.call, name, method, body)
            except ApiError as e:
                return _error(e)
            return JSONResponse(out)

        return endpoint

    async def inspect(request: Request) -> Response:
        try:
            name = request.path_params["name"]
            corpora.get(name)
        except ApiError as e:
            return _error(e)
        return JSONResponse(await in_worker(corpora.call, name, "inspect"))

    async def listing(request: Request) -> Response:
        return JSONResponse(corpora.listing())

    openapi_doc = document(corpora.names())

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_doc)

    async def index(request: Request) -> Response:
        return FileResponse(str(STATIC / "index.html"), media_type="text/html")

    async def http_error(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        kinds = {404: "NotFound", 405: "MethodNotAllowed"}
        return JSONResponse({"error": {"type": kinds.get(status, "HttpError"),
                                       "message": str(getattr(exc, "detail", exc))}},
                            status_code=status, headers=getattr(exc, "headers", None))

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": {"type": "InternalError",
                                       "message": f"{type(exc).__name__} (see the server log)"}},
                            status_code=500)

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/api/corpora", listing, methods=["GET"]),
        Route("/api/corpora/{name}/search", post("search"), methods=["POST"]),
        Route("/api/corpora/{name}/retrieve", post("retrieve"), methods=["POST"]),
        Route("/api/corpora/{name}/cite", post("cite"), methods=["POST"]),
        Route("/api/corpora/{name}/inspect", inspect, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]
    return Starlette(routes=routes,
                     exception_handlers={HTTPException: http_error, Exception: server_error})


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    return host in LOOPBACK or host.startswith("127.")


def run(corpora: Corpora, *, host: str = "127.0.0.1", port: int = 8077,
        max_body: int = MAX_BODY, threads: int = 1, log_level: str = "warning",
        **security: Any) -> None:
    """Serve ``corpora`` with uvicorn until interrupted, then close them.

    ``security`` goes to :func:`urna.serve.security.protect` (token, cors_origins, time_limit).
    """
    import uvicorn

    from .security import PUBLIC_PAGE, protect

    app = protect(create_app(corpora, max_body=max_body, threads=threads), public=PUBLIC_PAGE,
                  **security)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        corpora.close()
