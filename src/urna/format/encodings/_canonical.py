"""The raw list payload the text codecs rebuild (02-encodings §2): ``prefix(n) + n x lp(text)``.

A private helper of the codecs: they must emit exactly these bytes on decode, and the dedup path
must parse them back. ``format/sections`` owns the public section codecs; this copy covers only
what the encodings need so that the two packages do not import each other.
"""

from __future__ import annotations

import struct

from ...errors import (
    MalformedSectionPayload,
    SectionCountMismatch,
    UnsupportedSectionVersion,
)
from ..cursor import Cursor, decode_utf8

_PREFIX = struct.Struct("<IQ")
_U32 = struct.Struct("<I")
_U32_MAX = 0xFFFFFFFF


def build_canonical(bodies: list[bytes], section_id: int = 0x02) -> bytes:
    """``prefix(n)`` then each body length-prefixed; a body over u32 is the reference's error."""
    parts = [_PREFIX.pack(1, len(bodies))]
    for body in bodies:
        if len(body) > _U32_MAX:
            raise MalformedSectionPayload(section_id, "txt_streams: stream longer than u32")
        parts.append(_U32.pack(len(body)))
        parts.append(body)
    return b"".join(parts)


def encode_texts(texts: list[str]) -> bytes:
    """The raw chunks_canonical payload of ``texts``."""
    return build_canonical([t.encode("utf-8") for t in texts])


def parse_canonical(payload: bytes | memoryview, section_id: int, expected: int) -> list[bytes]:
    """Parse a raw list payload with the §2 cursor rules; returns the UTF-8 checked bodies."""
    if len(payload) < 12:
        raise MalformedSectionPayload(section_id, "payload shorter than 12 byte prefix")
    version, count = _PREFIX.unpack_from(payload, 0)
    if version != 1:
        raise UnsupportedSectionVersion(section_id, version)
    if count != expected:
        raise SectionCountMismatch(section_id, expected, count)
    cur = Cursor(payload, section_id, 12)
    out: list[bytes] = []
    # Each record costs at least 4 bytes, so the loop is bounded by the payload, not by count.
    for _ in range(count):
        body = cur.lp_bytes()
        decode_utf8(body, section_id)
        out.append(body)
    cur.expect_end()
    return out


def byte_view(payload: bytes | bytearray | memoryview) -> memoryview:
    """A flat unsigned-byte view of any bytes-like payload (mmap slices included)."""
    view = memoryview(payload)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view
