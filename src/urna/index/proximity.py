"""Term-proximity evidence of a query over some rows' stored texts (BM25TP).

BM25 scores a row by which query words it holds, not where: "copy files" scores the same in a
row saying "copy the files" and in one with "copy" at its start and "files" 300 words later.
Rasolofo & Savoy (2003, "Term proximity scoring for keyword-based retrieval systems") add to
BM25 a score for pairs of different query terms that occur within :data:`WINDOW` tokens of
each other. Each such occurrence adds ``1 / d ** 2`` (``d`` tokens apart) to the pair's
accumulator ``acc``, which is saturated and normalised by length like a BM25 tf::

    proximity[row] = sum over pairs (a, b) of
        min(idf(a), idf(b)) * acc * (k1 + 1) / (acc + k1 * ((1 - b) + b * dl / max(avgdl, 1)))

with the file's own k1, b and avgdl, so the bonus is on the scale of the BM25 score it is
added to. The window (5 tokens) and the ``1 / d ** 2`` kernel are the paper's. Terms are the
query's stem groups (:func:`urna.index.stemmed_bm25.stem_group`): a token of the row counts
as a query stem when it is a member of that group in the file's vocabulary, so no token is
stemmed at query time. Tokens come from the file's BM25 tokenizer, positions count tokens.
A row holding fewer than two of the query's stems scores 0. Work is linear in the texts'
length plus the matched occurrences times the window.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InvalidInput
from .bm25 import Bm25Index
from .fusion import bm25_idf
from .stemmed_bm25 import QueryStems, query_stems
from .tokenize import tokenize

WINDOW = 5
# How many of a pool's best lexical rows the runtime measures: the cost is linear in their
# text, and the gain saturates (README "Answer quality", fifth round: 10, 30, all rows).
PROXIMITY_DEPTH = 30


def query_words(bm25: Bm25Index, stems: QueryStems) -> tuple[dict[str, int], list[float]]:
    """Every vocabulary word of the query's stem groups -> its stem's number, and each
    stem's idf (stems that no document holds are left out)."""
    words: dict[str, int] = {}
    idf: list[float] = []
    terms = bm25.terms
    for qs in stems.stems:
        if qs.df == 0:
            continue
        for t in qs.members.tolist():
            words[terms[t]] = len(idf)
        idf.append(bm25_idf(qs.df, bm25.n_docs))
    return words, idf


def pair_accumulators(words: dict[str, int], text: str) -> dict[tuple[int, int], float]:
    """``sum 1 / d ** 2`` of each pair of different query stems within WINDOW tokens."""
    hits = [(i, s) for i, tok in enumerate(tokenize(text)) if (s := words.get(tok)) is not None]
    acc: dict[tuple[int, int], float] = {}
    n = len(hits)
    for j, (p1, s1) in enumerate(hits):
        # positions are distinct and increasing: at most WINDOW followers are close enough
        for p2, s2 in hits[j + 1:min(j + 1 + WINDOW, n)]:
            d = p2 - p1
            if d > WINDOW:
                break
            if s1 != s2:
                key = (s1, s2) if s1 < s2 else (s2, s1)
                acc[key] = acc.get(key, 0.0) + 1.0 / (d * d)
    return acc


def proximity_scores(bm25: Bm25Index, text: str, rows: np.ndarray, texts: Sequence[str], *,
                     stems: QueryStems | None = None) -> np.ndarray:
    """The BM25TP proximity score (float64, >= 0) of each row; ``texts[j]`` is ``rows[j]``'s
    (``stems``: ``stemmed_bm25.query_stems`` of ``text``, when the caller has it already)."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.zeros(rows.shape, dtype=np.float64)
    if len(texts) != rows.size:
        raise InvalidInput(f"proximity: {len(texts)} texts for {rows.size} rows")
    words, idf = ({}, []) if not (rows.size and bm25.n_docs) else query_words(
        bm25, stems if stems is not None else query_stems(bm25, text))
    if len(idf) < 2:
        return out
    k1, b = float(bm25.k1), float(bm25.b)
    avgdl = max(float(bm25.avgdl), 1.0)
    lens = bm25.doc_lens
    for j, row in enumerate(rows.tolist()):
        if not 0 <= row < bm25.n_docs:
            continue
        acc = pair_accumulators(words, texts[j])
        if not acc:
            continue
        with np.errstate(all="ignore"):
            knorm = k1 * ((1.0 - b) + b * float(lens[row]) / avgdl)
            score = sum(min(idf[a], idf[c]) * v * (k1 + 1.0) / (v + knorm)
                        for (a, c), v in acc.items())
        out[j] = score if np.isfinite(score) and score > 0.0 else 0.0
    return out
