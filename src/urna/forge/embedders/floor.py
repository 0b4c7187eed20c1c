"""The zero-dependency lexical floor embedder (04-surface §5.3): stdlib hashing only."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from urna.forge.embedders.base import fingerprint_hash

FLOOR_ID = "urna-forge-static"
FLOOR_SEED = "urna-forge-static/v1"
FLOOR_MODEL = f"{FLOOR_ID}/v1"


def _floor_tokens(text: str) -> list[str]:
    """Maximal runs of ``str.isalnum`` characters, lower-cased."""
    tokens: list[str] = []
    cur: list[str] = []
    for ch in text:
        if ch.isalnum():
            cur.append(ch)
        elif cur:
            tokens.append("".join(cur).lower())
            cur = []
    if cur:
        tokens.append("".join(cur).lower())
    return tokens


class FloorEmbedder:
    """The zero-dependency lexical floor (§5.3): hashed token vectors, mean, L2."""

    def __init__(self, dim: int = 256, seed: str = FLOOR_SEED) -> None:
        self.dim = int(dim)
        self.seed = seed
        self._cache: dict[str, np.ndarray] = {}

    @property
    def embedding_model(self) -> str:
        """The manifest name the reference records for the floor."""
        return FLOOR_MODEL

    @property
    def embedding_dim(self) -> int:
        """Vector width."""
        return self.dim

    def fingerprint(self) -> dict[str, Any]:
        """Config-only fingerprint: there is no file to hash."""
        return {
            "dtype": "float32-stable",
            "embedder": FLOOR_ID,
            "embedding_dim": self.dim,
            "normalize": "l2",
            "pooling": "mean",
            "seed": self.seed,
            "tokenizer": "unicode-alnum-lower",
            "version": "1",
        }

    def model_hash(self) -> str:
        """``sha256:`` hash of the fingerprint."""
        return fingerprint_hash(self.fingerprint())

    def _token_vector(self, token: str) -> np.ndarray:
        vec = self._cache.get(token)
        if vec is None:
            base = f"{self.seed}\x00{token}".encode()
            blocks = -(-self.dim * 4 // 32)
            buf = b"".join(
                hashlib.sha256(base + c.to_bytes(8, "little")).digest() for c in range(blocks)
            )
            u = np.frombuffer(buf, dtype="<u4", count=self.dim).astype(np.float64)
            vec = u / 2147483648.0 - 1.0
            if len(self._cache) < 200_000:
                self._cache[token] = vec
        return vec

    def _embed_one(self, text: str) -> np.ndarray:
        tokens = _floor_tokens(text) or ["\x00empty"]
        acc = np.zeros(self.dim, dtype=np.float64)
        for t in tokens:  # sequential float64 adds, the reference's order
            acc += self._token_vector(t)
        pooled = acc * (1.0 / len(tokens))
        norm = sum((pooled * pooled).tolist()) ** 0.5 or 1.0
        return (pooled / norm).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts to a float32 (n, dim) array of unit rows."""
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self._embed_one(t)
        return out

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Reference-compatible list form of :meth:`embed`."""
        return self.embed(texts).tolist()
