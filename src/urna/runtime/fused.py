"""The ``rank="fused"`` ordering of a candidate pool (beyond the reference; issue #15).

The pool comes from the path's candidate stage (hybrid: vector shortlist ∪ BM25 shortlist;
graph: the BFS union). Every pool row gets its exact cosine from the rerank kernel and its
lexical evidence from the file's own 0x08 section: the stem-widened BM25 score and the share
of the query it holds (``index.stemmed_bm25``); ``index.fusion.fuse`` orders them. The
lexical gate (``coverage``) is the held share of the pool's best lexical row. A hit reports
its exact cosine as ``score`` and, as ``lexical_score``, the row's BM25 score exactly as
``search_bm25`` computes it (``Bm25Index.scores_of``, no stemming). A file without BM25 keeps
the cosine order and says so (:data:`NO_BM25`). ``rank="cosine"`` is the reference's order.
"""

from __future__ import annotations

import numpy as np

from ..format.record import FrozenRecord
from ..index import exact
from ..index.arrays import sorted_distinct
from ..index.fusion import fuse, lexical_evidence
from ..index.proximity import PROXIMITY_DEPTH, proximity_scores
from ..index.stemmed_bm25 import QueryStems, query_stems, stemmed_evidence
from .opening import OpenedFile

FUSION_MODE = "gated-z"             # explain.fusion_mode of a fused list
NO_BM25 = "none (no BM25 section)"  # explain.fusion_mode when fused fell back to cosine
NO_TEXT = "none (no query text)"


class FusedOrder(FrozenRecord):
    """The first ``k`` rows of a fused pool with each one's evidence."""

    _fields = ("ids", "cosine", "lexical", "fused")
    __slots__ = _fields

    ids: np.ndarray      # int64 rows, best first
    cosine: np.ndarray   # float32 exact cosine (the hit's score)
    lexical: np.ndarray  # float64 BM25 score (the reference's, as search_bm25 gives it)
    fused: np.ndarray    # float64 fused score (what ordered the list)

    def __init__(self, ids: np.ndarray, cosine: np.ndarray, lexical: np.ndarray,
                 fused: np.ndarray) -> None:
        self._set(ids, cosine, lexical, fused)


def pool_proximity(st: OpenedFile, text: str, pool: np.ndarray, lexical: np.ndarray,
                   stems: QueryStems | None = None) -> np.ndarray:
    """Proximity evidence of the PROXIMITY_DEPTH best rows of ``lexical`` (0 elsewhere)."""
    out = np.zeros(pool.shape, dtype=np.float64)
    top = np.argsort(-lexical, kind="stable")[:PROXIMITY_DEPTH]
    top = top[lexical[top] > 0.0]
    if top.size < 1 or st.bm25 is None:
        return out
    texts = st.texts  # the pooled rows' texts alone are decoded
    out[top] = proximity_scores(st.bm25, text, pool[top], [texts[int(r)] for r in pool[top]],
                                stems=stems)
    return out


def fused_order(st: OpenedFile, q: np.ndarray, text: str, pool: np.ndarray,
                k: int) -> FusedOrder | None:
    """Fuse the pool's exact cosines and BM25 scores; None when the file has no BM25."""
    bm25 = st.bm25
    if bm25 is None:
        return None
    pool = sorted_distinct(np.asarray(pool, dtype=np.int64))
    cosine = exact.score_rows(st.scoring, q, pool)
    stems = query_stems(bm25, text)  # read by both kinds of lexical evidence
    evidence = stemmed_evidence(bm25, text, pool, stems=stems)
    # the gate: how much of the query the best lexical row holds (argmax: lowest row of ties)
    coverage = (float(evidence.coverage[int(np.argmax(evidence.scores))])
                if evidence.scores.size and evidence.scores.max() > 0.0 else 0.0)
    proximity = pool_proximity(st, text, pool,
                               lexical_evidence(evidence.scores, evidence.coverage), stems)
    ranking = fuse(pool, np.asarray(cosine, dtype=np.float64), evidence.scores,
                   coverage=coverage, row_coverage=evidence.coverage, proximity=proximity, k=k)
    reported = bm25.scores_of(text, pool).astype(np.float64)
    reported[~(reported > 0.0)] = 0.0  # a hostile payload's negative or NaN score: none
    at = np.searchsorted(pool, ranking.ids)  # pool is sorted and holds every ranked id
    cos = np.asarray(cosine)[at]
    return FusedOrder(ranking.ids, cos, reported[at], ranking.scores)


def fallback_reason(st: OpenedFile) -> str:
    """Why a fused rank kept the cosine order: no BM25 section, or no query text."""
    return NO_BM25 if st.bm25 is None else NO_TEXT
