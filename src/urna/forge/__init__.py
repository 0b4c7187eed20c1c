"""urna.forge: build .urna files from sources and ask them questions, offline.

Layers (imports point down, function-level imports included)::

    shard (sharded orchestrator) -> engines/ (local, ray; shard_task)
    pipeline (single build)      -> emit, sidecars, progress, kernels
    emit -> embedders/ (registry, potion, floor, sentence_transformer, fingerprints, cache,
            models) -> sources/ (item, rows: jsonl/csv/sqlite, documents, chunk)
         -> spec, canonical -> urna.build / urna.errors

``plan`` is the ``--dry-run``; ``query`` embeds a question with a file's own model, gates it
and routes it through the runtime; ``doctor`` checks the install.

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
    "build_sharded": ("shard", "build_sharded"),
    "emit_file": ("emit", "emit_file"),
    "potion_embedder": ("embedders", "potion_embedder"),
    "PotionEmbedder": ("embedders", "PotionEmbedder"),
    "FloorEmbedder": ("embedders", "FloorEmbedder"),
    "SentenceTransformerEmbedder": ("embedders.sentence_transformer",
                                    "SentenceTransformerEmbedder"),
    "ChunkSpec": ("sources.chunk", "ChunkSpec"),
    "chunk_text": ("sources.chunk", "chunk_text"),
    "chunk_paragraphs": ("sources.chunk", "chunk_paragraphs"),
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
