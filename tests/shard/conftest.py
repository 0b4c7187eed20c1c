"""Corpora for the sharded-build tests: the quickstart spec and a 20,000-row synthetic one.

The synthetic corpus uses the floor embedder (hashed tokens, no model file) and the
``exact`` preset without a graph, so a build costs seconds; the quickstart keeps its own
spec (potion, ``hybrid`` preset with HNSW, BM25 and graph).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from helpers.specs import write_jsonl_spec
from urna.forge import pipeline
from urna.forge.spec import CorpusSpec, load_spec

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart"
SYNTH_ROWS = 20_000

_WORDS = ["vector", "file", "chunk", "citation", "search", "shard", "merge", "score", "cosine",
          "index", "graph", "lexical", "token", "model", "embed", "offline", "portable", "verify",
          "hash", "span", "source", "manifest", "section", "cluster", "worker", "catalog",
          "rerank", "exact", "approximate", "neighbor", "recall", "query", "answer", "agent",
          "corpus", "build", "resume", "atomic", "rename", "stream", "batch", "actor", "task",
          "node"]


def quickstart_spec() -> CorpusSpec:
    """The quickstart spec with its source path made absolute (tests run from anywhere)."""
    spec = load_spec(QUICKSTART / "corpus.toml")
    spec.source.path = str(QUICKSTART / "docs.jsonl")
    return spec


def write_synthetic(root: Path, n: int = SYNTH_ROWS, seed: int = 7) -> Path:
    """A jsonl of ``n`` short random-word rows and its corpus.toml; returns the spec path."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        # a unique token per row: no two vectors tie, so the top-k order is unambiguous
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 14))] + [f"u{i}"]
        lines.append({"id": f"row-{i:06d}", "text": " ".join(words),
                      "source_uri": f"synthetic/{i // 100:04d}.txt"})
    return write_jsonl_spec(root, lines, name="synth", model="floor", mode="single")


def queries(dim: int, n: int, seed: int = 0) -> np.ndarray:
    """Seeded random unit query vectors."""
    q = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``ray`` marker (tests that start a local Ray cluster)."""
    config.addinivalue_line("markers", "ray: starts a real local Ray cluster (needs urna[ray])")


@pytest.fixture(scope="session")
def quickstart_single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart built as one file by the ordinary pipeline."""
    root = tmp_path_factory.mktemp("qs-single")
    out = pipeline.build(quickstart_spec(), out_dir=str(root), cache_dir=str(root / "cache"),
                         progress=pipeline.Progress(False))
    return Path(out["outputs"]["quickstart.urna"]["file"])


@pytest.fixture(scope="session")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folder holding the synthetic corpus.toml and rows."""
    root = tmp_path_factory.mktemp("synth")
    write_synthetic(root)
    return root


@pytest.fixture(scope="session")
def synth_single(synth_dir: Path) -> Path:
    """The synthetic corpus built as one file by the ordinary pipeline."""
    out = pipeline.build(load_spec(synth_dir / "corpus.toml"), out_dir=str(synth_dir / "single"),
                         cache_dir=str(synth_dir / "cache"), progress=pipeline.Progress(False))
    return Path(out["outputs"]["synth.urna"]["file"])


def assert_same_topk(single, catalog, Q: np.ndarray, k: int) -> None:
    """Exact top-k over the catalog equals the single file's: ids, order, scores (1e-6)."""
    for q in Q:
        a, b = single.search(q, k), catalog.search(q, k)
        assert [h.chunk_id for h in b] == [h.chunk_id for h in a]
        assert np.allclose([h.score for h in b], [h.score for h in a], rtol=0, atol=1e-6)
        assert [(h.source_uri, h.offset_start, h.offset_end) for h in b] == \
            [(h.source_uri, h.offset_start, h.offset_end) for h in a]
