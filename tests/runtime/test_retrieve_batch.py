"""``search_batch`` and ``retrieve_batch`` answer each row exactly as ``search`` and
``retrieve`` answer it alone: the same ids, score bits, tie order and envelope (everything but
the timing), over random queries, k, filters and ranks. ``urna serve`` batches concurrent
requests through them, so these are the equalities its answers rest on."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import urna

MODEL_HASH = "sha256:" + "cd" * 32
DIM = 8
N = 150  # past the 64 rows from which the exact path screens with BLAS
FIXTURES = [HealthCheck.function_scoped_fixture]  # module fixtures: safe to share
WHERES = [None, {"lang": "en"}, {"year": {"$gte": 2010}}, {"lang": {"$in": ["de", "fr"]}}]


def _corpus(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows on a coarse grid (many exact ties and repeated rows) with metadata."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(N, DIM)).astype(np.float32)
    X[X.sum(axis=1) == 0, 0] = 1.0
    X[np.abs(X).sum(axis=1) == 0, 0] = 1.0  # no zero row
    X[N // 2:N // 2 + 10] = X[:10]  # duplicated rows tie exactly
    chunks = [{"canonical_text": f"chunk number {i}", "source_uri": f"doc{i % 7}.txt",
               "byte_start": 0, "byte_end": 5, "embedding": X[i].tolist()} for i in range(N)]
    meta = [{"lang": ("en", "de", "fr")[i % 3], "year": 2000 + i % 25} for i in range(N)]
    return chunks, meta


@pytest.fixture(scope="module", params=["float32", "int8"])
def exact_file(request, tmp_path_factory):
    chunks, meta = _corpus(3)
    path = tmp_path_factory.mktemp("batch") / f"exact-{request.param}.urna"
    urna.build(str(path), "demo", DIM, "demo/1", MODEL_HASH, chunks, metadata=meta,
               preset="exact", dtype=request.param, reproducible=True)
    with urna.open(path) as f:
        yield f


def _same(a: Any, b: Any) -> None:
    """Two results equal in every field but the timing."""
    da, db = a.to_dict(), b.to_dict()
    da.pop("query_time_ms"), db.pop("query_time_ms")
    assert da == db
    assert [np.float32(h.score).tobytes() for h in a] == [np.float32(h.score).tobytes()
                                                          for h in b]
    assert a.candidate_budget == b.candidate_budget


queries = st.lists(st.lists(st.integers(-3, 3), min_size=DIM, max_size=DIM)
                   .filter(lambda v: any(v)), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURES)
@given(qs=queries, k=st.integers(1, N + 5), where=st.sampled_from(WHERES))
def test_search_batch_equals_search(exact_file, qs, k, where) -> None:
    Q = np.array(qs, dtype=np.float32)
    batch = exact_file.search_batch(Q, k, where=where)
    for i, q in enumerate(Q):
        _same(batch[i], exact_file.search(q, k, where=where))


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURES)
@given(qs=queries, k=st.integers(1, 40), where=st.sampled_from(WHERES),
       rank=st.sampled_from(["cosine", "fused"]), with_text=st.booleans(),
       candidates=st.sampled_from([None, 5, 100]))
def test_retrieve_batch_equals_retrieve(exact_file, qs, k, where, rank, with_text,
                                        candidates) -> None:
    Q = np.array(qs, dtype=np.float32)
    texts = [f"question {i}" for i in range(len(Q))] if with_text else None
    batch = exact_file.retrieve_batch(Q, k, candidates, expected_model_hash=MODEL_HASH,
                                      query_texts=texts, where=where, rank=rank)
    assert len(batch) == len(Q)
    for i, q in enumerate(Q):
        alone = exact_file.retrieve(q, k, candidates, expected_model_hash=MODEL_HASH,
                                    query_text=None if texts is None else texts[i],
                                    where=where, rank=rank)
        _same(batch[i], alone)
        assert [h.text for h in batch[i]] == [h.text for h in alone]


def test_retrieve_batch_off_the_exact_route_retrieves_each_row(tmp_path) -> None:
    chunks, _ = _corpus(5)
    urna.build(str(tmp_path / "hybrid.urna"), "demo", DIM, "demo/1", MODEL_HASH, chunks,
                   preset="hybrid", reproducible=True, hnsw_m=8, hnsw_ef_construction=32)
    with urna.open(tmp_path / "hybrid.urna") as f:
        Q = np.eye(DIM, dtype=np.float32)[:3]
        texts = ["chunk number 4", "number 9", "chunk"]
        batch = f.retrieve_batch(Q, 4, query_texts=texts, rank="fused")
        for q, t, got in zip(Q, texts, batch, strict=True):
            _same(got, f.retrieve(q, 4, query_text=t, rank="fused"))
        assert {r.route for r in batch} == {"hybrid"}


def test_retrieve_batch_errors_are_retrieves(exact_file) -> None:
    from urna.errors import ModelHashMismatch, ZeroNormQuery

    q = np.ones(DIM, dtype=np.float32)
    with pytest.raises(ModelHashMismatch) as batched:
        exact_file.retrieve_batch([q], 3, expected_model_hash="sha256:" + "00" * 32)
    with pytest.raises(ModelHashMismatch) as alone:
        exact_file.retrieve(q, 3, expected_model_hash="sha256:" + "00" * 32)
    assert str(batched.value) == str(alone.value)
    with pytest.raises(ZeroNormQuery):
        exact_file.retrieve_batch([q, np.zeros(DIM, dtype=np.float32)], 3)
    with pytest.raises(ValueError):
        exact_file.retrieve_batch([q], 3, query_texts=["a", "b"])
