"""The media half of ``urna.build``: blob refs / overlay / data and named vector spaces.

These sections are excluded from content_hash, so a media corpus keeps the citations of its
text twin (01-container §6.3, 03-runtime §11-12). ``media_sections`` reads the four options
in the reference's order (blob_refs, blob_data_paths, chunk_blob_spans, spaces), with the
reference's checks and texts, and encodes them; it runs before the manifest is validated,
as the reference's does, so its errors come first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field

import numpy as np

from .build_args import (
    extract_bool,
    extract_f32_rows,
    extract_str,
    extract_u32,
    extract_u64,
    field,
    optional,
    optional_field,
    record,
)
from .errors import BuildError, InvalidInput, MalformedSectionPayload
from .format import layout
from .format.dtypes import DType
from .format.hashing import HASH_PREFIX
from .format.serde.rust_debug import rust_debug_char
from .format.writer import EncodedSection


@dataclass
class Media:
    """The encoded media sections of one build and the manifest flags they set."""

    sections: list[EncodedSection] = dataclass_field(default_factory=list)
    blobs_present: bool = False
    supports_multimodal: bool = False


def media_sections(blob_refs: Sequence | None, blob_data_paths: Sequence | None,
                   chunk_blob_spans: Sequence | None, spaces: Sequence | None,
                   n_chunks: int) -> Media:
    """0x14 / 0x17 / 0x16 and 0x15 + bands from the build's media options, checked in order."""
    from .format.sections.blobs import encode_blob_data, encode_blob_refs

    out = Media()
    refs = None if blob_refs is None else _blob_refs(blob_refs)
    if blob_data_paths is not None and refs is None:
        raise BuildError(
            "blob_data_paths requires blob_refs (the 0x17 table parallels the 0x14 order)")
    blobs = None if blob_data_paths is None else _blob_data(blob_data_paths, len(refs or ()))
    overlay = None if chunk_blob_spans is None else overlay_entries(chunk_blob_spans, n_chunks)
    if refs is not None:
        out.sections.append(EncodedSection(layout.SECTION_BLOB_REFS, layout.ENCODING_RAW,
                                           encode_blob_refs(refs)))
        if blobs is not None:
            out.sections.append(EncodedSection(layout.SECTION_BLOB_DATA, layout.ENCODING_RAW,
                                               encode_blob_data(blobs)))
    if overlay is not None:
        from .format.sections.blobs import encode_overlay

        out.sections.append(EncodedSection(layout.SECTION_BLOB_SPAN_OVERLAY, layout.ENCODING_RAW,
                                           encode_overlay(overlay)))
    out.blobs_present = refs is not None or overlay is not None
    if spaces is not None:
        # An empty list still writes an (empty) space table, as the reference does.
        out.sections += space_sections(spaces, n_chunks)
        out.supports_multimodal = True
    return out


def _blob_refs(blob_refs: Sequence) -> list:
    from .format.sections.blobs import BlobRef

    refs = []
    for i, item in enumerate(blob_refs):
        where = f"blob_refs[{i}]"
        ref = record(item, where)
        digest = _digest(field(ref, "content_hash", where, extract_str), where)
        refs.append(BlobRef(digest, field(ref, "original_uri", where, extract_str),
                            field(ref, "byte_len", where, extract_u64),
                            field(ref, "inlined", where, extract_bool)))
    return refs


def _digest(value: str, where: str) -> bytes:
    """A blob's SHA-256 from ``sha256:<hex>`` or bare hex (the hex crate's error texts)."""
    raw = value.removeprefix(HASH_PREFIX).encode("utf-8")
    if len(raw) % 2:
        raise BuildError(f"{where} content_hash hex: Odd number of digits")
    for i, byte in enumerate(raw):
        if chr(byte) not in "0123456789abcdefABCDEF":  # the hex crate names ``byte as char``
            raise BuildError(f"{where} content_hash hex: Invalid character "
                             f"{rust_debug_char(chr(byte))} at position {i}")
    if len(raw) != 64:
        raise BuildError(f"{where} content_hash must be 32 bytes")
    return bytes.fromhex(raw.decode("ascii"))


def _blob_data(paths: Sequence, n_refs: int) -> list[bytes | None]:
    """The inlined blobs: one path (read now) or None per blob_refs record."""
    if len(paths) != n_refs:
        raise BuildError(f"blob_data_paths must have one entry per blob_refs record ({n_refs}), "
                         f"got {len(paths)}")
    blobs: list[bytes | None] = []
    for i, path in enumerate(paths):
        if path is None:
            blobs.append(None)
            continue
        if not isinstance(path, str):
            raise BuildError(f"blob_data_paths[{i}] is not a str")
        name = extract_str(path)
        try:
            with open(name, "rb") as fh:
                blobs.append(fh.read())
        except OSError as exc:
            raise BuildError(f"blob_data_paths[{i}] ({name}): {exc.strerror} "
                             f"(os error {exc.errno})") from exc
    return blobs


def overlay_entries(chunk_blob_spans: Sequence, n_chunks: int) -> list[tuple[int, int, int]]:
    """0x16 entries: (blob_ref_index | NONE, byte_start, byte_end), one per chunk."""
    from .format.sections.blobs import BLOB_REF_NONE

    entries = []
    for i, item in enumerate(chunk_blob_spans):
        where = f"chunk_blob_spans[{i}]"
        span = record(item, where)
        index = field(span, "blob_ref_index", where, lambda v: optional(v, extract_u32))
        entries.append((BLOB_REF_NONE if index is None else index,
                        field(span, "byte_start", where, extract_u64),
                        field(span, "byte_end", where, extract_u64)))
    if len(entries) != n_chunks:
        raise BuildError(f"chunk_blob_spans must have one entry per chunk ({n_chunks}), "
                         f"got {len(entries)}")
    return entries


def space_sections(spaces: Sequence, n_chunks: int) -> list[EncodedSection]:
    """0x15 space table plus one band 0x20+i per space, indices 1.. in list order."""
    from .format.encodings import encode_embeddings
    from .format.sections.space_table import SpaceEntry, encode_space_table

    if len(spaces) > layout.MAX_SPACES:
        raise BuildError(f"at most {layout.MAX_SPACES} non-text spaces, got {len(spaces)}")
    entries, bands = [], []
    for i, item in enumerate(spaces):
        where = f"spaces[{i}]"
        space = record(item, where)
        name = field(space, "name", where, extract_str)
        model_hash = field(space, "model_hash", where, extract_str)
        dtype_name = optional_field(space, "dtype", extract_str)
        dtype_name = DType.FLOAT32.value if dtype_name is None else dtype_name
        rows = field(space, "vectors", where, extract_f32_rows)
        if len(rows) != n_chunks:
            raise BuildError(f"{where} has {len(rows)} rows but the corpus has {n_chunks} chunks")
        dim = int(rows[0].shape[0]) if rows else 0
        for j, row in enumerate(rows):
            if row.shape[0] != dim:
                raise BuildError(f"{where} row {j} has dim {row.shape[0]} but expected {dim}")
        dtype = DType.parse(dtype_name)
        if dtype is None:
            raise BuildError(
                f"{where} unknown dtype: {dtype_name} (expected float32|float16|int8|int4)")
        matrix = np.stack(rows) if rows else np.zeros((0, dim), np.float32)
        try:
            # NaN and Inf are written as given: the reference checks only the text embeddings.
            with np.errstate(invalid="ignore", over="ignore"):
                encoding, payload = encode_embeddings(matrix, dtype)
        except InvalidInput as exc:
            raise BuildError(f"{where} {dtype.value}: {exc}") from exc
        entries.append(SpaceEntry(i + 1, name, dim, dtype.space_code, model_hash, n_chunks))
        bands.append(EncodedSection(layout.SECTION_SPACE_EMBEDDINGS_BASE + i + 1, encoding,
                                    payload))
    try:
        table = encode_space_table(entries)
    except MalformedSectionPayload as exc:
        raise BuildError(f"space_table encode: {exc}") from exc
    return [EncodedSection(layout.SECTION_SPACE_TABLE, layout.ENCODING_RAW, table), *bands]
