"""Add or replace one optional section in an existing file's bytes.

The file is validated by the reader, every other section keeps its physical payload and
encoding, and the result is laid out and sealed again by ``writer.assemble`` (the writer's
own layout rules), so the bytes equal what the writer would have produced with the extra
section. Canonical sections cannot be replaced: they feed content_hash and every citation.
"""

from __future__ import annotations

from ..errors import InvalidInput
from .layout import CANONICAL_SECTIONS, ENCODING_RAW, encoding_legal
from .reader import UrnaView
from .writer import EncodedSection, assemble

_CANONICAL_IDS = frozenset(section_id for section_id, _ in CANONICAL_SECTIONS)


def with_section(data: bytes | bytearray | memoryview, section_id: int, payload: bytes,
                 encoding: int = ENCODING_RAW) -> bytes:
    """``data`` with optional section ``section_id`` set to ``payload`` (first copy replaced)."""
    if section_id in _CANONICAL_IDS:
        raise InvalidInput(f"section 0x{section_id:02X} is canonical and cannot be replaced")
    if not 0 <= section_id <= 0xFFFFFFFF or not encoding_legal(section_id, encoding):
        raise InvalidInput(f"encoding {encoding} is not legal for section 0x{section_id:02X}")
    view = UrnaView.from_bytes(data)
    if view.is_legacy:
        raise InvalidInput("legacy NEST files cannot be rewritten; rebuild them first")
    try:
        kept = [EncodedSection(e.section_id, e.encoding, bytes(view.payload(e)))
                for e in view.entries if e.section_id != section_id]
        header = view.header
        return assemble(view.manifest_bytes, header.embedding_dim, header.n_chunks,
                        header.n_embeddings,
                        [*kept, EncodedSection(section_id, encoding, bytes(payload))])
    finally:
        view.release()
