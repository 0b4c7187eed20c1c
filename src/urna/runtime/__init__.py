"""The runtime: open a .urna file with mmap, search it, cite it (03-runtime).

Every search returns one ``SearchResult`` (a list of hits with its envelope); the route of a
routed query is decided in ``routing``; ``UrnaFile`` and ``catalog.Catalog`` both satisfy the
``Searcher`` protocol; ``stats`` and ``benchmark`` hold what the CLI reports.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from .file import BatchResult, UrnaFile, open_file
    from .hits import RetrieveHit, SearchExplain, SearchHit, SearchResult
    from .searcher import Searcher, open_searcher

# Each name loads its module on first use: a submodule of the runtime (catalog_paths, stats)
# can be imported without the search machinery and numpy's kernels.
_HOMES = {"BatchResult": "file", "UrnaFile": "file", "open_file": "file",
          "RetrieveHit": "hits", "SearchExplain": "hits", "SearchHit": "hits",
          "SearchResult": "hits", "Searcher": "searcher", "open_searcher": "searcher"}

__all__ = ["BatchResult", "RetrieveHit", "SearchExplain", "SearchHit", "SearchResult",
           "Searcher", "UrnaFile", "open_file", "open_searcher"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
