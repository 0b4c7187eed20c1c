"""The offline default embedder: the vendored potion-base-8M static table (04-surface §5.2).

numpy + tokenizers, no torch, never the network: tokenize, gather, mean, L2.

Folders are strings inside (``POTION_FOLDER``, ``PotionEmbedder._folder``): ``pathlib`` costs
a one-shot ``urna ask`` ~3 ms of imports (#20). The public ``POTION_DIR`` and
``PotionEmbedder.model_dir`` are ``Path`` objects, made when asked for.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from urna.errors import EmbedderError
from urna.forge.embedders.base import files_hash, fingerprint_hash, sha256_file
from urna.forge.embedders.fingerprints import cached_fingerprint
from urna.forge.embedders.wordpiece import AsciiWordPiece, cached_ascii_wordpiece

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    POTION_DIR: Path

POTION_ID = "minishlab/potion-base-8M"
POTION_MODEL = f"{POTION_ID}/v1"
# The vendored model's folder (what ``Path(__file__).resolve().parents[2] / ...`` names).
POTION_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__)))), "models", "potion-base-8M")
# Files that change potion's output, in the order the reference folds them.
POTION_FILES: tuple[str, ...] = ("config.json", "tokenizer.json", "model.safetensors")


def __getattr__(name: str) -> Any:
    """``POTION_DIR``: ``POTION_FOLDER`` as a ``Path`` (pathlib imported on this first use)."""
    if name == "POTION_DIR":
        from pathlib import Path

        return Path(POTION_FOLDER)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _folder_text(model_dir: str | os.PathLike[str]) -> str:
    """``str(Path(model_dir))``: pathlib's spelling of a folder (the vendored one without it)."""
    if model_dir == POTION_FOLDER:
        return POTION_FOLDER
    from pathlib import Path  # free when the caller made a Path: pathlib is loaded

    return str(Path(model_dir))


def _in_folder(folder: str, name: str) -> str:
    """``str(Path(folder) / name)`` for a folder already spelled as pathlib does."""
    return name if folder == "." else os.path.join(folder, name)


def _read_safetensors_f32(path: str, name: str = "embeddings") -> np.ndarray:
    """Read one little-endian float32 tensor from a safetensors file, bounds-checked.

    The file is mapped, not read: a query touches only the rows of its tokens (#20).
    """
    raw: bytes | mmap.mmap
    with open(path, "rb") as fh:
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


def check_potion_dir(model_dir: str | os.PathLike[str]) -> None:
    """Raise EmbedderError when the table is missing or an un-pulled git-lfs pointer."""
    folder = _folder_text(model_dir)
    table = _in_folder(folder, "model.safetensors")
    if not os.path.isfile(table):
        raise EmbedderError(f"potion table missing: {table}")
    with open(table, "rb") as f:
        head = f.read(64)
    if head.startswith(b"version https://git-lfs"):
        raise EmbedderError(f"potion table is a git-lfs pointer, not the table: {table}")
    tokenizer = _in_folder(folder, "tokenizer.json")
    if not os.path.isfile(tokenizer):
        raise EmbedderError(f"potion tokenizer missing: {tokenizer}")


@lru_cache(maxsize=4)
def _load_table(model_dir: str) -> np.ndarray:
    """The checked directory's mapped table, once per directory (spelled as pathlib does)."""
    check_potion_dir(model_dir)
    return _read_safetensors_f32(_in_folder(model_dir, "model.safetensors"))


@lru_cache(maxsize=4)
def _load_tokenizer(model_dir: str) -> tuple[Any, int]:
    """The `tokenizers` tokenizer and its unk id, once per directory."""
    check_potion_dir(model_dir)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(_in_folder(model_dir, "tokenizer.json"))
    unk = tok.token_to_id("[UNK]")
    return tok, 1 if unk is None else int(unk)


@lru_cache(maxsize=4)
def _load_wordpiece(model_dir: str) -> AsciiWordPiece | None:
    """The Python tokenizer of short ASCII queries (``wordpiece``), once per checked directory
    (a resident process then reads no file per query, as with `tokenizers`)."""
    check_potion_dir(model_dir)
    return cached_ascii_wordpiece(_in_folder(model_dir, "tokenizer.json"))


# Up to this many texts are tokenized in Python while `tokenizers` is not loaded yet: a query
# or a few; a batch of documents loads `tokenizers`, which is faster per text.
PYTHON_TOKENIZER_MAX_TEXTS = 8


class PotionEmbedder:
    """The offline default: model2vec potion-base-8M (tokenize, gather, mean, L2)."""

    def __init__(self, model_dir: str | os.PathLike[str] = POTION_FOLDER, *,
                 batch_size: int = 1024) -> None:
        self._folder = _folder_text(model_dir)
        self.batch_size = max(1, int(batch_size))
        self._hash: str | None = None

    @property
    def model_dir(self) -> Path:
        """The model's folder."""
        from pathlib import Path

        return Path(self._folder)

    @model_dir.setter
    def model_dir(self, model_dir: str | os.PathLike[str]) -> None:
        self._folder = _folder_text(model_dir)

    @property
    def embedding_model(self) -> str:
        """The manifest name the reference records for potion."""
        return POTION_MODEL

    @property
    def embedding_dim(self) -> int:
        """Width of the table (256)."""
        return int(_load_table(self._folder).shape[1])

    def fingerprint(self) -> dict[str, Any]:
        """The facts whose hash is the model_hash (§5.2), kept per state of the files."""
        return cached_fingerprint("potion", [_in_folder(self._folder, n) for n in POTION_FILES],
                                  self._compute_fingerprint)

    def _compute_fingerprint(self) -> dict[str, Any]:
        tok_path = _in_folder(self._folder, "tokenizer.json")
        return {
            "add_special_tokens": False,
            "dtype": "float32-stable",
            "embedder": POTION_ID,
            "embedding_dim": self.embedding_dim,
            "files_hash": files_hash(self._folder, POTION_FILES),
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
        md = self._folder
        table = _load_table(md)
        texts = list(texts)
        out = np.empty((len(texts), table.shape[1]), dtype=np.float32)
        ids = self._python_ids(texts)
        for lo in range(0, len(texts), self.batch_size):
            batch = texts[lo : lo + self.batch_size]
            known = ids[lo : lo + self.batch_size]
            rest = [t for t, got in zip(batch, known, strict=True) if got is None]
            rows: list[list[int]] = [got for got in known if got is not None]
            if rest:
                tok, unk = _load_tokenizer(md)
                # encode_batch_fast skips offsets (unused here) and gives the same ids
                enc_fn = getattr(tok, "encode_batch_fast", tok.encode_batch)
                encs = iter(enc_fn(rest, add_special_tokens=False))
                rows = [got if got is not None else (next(encs).ids or [unk]) for got in known]
            for j, row in enumerate(rows):
                # sum-then-divide in float32 equals the reference's row mean bit for bit
                # (np.add.reduceat does not: it orders the adds differently).
                v = table[row].sum(axis=0) / np.float32(len(row))
                n = float(np.linalg.norm(v))
                out[lo + j] = v / n if n > 0.0 else v
        return out

    def _python_ids(self, texts: list[str]) -> list[list[int] | None]:
        """Token ids of the texts the Python tokenizer takes (None: `tokenizers` tokenizes it);
        only for a few texts while `tokenizers` is not loaded for this model."""
        md = self._folder
        if len(texts) > PYTHON_TOKENIZER_MAX_TEXTS or _load_tokenizer.cache_info().currsize:
            return [None] * len(texts)
        wordpiece = _load_wordpiece(md)
        if wordpiece is None:
            return [None] * len(texts)
        out: list[list[int] | None] = []
        for text in texts:
            got = wordpiece.ids(text)
            out.append(None if got is None else (got or [wordpiece.unk_id]))
        return out

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """Reference-compatible list form of :meth:`embed`."""
        return self.embed(texts).tolist()


def potion_embedder(model_dir: str | os.PathLike[str] = POTION_FOLDER) -> PotionEmbedder:
    """Return the vendored potion embedder (the forge default)."""
    return PotionEmbedder(model_dir)
