"""The offline default embedder: the vendored potion-base-8M static table (04-surface §5.2).

numpy + tokenizers, no torch, never the network: tokenize, gather, mean, L2.
"""

from __future__ import annotations

import json
import mmap
import struct
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from urna.errors import EmbedderError
from urna.forge.embedders.base import files_hash, fingerprint_hash, sha256_file
from urna.forge.embedders.fingerprints import cached_fingerprint

POTION_ID = "minishlab/potion-base-8M"
POTION_MODEL = f"{POTION_ID}/v1"
POTION_DIR = Path(__file__).resolve().parents[2] / "models" / "potion-base-8M"
# Files that change potion's output, in the order the reference folds them.
POTION_FILES: tuple[str, ...] = ("config.json", "tokenizer.json", "model.safetensors")


def _read_safetensors_f32(path: Path, name: str = "embeddings") -> np.ndarray:
    """Read one little-endian float32 tensor from a safetensors file, bounds-checked.

    The file is mapped, not read: a query touches only the rows of its tokens (#20).
    """
    raw: bytes | mmap.mmap
    with path.open("rb") as fh:
        try:
            raw = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            raw = b""
    if len(raw) < 8:
        raise EmbedderError(f"potion table is truncated: {path}")
    (hlen,) = struct.unpack("<Q", raw[:8])
    if hlen > len(raw) - 8:
        raise EmbedderError(f"potion table header overruns the file: {path}")
    header = json.loads(raw[8 : 8 + hlen])
    meta = header.get(name)
    if not isinstance(meta, dict) or meta.get("dtype") != "F32":
        raise EmbedderError(f"potion table {path} has no float32 tensor {name!r}")
    rows, dim = (int(x) for x in meta["shape"])
    start, end = (int(x) for x in meta["data_offsets"])
    base = 8 + hlen
    if end - start != rows * dim * 4 or base + end > len(raw):
        raise EmbedderError(f"potion table {path}: tensor size does not match its shape")
    return np.frombuffer(raw, dtype="<f4", count=rows * dim, offset=base + start).reshape(rows, dim)


def check_potion_dir(model_dir: Path) -> None:
    """Raise EmbedderError when the table is missing or an un-pulled git-lfs pointer."""
    table = model_dir / "model.safetensors"
    if not table.is_file():
        raise EmbedderError(f"potion table missing: {table}")
    with table.open("rb") as f:
        head = f.read(64)
    if head.startswith(b"version https://git-lfs"):
        raise EmbedderError(f"potion table is a git-lfs pointer, not the table: {table}")
    if not (model_dir / "tokenizer.json").is_file():
        raise EmbedderError(f"potion tokenizer missing: {model_dir / 'tokenizer.json'}")


@lru_cache(maxsize=4)
def _load_potion(model_dir: str) -> tuple[Any, np.ndarray, int]:
    """Load (tokenizer, table, unk id) once per directory."""
    md = Path(model_dir)
    check_potion_dir(md)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(md / "tokenizer.json"))
    table = _read_safetensors_f32(md / "model.safetensors")
    unk = tok.token_to_id("[UNK]")
    return tok, table, 1 if unk is None else int(unk)


class PotionEmbedder:
    """The offline default: model2vec potion-base-8M (tokenize, gather, mean, L2)."""

    def __init__(self, model_dir: str | Path = POTION_DIR, *, batch_size: int = 1024) -> None:
        self.model_dir = Path(model_dir)
        self.batch_size = max(1, int(batch_size))
        self._hash: str | None = None

    @property
    def embedding_model(self) -> str:
        """The manifest name the reference records for potion."""
        return POTION_MODEL

    @property
    def embedding_dim(self) -> int:
        """Width of the table (256)."""
        return int(_load_potion(str(self.model_dir))[1].shape[1])

    def fingerprint(self) -> dict[str, Any]:
        """The facts whose hash is the model_hash (§5.2), kept per state of the files."""
        return cached_fingerprint("potion", [self.model_dir / n for n in POTION_FILES],
                                  self._compute_fingerprint)

    def _compute_fingerprint(self) -> dict[str, Any]:
        tok_path = self.model_dir / "tokenizer.json"
        return {
            "add_special_tokens": False,
            "dtype": "float32-stable",
            "embedder": POTION_ID,
            "embedding_dim": self.embedding_dim,
            "files_hash": files_hash(self.model_dir, POTION_FILES),
            "normalize": "l2",
            "pooling": "mean",
            "tokenizer": "bert-wordpiece-lower",
            "tokenizer_hash": "sha256:" + sha256_file(tok_path),
            "version": "1",
        }

    def model_hash(self) -> str:
        """``sha256:`` hash of the fingerprint (kept: computing it hashes 30 MB)."""
        if self._hash is None:
            self._hash = fingerprint_hash(self.fingerprint())
        return self._hash

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts to a float32 (n, 256) array of unit rows."""
        tok, table, unk = _load_potion(str(self.model_dir))
        texts = list(texts)
        out = np.empty((len(texts), table.shape[1]), dtype=np.float32)
        for lo in range(0, len(texts), self.batch_size):
            batch = texts[lo : lo + self.batch_size]
            # encode_batch_fast skips offsets (unused here) and gives the same ids
            enc_fn = getattr(tok, "encode_batch_fast", tok.encode_batch)
            encs = enc_fn(batch, add_special_tokens=False)
            for j, enc in enumerate(encs):
                ids = enc.ids or [unk]
                # sum-then-divide in float32 equals the reference's row mean bit for bit
                # (np.add.reduceat does not: it orders the adds differently).
                v = table[ids].sum(axis=0) / np.float32(len(ids))
                n = float(np.linalg.norm(v))
                out[lo + j] = v / n if n > 0.0 else v
        return out

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Reference-compatible list form of :meth:`embed`."""
        return self.embed(texts).tolist()


def potion_embedder(model_dir: str | Path = POTION_DIR) -> PotionEmbedder:
    """Return the vendored potion embedder (the forge default)."""
    return PotionEmbedder(model_dir)
