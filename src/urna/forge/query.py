"""Text questions over a Searcher: embed with its model, gate, hand to the runtime (§2.6).

:func:`ask` is the one entry point for a text question (the ask / retrieve verbs, the HTTP
API, and later the MCP server, the TUI and the framework adapters): the text is embedded
in-process by the embedder the manifest names (potion, the floor, or a local
sentence-transformers directory), the three-layer gate refuses a different model, and the
runtime's routed ``retrieve`` decides the route and candidates (``urna.runtime.routing``).
Its ordering is :data:`DEFAULT_RANK` unless the caller passes ``rank="cosine"`` (the reference's
answers exactly); this is the one place that default lives.
:func:`search_text` is the same over SearchHits (the ``search-text`` verb).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from urna.errors import DimensionMismatch, InvalidInput, ModelHashMismatch
from urna.forge.embedders import PLACEHOLDER_HASH, Embedder, embedder_for_model
from urna.runtime.hits import RetrieveHit, SearchHit, SearchResult
from urna.runtime.ranks import FUSED, RANKS
from urna.runtime.routing import default_candidates
from urna.runtime.searcher import Searcher

__all__ = ["DEFAULT_RANK", "RANKS", "ask", "default_candidates", "embed_query", "manifest_of",
           "query_embedder", "retrieve_text", "search_text"]


# The ordering of every text question (CLI ask/retrieve, serve, MCP, adapters, async API): the
# fused cosine + BM25 order measures best on every labelled set (README "Answer quality").
# The Python API's searches keep the reference's cosine order.
DEFAULT_RANK = FUSED

_embedders: dict[tuple[str, str | None], Embedder] = {}
_embedders_lock = threading.Lock()


def query_embedder(embedding_model: str, model_path: str | None = None) -> Embedder:
    """The query embedder of a model, made once per process (loading and hashing cost once)."""
    key = (embedding_model, model_path)
    with _embedders_lock:
        emb = _embedders.get(key)
        if emb is None:
            emb = embedder_for_model(embedding_model, model_path=model_path)
            emb.model_hash()  # hash the model once, not inside a query
            _embedders[key] = emb
        return emb


def manifest_of(searcher: Searcher) -> dict[str, Any]:
    """The manifest dict of an open file (a catalog's is its first shard's)."""
    return dict(searcher.inspect()["manifest"])


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


def _embedded(searcher: Searcher, text: str, k: int, model_path: str | None,
              embedder: Embedder | None, skip_placeholder: bool) -> tuple[np.ndarray, Embedder]:
    if k <= 0:
        raise InvalidInput("k must be > 0")
    return embed_query(manifest_of(searcher), text, model_path=model_path, embedder=embedder,
                       skip_placeholder=skip_placeholder)


def ask(searcher: Searcher, text: str, k: int = 10, *, candidates: int | None = None,
        model_path: str | None = None, embedder: Embedder | None = None,
        reuse_embedder: bool = False, where: Mapping[str, Any] | None = None,
        rank: str = DEFAULT_RANK) -> SearchResult[RetrieveHit]:
    """Answer a text question: embed with the corpus's model, gate, then the runtime's routed
    ``retrieve``; hits carry their stored text and citation, the result says how it was found.

    ``reuse_embedder`` keeps one loaded embedder per model for the life of the process (the
    long-running skins: MCP, adapters, async API); a one-shot CLI call loads it afresh, so a
    model replaced on disk is always the one checked. ``where`` restricts the answer to the
    chunks whose metadata it matches (``urna.index.filter``); ``rank="cosine"`` reproduces the
    reference's order, the default (:data:`DEFAULT_RANK`) is the fused one. The filter narrows
    the candidates before the ranking orders them.
    """
    if embedder is None and reuse_embedder:
        embedder = query_embedder(str(searcher.embedding_model), model_path)
    vec, emb = _embedded(searcher, text, k, model_path, embedder, False)
    # candidates=0 has always meant "the default", as None does
    return searcher.retrieve(vec, k, candidates=candidates or None,
                             expected_model_hash=emb.model_hash(), query_text=text,
                             where=where, rank=rank)


retrieve_text = ask  # the name the agent verbs used first


def search_text(searcher: Searcher, text: str, k: int = 10, *, candidates: int | None = None,
                model_path: str | None = None, skip_placeholder: bool = False,
                embedder: Embedder | None = None,
                where: Mapping[str, Any] | None = None) -> SearchResult[SearchHit]:
    """Embed + gate + the runtime's routed search returning SearchHits (``search-text``)."""
    vec, _ = _embedded(searcher, text, k, model_path, embedder, skip_placeholder)
    return searcher.search_routed(vec, k, candidates=candidates or None, query_text=text,
                                  where=where)
