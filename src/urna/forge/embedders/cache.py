"""The content-addressed embed cache (§3.5).

An entry is ``<root>/embed/<preset>/<triad>.npz`` plus a ``.sha256`` sidecar, keyed by the
hash of (model_hash, embedding_recipe_hash, corpus_input_hash, arrays). While a corpus is
embedding, each finished batch is a part file keyed by its own rows, so a killed build
resumes from what it already paid for; the parts are removed once the entry is written.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from urna._atomic import write_atomic
from urna.forge.canonical import canonical_hash
from urna.format.hashing import sha256_hex


class EmbedCache:
    """One content-addressed cache entry plus its resumable parts."""

    def __init__(self, root: Path, preset: str, triad: dict[str, Any]) -> None:
        self.dir = root / "embed" / preset
        self.key = canonical_hash(triad).removeprefix("sha256:")
        self.path = self.dir / f"{self.key}.npz"
        self.sidecar = self.dir / f"{self.key}.npz.sha256"
        self.parts = self.dir / "parts"

    def load(self, n: int, dim: int) -> np.ndarray | None:
        """The cached (n, dim) float32 matrix, or None when absent, corrupt or mis-shaped."""
        try:
            data = self.path.read_bytes()
            want = self.sidecar.read_text().strip()
        except OSError:
            return None
        if sha256_hex(data) != want:
            return None
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                text = np.asarray(z["text"], dtype=np.float32)
        except (OSError, ValueError, KeyError):
            return None
        return text if text.shape == (n, dim) else None

    def store(self, text: np.ndarray) -> None:
        """Write the entry (npz, then its checksum sidecar, each atomically)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.savez(buf, text=text.astype(np.float32))
        data = buf.getvalue()
        write_atomic(self.path, data)
        write_atomic(self.sidecar, (sha256_hex(data) + "\n").encode())

    def part_path(self, model_hash: str, recipe_hash: str, input_hashes: Iterable[str]) -> Path:
        """Where the vectors of one batch of rows (by their input hashes) are kept meanwhile."""
        h = hashlib.sha256(f"{model_hash}\0{recipe_hash}\0".encode())
        for input_hash in input_hashes:
            h.update(input_hash.encode("ascii"))
        return self.parts / f"{h.hexdigest()}.npy"


def load_part(path: Path, n: int, dim: int) -> np.ndarray | None:
    """One batch's vectors if the part file exists and has the expected shape, else None."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    return arr if arr.shape == (n, dim) and arr.dtype == np.float32 else None


def store_part(path: Path, arr: np.ndarray) -> None:
    """Keep one finished batch (atomic, float32, no pickle)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.save(buf, arr.astype(np.float32), allow_pickle=False)
    write_atomic(path, buf.getvalue())
