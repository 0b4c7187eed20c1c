"""The media half of ``urna.build``: blob refs / overlay / data and named vector spaces.

These sections are excluded from content_hash, so a media corpus keeps the citations of its
text twin (01-container §6.3, 03-runtime §11-12).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import BuildError
from .format import layout
from .format.dtypes import DType
from .format.hashing import HASH_PREFIX
from .format.writer import EncodedSection


def _rust_uint(value: object, bits: int) -> int:
    """``value`` as the binding's unsigned extraction takes it, with its OverflowError texts."""
    number = int(value)  # type: ignore[call-overload]
    if number < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if number > layout.U64_MAX:
        raise OverflowError("int too big to convert")
    if number >> bits:
        raise OverflowError("out of range integral type conversion attempted")
    return number


def _rust_char_debug(byte: int) -> str:
    """Rust's ``{:?}`` of ``char::from(byte)``, as the hex crate's error prints it."""
    escapes = {0: "\\0", 9: "\\t", 10: "\\n", 13: "\\r", 0x27: "\\'", 0x5C: "\\\\"}
    if byte in escapes:
        return f"'{escapes[byte]}'"
    if byte < 0x20 or 0x7F <= byte < 0xA0 or byte == 0xAD:
        return f"'\\u{{{byte:x}}}'"
    return f"'{chr(byte)}'"


def _digest(index: int, value: str) -> bytes:
    """A content hash (``sha256:<hex>`` or bare hex) as the binding decodes it (hex crate)."""
    text = value.removeprefix(HASH_PREFIX).encode("utf-8")
    where = f"blob_refs[{index}] content_hash"
    if len(text) % 2:
        raise BuildError(f"{where} hex: Odd number of digits")
    for position, byte in enumerate(text):
        if chr(byte) not in _HEX_DIGITS:
            raise BuildError(
                f"{where} hex: Invalid character {_rust_char_debug(byte)} at position {position}")
    raw = bytes.fromhex(text.decode("ascii"))
    if len(raw) != 32:
        raise BuildError(f"{where} must be 32 bytes")
    return raw


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _read_blob(index: int, path: str) -> bytes:
    """One inlined blob's bytes; an OS error worded as the binding's ``std::io::Error``."""
    import os

    try:
        return Path(path).read_bytes()
    except OSError as exc:
        text = os.strerror(exc.errno) if exc.errno else str(exc)
        code = f" (os error {exc.errno})" if exc.errno else ""
        raise BuildError(f"blob_data_paths[{index}] ({path}): {text}{code}") from exc


def blob_sections(blob_refs: Sequence[dict], blob_data_paths: Sequence[str | None] | None,
                  chunk_blob_spans: Sequence[dict] | None, n_chunks: int) -> list[EncodedSection]:
    """0x14 (always), 0x17 (when data paths are given) and 0x16 (when spans are given).

    The binding's order: every ref, then the data paths (count, then each file), then the
    overlay; each error with its text.
    """
    from .format.sections.blobs import BlobRef, encode_blob_data, encode_blob_refs

    refs = []
    for i, ref in enumerate(blob_refs):
        for key in ("content_hash", "original_uri", "byte_len", "inlined"):
            if key not in ref:
                raise BuildError(f"blob_refs[{i}] missing {key}")
        refs.append(BlobRef(_digest(i, str(ref["content_hash"])), str(ref["original_uri"]),
                            _rust_uint(ref["byte_len"], 64), bool(ref["inlined"])))
    out = [EncodedSection(layout.SECTION_BLOB_REFS, layout.ENCODING_RAW, encode_blob_refs(refs))]
    if blob_data_paths is not None:
        if len(blob_data_paths) != len(refs):
            raise BuildError(f"blob_data_paths must have one entry per blob_refs record "
                             f"({len(refs)}), got {len(blob_data_paths)}")
        blobs = [None if p is None else _read_blob(i, str(p))
                 for i, p in enumerate(blob_data_paths)]
        out.append(EncodedSection(layout.SECTION_BLOB_DATA, layout.ENCODING_RAW,
                                  encode_blob_data(blobs)))
    if chunk_blob_spans is not None:
        out.append(overlay_section(chunk_blob_spans, n_chunks))
    return out


def overlay_section(chunk_blob_spans: Sequence[dict], n_chunks: int) -> EncodedSection:
    """0x16: one (blob_ref_index | NONE, byte_start, byte_end) entry per chunk."""
    from .format.sections.blobs import BLOB_REF_NONE, encode_overlay

    if len(chunk_blob_spans) != n_chunks:
        raise BuildError(f"chunk_blob_spans must have one entry per chunk ({n_chunks}), "
                         f"got {len(chunk_blob_spans)}")
    entries = []
    for i, span in enumerate(chunk_blob_spans):
        for key in ("blob_ref_index", "byte_start", "byte_end"):
            if key not in span:
                raise BuildError(f"chunk_blob_spans[{i}] missing {key}")
        index = span["blob_ref_index"]
        entries.append((BLOB_REF_NONE if index is None else _rust_uint(index, 32),
                        _rust_uint(span["byte_start"], 64), _rust_uint(span["byte_end"], 64)))
    return EncodedSection(layout.SECTION_BLOB_SPAN_OVERLAY, layout.ENCODING_RAW,
                          encode_overlay(entries))


def _space_matrix(i: int, rows: Sequence, n_chunks: int) -> np.ndarray:
    """One space's rows as f32 (n, dim), refused with the binding's texts; values unchecked."""
    if len(rows) != n_chunks:
        raise BuildError(f"spaces[{i}] has {len(rows)} rows but the corpus has {n_chunks} chunks")
    dim = len(rows[0]) if n_chunks else 0
    for j, row in enumerate(rows):
        if len(row) != dim:
            raise BuildError(f"spaces[{i}] row {j} has dim {len(row)} but expected {dim}")
    # Python floats become f32 by round-to-nearest (an overflow is inf), as the binding takes
    # them; the binding does not check the values, so NaN / inf are stored as they are.
    with np.errstate(over="ignore"):
        return np.asarray(rows, dtype=np.float64).reshape(n_chunks, dim).astype(np.float32)


def space_sections(spaces: Sequence[dict], n_chunks: int) -> list[EncodedSection]:
    """0x15 space table plus one band 0x20+i per space, indices 1.. in list order."""
    from .errors import InvalidInput, MalformedSectionPayload
    from .format.encodings import encode_embeddings
    from .format.sections.space_table import SpaceEntry, encode_space_table

    if len(spaces) > layout.MAX_SPACES:
        raise BuildError(f"at most {layout.MAX_SPACES} non-text spaces, got {len(spaces)}")
    entries, bands = [], []
    for i, space in enumerate(spaces):
        for key in ("name", "model_hash", "vectors"):
            if key not in space:
                raise BuildError(f"spaces[{i}] missing {key}")
        vectors = _space_matrix(i, space["vectors"], n_chunks)
        name = space.get("dtype", DType.FLOAT32.value)
        dtype = DType.parse(name)
        if dtype is None:
            raise BuildError(
                f"spaces[{i}] unknown dtype: {name} (expected float32|float16|int8|int4)")
        try:
            encoding, payload = encode_embeddings(vectors, dtype)
        except InvalidInput as exc:
            raise BuildError(f"spaces[{i}] {dtype.value}: {exc}") from None
        entries.append(SpaceEntry(i + 1, str(space["name"]), int(vectors.shape[1]),
                                  dtype.space_code, str(space["model_hash"]), n_chunks))
        bands.append(EncodedSection(layout.SECTION_SPACE_EMBEDDINGS_BASE + i + 1, encoding,
                                    payload))
    try:
        table = encode_space_table(entries)
    except MalformedSectionPayload as exc:
        raise BuildError(f"space_table encode: {exc}") from None
    return [EncodedSection(layout.SECTION_SPACE_TABLE, layout.ENCODING_RAW, table), *bands]
