"""The ``rank="fused"`` ordering of a candidate pool (beyond the reference; issue #15).

The pool comes from the path's candidate stage (hybrid: vector shortlist ∪ BM25 shortlist;
graph: the BFS union). Every pool row gets its exact cosine from the rerank kernel and its BM25
score from the file's own 0x08 statistics (``Bm25Index.scores_of``), and ``index.fusion.fuse``
orders them. The lexical gate (``coverage``) is measured on the pool's best BM25 row, with the
document frequencies of the BM25 section. A file without BM25 keeps the cosine order and says
so (:data:`NO_BM25`). ``rank="cosine"`` is the reference's order, untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..index import exact
from ..index.bm25 import Bm25Index
from ..index.fusion import fuse, lexical_coverage
from ..index.tokenize import tokenize
from .opening import OpenedFile

FUSION_MODE = "gated-z"             # explain.fusion_mode of a fused list
NO_BM25 = "none (no BM25 section)"  # explain.fusion_mode when fused fell back to cosine
NO_TEXT = "none (no query text)"


@dataclass(frozen=True)
class FusedOrder:
    """The first ``k`` rows of a fused pool with each one's evidence."""

    ids: np.ndarray      # int64 rows, best first
    cosine: np.ndarray   # float32 exact cosine (the hit's score)
    lexical: np.ndarray  # float64 BM25 score
    fused: np.ndarray    # float64 fused score (what ordered the list)


def pool_coverage(bm25: Bm25Index, text: str, pool: np.ndarray, lexical: np.ndarray) -> float:
    """IDF-weighted share of the query's terms held by the pool's best BM25 row (0 if none)."""
    if lexical.size == 0 or not float(lexical.max()) > 0.0:
        return 0.0
    best = int(pool[int(np.argmax(lexical))])  # argmax: the first (lowest row) of ties
    terms = set(tokenize(text))
    df = {t: bm25.document_frequency(t) for t in terms}
    held = {t for t in terms if df[t] > 0 and bm25.doc_has_term(best, t)}
    return lexical_coverage(terms, held, df, bm25.n_docs)


def fused_order(st: OpenedFile, q: np.ndarray, text: str, pool: np.ndarray,
                k: int) -> FusedOrder | None:
    """Fuse the pool's exact cosines and BM25 scores; None when the file has no BM25."""
    bm25 = st.bm25
    if bm25 is None:
        return None
    pool = np.unique(np.asarray(pool, dtype=np.int64))
    cosine = exact.score_rows(st.scoring, q, pool)
    lexical = bm25.scores_of(text, pool).astype(np.float64)
    lexical[~(lexical > 0.0)] = 0.0  # a hostile payload's negative or NaN score: no evidence
    coverage = pool_coverage(bm25, text, pool, lexical)
    ranking = fuse(pool, np.asarray(cosine, dtype=np.float64), lexical, coverage=coverage, k=k)
    by_row = dict(zip(pool.tolist(), np.asarray(cosine).tolist(), strict=True))
    cos = np.asarray([by_row[i] for i in ranking.ids.tolist()], dtype=np.asarray(cosine).dtype)
    return FusedOrder(ranking.ids, cos, ranking.lexical, ranking.scores)


def fallback_reason(st: OpenedFile) -> str:
    """Why a fused rank kept the cosine order: no BM25 section, or no query text."""
    return NO_BM25 if st.bm25 is None else NO_TEXT
