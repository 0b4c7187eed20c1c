"""Ranking-quality metrics over one query's ranked ids and its relevance judgements.

``ranked`` is the result order (best first, duplicates already removed); ``relevant`` maps
an id to its graded relevance (> 0 relevant; 0 or absent not). nDCG uses the linear gain
``rel / log2(rank + 1)`` (trec_eval's and BEIR's). A query with no relevant id has no
defined score: every function returns NaN for it and :func:`mean` skips it (trec_eval
leaves such queries out of the average).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

NAN = float("nan")


def _positive(relevant: Mapping[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in relevant.items() if float(v) > 0}


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    """Normalised discounted cumulative gain of the first ``k`` ids (NaN: nothing relevant)."""
    rel = _positive(relevant)
    if not rel:
        return NAN
    dcg = sum(rel.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def mrr_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    """Reciprocal rank of the first relevant id in the top ``k`` (0: none; NaN: none judged)."""
    rel = _positive(relevant)
    if not rel:
        return NAN
    for i, d in enumerate(ranked[:k]):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    """Share of the relevant ids found in the first ``k`` (NaN: nothing relevant)."""
    rel = _positive(relevant)
    if not rel:
        return NAN
    return len(rel.keys() & set(ranked[:k])) / len(rel)


def mean(values: Iterable[float]) -> float:
    """Mean of the defined (non-NaN) values; NaN when there is none."""
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else NAN
