"""The ``inspect`` document of a file (03-runtime §14.1), built from a validated UrnaView.

Keys, in the reference's order: magic, version_major, version_minor, format_version,
schema_version, embedding_dim, n_chunks, n_embeddings, file_size, manifest, sections,
blobs, spaces, file_hash, content_hash, simd_backend. ``blobs`` and ``spaces`` follow the
runtime's gating: null unless the manifest flag is set and the section exists.
"""

from __future__ import annotations

from .dtypes import SPACE_DTYPES
from .hashing import sha256_text
from .layout import (
    SECTION_BLOB_REFS,
    SECTION_SPACE_EMBEDDINGS_BASE,
    SECTION_SPACE_TABLE,
    section_name,
)
from .reader import UrnaView

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def flag(view: UrnaView, name: str) -> bool:
    """Whether the manifest's ``capabilities_ext`` sets ``name`` to true."""
    ext = view.manifest.capabilities_ext
    return bool(ext is not None and getattr(ext, name, None))


def blob_table(view: UrnaView) -> list[dict[str, Any]] | None:
    """The 0x14 records as dicts, or None when blobs are not opened."""
    if not flag(view, "blobs_present") or view.entry(SECTION_BLOB_REFS) is None:
        return None
    from .sections.blobs import decode_blob_refs

    return [{"content_hash": sha256_text(ref.content_hash), "original_uri": ref.original_uri,
             "byte_len": ref.byte_len, "inlined": bool(ref.inlined)}
            for ref in decode_blob_refs(view.decoded(SECTION_BLOB_REFS))]


def space_table(view: UrnaView) -> list[dict[str, Any]] | None:
    """The 0x15 entries as dicts, or None when spaces are not opened."""
    if not flag(view, "supports_multimodal") or view.entry(SECTION_SPACE_TABLE) is None:
        return None
    out = []
    for space in view.space_entries():
        band = view.entry(SECTION_SPACE_EMBEDDINGS_BASE + space.space_index)
        out.append({"name": space.name, "space_index": space.space_index, "dim": space.dim,
                    "dtype": SPACE_DTYPES.get(space.dtype_code, str(space.dtype_code)),
                    "model_hash": space.model_hash, "n_vectors": space.n_vectors,
                    "band_bytes": band.size if band is not None else 0})
    return out


def inspect_view(view: UrnaView, simd_backend: str | None,
                 file_hash: str | None = None) -> dict[str, Any]:
    """The reference's inspect dict for ``view`` (``simd_backend`` None: a form not showing it)."""
    h = view.header
    m = view.manifest
    return {
        "magic": view.magic,
        "version_major": h.version_major,
        "version_minor": h.version_minor,
        "format_version": m.format_version,
        "schema_version": m.schema_version,
        "embedding_dim": h.embedding_dim,
        "n_chunks": h.n_chunks,
        "n_embeddings": h.n_embeddings,
        "file_size": h.file_size,
        "manifest": m.to_dict(),
        "sections": [{"section_id": e.section_id, "name": section_name(e.section_id) or "unknown",
                      "encoding": e.encoding, "offset": e.offset, "size": e.size,
                      "checksum": e.checksum.hex()} for e in view.entries],
        "blobs": blob_table(view),
        "spaces": space_table(view),
        "file_hash": file_hash or view.file_hash(),
        "content_hash": view.content_hash(),
        "simd_backend": simd_backend,
    }
