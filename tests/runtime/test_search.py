"""Search semantics a user relies on, on small files built with urna.build.

§18 item 1 (axes file): scores, labels, spans, citations, truncation and every query error
in the reference's order and text. §18 item 2 (rerank contract): every hit of search_ann,
search_hybrid and search_graph carries the exact path's score bits for that chunk, labels
and ``reranked`` as the reference sets them, also for an int8 file (stored precision).
Plus: numpy queries, search_batch equals search, retrieve routing and its model-hash gate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import urna
from urna.errors import (
    DimensionMismatch,
    EmptyQuery,
    InvalidK,
    InvalidQueryValue,
    ModelHashMismatch,
    UrnaError,
    ZeroNormQuery,
)

MODEL_HASH = "sha256:" + "ab" * 32


def _chunk(i: int, vec, text: str | None = None) -> dict:
    return {"canonical_text": text or f"chunk {i}", "source_uri": "doc.txt",
            "byte_start": 10 * i, "byte_end": 10 * i + 10, "embedding": [float(v) for v in vec]}


@pytest.fixture(scope="module")
def axes(tmp_path_factory):
    path = tmp_path_factory.mktemp("axes") / "axes.urna"
    urna.build(str(path), "demo", 4, "demo-chunker/1", MODEL_HASH,
               [_chunk(i, np.eye(4)[i]) for i in range(3)], reproducible=True)
    with urna.open(path) as f:
        yield f


def test_axes_exact_hit_fields(axes) -> None:
    (hit,) = axes.search([1.0, 0.0, 0.0, 0.0], 1)
    assert abs(hit.score - 1.0) <= 1e-6
    assert (hit.score_type, hit.index_type, hit.reranked) == ("cosine", "exact", False)
    assert hit.chunk_id.startswith("sha256:") and hit.file_hash.startswith("sha256:")
    assert hit.citation_id == f"urna://{axes.content_hash}/{hit.chunk_id}"
    assert (hit.source_uri, hit.offset_start, hit.offset_end) == ("doc.txt", 0, 10)
    assert hit.embedding_model == "demo"
    result = axes.search([1.0, 0.0, 0.0, 0.0], 1)
    assert (result.recall, result.truncated, result.k_returned) == (1.0, True, 1)


def test_axes_ranking_and_truncation(axes) -> None:
    hits = axes.search([1.0, 1.0, 0.0, 0.0], 3)
    assert abs(hits[0].score - 0.70710677) <= 1e-5 and abs(hits[-1].score) <= 1e-6
    assert [h.offset_start for h in hits[:2]] == [0, 10]  # tie 0.7071: lower index first
    assert len(axes.search([1.0, 1.0, 0.0, 0.0], 2)) == 2
    assert axes.search([1.0, 0, 0, 0], 5).truncated is False


@pytest.mark.parametrize("query, k, error, text", [
    ([1.0, 0, 0, 0], 0, InvalidK, "invalid k: 0"),
    ([1.0, 0, 0, 0], -3, InvalidK, "invalid k: -3"),
    ([], 1, EmptyQuery, "empty query"),
    ([], 0, InvalidK, "invalid k: 0"),  # k is checked first
    ([1.0, 0, 0], 1, DimensionMismatch, "dimension mismatch: expected 4, got 3"),
    ([float("nan"), 0, 0, 0], 1, InvalidQueryValue, "NaN or Inf in query"),
    ([float("inf"), 0, 0, 0], 1, InvalidQueryValue, "NaN or Inf in query"),
    ([1e39, 0, 0, 0], 1, InvalidQueryValue, "NaN or Inf in query"),  # inf once in f32
    ([0.0, 0, 0, 0], 1, ZeroNormQuery, "zero-norm query"),
    ([1e-30, 1e-30, 0, 0], 1, ZeroNormQuery, "zero-norm query"),  # squares underflow in f32
])
def test_query_errors(axes, query, k, error, text) -> None:
    for call in (lambda: axes.search(query, k), lambda: axes.search_ann(query, k, 10),
                 lambda: axes.search_graph(query, k), lambda: axes.search_hybrid(query, "x", k, 5)):
        with pytest.raises(error) as err:
            call()
        assert str(err.value) == text


def test_argument_types_like_the_binding(axes) -> None:
    with pytest.raises(TypeError):
        axes.search([1.0, 0, 0, 0], 1.5)
    with pytest.raises(OverflowError):
        axes.search([1.0, 0, 0, 0], 2 ** 31)
    with pytest.raises(OverflowError):
        axes.search_ann([1.0, 0, 0, 0], 1, -1)
    with pytest.raises(UrnaError, match="^invalid query vector: "):
        axes.search("abcd", 1)


def test_huge_finite_query_scores_zero_everywhere(axes) -> None:
    hits = axes.search([3e38, 3e38, 0, 0], 3)  # norm overflows to inf: q becomes zeros
    assert [h.score for h in hits] == [0.0, 0.0, 0.0]
    assert [h.offset_start for h in hits] == [0, 10, 20]


def test_numpy_queries_of_any_dtype(axes) -> None:
    want = axes.search([0.0, 1.0, 0.0, 0.0], 2)
    for q in (np.array([0, 1, 0, 0], np.float32), np.array([0, 1, 0, 0], np.float64),
              np.array([0, 2, 0, 0], np.int64)):
        assert axes.search(q, 2) == want


def _rerank_corpus(n: int = 300, dim: int = 32) -> list[dict]:
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return [_chunk(i, rows[i], f"doc {i} alpha beta term{i} shared{i % 7}") for i in range(n)]


@pytest.fixture(scope="module", params=["float32", "int8"])
def rerank_file(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("rerank") / f"r-{request.param}.urna"
    urna.build(str(path), "demo", 32, "demo-chunker/1", MODEL_HASH, _rerank_corpus(),
               preset="hybrid", dtype=request.param, with_graph=True, reproducible=True)
    with urna.open(path) as f:
        yield f


def test_rerank_contract(rerank_file) -> None:
    f = rerank_file
    assert f.has_ann and f.has_bm25 and f.has_graph
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.standard_normal(32).astype(np.float32)
        exact = {h.chunk_id: h.score for h in f.search(q, f.n_embeddings)}
        for label, result in (
                ("hnsw", f.search_ann(q, 10, 100)),
                ("hybrid", f.search_hybrid(q, "alpha shared3 term12", 10, 100)),
                ("graph", f.search_graph(q, 10, 2, 100))):
            assert len(result.hits) == 10
            assert math.isnan(result.recall)
            for h in result.hits:
                assert (h.index_type, h.reranked) == (label, True)
                assert np.float32(h.score).tobytes() == np.float32(exact[h.chunk_id]).tobytes()
        ex = f.search_hybrid(q, "alpha shared3 term12", 10, 100).explain
        assert ex.ann_candidates > 0 and ex.bm25_candidates > 0 and ex.fusion_mode == "rrf"
        assert f.search_graph(q, 10, 2, 100).explain.graph_candidates > 0
        # the graph cannot change the exact top-k (§10.4)
        assert [h.chunk_id for h in f.search_graph(q, 10, 2, 100)] == \
               [h.chunk_id for h in f.search(q, 10)]
    want = "full_precision" if f.dtype == "float32" else "stored_precision"
    assert {h.rerank_source for h in f.retrieve(q, 3)} == {want}


def test_search_batch_equals_search(rerank_file) -> None:
    rng = np.random.default_rng(11)
    Q = rng.standard_normal((9, 32)).astype(np.float32)
    batch = rerank_file.search_batch(Q, 6)
    assert batch.ids.shape == (9, 6) and len(batch) == 9
    for i in range(9):
        assert batch[i] == rerank_file.search(Q[i], 6)
    assert batch[1:3] == [rerank_file.search(Q[1], 6), rerank_file.search(Q[2], 6)]


def test_retrieve_routes_and_gates(rerank_file) -> None:
    f = rerank_file
    q = np.random.default_rng(5).standard_normal(32)
    # declared index_type "hnsw" (Python hybrid preset): the ANN path, same hits as search_ann
    assert [h.chunk_id for h in f.retrieve(q, 4)] == [h.chunk_id for h in f.search_ann(q, 4, 100)]
    text_hits = f.retrieve(q, 4, query_text="alpha shared3 term12")
    assert [h.chunk_id for h in text_hits] == \
           [h.chunk_id for h in f.search_hybrid(q, "alpha shared3 term12", 4, 64)]
    texts = f.texts()
    ids = f.chunk_ids()
    assert all(h.text == texts[ids.index(h.chunk_id)] for h in text_hits)
    assert f.retrieve(q, 2, expected_model_hash=MODEL_HASH)
    with pytest.raises(ModelHashMismatch):
        f.retrieve(q, 2, expected_model_hash="sha256:" + "0" * 64)
