"""The one text-query entry point the agent surfaces (MCP, adapters, async API) call.

``urna retrieve`` answers with :func:`urna.forge.query.retrieve_text`; every surface above the
forge goes through :func:`query_text` so they answer exactly as the CLI does (same ranking,
candidate and routing defaults) and a rename of the forge's function is a one-line change
here. Ranking / filter options (``rank=``, ``where=`` ...) pass through as ``**options``.
"""

from __future__ import annotations

import threading
from typing import Any

from urna.forge.embed import Embedder, embedder_for_model
from urna.forge.query import QueryResult, retrieve_text

_embedders: dict[tuple[str, str | None], Embedder] = {}
_lock = threading.Lock()


def query_embedder(embedding_model: str, model_path: str | None = None) -> Embedder:
    """The query embedder of a model, made once per process (loading and hashing cost once)."""
    key = (embedding_model, model_path)
    with _lock:
        emb = _embedders.get(key)
        if emb is None:
            emb = embedder_for_model(embedding_model, model_path=model_path)
            emb.model_hash()  # hash the model once, not inside a query
            _embedders[key] = emb
        return emb


def query_text(f: Any, text: str, k: int = 10, *, model_path: str | None = None,
               **options: Any) -> QueryResult:
    """``urna retrieve FILE TEXT -k K``: embed, gate, route; hits carry text and citations."""
    if "embedder" not in options:
        options["embedder"] = query_embedder(str(f.embedding_model),
                                             model_path)
    return retrieve_text(f, text, k, model_path=model_path, **options)
