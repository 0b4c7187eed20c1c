"""Reading intpack without numpy: the directory and block checks, and a block's values as ints.

02-encodings §3 (layout in ``intpack``). ``IntpackReader`` (numpy) takes its checks from here,
so both read a blob alike and fail with the same first error. ``block_values`` decodes one
block with Python integers (one ``int.from_bytes``, shifts and masks): the 0x0B dedup map of
``urna cite`` / ``validate`` decodes without numpy's import (~90 ms, many times the map).
"""

from __future__ import annotations

import struct

from ...errors import MalformedSectionPayload

INTPACK_BLOCK = 128
_U64_MASK = (1 << 64) - 1
_HEAD = struct.Struct("<II")
_U64 = struct.Struct("<Q")


def intpack_error(reason: str) -> MalformedSectionPayload:
    """The decoder's error (section id 0: the caller re-tags it with the real section)."""
    return MalformedSectionPayload(0, f"intpack: {reason}")


def read_directory(buf: bytes | memoryview) -> tuple[int, int]:
    """``(count, n_blocks)`` of the blob, checked against each other and the bytes present."""
    n = len(buf)
    if n < 8:
        raise intpack_error("truncated u32")
    count, n_blocks = _HEAD.unpack_from(buf, 0)
    if n_blocks != -(-count // INTPACK_BLOCK):
        raise intpack_error("block count inconsistent with count")
    if 8 + 4 * n_blocks > n:
        raise intpack_error("truncated directory")
    return count, n_blocks


def block_header(buf: bytes | memoryview, offset: int, blen: int) -> tuple[int, int, int]:
    """``(min, width, body_len)`` of the block at ``offset`` holding ``blen`` values, checked."""
    n = len(buf)
    if offset + 8 > n:
        raise intpack_error("truncated u64")
    if offset + 8 >= n:
        raise intpack_error("truncated block header")
    lo = _U64.unpack_from(buf, offset)[0]
    width = buf[offset + 8]
    if width > 64:
        raise intpack_error("block width out of range")
    body_len = (blen * width + 7) // 8
    if offset + 9 + body_len > n:
        raise intpack_error("truncated block body")
    return lo, width, body_len


def block_values(buf: bytes | memoryview, count: int, b: int) -> list[int]:
    """The values of block ``b`` of a blob of ``count`` values (``read_directory`` first)."""
    offset = struct.unpack_from("<I", buf, 8 + 4 * b)[0]
    blen = min(INTPACK_BLOCK, count - b * INTPACK_BLOCK)
    lo, width, body_len = block_header(buf, offset, blen)
    if width == 0:
        return [lo] * blen
    packed = int.from_bytes(buf[offset + 9:offset + 9 + body_len], "little")
    mask = (1 << width) - 1
    # the reference adds with wrapping: a min near 2**64 plus a field wraps around
    return [(((packed >> (i * width)) & mask) + lo) & _U64_MASK for i in range(blen)]
