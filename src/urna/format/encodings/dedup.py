"""The dedup map (section 0x0B) and the re-expansion of a deduplicated 0x02 pool (02-encodings §7).

A map is ``u8 0 | pack_u64s(back_refs)``: one pool index per chunk, the pool holding each
distinct text once in first-seen order. Bytes after the intpack blocks are ignored, as the
reference does. Errors carry section 0x0B (intpack ones 0, re-tagged by the caller).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ...errors import MalformedSectionPayload
from ..layout import SECTION_CHUNKS_CANONICAL, SECTION_DEDUP_MAP
from ..sections.canonical import decode_string_bodies
from ._canonical import byte_view
from .intpack_scan import block_values, read_directory

_U32 = struct.Struct("<I")

DEDUP_MAP_V1 = 0


def dedup(texts: list[str]) -> tuple[list[str], list[int]]:
    """First-seen pool of distinct texts and each chunk's index into it."""
    index: dict[str, int] = {}
    refs = [index.setdefault(t, len(index)) for t in texts]
    return list(index), refs


def encode_map(back_refs: list[int]) -> bytes:
    """Serialise the back-references (kind byte 0, then intpack)."""
    from .intpack import pack_u64s  # numpy: only files that carry a map pay its import

    return bytes([DEDUP_MAP_V1]) + pack_u64s(back_refs)


def decode_map(payload: bytes | memoryview) -> list[int]:
    """Parse a 0x0B payload into its back-references, each checked to fit a u32."""
    view = byte_view(payload)
    if len(view) == 0:
        raise MalformedSectionPayload(SECTION_DEDUP_MAP, "dedup_map: empty")
    if view[0] != DEDUP_MAP_V1:
        raise MalformedSectionPayload(SECTION_DEDUP_MAP, f"dedup_map: unknown kind {view[0]}")
    blob = view[1:]
    count, n_blocks = read_directory(blob)
    refs: list[int] = []
    # Block by block, so a too-large ref is reported before a later block's damage. Python
    # ints, not numpy: a map is one int per chunk, and cite / validate never load numpy.
    for b in range(n_blocks):
        block = block_values(blob, count, b)
        if max(block) > 0xFFFFFFFF:
            raise MalformedSectionPayload(SECTION_DEDUP_MAP, "dedup_map: back-ref exceeds u32")
        refs.extend(block)
    return refs


def expansion(pool_payload: bytes | memoryview,
              back_refs: list[int]) -> tuple[int, Iterator[bytes]]:
    """Length and byte pieces of the re-expanded payload, checked up front, built lazily.

    A few KB of map can point hundreds of thousands of chunks at one pool text; hashing the
    pieces as they come keeps memory bounded by the pool, not by the expansion.
    """
    if len(pool_payload) < 12:
        raise MalformedSectionPayload(SECTION_CHUNKS_CANONICAL,
                                      "chunks_canonical: truncated count prefix")
    count = int.from_bytes(bytes(pool_payload[4:12]), "little")
    pool = decode_string_bodies(pool_payload, count, SECTION_CHUNKS_CANONICAL)
    refs = back_refs
    if refs and max(refs) >= len(pool):
        raise MalformedSectionPayload(SECTION_DEDUP_MAP,
                                      "dedup_map: back-ref out of unique-pool range")
    records = [_U32.pack(len(body)) + body for body in pool]
    sizes = [len(r) for r in records]
    total = 12 + sum(sizes[r] for r in refs)

    def pieces() -> Iterator[bytes]:
        yield struct.pack("<IQ", 1, len(refs))  # the raw form's prefix: version 1, count
        for lo in range(0, len(refs), 4096):
            yield b"".join(records[r] for r in refs[lo:lo + 4096])

    return total, pieces()


def expand_pool(pool_payload: bytes | memoryview, back_refs: list[int]) -> bytes:
    """Re-expand a raw pool payload (its own count) through ``back_refs`` to the full payload."""
    return b"".join(expansion(pool_payload, back_refs)[1])
