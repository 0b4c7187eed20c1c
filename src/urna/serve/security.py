"""What makes ``urna serve`` (and ``urna mcp --http``) fit to expose: ASGI middlewares.

- :class:`BearerAuth`: ``Authorization: Bearer <token>``, compared in constant time
  (``hmac.compare_digest``); a missing or wrong token is a 401 JSON error. Public paths (the
  page at ``/`` and its ``/static`` files, which hold no corpus data) need no token: the page
  asks for it on the first 401 and keeps it in ``sessionStorage`` for the tab.
- :class:`TimeLimit`: a request still unanswered after N seconds gets a 503 JSON error.
- :class:`AccessLog`: one JSON line per request on stderr (method, path, status, ms, corpus);
  never a header, so never the token.
- CORS is Starlette's ``CORSMiddleware``, on only for the origins given.

:func:`protect` stacks them in the order that matters: the access log outermost (it sees the
401s), CORS next (a preflight needs no token), then auth, then the time limit.
"""

from __future__ import annotations

import hmac
import json
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, TextIO

import anyio

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PUBLIC_PAGE = ("/", "/static/")
"""Paths of ``urna serve`` that need no token: the page and its assets (no corpus data)."""
_CORPUS = re.compile(r"^/api/corpora/([^/]+)/")


async def send_json_error(send: Send, status: int, kind: str, message: str,
                          headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """Answer with the API's error shape ``{"error": {"type", "message"}}``."""
    body = json.dumps({"error": {"type": kind, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def _is_public(path: str, public: Sequence[str]) -> bool:
    """``path`` equals an entry, or lies under one ending in ``/`` (``/`` itself is exact)."""
    return any(path == p or (p != "/" and p.endswith("/") and path.startswith(p))
               for p in public)


class BearerAuth:
    """Refuse (401) every HTTP request without ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str, public: Sequence[str] = ()) -> None:
        if not token:
            raise ValueError("an empty token would let anyone in")
        self.app, self.public = app, tuple(public)
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _is_public(scope["path"], self.public):
            await self.app(scope, receive, send)
            return
        given = b""
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                given = value
        if not hmac.compare_digest(given, self._expected):
            await send_json_error(send, 401, "Unauthorized",
                                  "missing or wrong token: send Authorization: Bearer <token>",
                                  [(b"www-authenticate", b'Bearer realm="urna"')])
            return
        await self.app(scope, receive, send)


class TimeLimit:
    """Answer 503 when the app has not started its response within ``seconds``."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        with anyio.move_on_after(self.seconds) as scoped:
            await self.app(scope, receive, tracking_send)
        if scoped.cancelled_caught and not started:
            await send_json_error(send, 503, "Timeout",
                                  f"the request took longer than {self.seconds:g} s")


class AccessLog:
    """One JSON line per HTTP request: ts, method, path, status, ms, corpus."""

    def __init__(self, app: ASGIApp, stream: TextIO | None = None) -> None:
        self.app, self.stream = app, stream
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0, status, logged = time.perf_counter(), 500, False

        def write() -> None:
            nonlocal logged
            logged = True
            m = _CORPUS.match(scope["path"])
            line = json.dumps({"ts": round(time.time(), 3), "method": scope["method"],
                               "path": scope["path"], "status": status,
                               "ms": round((time.perf_counter() - t0) * 1000.0, 3),
                               "corpus": m.group(1) if m else None})
            with self._lock:
                stream = self.stream or sys.stderr
                stream.write(line + "\n")
                stream.flush()

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                write()  # before the last byte leaves: a client never sees an unlogged answer
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            if not logged:  # the app failed or the client went away mid-response
                write()


def protect(app: ASGIApp, *, token: str | None = None, public: Sequence[str] = (),
            cors_origins: Sequence[str] = (), time_limit: float | None = None,
            access_log: bool = True, log_stream: TextIO | None = None) -> ASGIApp:
    """``app`` behind the auth, CORS, time-limit and access-log layers that are asked for."""
    wrapped: ASGIApp = app
    if time_limit is not None:
        wrapped = TimeLimit(wrapped, time_limit)
    if token:
        wrapped = BearerAuth(wrapped, token, public)
    if cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        wrapped = CORSMiddleware(wrapped, allow_origins=list(cors_origins),  # type: ignore[arg-type]
                                 allow_methods=["GET", "POST"],
                                 allow_headers=["authorization", "content-type"])
    if access_log:
        wrapped = AccessLog(wrapped, log_stream)
    return wrapped
