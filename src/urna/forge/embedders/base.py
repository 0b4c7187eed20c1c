"""What every embedder is: the ``Embedder`` protocol and the hashing rules of its fingerprint.

Every embedder exposes ``embedding_model``, ``embedding_dim``, ``fingerprint()``,
``model_hash()`` and ``embed(texts) -> float32 (n, dim)`` with L2-normalised rows. The
model_hash is computed from the fingerprint exactly as the reference does (``sha256:`` +
SHA-256 of the sorted-key compact JSON), so files built here and by the reference pass each
other's model_hash gate.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from urna.forge.canonical import canonical_hash
from urna.format.hashing import sha256_file_hex as sha256_file  # bare hex, streamed

# Offline by construction: set before tokenizers / HF libraries are imported anywhere.
for _flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    if os.environ.get("URNA_ALLOW_DOWNLOAD") != "1":
        os.environ.setdefault(_flag, "1")

PLACEHOLDER_HASH = "sha256:" + "0" * 64

# The model_hash of a fingerprint is its canonical hash; the name says what it is used for.
fingerprint_hash = canonical_hash


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


def files_hash(model_dir: str | os.PathLike[str], names: Iterable[str]) -> str:
    """Fold ``name \\0 sha256-hex \\0`` of each present file into one ``sha256:`` hash."""
    h = hashlib.sha256()
    folder = os.fspath(model_dir)
    for name in names:
        p = os.path.join(folder, name)
        if not os.path.isfile(p):
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
