"""What a build records about each ``[[models]]`` entry, and the one shape check of its vectors.

The single build and the sharded build both call these, so the manifest's model metadata and
the "embedder returned the wrong shape" error have one home.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from urna.errors import ForgeError
from urna.forge.canonical import canonical_hash
from urna.forge.embedders import create_embedder
from urna.forge.embedders.base import Embedder
from urna.forge.spec import CorpusSpec, ModelSpec

EMBED_BATCH = 256  # rows per embed call (and per resumable part of the single build)


def recipe(ms: ModelSpec) -> dict[str, Any]:
    """What changes the vectors besides the model and the inputs."""
    return {"preset": ms.preset, "text_corpus_mode": ms.text_corpus_mode,
            "normalize": ms.normalize, "encode_kwargs": ms.encode_kwargs}


def open_embedder(ms: ModelSpec) -> Embedder:
    """The embedder one ``[[models]]`` entry names, with its batch size and device."""
    return create_embedder(ms.preset, model_path=ms.model_path, batch_size=ms.batch_size,
                           device=ms.device or None)


def model_meta(ms: ModelSpec, emb: Embedder) -> dict[str, Any]:
    """The manifest's ``models.<preset>`` entry: hashes, recipe, model name and width."""
    rec = recipe(ms)
    return {"model_hash": emb.model_hash(), "embedding_recipe_hash": canonical_hash(rec),
            "recipe": rec, "embedding_model": emb.embedding_model,
            "embedding_dim": emb.embedding_dim}


def load_models(spec: CorpusSpec) -> tuple[dict[str, dict[str, Any]], dict[str, Embedder]]:
    """Open each ``[[models]]`` embedder once: (metadata by preset, embedder by preset)."""
    meta: dict[str, dict[str, Any]] = {}
    embedders: dict[str, Embedder] = {}
    for ms in spec.models:
        embedders[ms.preset] = emb = open_embedder(ms)
        meta[ms.preset] = model_meta(ms, emb)
    return meta, embedders


def checked_vectors(vecs: Any, preset: str, n: int, dim: int) -> np.ndarray:
    """``vecs`` as float32, or ForgeError when the embedder did not return ``(n, dim)``."""
    out = np.asarray(vecs, dtype=np.float32)
    if out.shape != (n, dim):
        raise ForgeError(f"embedder '{preset}' returned shape {out.shape}, expected {(n, dim)}")
    return out


def embed_all(embedders: dict[str, Embedder], texts: Sequence[str],
              batch: int = EMBED_BATCH) -> dict[str, np.ndarray]:
    """Vectors of ``texts`` for every model, embedded in batches of ``batch`` rows."""
    out: dict[str, np.ndarray] = {}
    for preset, emb in embedders.items():
        mats = [np.asarray(emb.embed(list(texts[lo:lo + batch])), dtype=np.float32)
                for lo in range(0, len(texts), batch)]
        got = np.concatenate(mats) if mats else np.empty((0, emb.embedding_dim), np.float32)
        out[preset] = checked_vectors(got, preset, len(texts), emb.embedding_dim)
    return out
