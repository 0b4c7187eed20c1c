"""urna: a vector database in one file, byte-compatible with the .urna v1 reference (0.5.1).

Public surface (same names and signatures as the reference wheel)::

    urna.build(path, embedding_model, embedding_dim, chunker_version, model_hash, chunks, ...)
    f = urna.open(path)            # UrnaFile: search, search_ann, search_hybrid, retrieve, cite
    f = await urna.aopen(path)     # AsyncUrnaFile: the same searches, awaited, off the event loop
    urna.chunk_id(text, source_uri, byte_start, byte_end, chunker_version)

Every search returns a ``SearchResult``: the reference's list of hits, plus how they were
found (index_type, recall, truncated, query_time_ms, explain). ``urna.open_catalog`` opens
shards as one corpus; a file and a catalog both satisfy ``urna.Searcher``.

Every error is a subclass of ``urna.errors.UrnaError`` (a ``ValueError``).
"""

from __future__ import annotations

import os
import sys
import types

from ._version import __version__

# `import urna` keeps typing, pathlib and dataclasses out (format/record.py says why), and
# loads even the errors and the identity on first use: the warm command line's caller
# (``cli.warm``) imports this package and nothing of what it names.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Executor
    from typing import Any

    from . import errors
    from .build import build
    from .errors import UrnaError
    from .format.identity import chunk_id
    from .runtime import RetrieveHit, Searcher, SearchHit, SearchResult, UrnaFile
    from .runtime.aio import AsyncUrnaFile
    from .runtime.catalog import Catalog

__all__ = ["open", "open_catalog", "build", "chunk_id", "UrnaFile", "SearchHit", "RetrieveHit",
           "SearchResult", "Searcher", "UrnaError", "errors", "potion_model_path", "aopen",
           "__version__"]
_RUNTIME_NAMES = ("UrnaFile", "SearchHit", "RetrieveHit", "SearchResult", "Searcher")


def open(path: str | os.PathLike) -> UrnaFile:  # noqa: A001 - the reference's name
    """Open a .urna file read-only (mmap), validating it; returns an UrnaFile."""
    from .runtime import open_file

    return open_file(path)


def open_catalog(path: str | os.PathLike, *, engine: str = "threads",
                 max_workers: int | None = None, version: int | None = None) -> Catalog:
    """Open ``<name>.catalog.json`` and every shard it lists; searches span all shards.

    ``engine="ray"`` holds each shard's map in a Ray actor instead of this process;
    ``version=N`` opens version N of a living catalog (``.add/.remove/.compact`` write one).
    """
    from .runtime.catalog import open_catalog as _open_catalog

    return _open_catalog(path, engine=engine, max_workers=max_workers, version=version)


async def aopen(path: str | os.PathLike, *, executor: Executor | None = None) -> AsyncUrnaFile:
    """Open a .urna file (or ``.catalog.json``) for asyncio: searches run off the event loop."""
    from functools import partial

    from .forge.query import ask
    from .runtime.aio import aopen_with
    from .runtime.searcher import open_searcher

    return await aopen_with(open_searcher, path, text_query=partial(ask, reuse_embedder=True),
                            executor=executor)


def potion_model_path() -> str:
    """Directory of the vendored potion-base-8M table (the default offline embedder)."""
    return os.path.join(os.path.dirname(__file__), "models", "potion-base-8M")


def __getattr__(name: str) -> Any:
    # The runtime (numpy views, kernels) and the writer load on first use, not at `import urna`:
    # a CLI read verb never pays for the writer's imports.
    if name == "build":
        from .build import build as build_fn

        return build_fn
    if name in ("errors", "UrnaError"):
        from .errors import UrnaError as error_class  # `from . import errors` would recurse here

        return sys.modules[f"{__name__}.errors"] if name == "errors" else error_class
    if name == "chunk_id":
        from .format.identity import chunk_id as chunk_id_fn

        return chunk_id_fn
    if name in _RUNTIME_NAMES:
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'urna' has no attribute {name!r}")


class _Package(types.ModuleType):
    """The ``urna`` package, whose ``build`` attribute is always the function.

    Importing the submodule ``urna.build`` (the writer) binds the module on its package; the
    package keeps the function there instead, as ``from .build import build`` did eagerly.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "build" and isinstance(value, types.ModuleType):
            value = value.build
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
