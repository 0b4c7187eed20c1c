"""Decode-side helpers of the text codecs: rebuilding the raw list payload, byte views.

``build_canonical`` is what every text codec emits on decode (``prefix(n) + n x lp(text)``,
02-encodings §2) with the decoder's own error for an oversized text; parsing and the writer's
encoding of that form live in ``format/sections/canonical.py``.
"""

from __future__ import annotations

import struct

from ...errors import MalformedSectionPayload

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


def byte_view(payload: bytes | bytearray | memoryview) -> memoryview:
    """A flat unsigned-byte view of any bytes-like payload (mmap slices included)."""
    view = memoryview(payload)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view
