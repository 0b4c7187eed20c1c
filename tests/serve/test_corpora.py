"""Request handling without a server: any JSON body gets an answer or a 4xx ApiError.

Hypothesis feeds arbitrary JSON, and bodies shaped like real requests with hostile values,
to every handler of a corpus opened in-process; nothing else may escape.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_support import EXPECTED, REF

from helpers.budget import examples
from urna.runtime.corpora import corpus_name
from urna.serve.corpora import ApiError, Corpora

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)
NUMBER = st.integers() | st.floats() | st.sampled_from([math.nan, math.inf, 1e39, 10**400])
FIELD = {
    "vector": st.lists(NUMBER, min_size=0, max_size=300) | JSON,
    "text": st.text(max_size=40) | JSON,
    "k": st.integers(-5, 1500) | JSON,
    "mode": st.sampled_from(["exact", "ann", "hybrid", "graph", "other"]) | JSON,
    "ef": st.integers(-5, 200_000) | JSON,
    "candidates": st.integers(-5, 200_000) | JSON,
    "hops": st.integers(-2, 20) | JSON,
    "citation": st.sampled_from(["urna://", "urna://a/b", "urna://sha256:x/sha256:y", "x"])
                | st.text(max_size=40) | JSON,
}
SHAPED = st.fixed_dictionaries({}, optional=FIELD)


@pytest.fixture(scope="module")
def corpus():
    corpora = Corpora([REF / "quickstart-hybrid.urna"])
    yield corpora.get("quickstart-hybrid")
    corpora.close()


def _answer_or_4xx(fn, body) -> None:
    try:
        out = fn(body)
    except ApiError as e:
        assert 400 <= e.status < 500 and e.message
        assert e.to_dict() == {"error": {"type": e.kind, "message": e.message}}
    else:
        assert isinstance(out, dict)


@pytest.mark.parametrize("method", ["search", "retrieve", "cite"])
@given(body=JSON | SHAPED)
@settings(max_examples=examples(150, 50), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_any_body_gets_an_answer_or_a_4xx(corpus, method: str, body) -> None:
    _answer_or_4xx(getattr(corpus, method), body)


@given(vector=st.lists(st.floats(-1e30, 1e30, allow_nan=False), min_size=256, max_size=256))
@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_finite_vectors_of_the_right_width_are_answered_or_zero_norm(corpus, vector) -> None:
    try:
        hits = corpus.search({"vector": vector, "k": 3})["hits"]
    except ApiError as e:
        assert e.kind == "ZeroNormQuery"  # e.g. all zeros, or values whose squares underflow
    else:
        assert len(hits) == 3 and all(-1.0001 <= h["score"] <= 1.0001 for h in hits)


def test_names_are_stems_and_duplicates_are_refused(tmp_path) -> None:
    assert corpus_name("a/b/quickstart.urna") == "quickstart"
    assert corpus_name("notes.v2.urna") == "notes.v2"
    assert corpus_name("shards/big.catalog.json") == "big"
    with pytest.raises(ValueError, match="two files share the corpus name 'quickstart-exact'"):
        Corpora([REF / "quickstart-exact.urna", REF / "quickstart-exact.urna"])


def test_listing_reports_each_corpus_and_the_encoding_names() -> None:
    corpora = Corpora([REF / "synthetic-int8_bm25.urna", REF / "quickstart-spaces.urna"])
    try:
        listing = corpora.listing()
        a, b = listing["corpora"]
        assert (a["name"], a["dtype"], a["embedding_dim"]) == ("synthetic-int8_bm25", "int8", 64)
        assert a["content_hash"] == EXPECTED["synthetic-int8_bm25.urna"]["content_hash"]
        assert a["capabilities"]["bm25"] and not a["capabilities"]["ann"]
        assert b["capabilities"]["spaces"] and b["space_names"]
        assert listing["encoding_names"]["3"] == "int8"
    finally:
        corpora.close()
