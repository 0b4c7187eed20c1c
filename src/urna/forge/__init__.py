"""urna.forge: build .urna files from sources and ask them questions, offline.

Layers (imports point down): ``spec`` (corpus.toml) -> ``ingest`` / ``documents`` (rows and
files -> chunks, with ``chunk``) -> ``embed`` (potion, floor, sentence-transformers) ->
``pipeline`` (cache, emit, sidecars) -> ``urna.build``; ``query`` embeds a question with a
file's own model, gates it and routes it through the runtime.

Names are loaded on first use so ``import urna.forge`` stays cheap::

    from urna.forge import load_spec, build_spec, potion_embedder
    result = build_spec(load_spec("examples/quickstart/corpus.toml"))
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_NAMES = {
    "load_spec": ("spec", "load_spec"),
    "validate_spec": ("spec", "validate"),
    "SpecError": ("spec", "SpecError"),
    "build_spec": ("pipeline", "build"),
    "potion_embedder": ("embed", "potion_embedder"),
    "PotionEmbedder": ("embed", "PotionEmbedder"),
    "FloorEmbedder": ("embed", "FloorEmbedder"),
    "SentenceTransformerEmbedder": ("embed_st", "SentenceTransformerEmbedder"),
    "ChunkSpec": ("chunk", "ChunkSpec"),
    "chunk_text": ("chunk", "chunk_text"),
    "chunk_paragraphs": ("chunk", "chunk_paragraphs"),
    "ask": ("query", "ask"),
    "retrieve_text": ("query", "retrieve_text"),
    "search_text": ("query", "search_text"),
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    """Resolve a public name from its module on first access."""
    if name not in _NAMES:
        raise AttributeError(f"module 'urna.forge' has no attribute {name!r}")
    module, attr = _NAMES[name]
    return getattr(import_module(f"urna.forge.{module}"), attr)
