"""The search paths over an opened file (03-runtime §5, §7.6, §8.5, §9, §10.4, §11.5, §15).

Every path has three stages: candidate generation (all rows, the HNSW beam, the BM25 and
vector shortlists, the graph's BFS union), the exact rerank (every returned score comes from
the one kernel ``index.exact.score_rows`` over the scoring slab, so a chunk's score is the same
whichever path returned it) and the ordering (:func:`order`, the reference's cosine order).
A ``where=`` filter (:mod:`.filtering`) narrows the candidate stage only: the exact scan
scores just the matching rows, the HNSW beam keeps only matching rows as results (or, for a
selective filter, the matching rows are scanned exactly), BM25 scores only matching docs and the
graph's seeds and BFS union are cut to them; ``explain.filter`` says which path ran.
``rank=`` chooses the ordering of the (filtered) candidates (``"cosine"``, the reference's;
``"fused"``, :mod:`.fused`), without touching the other stages. Each path returns one
:class:`SearchResult`.
Arguments arrive converted (``query.as_f32`` / ``as_i32`` / ``as_u64``); the runtime checks
of §3 run here, after each path's fallback decision, as in the reference. The route of a
routed query comes from :mod:`.routing`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import (
    InvalidK,
    MalformedSectionPayload,
    ModelHashMismatch,
    SpaceModelMismatch,
    SpaceNotFound,
    UnsupportedFeature,
)
from ..format.identity import format_citation
from ..format.layout import SECTION_BM25_INDEX, SECTION_SPACE_TABLE
from ..index import exact
from .filtering import EXACT_FILTERED, HNSW_FILTERED, RowMask, row_mask, use_exact
from .hits import RetrieveHit, SearchExplain, SearchHit, SearchResult, rerank_source
from .lazy_tables import TextsById
from .opening import OpenedFile, preload_bm25
from .query import validate
from .ranks import FUSED
from .routing import EXACT, GRAPH, HNSW, HYBRID, Route, choose_route

if TYPE_CHECKING:
    from ..index.hnsw import PackedRows
    from .fused import FusedOrder

NAN = float("nan")
_U64_MAX = (1 << 64) - 1
_vectors_lock = threading.Lock()
Where = Mapping[str, Any] | None


def _hits(st: OpenedFile, ids: np.ndarray, scores: np.ndarray, label: str,
          reranked: bool, score_type: str = "cosine",
          fused: FusedOrder | None = None) -> list[SearchHit]:
    out = []
    table = st.hit_metadata
    lexical = [None] * len(ids) if fused is None else fused.lexical.tolist()
    by_fused = [None] * len(ids) if fused is None else fused.fused.tolist()
    for i, s, lex, fs in zip(ids.tolist(), scores.tolist(), lexical, by_fused, strict=True):
        if i >= len(st.chunk_ids):  # a space band longer than the chunk tables (crafted file)
            raise MalformedSectionPayload(
                SECTION_SPACE_TABLE,
                f"vector row {i} has no chunk (n_embeddings={len(st.chunk_ids)})")
        cid = st.chunk_ids[i]
        uri, start, end = st.spans[i]
        out.append(SearchHit(cid, s, score_type, uri, start, end, st.embedding_model, label,
                             reranked, st.file_hash, st.content_hash,
                             format_citation(st.content_hash, cid), lex, fs,
                             None if table is None else table.row(i)))
    return out


def order(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ordering stage: the first ``k`` by (score descending, row ascending), §5."""
    return exact.rank(ids, scores, k)


def _rerank(st: OpenedFile, q: np.ndarray, cand: np.ndarray, k: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """Exact rerank of the candidate rows, then the ordering."""
    cand = np.asarray(cand, dtype=np.int64)
    return order(cand, exact.score_rows(st.scoring, q, cand), k)


def ranked_hits(st: OpenedFile, q: np.ndarray, cand: np.ndarray, k: int, label: str,
                explain: SearchExplain, rank: str, text: str | None,
                scores: np.ndarray | None = None) -> tuple[list[SearchHit], SearchExplain]:
    """The ordering stage of a reranked path: the cosine order, or the fused one (``rank``).

    ``scores`` are every row's exact cosine when the path already has them (graph). A fused
    rank without BM25 or query text keeps the cosine order and says why in
    ``explain.fusion_mode``.
    """
    if rank == FUSED:
        # the fused order (stemming, the tokenizer's tables) is imported by the paths it orders
        from . import fused as _fused

        fo = _fused.fused_order(st, q, text, cand, k) if text else None
        if fo is not None:
            return (_hits(st, fo.ids, fo.cosine, label, True, FUSED, fo),
                    explain.replace(fusion_mode=_fused.FUSION_MODE))
        explain = explain.replace(fusion_mode=_fused.fallback_reason(st))
    cand = np.asarray(cand, dtype=np.int64)
    ids, sc = _rerank(st, q, cand, k) if scores is None else order(cand, scores[cand], k)
    return _hits(st, ids, sc, label, True), explain


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def exact_result(st: OpenedFile, ids: np.ndarray, sc: np.ndarray, k: int,
                 ms: float, fm: RowMask | None = None) -> SearchResult:
    """The envelope of an exact search (also one row of a batch)."""
    population = st.n if fm is None else fm.matches
    explain = SearchExplain("exact", exact_candidates=population,
                            rerank_source=rerank_source(st.scoring_dtype),
                            filter=None if fm is None else fm.explain(EXACT_FILTERED))
    return SearchResult(_hits(st, ids, sc, "exact", False), "exact", 1.0, k < population, k, ms,
                        explain)


def filtered_exact(st: OpenedFile, q: np.ndarray, k: int, fm: RowMask,
                   threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k over the matching rows only (the filtered scan, split across threads)."""
    return exact.search(st.scoring, q, k, threads, rows=fm.rows)


def exact_search(st: OpenedFile, x: np.ndarray, k: int, t0: float | None = None,
                 where: Where = None, threads: int | None = None) -> SearchResult:
    """§5: score every row (the candidates), keep the first ``min(k, n)`` of the total order.

    ``threads`` splits the scan's rows (default ``URNA_THREADS`` or the cores; same answer).
    """
    t0 = time.perf_counter() if t0 is None else t0
    q = validate(x, k, st.dim)
    fm = row_mask(st, where)
    if fm is not None:  # the matching rows are the candidates
        ids, sc = filtered_exact(st, q, k, fm, threads)
        return exact_result(st, ids, sc, k, _ms(t0), fm)
    # every row is a candidate: exact.search screens them and rescores those near the cut-off
    # with the kernel in the cosine order
    ids, sc = exact.search(st.scoring, q, k, threads)
    return exact_result(st, ids, sc, k, _ms(t0))


def hnsw_vectors(st: OpenedFile) -> np.ndarray | PackedRows:
    """The stored 0x04 rows as the HNSW beam reads them: in place, packed rows included."""
    rows = getattr(st, "_hnsw_rows", None)
    if rows is None:
        with _vectors_lock:
            rows = getattr(st, "_hnsw_rows", None)
            if rows is None:
                from ..index.hnsw import beam_rows

                rows = beam_rows(st.stored)
                st._hnsw_rows = rows  # type: ignore[attr-defined]
    return rows


def _hnsw_candidates(st: OpenedFile, q: np.ndarray, width: int,
                     fm: RowMask | None = None) -> np.ndarray:
    from ..index.hnsw import hnsw_search

    assert st.hnsw is not None  # callers fall back to exact first
    return hnsw_search(st.hnsw, hnsw_vectors(st), q, width,
                       None if fm is None else fm.mask)


def filtered_vector_candidates(st: OpenedFile, q: np.ndarray, k: int, width: int,
                               fm: RowMask) -> tuple[np.ndarray, str]:
    """Matching candidates for a vector query: the filtered beam, or all matching rows.

    The beam is skipped for a selective filter (``filtering.use_exact``) and abandoned when it
    finds fewer than ``min(k, matches)`` rows, so k matching rows always give k hits.
    """
    if st.hnsw is not None and not use_exact(fm, max(width, st.hnsw.ef_construction)):
        cand = _hnsw_candidates(st, q, width, fm)
        if len(cand) >= min(k, fm.matches):
            return cand, HNSW_FILTERED
    return fm.rows, EXACT_FILTERED


def ann_search(st: OpenedFile, x: np.ndarray, k: int, ef: int,
               where: Where = None) -> SearchResult:
    """§7.6: HNSW beam ``max(ef, k, ef_construction)``, exact rerank; exact without 0x07."""
    t0 = time.perf_counter()
    if st.hnsw is None:
        return exact_search(st, x, k, t0, where)
    q = validate(x, k, st.dim)
    fm = row_mask(st, where)
    if fm is None:
        cand = _hnsw_candidates(st, q, max(ef, k))
        info = None
    else:
        cand, path = filtered_vector_candidates(st, q, k, max(ef, k), fm)
        info = fm.explain(path)
    ids, sc = _rerank(st, q, cand, k)
    explain = SearchExplain("hnsw", ann_candidates=len(cand),
                            rerank_source=rerank_source(st.scoring_dtype), recall_estimate=NAN,
                            filter=info)
    population = st.n if fm is None else fm.matches
    return SearchResult(_hits(st, ids, sc, "hnsw", True), "hnsw", NAN, k < population, k,
                        _ms(t0), explain)


def _hybrid_vector_shortlist(st: OpenedFile, q: np.ndarray, k: int, cpp: int,
                             fm: RowMask | None) -> tuple[list[int], int, int, str]:
    """The vector side of hybrid: (ids, exact count, ann count, filter path)."""
    if fm is not None:
        cand, path = filtered_vector_candidates(st, q, k, max(cpp, k), fm)
        if path == HNSW_FILTERED:
            return cand.tolist(), 0, len(cand), path
        vec = filtered_exact(st, q, cpp, fm)[0].tolist()
        return vec, len(vec), 0, path
    if st.hnsw is not None:
        vec = _hnsw_candidates(st, q, max(cpp, k)).tolist()
        return vec, 0, len(vec), ""
    # the exact shortlist is cut at cpp itself, not max(cpp, k) (§19)
    vec = exact.search(st.scoring, q, cpp)[0].tolist()
    return vec, len(vec), 0, ""


def hybrid_search(st: OpenedFile, x: np.ndarray, text: str, k: int, cpp: int,
                  where: Where = None, rank: str = "cosine") -> SearchResult:
    """§8.5: vector shortlist ∪ BM25 shortlist (RRF-ordered), exact rerank; no fallback."""
    from ..index.bm25 import rrf_union

    t0 = time.perf_counter()
    q = validate(x, k, st.dim)
    fm = row_mask(st, where)
    bm25_ahead = preload_bm25(st)  # a verified body's 0x08 decodes while the beam walks
    try:
        vec, exact_c, ann_c, path = _hybrid_vector_shortlist(st, q, k, cpp, fm)
    finally:
        if bm25_ahead is not None:
            bm25_ahead.wait()
    mask = None if fm is None else fm.mask
    lex = ([int(d) for d in st.bm25.search_arrays(text, cpp, mask)[0]]
           if st.bm25 is not None else [])
    union = rrf_union(vec, lex)
    explain = SearchExplain("hybrid", exact_candidates=exact_c, ann_candidates=ann_c,
                            bm25_candidates=len(lex), fusion_mode="rrf",
                            rerank_source=rerank_source(st.scoring_dtype), recall_estimate=NAN,
                            filter=None if fm is None else fm.explain(path))
    hits, explain = ranked_hits(st, q, np.asarray(union, dtype=np.int64), k, "hybrid", explain,
                                rank, text)
    population = st.n if fm is None else fm.matches
    return SearchResult(hits, "hybrid", NAN, k < population, k, _ms(t0), explain)


def bm25_search(st: OpenedFile, text: str, k: int, where: Where = None) -> SearchResult:
    """Pure lexical top-k (beyond the reference): BM25 scores, ``score_type`` ``"bm25"``."""
    t0 = time.perf_counter()
    if k <= 0:
        raise InvalidK(k)
    if st.bm25 is None:
        raise UnsupportedFeature("this file has no BM25 section (0x08); build it with "
                                 "with_bm25=True or the hybrid preset")
    fm = row_mask(st, where)
    ids, scores = st.bm25.search_arrays(text, k, None if fm is None else fm.mask)
    if len(ids) and int(np.max(ids)) >= st.n:  # n_docs is not tied to n_chunks by the format
        raise MalformedSectionPayload(SECTION_BM25_INDEX,
                                      f"bm25 doc {int(np.max(ids))} has no chunk (n={st.n})")
    explain = SearchExplain("bm25", bm25_candidates=len(ids), rerank_source="bm25",
                            recall_estimate=1.0,
                            filter=None if fm is None else fm.explain("bm25-filtered"))
    population = st.n if fm is None else fm.matches
    return SearchResult(_hits(st, np.asarray(ids, dtype=np.int64), np.asarray(scores), "bm25",
                              False, score_type="bm25"), "bm25", 1.0, k < population, k, _ms(t0),
                        explain)


def graph_search(st: OpenedFile, x: np.ndarray, k: int, hops: int, ef: int,
                 where: Where = None, rank: str = "cosine",
                 text: str | None = None) -> SearchResult:
    """§10.4: exact seeds (top ``max(ef, k)``), bounded BFS, exact rerank; else exact.

    With ``where=`` the seeds are the best matching rows and the BFS union is cut to matching
    rows (the walk itself follows every edge); ``rank`` then orders that union.
    """
    from ..index.graph import bounded_bfs

    t0 = time.perf_counter()
    if st.graph is None:
        return exact_search(st, x, k, t0, where)
    q = validate(x, k, st.dim)
    fm = row_mask(st, where)
    scores = exact.score_rows(st.scoring, q)  # one scan scores seeds and union alike
    population = st.n if fm is None else fm.matches
    budget = min(max(ef, k), population)
    if fm is None:
        seeds = exact.top_k(scores, budget)[0]
    else:
        seeds = order(fm.rows, scores[fm.rows], budget)[0]
    frontier = min(max(budget * 8, budget), _U64_MAX)
    union = np.asarray(bounded_bfs(st.graph, seeds.tolist(), hops, frontier), dtype=np.int64)
    if fm is not None:
        union = union[fm.mask[union]]
    explain = SearchExplain("graph", exact_candidates=budget, graph_candidates=len(union),
                            rerank_source=rerank_source(st.scoring_dtype), recall_estimate=NAN,
                            filter=None if fm is None else fm.explain("graph-filtered"))
    hits, explain = ranked_hits(st, q, union, k, "graph", explain, rank, text, scores)
    return SearchResult(hits, "graph", NAN, k < population, k, _ms(t0), explain)


def space_search(st: OpenedFile, name: str, x: np.ndarray, k: int,
                 expected_model_hash: str | None, where: Where = None) -> SearchResult:
    """§11.5: exact search over one named band; hits map band row i to chunk i."""
    t0 = time.perf_counter()
    space = next((s for s in st.spaces or () if s.entry.name == name), None)
    if space is None:
        raise SpaceNotFound(name)
    if expected_model_hash is not None and expected_model_hash != space.entry.model_hash:
        raise SpaceModelMismatch(name, expected_model_hash, space.entry.model_hash)
    q = validate(x, k, space.entry.dim)
    nv = space.entry.n_vectors
    fm = row_mask(st, where)
    info = None
    if fm is None:
        ids, sc = exact.search(space.slab, q, k)
    else:  # band row i is chunk i; band rows past the chunks never match
        rows = fm.rows[fm.rows < nv]
        ids, sc = order(rows, exact.score_rows(space.slab, q, rows), k)
        nv = int(rows.size)
        info = fm.explain(EXACT_FILTERED)
    explain = SearchExplain("exact", exact_candidates=nv, rerank_source=rerank_source(space.dtype),
                            filter=info)
    return SearchResult(_hits(st, ids, sc, "space", False), "space", 1.0, k < nv, k, _ms(t0),
                        explain, space=name)


def run_route(st: OpenedFile, route: Route, x: np.ndarray, k: int, hops: int,
              ef: int, where: Where = None, rank: str = "cosine") -> SearchResult:
    """Run a chosen route; the result carries its candidate budget."""
    if route.path == HNSW:
        res = ann_search(st, x, k, max(ef, route.candidates) if route.declared
                         else route.candidates, where)
    elif route.path == HYBRID:
        res = hybrid_search(st, x, route.query_text, k, route.candidates, where, rank)
    elif route.path == GRAPH:
        res = graph_search(st, x, k, hops, ef, where, rank, route.query_text)
    else:
        res = exact_search(st, x, k, where=where)
    return routed_envelope(st, route, res, rank)


def routed_envelope(st: OpenedFile, route: Route, res: SearchResult,
                    rank: str = "cosine") -> SearchResult:
    """``res`` (the result of the path ``route`` ran) with the routed envelope: the candidate
    budget of the path that ran, and why a fused rank fell back when it had no lexical pool."""
    ran = route if res.index_type == route.path else Route(EXACT, 0, "")  # ANN fell back
    budget = ran.budget(st.n, st.hnsw is not None)
    explain = res.explain
    if rank == FUSED and ran.path not in (HYBRID, GRAPH):  # no lexical pool: cosine
        from .fused import fallback_reason

        explain = explain.replace(fusion_mode=fallback_reason(st))
    return SearchResult(res.hits, res.index_type, res.recall, res.truncated, res.k_requested,
                        res.query_time_ms, explain, res.space, budget)


def routed_search(st: OpenedFile, x: np.ndarray, k: int, candidates: int | None, hops: int,
                  ef: int, query_text: str | None, where: Where = None,
                  rank: str = "cosine") -> SearchResult:
    """The retrieve() route (§15): by declared index type, or by sections when text is given."""
    # which sections are present, not their decode: a deferred index decodes where it is read
    route = choose_route(st.index_type, st.bm25_index is not None, st.hnsw_index is not None, k,
                         candidates, query_text)
    return run_route(st, route, x, k, hops, ef, where, rank)


def texts_by_id(st: OpenedFile, texts: Sequence[str]) -> TextsById:
    """Stored text by chunk id, as the reference maps it (the last ordinal wins on a repeat);
    each asked id is looked up on its own (``lazy_tables.TextsById``)."""
    return TextsById(st.chunk_ids, texts)


def with_text(result: SearchResult, by_id: TextsById | Mapping[str, str]) -> SearchResult:
    """The same envelope over RetrieveHits: each hit with its stored text and precision marker."""
    source = result.explain.rerank_source
    return result.with_hits([
        RetrieveHit(h.chunk_id, h.citation_id, h.content_hash, h.file_hash, h.offset_start,
                    h.offset_end, source, h.score, h.score_type, h.source_uri,
                    by_id.get(h.chunk_id, ""), h.lexical_score, h.fused_score, h.metadata)
        for h in result.hits])


def check_model_hash(st: OpenedFile, expected: str | None) -> None:
    """retrieve()'s gate: a caller-supplied model hash must equal the corpus's."""
    if expected is not None and expected != st.model_hash:
        raise ModelHashMismatch(expected, st.model_hash)
