"""search_bm25: pure lexical top-k over the stored BM25 index (beyond the reference)."""

from __future__ import annotations

import pytest

import urna
from helpers.vectors import REF
from urna.errors import InvalidK, UnsupportedFeature
from urna.index.tokenize import tokenize


def test_hits_are_the_lexical_ranking_with_bm25_scores():
    with urna.open(REF / "quickstart-int8_bm25.urna") as f:
        hits = f.search_bm25("can I use this offline", 5)
        texts = dict(zip(f.chunk_ids(), f.texts(), strict=True))
    assert 0 < len(hits) <= 5
    assert all(h.score_type == "bm25" and h.index_type == "bm25" and not h.reranked for h in hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    query_terms = set(tokenize("can I use this offline"))
    # every hit shares a term with the query (BM25 only scores documents a term touches)
    assert all(query_terms & set(tokenize(texts[h.chunk_id])) for h in hits)
    assert hits[0].citation_id.startswith("urna://sha256:")


def test_file_without_bm25_and_bad_k_are_typed_errors():
    with urna.open(REF / "quickstart-exact.urna") as f, pytest.raises(UnsupportedFeature):
        f.search_bm25("offline", 3)
    with urna.open(REF / "quickstart-int8_bm25.urna") as f:
        with pytest.raises(InvalidK):
            f.search_bm25("offline", 0)
        assert f.search_bm25("zzzz qqqq", 3) == []
