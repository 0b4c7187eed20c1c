"""The Starlette app of ``urna serve``: JSON API, OpenAPI document, the web page, and ``run``.

Routes are thin: read a bounded body, parse JSON, hand it to :mod:`urna.serve.corpora` in a
worker thread (searches are CPU work, kept off the event loop), and render the dict or the
:class:`ApiError`. Every failure a client can cause is a 4xx JSON error; an unexpected one
is a 500 with the same shape and no traceback in the body.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
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

from .batching import MAX_BATCH, WINDOW_S, MicroBatcher
from .corpora import ApiError, Corpora, Corpus, ExactQuery
from .openapi import document

MAX_BODY = 1 << 20
"""Largest request body accepted, in bytes (a 4096-dim query in JSON is ~100 KB)."""
LOOPBACK = ("127.0.0.1", "::1", "localhost")
STATIC = resources.files("urna.serve") / "static"
log = logging.getLogger("urna.serve")
# A POST route's work on one corpus: (corpus, parsed body) -> the answer or a planned query.
Handler = Callable[[Corpus, Any], Any]


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


def default_threads() -> int:
    """Worker threads by default: one per core (the heavy parts release the GIL)."""
    return max(1, min(64, os.cpu_count() or 1))


def create_app(corpora: Corpora, *, max_body: int = MAX_BODY, threads: int | None = None,
               batch_window_ms: float = WINDOW_S * 1e3,
               batch_max: int = MAX_BATCH) -> Starlette:
    """The ASGI app serving ``corpora`` (the caller owns them and closes them).

    At most ``threads`` worker calls run at once (default: one per core). Concurrent exact
    queries on a large file share one scan (:mod:`urna.serve.batching`): one scan is bound by
    memory bandwidth, so two at once each take as long as one alone, while one matrix product
    over several queries reads the rows once. ``batch_max=1`` turns that off.
    """
    limiter = anyio.CapacityLimiter(default_threads() if threads is None else threads)
    batcher = (MicroBatcher(lambda fn, *a: in_worker(fn, *a), window_s=batch_window_ms / 1e3,
                            max_batch=batch_max) if batch_max > 1 else None)

    async def in_worker(fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=limiter)

    async def answer(name: str, planner: Handler, body: Any, b: MicroBatcher) -> Any:
        """The lease, the checks and the plan in a worker; a shared scan when it is one."""
        with contextlib.ExitStack() as stack:
            def plan() -> Any:
                return planner(stack.enter_context(corpora.lease(name)), body)

            out = await in_worker(plan)
            if isinstance(out, ExactQuery):
                out = await b.submit(out.key, out, out.corpus.answer_batch)
                if isinstance(out, ApiError):
                    raise out
            return out

    def post(handler: Handler, planner: Handler) -> Callable[[Request], Any]:
        """A POST route: ``handler(corpus, body)``, or ``planner``'s shared scan when batching."""
        async def endpoint(request: Request) -> Response:
            try:
                name = request.path_params["name"]
                corpora.get(name)  # an unknown corpus is a 404 before the body is read
                if batcher is None:
                    body = await _body(request, max_body)
                    out = await in_worker(corpora.call, name, lambda c: handler(c, body))
                else:
                    with batcher.request():
                        body = await _body(request, max_body)
                        out = await answer(name, planner, body, batcher)
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
        return JSONResponse(await in_worker(corpora.call, name, Corpus.inspect))

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
        Route("/api/corpora/{name}/search", post(Corpus.search, Corpus.plan_search),
              methods=["POST"]),
        Route("/api/corpora/{name}/retrieve", post(Corpus.retrieve, Corpus.plan_retrieve),
              methods=["POST"]),
        Route("/api/corpora/{name}/cite", post(Corpus.cite, Corpus.cite), methods=["POST"]),
        Route("/api/corpora/{name}/inspect", inspect, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]
    app = Starlette(routes=routes,
                    exception_handlers={HTTPException: http_error, Exception: server_error})
    app.state.batcher = batcher  # its calls / items counters say how much was shared
    return app


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    return host in LOOPBACK or host.startswith("127.")


def run(corpora: Corpora, *, host: str = "127.0.0.1", port: int = 8077,
        max_body: int = MAX_BODY, threads: int | None = None,
        batch_window_ms: float = WINDOW_S * 1e3, batch_max: int = MAX_BATCH,
        log_level: str = "warning", **security: Any) -> None:
    """Serve ``corpora`` with uvicorn until interrupted, then close them.

    ``security`` goes to :func:`urna.serve.security.protect` (token, cors_origins, time_limit).
    """
    import uvicorn

    from ..runtime.resident import prepare_resident_server
    from .security import PUBLIC_PAGE, protect

    prepare_resident_server()  # kept heap pages, compiled kernels loading meanwhile

    app = protect(create_app(corpora, max_body=max_body, threads=threads,
                             batch_window_ms=batch_window_ms, batch_max=batch_max),
                  public=PUBLIC_PAGE, **security)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        corpora.close()
