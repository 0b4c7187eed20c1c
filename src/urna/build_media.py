"""The media half of ``urna.build``: blob refs / overlay / data and named vector spaces.

These sections are excluded from content_hash, so a media corpus keeps the citations of its
text twin (01-container §6.3, 03-runtime §11-12).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import BuildError, InvalidEmbeddingValue
from .format import layout
from .format.dtypes import DType
from .format.hashing import HASH_PREFIX
from .format.writer import EncodedSection


def _digest(value: str) -> bytes:
    text = value.removeprefix(HASH_PREFIX)
    try:
        raw = bytes.fromhex(text)
    except ValueError as exc:
        raise BuildError(f"blob content_hash must be sha256:<64 hex>, got {value!r}") from exc
    if len(raw) != 32:
        raise BuildError(f"blob content_hash must be sha256:<64 hex>, got {value!r}")
    return raw


def blob_sections(blob_refs: Sequence[dict], blob_data_paths: Sequence[str | None] | None,
                  chunk_blob_spans: Sequence[dict] | None, n_chunks: int) -> list[EncodedSection]:
    """0x14 (always), 0x17 (when data paths are given) and 0x16 (when spans are given)."""
    from .format.sections.blobs import BlobRef, encode_blob_data, encode_blob_refs

    refs = []
    for i, ref in enumerate(blob_refs):
        for key in ("content_hash", "original_uri", "byte_len", "inlined"):
            if key not in ref:
                raise BuildError(f"blob_refs[{i}] missing {key}")
        refs.append(BlobRef(_digest(str(ref["content_hash"])), str(ref["original_uri"]),
                            int(ref["byte_len"]), bool(ref["inlined"])))
    out = [EncodedSection(layout.SECTION_BLOB_REFS, layout.ENCODING_RAW, encode_blob_refs(refs))]
    if blob_data_paths is not None:
        if len(blob_data_paths) != len(refs):
            raise BuildError(f"blob_data_paths has {len(blob_data_paths)} entries but "
                             f"blob_refs has "
                             f"{len(refs)} (the 0x17 table parallels the 0x14 order)")
        blobs = [None if p is None else Path(p).read_bytes() for p in blob_data_paths]
        out.append(EncodedSection(layout.SECTION_BLOB_DATA, layout.ENCODING_RAW,
                                  encode_blob_data(blobs)))
    if chunk_blob_spans is not None:
        out.append(overlay_section(chunk_blob_spans, n_chunks))
    return out


def overlay_section(chunk_blob_spans: Sequence[dict], n_chunks: int) -> EncodedSection:
    """0x16: one (blob_ref_index | NONE, byte_start, byte_end) entry per chunk."""
    from .format.sections.blobs import BLOB_REF_NONE, encode_overlay

    if len(chunk_blob_spans) != n_chunks:
        raise BuildError(f"chunk_blob_spans has {len(chunk_blob_spans)} entries but there are "
                         f"{n_chunks} chunks (one per chunk)")
    entries = []
    for span in chunk_blob_spans:
        index = span.get("blob_ref_index")
        entries.append((BLOB_REF_NONE if index is None else int(index), int(span["byte_start"]),
                        int(span["byte_end"])))
    return EncodedSection(layout.SECTION_BLOB_SPAN_OVERLAY, layout.ENCODING_RAW,
                          encode_overlay(entries))


def space_sections(spaces: Sequence[dict], n_chunks: int) -> list[EncodedSection]:
    """0x15 space table plus one band 0x20+i per space, indices 1.. in list order."""
    from .format.encodings import encode_embeddings
    from .format.sections.space_table import SpaceEntry, encode_space_table

    if len(spaces) > layout.MAX_SPACES:
        raise BuildError(f"at most {layout.MAX_SPACES} spaces, got {len(spaces)}")
    entries, bands = [], []
    for i, space in enumerate(spaces, start=1):
        for key in ("name", "model_hash", "vectors"):
            if key not in space:
                raise BuildError(f"spaces[{i - 1}] missing {key}")
        name = space.get("dtype", DType.FLOAT32.value)
        dtype = DType.parse(name)
        if dtype is None:
            raise BuildError(f"unknown dtype: {name} (expected float32|float16|int8|int4)")
        with np.errstate(over="ignore"):
            vectors = np.asarray(space["vectors"], dtype=np.float64).astype(np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != n_chunks:
            raise BuildError(f"space {space['name']} needs one vector per chunk ({n_chunks})")
        if not np.isfinite(vectors).all():
            raise InvalidEmbeddingValue()
        encoding, payload = encode_embeddings(vectors, dtype)
        entries.append(SpaceEntry(i, str(space["name"]), int(vectors.shape[1]),
                                  dtype.space_code, str(space["model_hash"]), n_chunks))
        bands.append(EncodedSection(layout.SECTION_SPACE_EMBEDDINGS_BASE + i, encoding, payload))
    table = EncodedSection(layout.SECTION_SPACE_TABLE, layout.ENCODING_RAW,
                           encode_space_table(entries))
    return [table, *bands]
