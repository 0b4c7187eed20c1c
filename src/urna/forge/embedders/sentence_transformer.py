"""Bring-your-own sentence-transformers model from a local directory (04-surface §5.4).

The model_hash is the reference's snapshot fingerprint: the inference-relevant files folded
as ``name NUL sha256 NUL`` plus a few config facts, hashed as sorted compact JSON, so a
corpus built by the reference with the same snapshot passes our gate and vice versa.
``sentence-transformers`` itself is imported only when the first text is embedded, and the
fingerprint is reused while the snapshot's files are unchanged (``fingerprints``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from urna.errors import EmbedderError
from urna.forge.embedders.base import files_hash, fingerprint_hash, l2_normalize_rows, sha256_file
from urna.forge.embedders.fingerprints import cached_fingerprint

# sentence-transformers files that change inference, in the reference's fold order.
ST_FILES: tuple[str, ...] = (
    "config.json",
    "config_sentence_transformers.json",
    "modules.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "1_Pooling/config.json",
    "model.safetensors",
    "pytorch_model.bin",
)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def st_fingerprint(model_dir: str | Path, model_id: str | None = None) -> dict[str, Any]:
    """Fingerprint of a sentence-transformers snapshot dir, as the reference computes it."""
    md = Path(model_dir).resolve()
    if not md.is_dir():
        raise EmbedderError(f"model directory not found: {md}")
    return cached_fingerprint(f"st:{model_id}", [md / name for name in ST_FILES],
                              lambda: _compute_fingerprint(md, model_id))


def _compute_fingerprint(md: Path, model_id: str | None) -> dict[str, Any]:
    cfg = _read_json(md / "config.json")
    st_cfg = _read_json(md / "config_sentence_transformers.json")
    pool = _read_json(md / "1_Pooling/config.json")
    dim = int(
        st_cfg.get("hidden_size")
        or cfg.get("hidden_size")
        or cfg.get("dim")
        or pool.get("word_embedding_dimension")
        or 0
    )
    tok = md / "tokenizer.json"
    pool_path = md / "1_Pooling/config.json"
    return {
        "model_id": str(model_id or cfg.get("_name_or_path") or md.name),
        "files_hash": files_hash(md, ST_FILES),
        "tokenizer_hash": ("sha256:" + sha256_file(tok)) if tok.is_file() else None,
        "pooling_config_hash": (("sha256:" + sha256_file(pool_path)) if pool_path.is_file()
                                else None),
        "embedding_dim": dim,
        "normalize_embeddings": bool(
            st_cfg.get("normalize_embeddings", pool.get("pooling_mode_mean_tokens", True))
        ),
    }


class SentenceTransformerEmbedder:
    """Bring-your-own sentence-transformers model from a local directory (extra ``st``)."""

    def __init__(self, model_dir: str | Path, *, model_id: str | None = None,
                 batch_size: int = 32, device: str | None = None) -> None:
        self.model_dir = Path(model_dir)
        self._fp = st_fingerprint(self.model_dir, model_id)
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    @property
    def embedding_model(self) -> str:
        """The model id (recorded in the manifest)."""
        return str(self._fp["model_id"])

    @property
    def embedding_dim(self) -> int:
        """Declared output width (from the snapshot's config)."""
        return int(self._fp["embedding_dim"])

    def fingerprint(self) -> dict[str, Any]:
        """The snapshot fingerprint (§5.4)."""
        return dict(self._fp)

    def model_hash(self) -> str:
        """``sha256:`` hash of the fingerprint."""
        return fingerprint_hash(self._fp)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed with the loaded model; rows are renormalised defensively."""
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as e:
                raise EmbedderError(
                    "sentence-transformers is not installed: pip install 'urna[st]'"
                ) from e
            self._model = SentenceTransformer(str(self.model_dir), device=self.device)
        vecs = self._model.encode(list(texts), batch_size=self.batch_size,
                                  normalize_embeddings=True, convert_to_numpy=True)
        return l2_normalize_rows(np.asarray(vecs, dtype=np.float32))

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Reference-compatible list form of :meth:`embed`."""
        return self.embed(texts).tolist()
