"""The Catalog: shards opened together and searched as one corpus (a ``Searcher``).

Every search fans out to the shards (``fanout``) and the per-shard top-k lists are merged by
exact score with a deterministic tie-break: score descending, then shard order in the catalog,
then the chunk's ordinal inside its shard. Each shard's exact top-k contains every chunk of
that shard in the global top-k, so an exact search over a catalog returns the same hits as one
file holding every chunk. The approximate paths (HNSW beam, BM25 shortlist) and the routed
query run per shard, each shard routing by its own sections (``runtime.routing``), so their
candidates can differ from one big file's; every score is still the exact cosine. Hits keep
the citation of the shard they came from; :meth:`Catalog.cite` resolves it on that shard.
Pure BM25 search is refused: BM25 scores use each shard's own statistics and do not compare.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import CatalogError, CitationError
from ...format.citation import ResolvedCitation
from ...format.identity import parse_citation
from ..file import UrnaFile
from ..hits import STORED_PRECISION, RetrieveHit, SearchExplain, SearchHit, SearchResult
from .document import read_catalog
from .fanout import Fanout, Shard, ShardInfo, open_fanout

Ranked = tuple[SearchResult, list[int]]  # one shard's result and each hit's ordinal there


def _ranked(search: Callable[[UrnaFile], SearchResult]) -> Callable[[Shard], Ranked]:
    def call(shard: Shard) -> Ranked:
        res = search(shard.file)
        table = shard.ordinals()
        return res, [table[h.chunk_id] for h in res.hits]
    return call


def _ranked_batch(queries: Any, k: int) -> Callable[[Shard], list[Ranked]]:
    def call(shard: Shard) -> list[Ranked]:
        table = shard.ordinals()
        return [(r, [table[h.chunk_id] for h in r.hits])
                for r in shard.file.search_batch(queries, k)]
    return call


def _same(values: list[str], mixed: str = "mixed") -> str:
    kinds = set(values)
    return kinds.pop() if len(kinds) == 1 else mixed


def merge(per_shard: list[Ranked], k: int, population: int, ms: float) -> SearchResult:
    """The k best hits over shards by (-score, shard, ordinal) and their combined envelope.

    Candidate counts and budgets are summed over shards; ``truncated`` is ``k < population``
    (the chunks, or a space's vectors, over all shards), as for one file.
    """
    # fused lists (every shard fused, each with its own BM25 statistics) merge by fused score:
    # each shard's fused score is a z-score over its own pool, so the scales meet; a mix of
    # fused and cosine-ordered shards merges by cosine, the one score every hit has
    by_fused = all(h.fused_score is not None for res, _ in per_shard for h in res.hits)
    keyed = [(-(h.fused_score if by_fused else h.score), s, o, h)
             for s, (res, ords) in enumerate(per_shard)
             for o, h in zip(ords, res.hits, strict=True)]
    keyed.sort(key=lambda t: t[:3])
    results = [res for res, _ in per_shard]
    ex = [r.explain for r in results]
    sources = {e.rerank_source for e in ex}
    recall = 1.0 if all(r.recall == 1.0 for r in results) else math.nan
    explain = SearchExplain(
        _same([e.route for e in ex]), sum(e.exact_candidates for e in ex),
        sum(e.ann_candidates for e in ex), sum(e.bm25_candidates for e in ex),
        sum(e.graph_candidates for e in ex), _same([e.fusion_mode for e in ex]),
        sources.pop() if len(sources) == 1 else STORED_PRECISION,
        1.0 if all(e.recall_estimate == 1.0 for e in ex) else math.nan)
    budgets = [r.candidate_budget for r in results]
    budget = None if any(b is None for b in budgets) else \
        {key: sum(b[key] for b in budgets if b is not None) for key in budgets[0] or {}}
    return SearchResult([t[3] for t in keyed[:k]], _same([r.index_type for r in results]),
                        recall, k < population, k, ms, explain, results[0].space, budget)


class Catalog:
    """Shards opened together and searched as one corpus. Use :func:`open_catalog`.

    ``engine="threads"`` maps every shard in this process (``shards`` holds the UrnaFiles);
    ``engine="ray"`` opens each shard in a Ray actor that holds its map (``shards`` is empty,
    the actors answer), for shards spread over a cluster's nodes.
    """

    def __init__(self, path: str | os.PathLike, *, max_workers: int | None = None,
                 engine: str = "threads") -> None:
        if engine not in ("threads", "ray"):
            raise ValueError(f"engine must be 'threads' or 'ray', not {engine!r}")
        self.path, self.engine = os.fspath(path), engine
        self._closed = True
        self.document = read_catalog(path)
        base = Path(self.path).parent
        entries = self.document["shards"]
        folder = base.resolve() if engine == "ray" else base  # actors may run elsewhere
        self._fan: Fanout = open_fanout(
            engine, [(str(folder / e["file"]), i, e) for i, e in enumerate(entries)], max_workers)
        try:
            _same_model(self._fan.infos)
        except BaseException:
            self._fan.close()
            raise
        self.shard_info: list[ShardInfo] = self._fan.infos
        self.shards: list[UrnaFile] = self._fan.files
        self._closed = False

    # -- lifetime ---------------------------------------------------------------------

    def close(self) -> None:
        """Close every shard, the thread pool or the actors (idempotent)."""
        if not self._closed:
            self._closed = True
            self._fan.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Catalog {self.path!r} shards={len(self.shard_info)} n={self.n_embeddings}>"

    def _fanout(self) -> Fanout:
        if self._closed:
            raise ValueError("I/O operation on closed Catalog")
        return self._fan

    # -- properties (the Searcher protocol) ---------------------------------------------

    name = property(lambda self: self.document["name"], doc="Corpus name.")
    catalog_hash = property(lambda self: self.document["catalog_hash"], doc="The catalog's hash.")
    content_hash = property(lambda self: self.document["catalog_hash"],
                            doc="The catalog's identity (hits carry their shard's content_hash).")
    n_embeddings = property(lambda self: sum(s.n_chunks for s in self.shard_info),
                            doc="Chunks across all shards.")
    embedding_dim = property(lambda self: self.shard_info[0].embedding_dim, doc="Vector width.")
    model_hash = property(lambda self: self.shard_info[0].model_hash, doc="The shards' model_hash.")
    embedding_model = property(lambda self: self.shard_info[0].embedding_model, doc="Text model.")
    has_ann = property(lambda self: all(s.has_ann for s in self.shard_info),
                       doc="Every shard has HNSW.")
    has_bm25 = property(lambda self: all(s.has_bm25 for s in self.shard_info),
                        doc="Every shard has BM25.")
    has_graph = property(lambda self: all(s.has_graph for s in self.shard_info),
                         doc="Every shard has a graph.")

    @property
    def dtype(self) -> str:
        """The stored dtype when every shard shares it, else ``"mixed"``."""
        return _same([s.dtype for s in self.shard_info])

    @property
    def index_type(self) -> str:
        """The shards' declared index type when they share it, else ``"mixed"``."""
        return _same([s.index_type for s in self.shard_info])

    @property
    def space_names(self) -> list[str]:
        """The spaces every shard carries, in the first shard's order."""
        common = set.intersection(*(set(s.space_names) for s in self.shard_info))
        return [n for n in self.shard_info[0].space_names if n in common]

    @property
    def has_spaces(self) -> bool:
        """Whether every shard carries at least one common named space."""
        return bool(self.space_names)

    def inspect(self) -> dict[str, Any]:
        """The catalog document, the shared manifest (first shard's) and each shard's hashes."""
        first = self._fanout().on(0, lambda s: s.file.inspect())
        return {"catalog": self.document, "manifest": dict(first["manifest"]),
                "shards": [{"file": s.file, "file_hash": s.file_hash,
                            "content_hash": s.content_hash, "n_chunks": s.n_chunks}
                           for s in self.shard_info]}

    def validate(self, *, full: bool = False) -> bool:
        """Every shard's ``validate(full=...)`` (the document was checked at open)."""
        return all(self._fanout().each(lambda s: s.file.validate(full=full)))

    def chunk_ids(self) -> list[str]:
        """Chunk ids of every shard, shard by shard in catalog order."""
        return [c for ids in self._fanout().each(lambda s: s.file.chunk_ids()) for c in ids]

    def texts(self) -> list[str]:
        """Stored texts of every shard, shard by shard in catalog order."""
        return [t for ts in self._fanout().each(lambda s: s.file.texts()) for t in ts]

    # -- searches: fan out, then merge -----------------------------------------------------

    def _merged(self, k: int, search: Callable[[UrnaFile], SearchResult],
                population: int | None = None) -> SearchResult:
        t0 = time.perf_counter()
        per_shard = self._fanout().each(_ranked(search))
        n = self.n_embeddings if population is None else population
        return merge(per_shard, k, n, (time.perf_counter() - t0) * 1000.0)

    def search(self, query: Any, k: int) -> SearchResult[SearchHit]:
        """Exact top-k over every shard; equals one file holding all the chunks."""
        return self._merged(k, lambda f: f.search(query, k))

    def search_ann(self, query: Any, k: int, ef: int) -> SearchResult[SearchHit]:
        """Each shard's HNSW top-k (exact rerank), merged by score."""
        return self._merged(k, lambda f: f.search_ann(query, k, ef))

    def search_hybrid(self, query: Any, query_text: str, k: int, candidates: int, *,
                      rank: str = "cosine") -> SearchResult[SearchHit]:
        """Each shard's hybrid top-k (``candidates`` per path per shard), merged by score."""
        return self._merged(k, lambda f: f.search_hybrid(query, query_text, k, candidates,
                                                         rank=rank))

    def search_graph(self, query: Any, k: int, hops: int = 1, ef: int = 100, *,
                     rank: str = "cosine",
                     query_text: str | None = None) -> SearchResult[SearchHit]:
        """Each shard's graph search (edges never cross shards), merged by score."""
        return self._merged(k, lambda f: f.search_graph(query, k, hops, ef, rank=rank,
                                                        query_text=query_text))

    def search_space(self, name: str, query: Any, k: int,
                     expected_model_hash: str | None = None) -> SearchResult[SearchHit]:
        """Each shard's exact search of space ``name`` (SpaceNotFound if a shard lacks it)."""
        t0 = time.perf_counter()
        per_shard = self._fanout().each(
            _ranked(lambda f: f.search_space(name, query, k, expected_model_hash)))
        population = sum(r.explain.exact_candidates for r, _ in per_shard)
        return merge(per_shard, k, population, (time.perf_counter() - t0) * 1000.0)

    def search_bm25(self, query_text: str, k: int) -> SearchResult[SearchHit]:
        """Refused: BM25 scores use each shard's own statistics, so they cannot be merged."""
        raise CatalogError("search_bm25 cannot span a catalog: BM25 scores use each shard's own "
                           "statistics (IDF, average length) and do not compare across shards; "
                           "use search_hybrid, whose scores are exact cosines")

    def search_routed(self, query: Any, k: int, candidates: int | None = None, hops: int = 1,
                      ef: int = 100, query_text: str | None = None, *,
                      rank: str = "cosine") -> SearchResult[SearchHit]:
        """Each shard's routed search (its own route), merged by score."""
        return self._merged(k, lambda f: f.search_routed(query, k, candidates, hops, ef,
                                                         query_text, rank=rank))

    def search_batch(self, queries: Any, k: int) -> list[SearchResult[SearchHit]]:
        """Exact top-k for many queries (each shard's batch screen), merged per query."""
        t0 = time.perf_counter()
        rows = queries if isinstance(queries, np.ndarray) else list(queries)
        per_shard = self._fanout().each(_ranked_batch(rows, k))
        ms = (time.perf_counter() - t0) * 1000.0
        n = self.n_embeddings
        return [merge([shard[i] for shard in per_shard], k, n, ms)
                for i in range(len(per_shard[0]))]

    def retrieve(self, query: Any, k: int, candidates: int | None = None, hops: int = 1,
                 ef: int = 100, expected_model_hash: str | None = None,
                 query_text: str | None = None, *,
                 rank: str = "cosine") -> SearchResult[RetrieveHit]:
        """Each shard's routed retrieve, merged by score; hits carry their shard's citation."""
        return self._merged(k, lambda f: f.retrieve(
            query, k, candidates=candidates, hops=hops, ef=ef,
            expected_model_hash=expected_model_hash, query_text=query_text, rank=rank))

    def cite(self, citation: str) -> ResolvedCitation:
        """Resolve a citation on the shard whose content_hash it names."""
        expected, _ = parse_citation(citation)
        for i, s in enumerate(self.shard_info):
            if s.content_hash == expected:
                return self._fanout().on(i, lambda sh: sh.file.cite(citation))
        raise CitationError(f"content_hash {expected} is not a shard of this catalog")


def _same_model(infos: list[ShardInfo]) -> None:
    for attr in ("model_hash", "embedding_dim", "embedding_model"):
        values = sorted({str(getattr(s, attr)) for s in infos})
        if len(values) > 1:
            raise CatalogError(f"shards disagree on {attr}: {', '.join(values)}")


def open_catalog(path: str | os.PathLike, *, max_workers: int | None = None,
                 engine: str = "threads") -> Catalog:
    """Open ``<name>.catalog.json`` and every shard it lists, checking each against it.

    ``engine="ray"`` holds each shard in a Ray actor (an initialised Ray is used as is).
    """
    return Catalog(path, max_workers=max_workers, engine=engine)
