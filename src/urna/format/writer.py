"""Deterministic layout of a .urna file from encoded sections (01-container §6.1 steps 9-12).

The writer takes the final manifest bytes and every section already encoded (optional
sections arrive as opaque payload bytes, as in the reference builder), so it never imports
index/. Sections are stable-sorted by id, laid out at 64-byte boundaries after the manifest,
and sealed with per-section checksums, the header checksum and the footer digest.
"""

from __future__ import annotations

from dataclasses import dataclass

from .hashing import sha256_digest
from .layout import (
    URNA_FOOTER_SIZE,
    URNA_HEADER_SIZE,
    URNA_SECTION_ENTRY_SIZE,
    Footer,
    Header,
    SectionEntry,
    align_up,
    h8,
)


@dataclass(frozen=True)
class EncodedSection:
    """One section ready to be written: its id, wire encoding and physical payload."""

    section_id: int
    encoding: int
    payload: bytes


def assemble(manifest_json: bytes, embedding_dim: int, n_chunks: int, n_embeddings: int,
             sections: list[EncodedSection]) -> bytes:
    """Lay out and seal a complete file; same inputs give the same bytes."""
    ordered = sorted(sections, key=lambda s: s.section_id)  # stable: ties keep call order
    count = len(ordered)
    manifest_offset = URNA_HEADER_SIZE + URNA_SECTION_ENTRY_SIZE * count
    cursor = align_up(manifest_offset + len(manifest_json))
    offsets = []
    data_end = cursor
    for section in ordered:
        offsets.append(cursor)
        data_end = cursor + len(section.payload)
        cursor = align_up(data_end)
    if not ordered:
        data_end = manifest_offset + len(manifest_json)
    file_size = data_end + URNA_FOOTER_SIZE
    buf = bytearray(file_size)
    header = Header.new(embedding_dim, n_chunks, n_embeddings, file_size, URNA_HEADER_SIZE, count,
                        manifest_offset, len(manifest_json))
    buf[:URNA_HEADER_SIZE] = header.pack()
    for i, (section, offset) in enumerate(zip(ordered, offsets, strict=True)):
        entry = SectionEntry(section.section_id, section.encoding, offset, len(section.payload),
                             h8(section.payload))
        pos = URNA_HEADER_SIZE + i * URNA_SECTION_ENTRY_SIZE
        buf[pos:pos + URNA_SECTION_ENTRY_SIZE] = entry.pack()
        buf[offset:offset + len(section.payload)] = section.payload
    buf[manifest_offset:manifest_offset + len(manifest_json)] = manifest_json
    digest = sha256_digest(memoryview(buf)[:data_end])
    buf[data_end:] = Footer(URNA_FOOTER_SIZE, digest).pack()
    return bytes(buf)
