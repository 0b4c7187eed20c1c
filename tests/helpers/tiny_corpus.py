"""A tiny real corpus for the eval tests: potion embeddings, BM25 + HNSW, one two-chunk doc."""

from __future__ import annotations

from pathlib import Path

import urna
from urna.forge.embed import potion_embedder

DOCS = {
    "doc://cats": ["Cats purr when they are content and sleep most of the day.",
                   "A kitten learns to hunt by playing with its siblings."],
    "doc://tides": ["The moon's gravity pulls the oceans and causes the tides."],
    "doc://bread": ["Knead the dough, let it rise, then bake the bread until golden."],
    "doc://rust": ["Iron rusts when it reacts with oxygen and water."],
    "doc://stars": ["Stars shine because nuclear fusion in their cores releases energy."],
}


def build_tiny(path: Path) -> Path:
    """Write the tiny corpus with the potion embedder and the hybrid preset."""
    emb = potion_embedder()
    chunks = []
    for uri, parts in DOCS.items():
        start = 0
        for text in parts:
            size = len(text.encode("utf-8"))
            chunks.append({"canonical_text": text, "source_uri": uri, "byte_start": start,
                           "byte_end": start + size})
            start += size + 1
    for c, v in zip(chunks, emb.embed([c["canonical_text"] for c in chunks]), strict=True):
        c["embedding"] = v.tolist()
    urna.build(path, emb.embedding_model, emb.embedding_dim, "tiny/1", emb.model_hash(), chunks,
               preset="hybrid", reproducible=True)
    return path
