"""index.proximity: BM25TP term-proximity evidence, on hand-made indexes.

Expected scores are the Rasolofo & Savoy formula worked out by hand in the test (the file's
k1 1.5 and b 0.75, window 5, ``1 / d ** 2`` per occurrence), never by the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from urna.errors import InvalidInput
from urna.index.bm25 import Bm25Index
from urna.index.fusion import fuse
from urna.index.proximity import WINDOW, pair_accumulators, proximity_scores
from urna.index.tokenize import tokenize

K1, B = 1.5, 0.75
# Every row holds "copy" and "files" once, at a distance of 1, 3, 5 and 6 tokens; row 4 holds
# "copies" and "file" side by side (the same stems); row 5 holds "copy" alone.
DOCS = ["copy files aa bb cc dd ee",
        "copy aa bb files cc dd ee",
        "copy aa bb cc dd files ee",
        "copy aa bb cc dd ee files",
        "copies file aa bb cc dd ee",
        "copy aa bb cc dd ee ff"]
N = len(DOCS)
AVGDL = 7.0  # every row has 7 tokens


def _idf(df: int) -> float:
    return math.log(1 + (N - df + 0.5) / (df + 0.5))


def _tp(acc: float, dl: float = 7.0) -> float:
    """One pair's BM25TP score: min idf x saturated accumulator (copy: df 6, files: df 5)."""
    knorm = K1 * ((1 - B) + B * dl / AVGDL)
    return min(_idf(6), _idf(5)) * acc * (K1 + 1) / (acc + knorm)


@pytest.fixture(scope="module")
def index() -> Bm25Index:
    return Bm25Index.build(DOCS)


def _scores(index: Bm25Index, query: str, rows: list[int] | None = None,
            docs: list[str] = DOCS) -> np.ndarray:
    rows = list(range(len(docs))) if rows is None else rows
    return proximity_scores(index, query, np.asarray(rows), [docs[r] for r in rows])


def test_closer_query_words_score_more_by_the_formula(index) -> None:
    got = _scores(index, "copy files")
    assert got[0] == pytest.approx(_tp(1.0))
    assert got[1] == pytest.approx(_tp(1 / 9))
    assert got[2] == pytest.approx(_tp(1 / 25))
    assert got[3] == 0.0  # 6 tokens apart: beyond the window of 5
    assert WINDOW == 5
    assert got[0] > got[1] > got[2] > got[3]


def test_other_forms_of_the_query_words_count(index) -> None:
    got = _scores(index, "copies file")
    assert got[4] == pytest.approx(got[0]) == pytest.approx(_tp(1.0))


def test_one_query_word_or_one_matched_word_gives_nothing(index) -> None:
    assert not _scores(index, "copy").any()
    assert _scores(index, "copy files")[5] == 0.0
    assert not _scores(index, "zebra quantum").any()  # words no row holds
    assert not _scores(index, "").any()


def test_repeated_occurrences_add_up_and_saturate() -> None:
    docs = ["copy files copy files aa bb cc", "copy files aa bb cc dd ee"]
    index = Bm25Index.build(docs)
    got = _scores(index, "copy files", docs=docs)
    # row 0 (copy files copy files): different-stem pairs at distances 1, 1, 1 and 3
    acc = 3 * 1.0 + 1 / 9
    n, dl = 2, 7.0
    idf = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    knorm = K1 * ((1 - B) + B * dl / 7.0)
    assert got[0] == pytest.approx(idf * acc * (K1 + 1) / (acc + knorm))
    assert got[1] == pytest.approx(idf * 1.0 * (K1 + 1) / (1.0 + knorm))
    assert got[0] < 3 * got[1]  # saturated, as a BM25 tf


def test_longer_rows_score_less_for_the_same_pair() -> None:
    docs = ["copy files", "copy files aa bb cc dd ee ff gg hh"]
    index = Bm25Index.build(docs)
    got = _scores(index, "copy files", docs=docs)
    assert got[0] > got[1] > 0.0


def test_rows_outside_the_index_and_mismatched_texts(index) -> None:
    got = proximity_scores(index, "copy files", np.asarray([-1, 0, 99]),
                           [DOCS[0], DOCS[0], DOCS[0]])
    assert got.tolist() == [0.0, pytest.approx(_tp(1.0)), 0.0]
    with pytest.raises(InvalidInput):
        proximity_scores(index, "copy files", np.asarray([0, 1]), [DOCS[0]])


def test_fusion_puts_the_row_with_the_words_together_first(index) -> None:
    # rows 0 and 3 tie on cosine and on BM25 (same words, same length): proximity decides
    pool = np.asarray([0, 3, 5])
    cosine = np.asarray([0.5, 0.5, 0.1])
    lexical = np.asarray([2.0, 2.0, 0.5])
    coverage = np.asarray([1.0, 1.0, 0.5])
    plain = fuse(pool, cosine, lexical, coverage=1.0, row_coverage=coverage)
    assert plain.ids.tolist()[:2] == [0, 3]  # a tie: row id order
    prox = _scores(index, "copy files", [3, 0, 5])
    swapped = fuse(np.asarray([3, 0, 5]), cosine, lexical, coverage=1.0,
                   row_coverage=coverage, proximity=prox)
    assert swapped.ids.tolist() == [0, 3, 5]
    # ...and a proximity half the BM25 score outweighs a slightly higher cosine
    closer = fuse(pool, np.asarray([0.5, 0.52, 0.1]), lexical, coverage=1.0,
                  row_coverage=coverage, proximity=np.asarray([1.0, 0.0, 0.0]))
    assert closer.ids.tolist() == [0, 3, 5]
    assert fuse(pool, np.asarray([0.5, 0.52, 0.1]), lexical, coverage=1.0,
                row_coverage=coverage).ids.tolist() == [3, 0, 5]


def test_fuse_refuses_bad_proximity() -> None:
    ids, cos, lex = np.asarray([0, 1]), np.asarray([0.2, 0.1]), np.asarray([1.0, 0.0])
    for bad in ([1.0], [-1.0, 0.0], [math.nan, 0.0], [math.inf, 0.0]):
        with pytest.raises(InvalidInput):
            fuse(ids, cos, lex, proximity=np.asarray(bad))


WORDS = ["copy", "copies", "files", "file", "aa", "bb", "zebra"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12), min_size=1,
                max_size=6),
       st.lists(st.sampled_from(WORDS), max_size=4), st.randoms(use_true_random=False))
def test_scores_are_finite_nonnegative_and_per_row(docs, query, rnd) -> None:
    texts = [" ".join(d) for d in docs]
    index = Bm25Index.build(texts)
    q = " ".join(query)
    got = _scores(index, q, docs=texts)
    assert np.all(np.isfinite(got)) and np.all(got >= 0.0)
    order = list(range(len(texts)))
    rnd.shuffle(order)
    again = _scores(index, q, order, docs=texts)
    assert again.tolist() == got[order].tolist()  # a row's score is its own
    for j, d in enumerate(docs):
        if len({w.rstrip("s").replace("copie", "copy") for w in d} & {
                w.rstrip("s").replace("copie", "copy") for w in query}) < 2:
            assert got[j] == 0.0  # fewer than two of the query's stems: no pair


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.floats(0, 20), st.floats(0, 1)), min_size=1,
                max_size=30))
def test_zero_proximity_is_the_order_without_it(rows) -> None:
    ids = np.arange(len(rows))
    cos, lex, cov = (np.asarray(c, dtype=np.float64) for c in zip(*rows, strict=True))
    plain = fuse(ids, cos, lex, coverage=1.0, row_coverage=cov)
    zero = fuse(ids, cos, lex, coverage=1.0, row_coverage=cov, proximity=np.zeros(len(rows)))
    assert zero.ids.tolist() == plain.ids.tolist()
    assert zero.scores.tolist() == plain.scores.tolist()


def test_a_row_made_of_query_words_costs_linear_work() -> None:
    # 200,000 alternating query words: every token is a pair with its neighbours
    docs = ["copy files " * 100_000, "aa bb"]
    index = Bm25Index.build(docs)
    got = _scores(index, "copy files", docs=docs)
    assert got[0] > 0.0 and got[1] == 0.0


def _accumulators_written_out(words: dict[str, int], text: str) -> dict:
    """The pair accumulators as the paper states them: every two different query stems
    within WINDOW tokens, ``1 / d ** 2`` each, in text order."""
    toks = tokenize(text)
    acc: dict = {}
    for i, a in enumerate(toks):
        for j in range(i + 1, min(i + 1 + WINDOW, len(toks))):
            sa, sb = words.get(a), words.get(toks[j])
            if sa is None or sb is None or sa == sb:
                continue
            key = (min(sa, sb), max(sa, sb))
            acc[key] = acc.get(key, 0.0) + 1.0 / ((j - i) * (j - i))
    return acc


@settings(max_examples=examples(2000, 300), deadline=None)
@given(st.lists(st.sampled_from(WORDS + ["Copy", "FILES", "x", "über", "the"]), max_size=40),
       st.dictionaries(st.sampled_from(WORDS + ["über"]), st.integers(0, 3), max_size=5))
def test_pair_accumulators_are_the_sums_written_out(tokens, words) -> None:
    text = " ".join(tokens)
    assert pair_accumulators(words, text) == _accumulators_written_out(words, text)
