"""The Searcher protocol: what an UrnaFile and a Catalog both answer.

Callers (the text query of ``urna.forge.query``, the HTTP API, the CLI, later the MCP server,
the TUI and the framework adapters) type against :class:`Searcher`, never ``Any``, so either
a single file or a shard catalog can stand behind them. Every search returns one
``SearchResult``; ``retrieve`` returns the same envelope over RetrieveHits. Every search takes
a keyword ``where=`` filter (``urna.index.filter``; None = no filter).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..format.citation import ResolvedCitation
from .hits import RetrieveHit, SearchHit, SearchResult

if TYPE_CHECKING:  # pragma: no cover
    from .catalog import Catalog
    from .file import UrnaFile

Where = Mapping[str, Any] | None


@runtime_checkable
class Searcher(Protocol):
    """A searchable corpus: one .urna file or a catalog of shards."""

    @property
    def embedding_dim(self) -> int:
        """Vector width."""

    @property
    def n_embeddings(self) -> int:
        """Number of vectors (chunks)."""

    @property
    def dtype(self) -> str:
        """Stored dtype of the embeddings (a catalog of mixed dtypes says ``mixed``)."""

    @property
    def model_hash(self) -> str:
        """The embedding model's hash (the query gate compares against it)."""

    @property
    def content_hash(self) -> str:
        """Citation identity (a catalog's is its catalog_hash; hits carry their shard's)."""

    @property
    def embedding_model(self) -> str:
        """The text embedding model's name."""

    @property
    def index_type(self) -> str:
        """The declared index type."""

    @property
    def has_ann(self) -> bool:
        """Whether the HNSW path is available."""

    @property
    def has_bm25(self) -> bool:
        """Whether the BM25 path is available."""

    @property
    def has_graph(self) -> bool:
        """Whether the graph path is available."""

    @property
    def has_spaces(self) -> bool:
        """Whether named vector spaces are available."""

    @property
    def space_names(self) -> list[str]:
        """Names of the named vector spaces."""

    def search(self, query: Any, k: int, *, where: Where = None) -> SearchResult[SearchHit]:
        """Exact top-k by cosine."""

    def search_ann(self, query: Any, k: int, ef: int, *,
                   where: Where = None) -> SearchResult[SearchHit]:
        """HNSW candidates, exact rerank."""

    def search_hybrid(self, query: Any, query_text: str, k: int, candidates: int, *,
                      where: Where = None,
                      rank: str = "cosine") -> SearchResult[SearchHit]:
        """Vector and BM25 shortlists fused by RRF, exact rerank."""

    def search_bm25(self, query_text: str, k: int, *,
                    where: Where = None) -> SearchResult[SearchHit]:
        """Lexical top-k by BM25."""

    def search_graph(self, query: Any, k: int, hops: int = 1, ef: int = 100, *,
                     where: Where = None, rank: str = "cosine",
                     query_text: str | None = None) -> SearchResult[SearchHit]:
        """Exact seeds expanded over the chunk graph, exact rerank."""

    def search_space(self, name: str, query: Any, k: int, expected_model_hash: str | None = None,
                     *, where: Where = None) -> SearchResult[SearchHit]:
        """Exact search over one named vector space."""

    def search_routed(self, query: Any, k: int, candidates: int | None = None, hops: int = 1,
                      ef: int = 100, query_text: str | None = None, *,
                      where: Where = None,
                      rank: str = "cosine") -> SearchResult[SearchHit]:
        """The route retrieve takes (``runtime.routing``), returning SearchHits."""

    def search_batch(self, queries: Any, k: int, *,
                     where: Where = None) -> Sequence[SearchResult[SearchHit]]:
        """Exact top-k for many queries; equals ``search`` per row."""

    def retrieve(self, query: Any, k: int, candidates: int | None = None, hops: int = 1,
                 ef: int = 100, expected_model_hash: str | None = None,
                 query_text: str | None = None, *,
                 where: Where = None,
                 rank: str = "cosine") -> SearchResult[RetrieveHit]:
        """Routed search whose hits carry their stored text and citation."""

    def cite(self, citation: str) -> ResolvedCitation:
        """Resolve ``urna://<content_hash>/<chunk_id>`` to its text and span."""

    def inspect(self) -> dict[str, Any]:
        """A document describing the corpus (its ``manifest`` key is the text model's)."""

    def validate(self, *, full: bool = False) -> bool:
        """True, or the typed error of the first failed check."""

    def texts(self) -> list[str]:
        """Stored canonical texts in corpus order."""

    def chunk_ids(self) -> list[str]:
        """Chunk ids in corpus order."""


SEARCH_MODES = ("exact", "ann", "hybrid", "graph")
"""The explicit paths a caller may name (``search_by_mode``); ``retrieve`` routes itself."""


def search_by_mode(searcher: Searcher, mode: str, query: Any, k: int, *, text: str = "",
                   ef: int = 100, candidates: int | None = None,
                   hops: int = 1, where: Where = None,
                   rank: str = "cosine") -> SearchResult[SearchHit]:
    """Run the path a caller named (``SEARCH_MODES``); candidates default to max(4k, 64).
    ``where`` narrows every path; ``rank`` orders the hybrid and graph paths (the others have
    no lexical pool)."""
    from .routing import default_candidates

    if mode == "exact":
        return searcher.search(query, k, where=where)
    if mode == "ann":
        return searcher.search_ann(query, k, ef, where=where)
    if mode == "hybrid":
        cand = default_candidates(k) if candidates is None else candidates
        return searcher.search_hybrid(query, text, k, cand, where=where, rank=rank)
    if mode == "graph":
        return searcher.search_graph(query, k, hops, ef, where=where, rank=rank,
                                     query_text=text or None)
    raise ValueError(f"mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}")


def open_searcher(path: str | os.PathLike) -> UrnaFile | Catalog:
    """Open ``path`` as a Searcher: a shard catalog by its ``.catalog.json`` suffix, else a file."""
    from .catalog_paths import is_catalog_path

    if is_catalog_path(path):
        from .catalog import open_catalog

        return open_catalog(path)
    from .file import open_file

    return open_file(path)


if TYPE_CHECKING:  # pragma: no cover - mypy checks that both satisfy the protocol
    def _file_is_a_searcher(f: UrnaFile) -> Searcher:
        return f

    def _catalog_is_a_searcher(c: Catalog) -> Searcher:
        return c
