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
from collections.abc import Callable, Sequence
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


WORKER_SPEC = "URNA_SERVE_WORKER_SPEC"
"""The environment variable that hands ``run_workers``' files and options to each process."""
_WORKER = "from urna.serve.app import serve_worker; serve_worker()"
_WORKER_FD = "URNA_SERVE_WORKER_FD"  # the bound socket one process inherits
_PARENT = "URNA_SERVE_PARENT"  # its pid: a parent gone before the child looked is seen too
_THREAD_POOLS = ("URNA_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def run_workers(files: list[str], workers: int, *, host: str = "127.0.0.1", port: int = 8077,
                reload_check_ms: int = 1000, max_body: int = MAX_BODY,
                threads: int | None = None, batch_window_ms: float = WINDOW_S * 1e3,
                batch_max: int = MAX_BATCH, log_level: str = "warning",
                token: str | None = None, cors_origins: Sequence[str] = (),
                time_limit: float | None = None) -> int:
    """Serve ``files`` from ``workers`` processes on one port until SIGINT / SIGTERM, which
    ends them all, as does the exit of any one of them; returns the exit status.

    A request is mostly Python holding its process's GIL, so one process answers one request
    at a time whatever its threads; several processes answer several at once. Each opens and
    checks the files itself (:func:`serve_worker`) and binds its own socket with
    ``SO_REUSEPORT`` (bound here, :func:`shared_port_sockets`), so the kernel spreads new
    connections over the processes: with one shared socket, the process that wakes first
    accepts every waiting connection, and a client's kept-alive connections all land on it.
    """
    import signal
    import subprocess
    import sys
    import time

    spec = json.dumps({
        "files": list(files), "reload_check_ms": reload_check_ms, "max_body": max_body,
        "threads": threads, "batch_window_ms": batch_window_ms, "batch_max": batch_max,
        "log_level": log_level, "token": token, "cors_origins": list(cors_origins),
        "time_limit": time_limit})
    # The cores shared out: each process's scan threads and BLAS pool (whose idle threads
    # spin) at cores / workers, unless the caller set them. With two processes of two BLAS
    # threads each on two cores, the 100,000-chunk exact load fell from 215 to 61 requests/s.
    share = str(max(1, (os.cpu_count() or 1) // workers))
    pools = {name: share for name in _THREAD_POOLS if name not in os.environ}
    sockets = shared_port_sockets(host, port, workers)  # here: a taken port fails this call
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    procs: list[subprocess.Popen] = []
    status = 0
    try:
        try:
            for sock in sockets:
                procs.append(subprocess.Popen(
                    [sys.executable, "-c", _WORKER], pass_fds=[sock.fileno()],
                    env={**os.environ, **pools, WORKER_SPEC: spec,
                         _WORKER_FD: str(sock.fileno()), _PARENT: str(os.getpid())}))
        finally:
            for sock in sockets:
                sock.close()  # each process holds its own now
        while not stopping:
            ended = [p.returncode for p in procs if p.poll() is not None]
            if ended:  # one process down: the others are ended too, and its status returned
                status = ended[0] or 1
                break
            time.sleep(0.1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)  # uvicorn's graceful shutdown
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status


def shared_port_sockets(host: str, port: int, count: int) -> list[Any]:
    """``count`` sockets bound to ``host:port``, sharing it (``SO_REUSEPORT``), not listening
    yet; OSError when the port is taken, even by another such group (which would otherwise
    be joined). Each process's server listens once its files are open: the kernel spreads
    connections over listening sockets only, so none waits for a process still starting."""
    import socket

    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:  # without SO_REUSEPORT: any holder fails it
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)
        address = probe.getsockname()  # port 0: the one the system chose, for all of them
    out = []
    try:
        for _ in range(count):
            sock = socket.socket(family, kind, proto)
            out.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(address)
    except OSError:
        for sock in out:
            sock.close()
        raise
    return out


def _exit_with_parent(parent: int) -> None:
    """End this process (SIGTERM: uvicorn's shutdown) once ``parent`` is gone."""
    import signal
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="urna-parent-watch", daemon=True).start()


def serve_worker() -> None:
    """One ``run_workers`` process: the files opened and warmed as ``urna serve`` opens them,
    the options of ``URNA_SERVE_WORKER_SPEC``, the bound socket it inherited (uvicorn's
    server listens on it once it starts)."""
    import socket

    import uvicorn

    from ..runtime.resident import prepare_resident_server
    from .registry import ReloadingCorpora
    from .security import PUBLIC_PAGE, protect

    _exit_with_parent(int(os.environ[_PARENT]))
    spec = json.loads(os.environ[WORKER_SPEC])
    sock = socket.socket(fileno=int(os.environ[_WORKER_FD]))
    corpora = ReloadingCorpora(spec["files"], check_ms=spec["reload_check_ms"])
    try:
        corpora.warm()
        prepare_resident_server(corpora.files())  # after warm(): compiled while it serves
        app = protect(create_app(corpora, max_body=spec["max_body"], threads=spec["threads"],
                                 batch_window_ms=spec["batch_window_ms"],
                                 batch_max=spec["batch_max"]),
                      public=PUBLIC_PAGE, token=spec["token"],
                      cors_origins=spec["cors_origins"], time_limit=spec["time_limit"])
        server = uvicorn.Server(uvicorn.Config(app, log_level=spec["log_level"]))
        server.run(sockets=[sock])
    finally:
        corpora.close()


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

    prepare_resident_server(corpora.files())  # kept heap pages, kernels prepared meanwhile

    app = protect(create_app(corpora, max_body=max_body, threads=threads,
                             batch_window_ms=batch_window_ms, batch_max=batch_max),
                  public=PUBLIC_PAGE, **security)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        corpora.close()
