"""UrnaFile.search on several threads: the same hits, bit for bit, with and without ``where=``.

Claims: ``threads=`` on the public exact search (plain and filtered) returns exactly the hits
of one thread for every stored dtype, the filtered hits are the matching rows' exact top k, and
a bad thread count is a typed error.
"""

from __future__ import annotations

import numpy as np
import pytest

import urna
from urna.errors import InvalidInput
from urna.index import exact

MODEL_HASH = "sha256:" + "0" * 64


@pytest.fixture(autouse=True)
def _small_tasks(monkeypatch):
    """A few hundred rows still split into several thread tasks."""
    monkeypatch.setattr(exact, "_ROWS_PER_TASK", 32)


def _file(tmp_path, dtype: str) -> str:
    rng = np.random.default_rng(5)
    m = rng.standard_normal((600, 64)).astype(np.float32)
    m[100:140] = m[3]  # ties across thread boundaries
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    chunks = [{"canonical_text": f"row {i}", "source_uri": f"doc/{i % 7}.md", "byte_start": i,
               "byte_end": i + 1, "embedding": m[i]} for i in range(len(m))]
    path = str(tmp_path / f"t-{dtype}.urna")
    urna.build(path, "t/64", 64, "t/1", MODEL_HASH, chunks, dtype=dtype, reproducible=True,
               metadata=[{"year": 2000 + i % 30} for i in range(len(m))])
    return path


def _hits(res) -> list[tuple[str, float]]:
    return [(h.chunk_id, h.score) for h in res]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int4"])
def test_threads_give_the_hits_of_one_thread(tmp_path, dtype) -> None:
    q = np.random.default_rng(8).standard_normal(64).astype(np.float32)
    where = {"year": {"$gte": 2012}}
    with urna.open(_file(tmp_path, dtype)) as f:
        for k in (1, 10, 45, 700):
            plain = _hits(f.search(q, k, threads=1))
            filtered = f.search(q, k, where=where, threads=1)
            assert filtered.explain.filter["path"] == "exact-filtered"
            years = [h.metadata["year"] for h in filtered]
            assert all(y >= 2012 for y in years)
            for t in (2, 3):
                assert _hits(f.search(q, k, threads=t)) == plain
                assert _hits(f.search(q, k, where=where, threads=t)) == _hits(filtered)
        # the filtered hits are the exact top k of the matching rows of the full ranking
        everything = _hits(f.search(q, 600, threads=1))
        keep = {h.chunk_id for h in f.search(q, 600, where=where, threads=1)}
        assert _hits(f.search(q, 12, where=where, threads=2)) == \
            [h for h in everything if h[0] in keep][:12]


def test_a_bad_thread_count_is_a_typed_error(tmp_path) -> None:
    with urna.open(_file(tmp_path, "float32")) as f:
        for bad in (0, -1, 2.5, True):
            with pytest.raises(InvalidInput):
                f.search(np.ones(64, np.float32), 3, threads=bad)
