"""The async API: an opened file whose searches run in worker threads, off the event loop.

``AsyncUrnaFile`` wraps one ``UrnaFile`` (or shard ``Catalog``) shared by every task: the map is
read-only and its searches are thread-safe, so calls run concurrently in a thread pool of the
caller's choice (default: asyncio's). ``aclose`` refuses new calls, waits for the running ones
to finish, then releases the map, so no search ever reads an unmapped page.

The text query (embed with the file's model, gate, route) lives above the runtime, in the
forge; ``urna.aopen`` hands it in as ``text_query`` so this module never imports upward.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

TextQuery = Callable[..., Any]
"""``text_query(file, text, k, **options)`` -> a result with ``.hits`` (``urna retrieve``)."""


class AsyncUrnaFile:
    """An open .urna file for asyncio code; every search is awaited and runs in a thread."""

    def __init__(self, file: Any, *, text_query: TextQuery | None = None,
                 executor: Executor | None = None) -> None:
        self._file = file
        self._text_query = text_query
        self._executor = executor
        self._running = 0
        self._closing = False
        self._idle: asyncio.Event | None = None

    @property
    def file(self) -> Any:
        """The wrapped synchronous ``UrnaFile`` (properties are plain reads, no I/O)."""
        return self._file

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closing

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` in a worker thread, counted so close waits for it."""
        if self._closing:
            raise ValueError("I/O operation on closed AsyncUrnaFile")
        if self._idle is None:
            self._idle = asyncio.Event()
        self._running += 1
        self._idle.clear()
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args,
                                                                                **kwargs))
        finally:
            self._running -= 1
            if self._running == 0:
                self._idle.set()

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await self.run(getattr(self._file, method), *args, **kwargs)

    async def search(self, query: Any, k: int) -> Any:
        """Exact top-k (``UrnaFile.search``)."""
        return await self._call("search", query, k)

    async def search_ann(self, query: Any, k: int, ef: int) -> Any:
        """HNSW candidates reranked by exact cosine (``UrnaFile.search_ann``)."""
        return await self._call("search_ann", query, k, ef)

    async def search_hybrid(self, query: Any, query_text: str, k: int, candidates: int) -> Any:
        """Vector + BM25 fused by RRF, reranked (``UrnaFile.search_hybrid``)."""
        return await self._call("search_hybrid", query, query_text, k, candidates)

    async def search_bm25(self, query_text: str, k: int) -> Any:
        """Pure lexical BM25 (``UrnaFile.search_bm25``)."""
        return await self._call("search_bm25", query_text, k)

    async def search_graph(self, query: Any, k: int, hops: int = 1, ef: int = 100) -> Any:
        """Exact seeds expanded over the chunk graph (``UrnaFile.search_graph``)."""
        return await self._call("search_graph", query, k, hops, ef)

    async def retrieve(self, query: Any, k: int, **kwargs: Any) -> Any:
        """Routed search returning cited hits with text (``UrnaFile.retrieve``)."""
        return await self._call("retrieve", query, k, **kwargs)

    async def cite(self, citation: str) -> Any:
        """A citation resolved to its stored text and span (``UrnaFile.cite``)."""
        return await self._call("cite", citation)

    async def inspect(self) -> dict[str, Any]:
        """The inspect document (``UrnaFile.inspect``)."""
        return dict(await self._call("inspect"))

    async def query(self, text: str, k: int = 10, **options: Any) -> Any:
        """A text question answered as ``urna retrieve FILE TEXT -k K`` does (result.hits)."""
        if self._text_query is None:
            raise ValueError("this AsyncUrnaFile has no text query; open it with urna.aopen")
        return await self.run(self._text_query, self._file, text, k, **options)

    async def aclose(self) -> None:
        """Refuse new calls, wait for the running ones, then close the file (idempotent)."""
        self._closing = True
        if self._running and self._idle is not None:
            await self._idle.wait()
        await asyncio.get_running_loop().run_in_executor(self._executor, self._file.close)

    async def __aenter__(self) -> AsyncUrnaFile:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<AsyncUrnaFile {self._file!r}>"


async def aopen_with(opener: Callable[[Any], Any], path: Any, *,
                     text_query: TextQuery | None = None,
                     executor: Executor | None = None) -> AsyncUrnaFile:
    """Open ``path`` with ``opener`` in a worker thread (validation reads the whole file)."""
    loop = asyncio.get_running_loop()
    file = await loop.run_in_executor(executor, opener, path)
    return AsyncUrnaFile(file, text_query=text_query, executor=executor)
