"""index.stemmed_bm25: stem-widened BM25 evidence and query coverage, on hand-made indexes.

Expected scores are the BM25 formula evaluated by hand in the test (k1 1.5, b 0.75), never by
the code under test; the reference's own BM25 answers stay unstemmed.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.index.bm25 import Bm25Index
from urna.index.stemmed_bm25 import stem_group, stemmed_evidence
from urna.index.stemming import porter_stem

DOCS = ["copy the files", "copying file now", "unrelated words here", "the copier"]
K1, B = 1.5, 0.75
AVGDL = 11 / 4  # token counts 3, 3, 3, 2


def _bm25(idf: float, tf: float, dl: float) -> float:
    return idf * tf * (K1 + 1) / (tf + K1 * ((1 - B) + B * dl / AVGDL))


def _idf(df: int, n: int = 4) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def test_a_query_term_finds_the_other_forms_of_its_word() -> None:
    index = Bm25Index.build(DOCS)
    assert index.search("copies", 10) == []  # the reference's BM25 does not stem
    ev = stemmed_evidence(index, "copies", np.arange(4))
    one = _bm25(_idf(2), 1, 3)  # group {copy, copying}: df 2, tf 1 in docs 0 and 1
    assert np.allclose(ev.scores, [one, one, 0.0, 0.0])  # "copier" is another stem
    assert ev.coverage.tolist() == [1.0, 1.0, 0.0, 0.0]


def test_coverage_is_the_idf_weighted_share_of_the_query() -> None:
    index = Bm25Index.build(DOCS)
    ev = stemmed_evidence(index, "copy now", np.array([0, 1, 2]))
    w_copy, w_now = _idf(2), _idf(1)
    assert np.allclose(ev.coverage, [w_copy / (w_copy + w_now), 1.0, 0.0])
    assert np.allclose(ev.scores, [_bm25(w_copy, 1, 3), _bm25(w_copy, 1, 3)
                                   + _bm25(w_now, 1, 3), 0.0])


def test_repeated_query_terms_count_again() -> None:
    index = Bm25Index.build(DOCS)
    once = stemmed_evidence(index, "files", np.arange(4))
    twice = stemmed_evidence(index, "files file", np.arange(4))
    assert np.allclose(twice.scores, 2 * once.scores)
    assert once.coverage.tolist() == twice.coverage.tolist() == [1.0, 1.0, 0.0, 0.0]


def test_a_word_no_document_holds_is_the_part_of_the_query_nobody_covers() -> None:
    index = Bm25Index.build(DOCS)
    ev = stemmed_evidence(index, "files zzzz", np.arange(4))
    assert np.allclose(ev.scores, stemmed_evidence(index, "files", np.arange(4)).scores)
    w_file, w_absent = _idf(2), _idf(0)
    assert np.allclose(ev.coverage, [w_file / (w_file + w_absent)] * 2 + [0.0, 0.0])
    assert not stemmed_evidence(index, "zzzz", np.arange(4)).coverage.any()


def test_rows_outside_the_index_and_empty_asks_get_no_evidence() -> None:
    index = Bm25Index.build(DOCS)
    ev = stemmed_evidence(index, "copy", np.array([9, 0, -1]))
    assert ev.scores[0] == ev.scores[2] == 0.0 and ev.scores[1] > 0.0
    assert stemmed_evidence(index, "copy", np.zeros(0, np.int64)).scores.size == 0
    assert not stemmed_evidence(index, "", np.arange(4)).scores.any()
    assert not stemmed_evidence(Bm25Index.build([]), "copy", np.arange(2)).scores.any()


def test_rows_in_any_order_get_their_own_evidence() -> None:
    index = Bm25Index.build(DOCS)
    fwd = stemmed_evidence(index, "copy files now", np.arange(4))
    rev = stemmed_evidence(index, "copy files now", np.arange(4)[::-1])
    assert np.array_equal(fwd.scores[::-1], rev.scores)
    assert np.array_equal(fwd.coverage[::-1], rev.coverage)


def test_stem_groups_hold_every_vocabulary_form() -> None:
    index = Bm25Index.build(DOCS)
    group = stem_group(index, "copi")
    assert sorted(index.terms[i] for i in group) == ["copy", "copying"]
    assert sorted(index.terms[i] for i in stem_group(index, "file")) == ["file", "files"]
    assert stem_group(index, "copi") is group  # found once per index
    assert stem_group(index, "zebra").size == 0


LETTERS = st.text(alphabet="abcdeilmnorstuyz", min_size=1, max_size=14)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(LETTERS, min_size=1, max_size=5), min_size=1, max_size=12))
def test_a_stem_group_is_every_term_with_that_stem(docs) -> None:
    # the prefix search must find exactly what stemming the whole vocabulary finds
    assert_groups_match_the_whole_vocabulary(docs)


def assert_groups_match_the_whole_vocabulary(docs: list[list[str]]) -> None:
    index = Bm25Index.build([" ".join(d) for d in docs])
    brute: dict[str, list[int]] = {}
    for i, term in enumerate(index.terms):
        brute.setdefault(porter_stem(term), []).append(i)
    for stem, ids in brute.items():
        assert stem_group(index, stem).tolist() == ids


SHORT_STEMMED = st.lists(st.sampled_from(
    ["d", "do", "b", "by", "be", "a", "ay", "ho", "hop", "happ", "y", "e", "i", "l", "o", "s",
     "ing", "ed", "ies",
     "ation", "biliti", "iviti", "ness", "ful", "ize", "ll", "es", "ly", "ment"]),
    min_size=1, max_size=4).map("".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(SHORT_STEMMED, min_size=1, max_size=6), min_size=1, max_size=12))
def test_a_short_stems_group_is_every_term_with_that_stem(docs) -> None:
    # short stems ("do", "by"): the narrowed prefix must still find every form
    assert_groups_match_the_whole_vocabulary(docs)


def test_a_two_letter_stem_finds_its_longer_forms() -> None:
    index = Bm25Index.build(["do doing dos does done", "dog dot by bye be being bes", "ays"])
    assert sorted(index.terms[i] for i in stem_group(index, "do")) == ["do", "doing", "dos"]
    assert sorted(index.terms[i] for i in stem_group(index, "by")) == ["by"]
    assert sorted(index.terms[i] for i in stem_group(index, "bye")) == ["bye"]
    assert sorted(index.terms[i] for i in stem_group(index, "be")) == ["be", "being", "bes"]
    assert sorted(index.terms[i] for i in stem_group(index, "ai")) == ["ays"]


WORDS = ["ab", "cd", "ef", "gh", "ij", "kl"]  # two letters: each is its own stem


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), max_size=6), min_size=1, max_size=8),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_without_shared_stems_the_score_is_the_reference_bm25(docs, query) -> None:
    index = Bm25Index.build([" ".join(d) for d in docs])
    rows = np.arange(len(docs))
    text = " ".join(query)
    ev = stemmed_evidence(index, text, rows)
    assert np.allclose(ev.scores, index.scores_of(text, rows), rtol=1e-5, atol=1e-6)
    n = len(docs)
    weight = {w: _idf(sum(w in d for d in docs), n) for w in set(query)}  # df 0: idf(0)
    for r, d in enumerate(docs):
        want = sum(v for w, v in weight.items() if w in d) / sum(weight.values())
        assert math.isclose(ev.coverage[r], want, abs_tol=1e-12)
