"""Stem-widened BM25 evidence of a query over some rows (the lexical side of ``rank="fused"``).

Each query term stands for its stem group: every term of the file's own BM25 vocabulary with
the same Porter stem (:func:`urna.index.stemming.porter_stem`), so "copies" also matches
"copy" and "copied". A group is scored as one term with the index's own parameters:
``tf`` = the summed tf of its members in the row, ``df`` = the rows holding any member,

    score[row] += idf(df) * tf * (k1 + 1) / (tf + k1 * ((1 - b) + b * dl / max(avgdl, 1)))

once per query token (repeats count, as in §8.4), in float64: this is evidence for the fused
order, never a reference score (``Bm25Index.search`` and ``search_bm25`` stay exact).
``coverage[row]`` is the IDF-weighted share of the query's distinct stems the row holds (the
classic coordination factor): BM25 lets one rare shared word outweigh the rest of the query,
coverage says how much of the query the row answers. A query stem no document holds weighs
``idf(0)``, the most a word can: "as an adverb" over a corpus without "adverb" is a query
that no row covers, however many rows hold "as" and "an". Work is bounded by the postings
of the query's groups; no array of the index's size is allocated per query.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ..format.record import FrozenRecord
from .arrays import sorted_distinct
from .bm25 import Bm25Index
from .fusion import bm25_idf
from .stemming import porter_stem
from .tokenize import tokenize


# Slotted records, not dataclasses: a one-shot ``urna ask`` imports this module (the generated
# classes cost more than a query's stem groups; format/record.py says why).
class StemmedEvidence(FrozenRecord):
    """The stem-widened BM25 score and query coverage of each asked row."""

    _fields = ("scores", "coverage")
    __slots__ = _fields

    scores: np.ndarray    # float64, >= 0 (0: no query stem in the row)
    coverage: np.ndarray  # float64 in [0, 1]

    def __init__(self, scores: np.ndarray, coverage: np.ndarray) -> None:
        self._set(scores, coverage)


# Each index's stem groups found so far.
_groups: weakref.WeakKeyDictionary[Bm25Index, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _last_letter_rewritable(stem: str) -> bool:
    """Whether a word with this stem may hold another letter at the stem's last place."""
    return stem[-1:] == "i" or (len(stem) > 2 and stem[-1] in "el")


def stem_group(bm25: Bm25Index, stem: str) -> np.ndarray:
    """int64 ids of the vocabulary terms whose Porter stem is ``stem`` (sorted, cached).

    A word always begins with its stem minus the stem's last letter (Porter's rules only
    rewrite the end of a word and every rewrite keeps all but the last letter of what it
    leaves), and with the whole stem unless that ends in i, or in e or l past its second letter
    (the only letters a rewrite puts in place of the word's: y -> i, ``-ing`` + e,
    ``-ation`` -> ``-ate``, ``-biliti`` -> ``-bl``; the e and l rewrites follow at least two
    letters; tests/index/test_stemming.py checks both), so only the terms under that prefix
    are stemmed: "do" or "be" stems the words under "do" or "be", not the thousand under "d".
    """
    with _lock:
        groups = _groups.get(bm25)
        if groups is None:
            groups = _groups[bm25] = {}
        group = groups.get(stem)
        if group is None:
            prefix = stem[:-1] if _last_letter_rewritable(stem) else stem
            terms = bm25.terms
            members = [t for t in bm25.prefixed_terms(prefix) if porter_stem(terms[t]) == stem]
            group = groups[stem] = np.sort(np.asarray(members, dtype=np.int64))
        return group


def _group_postings(bm25: Bm25Index, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(doc ids, tfs) of every posting of the member terms, concatenated."""
    postings = [bm25.term_postings(t) for t in members.tolist()]
    return (np.concatenate([d for d, _ in postings]).astype(np.int64),
            np.concatenate([f for _, f in postings]).astype(np.float64))


class QueryStem(FrozenRecord):
    """One distinct Porter stem of a query: its vocabulary group and the group's postings."""

    _fields = ("stem", "members", "docs", "tfs", "df")
    __slots__ = _fields

    stem: str
    members: np.ndarray  # int64 vocabulary term ids (may be empty)
    docs: np.ndarray     # int64 doc id of each member posting
    tfs: np.ndarray      # float64 tf of each member posting
    df: int              # rows holding any member

    def __init__(self, stem: str, members: np.ndarray, docs: np.ndarray, tfs: np.ndarray,
                 df: int) -> None:
        self._set(stem, members, docs, tfs, df)


class QueryStems(FrozenRecord):
    """A query's distinct stems (first occurrence first) and, per token, its stem's index."""

    _fields = ("stems", "tokens")
    __slots__ = _fields

    stems: list[QueryStem]
    tokens: list[int]

    def __init__(self, stems: list[QueryStem], tokens: list[int]) -> None:
        self._set(stems, tokens)


def query_stems(bm25: Bm25Index, text: str) -> QueryStems:
    """The query's stems with their groups' postings: what the fused rank's lexical evidence
    (:func:`stemmed_evidence`, ``proximity.proximity_scores``) reads, computed once a query."""
    stems: list[QueryStem] = []
    at: dict[str, int] = {}
    tokens: list[int] = []
    for term in tokenize(text):
        stem = porter_stem(term)
        if stem not in at:
            members = stem_group(bm25, stem)
            docs, tfs = (_group_postings(bm25, members) if members.size
                         else (np.zeros(0, np.int64), np.zeros(0)))
            df = int(sorted_distinct(docs).size) if docs.size else 0
            at[stem] = len(stems)
            stems.append(QueryStem(stem, members, docs, tfs, df))
        tokens.append(at[stem])
    return QueryStems(stems, tokens)


def stemmed_evidence(bm25: Bm25Index, text: str, rows: np.ndarray, *,
                     stems: QueryStems | None = None) -> StemmedEvidence:
    """Stem-widened BM25 scores and IDF-weighted query coverage of ``rows`` for ``text``
    (``stems``: :func:`query_stems` of ``text``, when the caller has it already)."""
    rows = np.asarray(rows, dtype=np.int64)
    scores = np.zeros(rows.shape, dtype=np.float64)
    held = np.zeros(rows.shape, dtype=np.float64)
    if rows.size == 0 or bm25.n_docs == 0:
        return StemmedEvidence(scores, held)
    by_row = np.argsort(rows, kind="stable")
    sorted_rows = rows[by_row]
    inside = (rows >= 0) & (rows < bm25.n_docs)
    dl = np.zeros(rows.shape, dtype=np.float64)
    dl[inside] = np.asarray(bm25.doc_lens, dtype=np.float64)[rows[inside]]
    k1, b = float(bm25.k1), float(bm25.b)
    with np.errstate(all="ignore"):  # hostile parameters: non-finite scores are dropped below
        knorm = k1 * ((1.0 - b) + b * dl / max(float(bm25.avgdl), 1.0))
    total_weight = 0.0
    query = stems if stems is not None else query_stems(bm25, text)
    parts: list[np.ndarray | None] = []  # each stem's score of each row (None: no match)
    for qs in query.stems:
        if qs.df == 0:  # in no document: no evidence, but the part of the query nobody holds
            parts.append(None)
            total_weight += bm25_idf(0, bm25.n_docs)
            continue
        idf = bm25_idf(qs.df, bm25.n_docs)
        # the tf of each asked row: postings matched to rows by binary search
        j = np.searchsorted(sorted_rows, qs.docs)
        j[j >= rows.size] = 0
        hit = sorted_rows[j] == qs.docs
        tf = np.zeros(rows.shape, dtype=np.float64)
        np.add.at(tf, by_row[j[hit]], qs.tfs[hit])
        with np.errstate(all="ignore"):
            part = idf * tf * (k1 + 1.0) / (tf + knorm)
        parts.append(part)
        total_weight += idf
        held += idf * (tf > 0)
    for i in query.tokens:  # once per query token, in query order
        got = parts[i]
        if got is not None:
            scores += got
    scores[~(np.isfinite(scores) & (scores > 0.0))] = 0.0
    coverage = np.clip(held / total_weight, 0.0, 1.0) if total_weight > 0.0 else held
    return StemmedEvidence(scores, coverage)
