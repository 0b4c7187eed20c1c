"""Embedders for the forge: one interface, three implementations (04-surface §5.2-5.4).

- ``PotionEmbedder``: the offline default, the vendored potion-base-8M static table
  (numpy + tokenizers, no torch, never the network);
- ``FloorEmbedder``: the zero-dependency lexical floor (stdlib hashing only);
- ``SentenceTransformerEmbedder`` (``embed_st``): bring-your-own model directory (extra ``st``).

Every embedder exposes ``embedding_model``, ``embedding_dim``, ``fingerprint()``,
``model_hash()`` and ``embed(texts) -> float32 (n, dim)`` with L2-normalised rows. The
model_hash of each is computed from its fingerprint exactly as the reference does
(``sha256:`` + SHA-256 of the sorted-key compact JSON), so files built here and by the
reference pass each other's model_hash gate.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

# Offline by construction: set before tokenizers / HF libraries are imported anywhere.
for _flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    if os.environ.get("URNA_ALLOW_DOWNLOAD") != "1":
        os.environ.setdefault(_flag, "1")

POTION_ID = "minishlab/potion-base-8M"
POTION_MODEL = f"{POTION_ID}/v1"
POTION_DIR = Path(__file__).resolve().parent.parent / "models" / "potion-base-8M"
# Files that change potion's output, in the order the reference folds them.
POTION_FILES: tuple[str, ...] = ("config.json", "tokenizer.json", "model.safetensors")

FLOOR_ID = "urna-forge-static"
FLOOR_SEED = "urna-forge-static/v1"
FLOOR_MODEL = f"{FLOOR_ID}/v1"

PLACEHOLDER_HASH = "sha256:" + "0" * 64


class EmbedderError(ValueError):
    """An embedder cannot be loaded (missing table, LFS pointer, missing package)."""


@runtime_checkable
class Embedder(Protocol):
    """What the forge and the agent verbs need from an embedder."""

    @property
    def embedding_model(self) -> str:
        """The manifest ``embedding_model`` string."""

    @property
    def embedding_dim(self) -> int:
        """Output width."""

    def fingerprint(self) -> dict[str, Any]:
        """The facts whose hash is the model_hash."""

    def model_hash(self) -> str:
        """``sha256:`` hash of the fingerprint."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Float32 (n, dim) unit rows."""


def fingerprint_hash(fingerprint: dict[str, Any]) -> str:
    """Return ``sha256:<hex>`` of the canonical (sorted, compact) JSON of a fingerprint."""
    canonical = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of a file, streamed."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def files_hash(model_dir: Path, names: Iterable[str]) -> str:
    """Fold ``name \\0 sha256-hex \\0`` of each present file into one ``sha256:`` hash."""
    h = hashlib.sha256()
    for name in names:
        p = model_dir / name
        if not p.is_file():
            continue
        h.update(name.encode("utf-8") + b"\0" + sha256_file(p).encode("ascii") + b"\0")
    return "sha256:" + h.hexdigest()


def l2_normalize_rows(m: np.ndarray) -> np.ndarray:
    """Return a float32 copy of ``m`` with unit-norm rows (zero rows stay zero)."""
    out = np.asarray(m, dtype=np.float32).copy()
    norms = np.linalg.norm(out, axis=1)
    nz = norms > 0
    out[nz] /= norms[nz, None]
    return out


# ---------------------------------------------------------------------------- potion


def _read_safetensors_f32(path: Path, name: str = "embeddings") -> np.ndarray:
    """Read one little-endian float32 tensor from a safetensors file, bounds-checked."""
    raw = path.read_bytes()
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
        """The inference-relevant facts whose hash is the model_hash (§5.2)."""
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
        """``sha256:`` hash of the fingerprint (cached: it hashes 30 MB once)."""
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


# ----------------------------------------------------------------------------- floor


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


# ---------------------------------------------------------------------------- lookup

PRESETS = ("potion", "floor", "st")


def create_embedder(preset: str, *, model_path: str = "", batch_size: int = 32,
                    device: str | None = None) -> Embedder:
    """Build the embedder a ``[[models]] preset`` names (``potion``, ``floor``, ``st``)."""
    if preset == "potion":
        return PotionEmbedder(model_path or POTION_DIR)
    if preset == "floor":
        return FloorEmbedder()
    if preset == "st":
        from urna.forge.embed_st import SentenceTransformerEmbedder

        if not model_path:
            raise EmbedderError("preset 'st' needs model_path (a local sentence-transformers dir)")
        return SentenceTransformerEmbedder(model_path, batch_size=batch_size, device=device)
    raise EmbedderError(f"unknown preset '{preset}' (valid: {', '.join(PRESETS)})")


def embedder_for_model(embedding_model: str, *, model_path: str | None = None) -> Embedder:
    """Pick the query embedder for a file's manifest ``embedding_model`` (§2.6)."""
    if embedding_model.startswith("minishlab/potion"):
        return PotionEmbedder(model_path or POTION_DIR)
    if embedding_model == FLOOR_MODEL:
        return FloorEmbedder()
    if model_path:
        from urna.forge.embed_st import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(model_path, model_id=embedding_model)
    raise EmbedderError(
        f"no local embedder for model {embedding_model!r}; pass --model-path DIR "
        "(a sentence-transformers snapshot of that model)"
    )
