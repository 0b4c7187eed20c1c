"""Fused ranking of a hybrid candidate pool: exact cosine + BM25 by gap-weighted z-scores.

The pool is the union of the vector shortlist and the BM25 shortlist. Each candidate carries
its exact cosine (the runtime's rerank kernel) and its BM25 score (0 or NaN: no lexical
match; both mean the same). Per query and per signal:

* ``z``: the score as a z-score over the pool (mean 0, std 1), so the two scales meet;
* ``w``: how far the signal's top stands above its ``gap_depth``-th score, relative to the
  top: ``(top1 - top_n) / top1`` (0 when the top is not positive). A list whose best
  candidate clearly stands out is trusted more for this query; a flat list (BM25 on a
  paraphrase, cosine on a keyword query) counts less. Scale-free, no corpus statistics.

* ``coverage``: the IDF-weighted share of the query's distinct terms that BM25's top
  candidate contains (:func:`lexical_coverage`). BM25 finding one shared word of a
  paraphrase is weak evidence however peaked its list; BM25 matching the whole query is
  strong. ``w_lex`` is multiplied by ``coverage ** 3`` (:data:`COVERAGE_POWER`; None: not
  gated).

* ``row_coverage`` (optional, one value in [0, 1] per candidate): the share of the query each
  candidate holds. The lexical list that is z-scored is ``lexical * row_coverage ** 2``
  (:data:`ROW_COVERAGE_POWER`), so a row matching most of the query outranks one matching
  its rarest word only; ``w_lex`` is still measured on ``lexical`` itself.

* ``proximity`` (optional, >= 0 per candidate): term-proximity evidence
  (:mod:`urna.index.proximity`, BM25TP), added to the BM25 score of the rows that match:
  the lexical list is ``(lexical + proximity) * row_coverage ** 2``. The gap and the gate
  still read ``lexical`` alone, so proximity reorders the lexical list but never decides how
  far it is trusted.

``fused = w_cos * z_cos + w_lex * z_lex`` (``w ** power``), ordered by fused score desc, then
cosine desc (+0.0 before -0.0, as the exact order), then row id asc. Without lexical evidence
(None, or no candidate matched) the order is the cosine order. The study behind it: README
"Answer quality", benchmarks/quality/explore.py.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping

import numpy as np

from ..errors import InvalidInput
from ..format.record import FrozenRecord
from .arrays import negative_zeros

GAP_DEPTH = 10
POWER = 1.0
COVERAGE_POWER = 3.0
ROW_COVERAGE_POWER = 2.0


class FusedRanking(FrozenRecord):
    """A fused order of candidate rows with the evidence of each (a slotted record: a
    one-shot ``urna ask`` imports this module, format/record.py says why not a dataclass)."""

    _fields = ("ids", "scores", "cosine", "lexical", "weights")
    __slots__ = _fields

    ids: np.ndarray           # int64 candidate row ids, best first
    scores: np.ndarray        # float64 fused score of each
    cosine: np.ndarray        # float64 exact cosine of each (the score a hit reports)
    lexical: np.ndarray       # float64 BM25 score of each (0: no lexical match)
    weights: tuple[float, float]  # (cosine, lexical) weight this query used

    def __init__(self, ids: np.ndarray, scores: np.ndarray, cosine: np.ndarray,
                 lexical: np.ndarray, weights: tuple[float, float]) -> None:
        self._set(ids, scores, cosine, lexical, weights)


def relative_gap(scores: np.ndarray, depth: int = GAP_DEPTH) -> float:
    """``(top1 - top_depth) / top1`` of a score list (0 when empty or the top is not > 0)."""
    if scores.size == 0:
        return 0.0
    srt = np.sort(scores)[::-1]
    top = float(srt[0])
    if not top > 0.0:
        return 0.0
    return (top - float(srt[min(depth, srt.size) - 1])) / top


def bm25_idf(df: int, n_docs: int) -> float:
    """The BM25 inverse document frequency ``ln(1 + (n - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def lexical_coverage(query_terms: Iterable[str], doc_terms: Container[str],
                     df: Mapping[str, int], n_docs: int) -> float:
    """IDF-weighted share of the query's distinct corpus terms found in ``doc_terms`` (0..1).

    Terms the corpus lacks (``df`` 0 or absent) carry no weight; no weighted term gives 0.
    """
    total = found = 0.0
    for term in set(query_terms):
        d = int(df.get(term, 0))
        if d <= 0:
            continue
        w = bm25_idf(d, n_docs)
        total += w
        if term in doc_terms:
            found += w
    return found / total if total > 0.0 else 0.0


def zscore(scores: np.ndarray) -> np.ndarray:
    """Scores as z-scores over the array (all zero when the scores are all equal)."""
    if scores.size == 0:
        return scores.copy()
    sd = float(scores.std())
    if not sd > 0.0:
        return np.zeros_like(scores)
    return (scores - float(scores.mean())) / sd


def _as_pool(cand_ids: np.ndarray, cosine: np.ndarray, lexical: np.ndarray | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ids, cosine, lexical) checked and in id order, plus that reordering."""
    ids = np.asarray(cand_ids)
    if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise InvalidInput("fusion: cand_ids must be a 1-d array of integer row ids")
    ids = ids.astype(np.int64, copy=False)
    cos = np.asarray(cosine, dtype=np.float64)
    if cos.shape != ids.shape:
        raise InvalidInput(f"fusion: {cos.size} cosine scores for {ids.size} candidates")
    if not np.all(np.isfinite(cos)):
        raise InvalidInput("fusion: cosine scores must be finite")
    if lexical is None:
        lex = np.zeros_like(cos)
    else:
        lex = np.asarray(lexical, dtype=np.float64)
        if lex.shape != ids.shape:
            raise InvalidInput(f"fusion: {lex.size} lexical scores for {ids.size} candidates")
        lex = np.where(np.isnan(lex), 0.0, lex)
        if not np.all(np.isfinite(lex)) or (lex.size and float(lex.min()) < 0.0):
            raise InvalidInput("fusion: lexical scores must be finite and >= 0 (or NaN)")
    # canonical (id) order first: the same pool gives the same floats in any input order
    by_id = np.argsort(ids, kind="stable")
    ids, cos, lex = ids[by_id], cos[by_id], lex[by_id]
    if ids.size > 1 and not np.all(np.diff(ids) > 0):
        raise InvalidInput("fusion: cand_ids must be distinct")
    return ids, cos, lex, by_id


def _row_coverage(row_coverage: np.ndarray | None, n: int) -> np.ndarray | None:
    if row_coverage is None:
        return None
    cov = np.asarray(row_coverage, dtype=np.float64)
    if cov.shape != (n,):
        raise InvalidInput(f"fusion: {cov.size} row coverages for {n} candidates")
    if not np.all((cov >= 0.0) & (cov <= 1.0)):  # NaN fails too
        raise InvalidInput("fusion: row coverages must be in [0, 1]")
    return cov


def _proximity(proximity: np.ndarray | None, n: int) -> np.ndarray | None:
    if proximity is None:
        return None
    prox = np.asarray(proximity, dtype=np.float64)
    if prox.shape != (n,):
        raise InvalidInput(f"fusion: {prox.size} proximity scores for {n} candidates")
    if not np.all(np.isfinite(prox) & (prox >= 0.0)):
        raise InvalidInput("fusion: proximity scores must be finite and >= 0")
    return prox


def lexical_evidence(lexical: np.ndarray, row_coverage: np.ndarray | None = None,
                     proximity: np.ndarray | None = None) -> np.ndarray:
    """The lexical list that is fused: ``(lexical + proximity) * row_coverage ** 2``.

    Proximity counts only where ``lexical`` > 0; None arguments leave their factor out.
    """
    out = np.asarray(lexical, dtype=np.float64)
    if proximity is not None:
        out = np.where(out > 0.0, out + proximity, out)
    if row_coverage is not None:
        out = out * row_coverage ** ROW_COVERAGE_POWER
    return out


def fuse(cand_ids: np.ndarray, cosine: np.ndarray, lexical: np.ndarray | None = None, *,
         coverage: float | None = None, row_coverage: np.ndarray | None = None,
         proximity: np.ndarray | None = None, k: int | None = None,
         gap_depth: int = GAP_DEPTH, power: float = POWER) -> FusedRanking:
    """Order a candidate pool by gap-weighted z-score fusion of cosine and BM25 (top ``k``)."""
    if gap_depth < 1:
        raise InvalidInput("fusion: gap_depth must be >= 1")
    if coverage is not None and not 0.0 <= coverage <= 1.0:
        raise InvalidInput("fusion: coverage must be in [0, 1]")
    n = np.asarray(cand_ids).size
    row_cov = _row_coverage(row_coverage, n)
    prox = _proximity(proximity, n)
    ids, cos, lex, by_id = _as_pool(cand_ids, cosine, lexical)
    w_cos = relative_gap(cos, gap_depth) ** power
    w_lex = relative_gap(lex, gap_depth) ** power if np.any(lex > 0) else 0.0
    if coverage is not None:
        w_lex *= coverage ** COVERAGE_POWER
    if w_cos == 0.0 and w_lex == 0.0:
        w_cos = 1.0  # neither list stands out: the cosine order
    evidence = lexical_evidence(lex, None if row_cov is None else row_cov[by_id],
                                None if prox is None else prox[by_id])
    fused = w_cos * zscore(cos) + w_lex * zscore(evidence)
    order = np.lexsort((ids, negative_zeros(cos), -cos, -fused))  # +0.0 before -0.0, as rank
    if k is not None:
        if k < 0:
            raise InvalidInput("fusion: k must be >= 0")
        order = order[:k]
    return FusedRanking(ids[order], fused[order], cos[order], lex[order], (w_cos, w_lex))
