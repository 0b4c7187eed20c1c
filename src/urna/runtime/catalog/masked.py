"""A segment with tombstones: its searches skip removed rows and still return k live hits.

:class:`MaskedFile` wraps an open segment (an UrnaFile) and answers like one. Each search asks
the segment for ``k + len(tombstones)`` hits (never more than it holds) and drops the
tombstoned ones, so when k live rows exist, k come back: the exact top-k of the live rows,
equal to a file holding only them. The call's other arguments (``where=``, ``rank=`` and any
later option) pass through unchanged: the wrapper only finds ``k`` by name in the wrapped
method's signature. ``chunk_ids``, ``texts`` and ``n_embeddings`` cover the live rows.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..file import UrnaFile
from ..hits import SearchResult

SEARCHES = frozenset({"search", "search_ann", "search_hybrid", "search_bm25", "search_graph",
                      "search_space", "search_routed", "retrieve"})


def _trim(res: SearchResult, dead: frozenset[str], k: int) -> SearchResult:
    hits = [h for h in res if h.chunk_id not in dead][:k]
    return SearchResult(hits, res.index_type, res.recall, res.truncated, k, res.query_time_ms,
                        res.explain, res.space, res.candidate_budget)


class MaskedFile:
    """An open segment whose tombstoned rows never surface (duck-types UrnaFile)."""

    def __init__(self, file: UrnaFile, tombstones: frozenset[str]) -> None:
        self.file, self.tombstones = file, tombstones
        ids = file.chunk_ids()
        self._live = [i for i, c in enumerate(ids) if c not in tombstones]

    @property
    def n_embeddings(self) -> int:
        """Live rows in this segment."""
        return len(self._live)

    def chunk_ids(self) -> list[str]:
        """Live chunk ids in file order."""
        ids = self.file.chunk_ids()
        return [ids[i] for i in self._live]

    def texts(self) -> list[str]:
        """Live stored texts in file order."""
        texts = self.file.texts()
        return [texts[i] for i in self._live]

    def _masked(self, name: str) -> Callable[..., Any]:
        method = getattr(self.file, name)
        sig = inspect.signature(method)
        extra, total = len(self.tombstones), int(self.file.n_embeddings)

        def call(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            k = int(bound.arguments["k"])
            bound.arguments["k"] = min(k + extra, max(total, k))
            return _trim(method(*bound.args, **bound.kwargs), self.tombstones, k)
        return call

    def search_batch(self, queries: Any, k: int, **options: Any) -> list[SearchResult]:
        """Exact top-k of the live rows for many queries (``where=`` passes through)."""
        wide = min(k + len(self.tombstones), max(int(self.file.n_embeddings), k))
        return [_trim(r, self.tombstones, k)
                for r in self.file.search_batch(queries, wide, **options)]

    def __getattr__(self, name: str) -> Any:
        if name in SEARCHES:
            return self._masked(name)
        return getattr(self.file, name)


def masked(file: UrnaFile, tombstones: frozenset[str]) -> UrnaFile:
    """``file`` itself without tombstones, else a MaskedFile standing in for it."""
    if not tombstones:
        return file
    return MaskedFile(file, tombstones)  # type: ignore[return-value]  # duck-typed UrnaFile
