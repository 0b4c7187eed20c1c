"""Text queries over a built file: embed with the file's model, gate, route (04-surface §2.6).

The agent verbs (``ask``, ``retrieve``, ``search-text``) share this: the query text is
embedded in-process by the embedder the manifest names (potion, the floor, or a local
sentence-transformers directory), the three-layer gate refuses a different model, and the
search is routed by what the file carries (0.5.2+): a BM25 section and query text ->
hybrid, else an HNSW section -> ANN, else exact; candidates default to ``max(4k, 64)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from urna.errors import DimensionMismatch, InvalidInput, ModelHashMismatch
from urna.forge.embed import PLACEHOLDER_HASH, Embedder, embedder_for_model


@dataclass
class QueryResult:
    """Hits of one routed text query plus how they were found."""

    route: str
    hits: list[Any]
    candidates: dict[str, int]
    fusion: str
    full_precision: bool
    query_ms: float
    embedding_model: str
    model_hash: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rerank_source(self) -> str:
        """The ask/explain wording of where the rerank read its vectors."""
        return "real cosine" if self.full_precision else "real cosine at stored precision"


def default_candidates(k: int) -> int:
    """The reference's default candidate budget: ``max(4k, 64)``."""
    return max(4 * k, 64)


def manifest_of(f: Any) -> dict[str, Any]:
    """The manifest dict of an open UrnaFile."""
    return dict(f.inspect()["manifest"])


def embed_query(manifest: dict[str, Any], text: str, *, model_path: str | None = None,
                embedder: Embedder | None = None,
                skip_placeholder: bool = False) -> tuple[np.ndarray, Embedder]:
    """Embed ``text`` with the file's model and apply the three-layer gate.

    Raises ``ModelHashMismatch`` when the embedder's model_hash differs from the
    corpus's (never skippable), ``DimensionMismatch`` on a width mismatch and
    ``InvalidInput`` for an empty query, a different model name or a placeholder hash.
    """
    if not text.strip():
        raise InvalidInput("empty query text")
    name = str(manifest.get("embedding_model", ""))
    emb = embedder or embedder_for_model(name, model_path=model_path)
    if emb.embedding_model != name:
        raise InvalidInput(f"embedding_model mismatch: the corpus names {name!r}, the query "
                           f"embedder is {emb.embedding_model!r}")
    corpus_hash = str(manifest.get("model_hash", ""))
    if corpus_hash == PLACEHOLDER_HASH and not skip_placeholder:
        raise InvalidInput("the corpus carries the all-zero placeholder model_hash, so no "
                           "query embedder can be checked against it; rebuild it with a real "
                           "model_hash (or pass --skip-model-hash-check to search-text)")
    dim = int(manifest.get("embedding_dim", 0))
    full = int(manifest.get("full_dim") or dim)
    if emb.embedding_dim != full:
        raise DimensionMismatch(full, emb.embedding_dim)
    got_hash = emb.model_hash()
    if corpus_hash != PLACEHOLDER_HASH and got_hash != corpus_hash:
        raise ModelHashMismatch(got_hash, corpus_hash, bypass_hint=False)
    vec = np.asarray(emb.embed([text])[0], dtype=np.float32)
    if vec.shape[0] != full:
        raise DimensionMismatch(full, int(vec.shape[0]))
    if dim < full:  # MRL corpus: the same prefix + renormalise the build applied
        vec = vec[:dim].copy()
        n = float(np.linalg.norm(vec))
        if n > 0:
            vec /= n
    return vec, emb


def route_of(f: Any, query_text: str | None) -> str:
    """The path a routed query takes on this file (0.5.2+ routing)."""
    if f.has_bm25 and query_text:
        return "hybrid"
    if f.has_ann:
        return "hnsw"
    return "exact"


def _counts(route: str, f: Any, candidates: int) -> tuple[dict[str, int], str]:
    n = int(f.n_embeddings)
    c = min(candidates, n)
    if route == "hybrid":
        vec = {"exact": 0, "ann": c} if f.has_ann else {"exact": c, "ann": 0}
        return {**vec, "bm25": c, "graph": 0}, "rrf"
    if route == "hnsw":
        return {"exact": 0, "ann": c, "bm25": 0, "graph": 0}, "none"
    return {"exact": n, "ann": 0, "bm25": 0, "graph": 0}, "none"


def retrieve_text(f: Any, text: str, k: int = 10, *, candidates: int | None = None,
                  model_path: str | None = None, embedder: Embedder | None = None) -> QueryResult:
    """Embed + gate + routed ``UrnaFile.retrieve``: hits carry text and citations."""
    if k <= 0:
        raise InvalidInput("k must be > 0")
    manifest = manifest_of(f)
    vec, emb = embed_query(manifest, text, model_path=model_path, embedder=embedder)
    cand = candidates or default_candidates(k)
    route = route_of(f, text)
    t0 = time.perf_counter()
    hits = f.retrieve(vec, k, candidates=cand, expected_model_hash=emb.model_hash(),
                      query_text=text)
    ms = (time.perf_counter() - t0) * 1000.0
    counts, fusion = _counts(route, f, cand)
    return QueryResult(route, list(hits), counts, fusion, str(f.dtype) == "float32", ms,
                       emb.embedding_model, emb.model_hash())


def search_text(f: Any, text: str, k: int = 10, *, candidates: int | None = None,
                model_path: str | None = None, skip_placeholder: bool = False,
                embedder: Embedder | None = None) -> QueryResult:
    """Embed + gate + routed search returning SearchHits (the ``search-text`` verb)."""
    if k <= 0:
        raise InvalidInput("k must be > 0")
    manifest = manifest_of(f)
    vec, emb = embed_query(manifest, text, model_path=model_path, embedder=embedder,
                           skip_placeholder=skip_placeholder)
    cand = candidates or default_candidates(k)
    route = route_of(f, text)
    t0 = time.perf_counter()
    if route == "hybrid":
        hits = f.search_hybrid(vec, text, k, cand)
    elif route == "hnsw":
        hits = f.search_ann(vec, k, cand)
    else:
        hits = f.search(vec, k)
    ms = (time.perf_counter() - t0) * 1000.0
    counts, fusion = _counts(route, f, cand)
    return QueryResult(route, list(hits), counts, fusion, str(f.dtype) == "float32", ms,
                       emb.embedding_model, emb.model_hash())
