"""One item of a corpus, whatever its source: its text, its span, and its input hash (§3.4)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Row:
    """One item ready to embed: its text, its span and its input hash."""

    ordinal: int
    key: str
    label: str
    canonical_text: str
    source_uri: str
    byte_start: int
    byte_end: int
    input_hash: str
    # per-chunk metadata for section 0x18 (None: the source stores none for this row)
    metadata: dict[str, Any] | None = field(default=None, compare=False)

    def as_chunk(self) -> dict[str, Any]:
        """The ``urna.build`` chunk dict without the embedding."""
        return {"canonical_text": self.canonical_text, "source_uri": self.source_uri,
                "byte_start": self.byte_start, "byte_end": self.byte_end}


def item_input_hash(text: str, label: str, chunker_version: str,
                    image_sha256: str | None = None) -> str:
    """``sha256:`` over text digest, image hash, label and chunker (§3.4 step 5)."""
    h = hashlib.sha256()
    h.update(b"text:" + hashlib.sha256(text.encode("utf-8")).digest())
    h.update(b"image:" + (image_sha256 or "none").encode("utf-8"))
    h.update(b"label:" + label.encode("utf-8"))
    h.update(b"chunker:" + chunker_version.encode("utf-8"))
    return "sha256:" + h.hexdigest()


def corpus_input_hash(rows: Sequence[Row]) -> str:
    """``sha256:`` of the concatenated item hashes, in row order."""
    h = hashlib.sha256()
    for r in rows:
        h.update(r.input_hash.encode("ascii"))
    return "sha256:" + h.hexdigest()
