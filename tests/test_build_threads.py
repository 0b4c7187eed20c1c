"""A build on several threads writes the same bytes as a one-thread build, and the reference's.

The corpus (600 chunks, HNSW + BM25 + graph, repeated texts, non-ASCII words) is generated in
pure Python so the reference wheel can build it too; the two hashes below are the reference
0.5.1 wheel's output for it (``urna.build`` with the same arguments, run in /work/refvenv).
"""

from __future__ import annotations

import hashlib
import math
import random

import pytest

import urna

WORDS = ["file", "vector", "search", "citation", "offline", "embed", "chunk", "corpus", "index",
         "model", "query", "rerank", "cosine", "byte", "span", "hash", "graph", "space", "média",
         "blob", "token", "lexical", "semantic", "zürich", "naïve", "日本"]
REFERENCE_HASHES = {
    "hybrid": "aa8f77c50cb61a236182dd756a7db02c460b0d70f0a3abf7603a9046d718dd77",
    "compressed": "aba939e479d59eae3cea8c028b2f056f7045aa56020d9c5668f97ed81b5e480e",
}


def corpus_chunks(n: int = 600, dim: int = 32, seed: int = 11) -> list[dict]:
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60))) for _ in range(n)]
    for i in range(0, n, 9):  # repeated texts, so the dedup candidate is in play
        texts[i] = texts[i // 3]
    chunks, offset = [], 0
    for i, text in enumerate(texts):
        row = [rng.gauss(0.0, 1.0) for _ in range(dim)]
        norm = math.sqrt(sum(x * x for x in row))
        size = len(text.encode("utf-8"))
        chunks.append({"canonical_text": text, "source_uri": f"doc{i % 17}.txt",
                       "byte_start": offset, "byte_end": offset + size,
                       "embedding": [x / norm for x in row]})
        offset += size + 1
    return chunks


def _build(tmp_path, monkeypatch, preset: str, threads: int) -> bytes:
    monkeypatch.setenv("URNA_THREADS", str(threads))
    out = tmp_path / f"{preset}-{threads}.urna"
    urna.build(out, "demo-model", 32, "demo-chunker/1", "sha256:" + "0" * 64, corpus_chunks(),
               preset=preset, with_graph=True, reproducible=True, with_hnsw=True, with_bm25=True)
    return out.read_bytes()


@pytest.mark.parametrize("preset", sorted(REFERENCE_HASHES))
def test_threaded_build_equals_one_thread_build_and_reference(tmp_path, monkeypatch, preset):
    one = _build(tmp_path, monkeypatch, preset, 1)
    many = _build(tmp_path, monkeypatch, preset, 4)
    assert many == one
    assert hashlib.sha256(one).hexdigest() == REFERENCE_HASHES[preset]


def test_threaded_build_raises_the_sequential_first_error(tmp_path, monkeypatch):
    # A bad blob table is reported even while the core sections are still being encoded.
    messages = []
    for threads in (1, 4):
        monkeypatch.setenv("URNA_THREADS", str(threads))
        with pytest.raises(urna.errors.BuildError) as info:
            urna.build(tmp_path / f"bad-{threads}.urna", "demo-model", 32, "demo-chunker/1",
                       "sha256:" + "0" * 64, corpus_chunks(), preset="hybrid",
                       blob_refs=[{"nonsense": 1}])
        assert not (tmp_path / f"bad-{threads}.urna").exists()
        messages.append(str(info.value))
    assert messages[0] == messages[1]
