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
``where=`` is compiled by each shard against its own metadata schema; a shard that lacks a
field the filter names contributes no hits, and a field no shard knows is UnknownFilterField.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import CatalogError, CitationError, CitationRemoved, UnknownFilterField
from ...format.citation import ResolvedCitation
from ...format.identity import format_citation, parse_citation
from ...index.exact import descending_key
from ..file import UrnaFile, open_file
from ..hits import STORED_PRECISION, RetrieveHit, SearchExplain, SearchHit, SearchResult
from .document import read_catalog
from .fanout import Fanout, Shard, ShardInfo, ShardSpec, open_fanout
from .living import writing
from .versions import (
    History,
    LivingCitation,
    history,
    is_living,
    masks_of,
    records_of,
    summary,
    tombstones_at,
    versions_to,
)

Ranked = tuple[SearchResult, list[int]]  # one shard's result and each hit's ordinal there
Where = Mapping[str, Any] | None


@dataclass(frozen=True)
class UnknownOnShard:
    """A shard's answer when the filter names a field its schema lacks (picklable for Ray)."""

    field: str


def _ranked(search: Callable[[UrnaFile], SearchResult]
            ) -> Callable[[Shard], Ranked | UnknownOnShard]:
    def call(shard: Shard) -> Ranked | UnknownOnShard:
        try:
            res = search(shard.file)
        except UnknownFilterField as exc:
            return UnknownOnShard(exc.field)
        table = shard.ordinals()
        return res, [table[h.chunk_id] for h in res.hits]
    return call


def _ranked_batch(queries: Any, k: int,
                  where: Where) -> Callable[[Shard], list[Ranked] | UnknownOnShard]:
    def call(shard: Shard) -> list[Ranked] | UnknownOnShard:
        table = shard.ordinals()
        try:
            batch = shard.file.search_batch(queries, k, where=where)
        except UnknownFilterField as exc:
            return UnknownOnShard(exc.field)
        return [(r, [table[h.chunk_id] for h in r.hits]) for r in batch]
    return call


def known_shards(per_shard: list[Any]) -> list[Any]:
    """The shards whose schema knows the filter's fields; UnknownFilterField if none does."""
    known = [r for r in per_shard if not isinstance(r, UnknownOnShard)]
    if not known:
        raise UnknownFilterField(per_shard[0].field)
    return known


def _merged_filter(explains: list[SearchExplain]) -> dict[str, Any] | None:
    infos = [e.filter for e in explains if e.filter is not None]
    if not infos:
        return None
    matches = sum(int(i["matches"]) for i in infos)
    total = sum(round(int(i["matches"]) / i["selectivity"]) if i["selectivity"] else 0
                for i in infos)
    return {"path": _same([str(i["path"]) for i in infos]),
            "selectivity": matches / total if total else 0.0, "matches": matches}


def _same(values: list[str], mixed: str = "mixed") -> str:
    kinds = set(values)
    return kinds.pop() if len(kinds) == 1 else mixed


def merge(per_shard: list[Ranked], k: int, population: int, ms: float) -> SearchResult:
    """The k best hits over shards by score (one file's order, :func:`descending_key`), then
    shard, then ordinal, and their combined envelope.

    Candidate counts and budgets are summed over shards; ``truncated`` is ``k < population``
    (the chunks, or a space's vectors, over all shards), as for one file.
    """
    # fused lists (every shard fused, each with its own BM25 statistics) merge by fused score:
    # each shard's fused score is a z-score over its own pool, so the scales meet; a mix of
    # fused and cosine-ordered shards merges by cosine, the one score every hit has
    by_fused = all(h.fused_score is not None for res, _ in per_shard for h in res.hits)
    keyed = [(descending_key(h.fused_score if by_fused else h.score), s, o, h)
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
        1.0 if all(e.recall_estimate == 1.0 for e in ex) else math.nan, _merged_filter(ex))
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
                 engine: str = "threads", version: int | None = None) -> None:
        if engine not in ("threads", "ray"):
            raise ValueError(f"engine must be 'threads' or 'ray', not {engine!r}")
        self.path, self.engine, self._max_workers = os.fspath(path), engine, max_workers
        self._closed = True
        self.document = read_catalog(path)
        self.record: dict[str, Any] | None = None  # the opened version of a living catalog
        self._versions: list[dict[str, Any]] = []  # its records 1..version
        self._masks: dict[str, frozenset[str]] = {}  # its tombstoned ids per segment
        self._history: History | None = None
        specs = self._segment_specs(version)
        self._fan: Fanout = open_fanout(engine, specs, max_workers)
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

    def _segment_specs(self, version: int | None) -> list[ShardSpec]:
        base = Path(self.path).parent
        folder = base.resolve() if self.engine == "ray" else base  # actors may run elsewhere
        if not is_living(self.document):
            if version is not None:
                raise CatalogError(f"{self.path} has no version log (not a living catalog); "
                                   f"open it without version=")
            entries = self.document["shards"]
            return [(str(folder / e["file"]), i, e) for i, e in enumerate(entries)]
        self._versions = versions_to(self.document, version)
        self.record = self._versions[-1]
        self._masks = masks = masks_of(tombstones_at(self._versions))
        return [(str(folder / e["file"]), i,
                 {**e, "tombstones": sorted(masks.get(e["content_hash"], ()))})
                for i, e in enumerate(self.record["segments"])]

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
        per_shard = known_shards(self._fanout().each(_ranked(search)))
        n = self.n_embeddings if population is None else population
        return merge(per_shard, k, n, (time.perf_counter() - t0) * 1000.0)

    def search(self, query: Any, k: int, *, where: Where = None) -> SearchResult[SearchHit]:
        """Exact top-k over every shard; equals one file holding all the chunks."""
        return self._merged(k, lambda f: f.search(query, k, where=where))

    def search_ann(self, query: Any, k: int, ef: int, *,
                   where: Where = None) -> SearchResult[SearchHit]:
        """Each shard's HNSW top-k (exact rerank), merged by score."""
        return self._merged(k, lambda f: f.search_ann(query, k, ef, where=where))

    def search_hybrid(self, query: Any, query_text: str, k: int, candidates: int, *,
                      where: Where = None,
                      rank: str = "cosine") -> SearchResult[SearchHit]:
        """Each shard's hybrid top-k (``candidates`` per path per shard), merged by score."""
        return self._merged(k, lambda f: f.search_hybrid(query, query_text, k, candidates,
                                                         where=where, rank=rank))

    def search_graph(self, query: Any, k: int, hops: int = 1, ef: int = 100, *,
                     where: Where = None, rank: str = "cosine",
                     query_text: str | None = None) -> SearchResult[SearchHit]:
        """Each shard's graph search (edges never cross shards), merged by score."""
        return self._merged(k, lambda f: f.search_graph(query, k, hops, ef, where=where,
                                                        rank=rank, query_text=query_text))

    def search_space(self, name: str, query: Any, k: int, expected_model_hash: str | None = None,
                     *, where: Where = None) -> SearchResult[SearchHit]:
        """Each shard's exact search of space ``name`` (SpaceNotFound if a shard lacks it)."""
        t0 = time.perf_counter()
        per_shard = known_shards(self._fanout().each(
            _ranked(lambda f: f.search_space(name, query, k, expected_model_hash, where=where))))
        population = sum(r.explain.exact_candidates for r, _ in per_shard)
        return merge(per_shard, k, population, (time.perf_counter() - t0) * 1000.0)

    def search_bm25(self, query_text: str, k: int, *,
                    where: Where = None) -> SearchResult[SearchHit]:
        """Refused: BM25 scores use each shard's own statistics, so they cannot be merged."""
        raise CatalogError("search_bm25 cannot span a catalog: BM25 scores use each shard's own "
                           "statistics (IDF, average length) and do not compare across shards; "
                           "use search_hybrid, whose scores are exact cosines")

    def search_routed(self, query: Any, k: int, candidates: int | None = None, hops: int = 1,
                      ef: int = 100, query_text: str | None = None, *,
                      where: Where = None,
                      rank: str = "cosine") -> SearchResult[SearchHit]:
        """Each shard's routed search (its own route), merged by score."""
        return self._merged(k, lambda f: f.search_routed(query, k, candidates, hops, ef,
                                                         query_text, where=where, rank=rank))

    def search_batch(self, queries: Any, k: int, *,
                     where: Where = None) -> list[SearchResult[SearchHit]]:
        """Exact top-k for many queries (each shard's batch screen), merged per query."""
        t0 = time.perf_counter()
        rows = queries if isinstance(queries, np.ndarray) else list(queries)
        per_shard = known_shards(self._fanout().each(_ranked_batch(rows, k, where)))
        ms = (time.perf_counter() - t0) * 1000.0
        n = self.n_embeddings
        return [merge([shard[i] for shard in per_shard], k, n, ms)
                for i in range(len(per_shard[0]))]

    def retrieve(self, query: Any, k: int, candidates: int | None = None, hops: int = 1,
                 ef: int = 100, expected_model_hash: str | None = None,
                 query_text: str | None = None, *,
                 where: Where = None,
                 rank: str = "cosine") -> SearchResult[RetrieveHit]:
        """Each shard's routed retrieve, merged by score; hits carry their shard's citation."""
        return self._merged(k, lambda f: f.retrieve(
            query, k, candidates=candidates, hops=hops, ef=ef,
            expected_model_hash=expected_model_hash, query_text=query_text, where=where,
            rank=rank))

    def cite(self, citation: str) -> ResolvedCitation:
        """Resolve a citation on the shard whose content_hash it names.

        On a living catalog the answer is a ``LivingCitation``: a chunk compacted since is
        resolved where it moved, a removed one names the version that removed it.
        """
        expected, _ = parse_citation(citation)
        if self.record is not None:
            if self._history is None:  # read once: the log is checked and fixed at open
                self._history = history(self._versions)
            return self._cite_living(citation, self._history, None)
        for i, s in enumerate(self.shard_info):
            if s.content_hash == expected:
                return self._fanout().on(i, lambda sh: sh.file.cite(citation))
        raise CitationError(f"content_hash {expected} is not a shard of this catalog")

    def _cite_living(self, citation: str, hist: History, moved: tuple[str, int] | None,
                     since: int = 0) -> LivingCitation:
        """``citation`` resolved from version ``since`` on (the version a compaction moved it
        to its segment in; each step goes to a later version, so a segment that came back
        never loops)."""
        expected, chunk = parse_citation(citation)
        dead = self._masks.get(expected, frozenset())
        for i, s in enumerate(self.shard_info):
            if s.content_hash == expected and chunk not in dead:
                try:
                    r = self._fanout().on(i, lambda sh: sh.file.cite(citation))
                except CitationError:
                    if moved is None or not self._squashed():
                        raise
                    break  # moved here, yet not here: removed in a squashed version (below)
                if moved is None:
                    return LivingCitation(**r.as_dict())
                return LivingCitation(**r.as_dict(), status="compacted", compacted_from=moved[0],
                                      compacted_in=moved[1])
        removed_in = hist.removed_after(expected, chunk, since)
        move = None if removed_in is not None else hist.moved_after(expected, since)
        if move is not None:  # kept ids: same id, new segment
            new, v = move
            return self._cite_living(format_citation(new, chunk), hist, moved or (citation, v),
                                     v)
        if removed_in is not None:
            return self._removed(citation, hist, removed_in, moved)
        if moved is not None and self._squashed():
            # a compaction keeps every live row: one its segment lacks was removed before it,
            # in a version the squash folded away
            return self._removed(moved[0], hist, None, None)
        raise CitationError(f"{citation} is unknown to this catalog: no segment of versions "
                            f"{self._versions[0]['version']}..{self.version} holds it")

    def _squashed(self) -> bool:
        """Whether the opened log starts with a squash (history before it folded away)."""
        return self._versions[0]["op"] == "squash"

    def _removed(self, citation: str, hist: History, removed_in: int | None,
                 moved: tuple[str, int] | None) -> LivingCitation:
        """A removed chunk, cited from the segment that held it (``removed_in`` None: in a
        version a squash folded away)."""
        expected, _ = parse_citation(citation)
        name = hist.files.get(expected)
        path = Path(self.path).parent / name if name else None
        when = "in a squashed version" if removed_in is None else f"in version {removed_in}"
        if path is None or not path.is_file():
            raise CitationRemoved(f"{citation} was removed {when} and its segment "
                                  f"{name or expected} is no longer kept", removed_in)
        with open_file(path) as f:
            r = f.cite(citation)
        return LivingCitation(**r.as_dict(), status="removed", removed_in=removed_in,
                              compacted_from=moved and moved[0],
                              compacted_in=moved and moved[1])

    # -- a living corpus: versions, and writing the next one -------------------------------

    @property
    def version(self) -> int | None:
        """The opened version of a living catalog (None for a plain shard catalog)."""
        return None if self.record is None else int(self.record["version"])

    @property
    def version_hash(self) -> str | None:
        """The opened version's hash (None for a plain shard catalog)."""
        return None if self.record is None else str(self.record["version_hash"])

    def log(self) -> list[dict[str, Any]]:
        """Every version of the catalog, oldest first (one entry, version 1, for a plain one)."""
        return [summary(r) for r in records_of(self.document)]

    def _reopen(self) -> None:
        self.close()
        self.__init__(self.path, max_workers=self._max_workers,  # type: ignore[misc]
                      engine=self.engine)

    def add(self, chunks: Sequence[Mapping[str, Any]], *, note: str = "") -> dict[str, Any]:
        """Write ``chunks`` (urna.build's chunk dicts) as a new segment; the new version."""
        with writing(self.path) as w:
            w.add(chunks)
            rec = w.commit("add", note)
        self._reopen()
        return summary(rec)

    def remove(self, *, chunk_ids: Sequence[str] = (), sources: Sequence[str] = (),
               source_glob: str | None = None, where: Mapping[str, Any] | None = None,
               note: str = "") -> dict[str, Any]:
        """Tombstone the live chunks matching any selector (``where``: urna.index.filter)."""
        with writing(self.path) as w:
            gone = w.remove(chunk_ids=chunk_ids, sources=sources, source_glob=source_glob,
                            where=where)
            rec = w.commit("remove", note)
        self._reopen()
        return {**summary(rec), "removed": gone}

    def replace(self, source_uri: str, chunks: Sequence[Mapping[str, Any]], *,
                note: str = "") -> dict[str, Any]:
        """Remove every chunk of ``source_uri`` and add ``chunks`` in one version."""
        with writing(self.path) as w:
            gone = w.remove(sources=[source_uri])
            w.add(chunks)
            rec = w.commit("replace", note)
        self._reopen()
        return {**summary(rec), "removed": gone}

    def squash(self, keep: int, *, note: str = "") -> dict[str, Any] | None:
        """Fold every version before the last ``keep`` into one (``catalog.living.squash``):
        the catalog stops growing with old history; versions before them no longer open.
        The new first version's summary, or None when there is nothing to fold."""
        from .living import squash

        rec = squash(self.path, keep, note)
        self._reopen()
        return None if rec is None else summary(rec)

    def compact(self, *, min_rows: int | None = None, note: str = "") -> dict[str, Any] | None:
        """Merge segments into one without their tombstoned rows; None if nothing to do."""
        with writing(self.path) as w:
            if w.compact(min_rows) is None:
                return None
            rec = w.commit("compact", note)
        self._reopen()
        return summary(rec)


def _same_model(infos: list[ShardInfo]) -> None:
    for attr in ("model_hash", "embedding_dim", "embedding_model"):
        values = sorted({str(getattr(s, attr)) for s in infos})
        if len(values) > 1:
            raise CatalogError(f"shards disagree on {attr}: {', '.join(values)}")


def open_catalog(path: str | os.PathLike, *, max_workers: int | None = None,
                 engine: str = "threads", version: int | None = None) -> Catalog:
    """Open ``<name>.catalog.json`` and every shard it lists, checking each against it.

    ``engine="ray"`` holds each shard in a Ray actor (an initialised Ray is used as is);
    ``version=N`` opens version N of a living catalog (default: its head).
    """
    return Catalog(path, max_workers=max_workers, engine=engine, version=version)
