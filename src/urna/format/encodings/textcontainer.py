"""The per-chunk text container (ids 10, 5, 9) and its V1 variant txt_streams (02-encodings §6).

Layout: ``u8 kind | u64 n | pack_u64s(n+1 offsets) | region``. The offset table carries no
length: the region starts where the canonical re-pack of the decoded offsets ends, so a parser
must locate it by re-packing (§6.1). V1 stores one level-19 zstd frame per text. Every check runs
in the reference's order with its reason text; errors carry 0x02 (intpack ones 0) and are
re-tagged by the dispatcher.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

from ...errors import MalformedSectionPayload
from ..cursor import decode_utf8
from ..layout import SECTION_CHUNKS_CANONICAL
from ._canonical import build_canonical, byte_view
from .zstd import decompress_with, new_dctx, zstd_compress

KIND_TXT_STREAMS = 0
KIND_ZSTD_DICT = 1
KIND_FSST = 2
PREFIXES = {KIND_TXT_STREAMS: "txt_streams", KIND_ZSTD_DICT: "zstd_dict", KIND_FSST: "fsst"}
_U64 = struct.Struct("<Q")


def malformed(reason: str) -> MalformedSectionPayload:
    """A chunks_canonical payload error (the dispatcher re-tags it to the real section)."""
    return MalformedSectionPayload(SECTION_CHUNKS_CANONICAL, reason)


def write_container(kind: int, frames: list[bytes], between: bytes = b"") -> bytes:
    """``kind | u64 n | offsets | between | frames``; offsets index the frames only."""
    from .intpack import pack_u64s  # numpy, for the offset table: only containers need it

    offsets = [0]
    for frame in frames:
        offsets.append(offsets[-1] + len(frame))
    return b"".join([bytes([kind]), _U64.pack(len(frames)), pack_u64s(offsets), between, *frames])


@dataclass(frozen=True)
class Container:
    """A parsed container: ``n`` chunks, their ``n + 1`` offsets and the bytes after the table."""

    count: int
    offsets: list[int]
    region: memoryview

    def frame(self, i: int, streams: memoryview | None = None) -> memoryview:
        """Slice ``i`` of ``streams`` (the region by default)."""
        data = self.region if streams is None else streams
        return data[self.offsets[i]:self.offsets[i + 1]]


def parse_container(payload: bytes | memoryview, kind: int, check_final: bool = True) -> Container:
    """Steps 1-11 of §6.1 for the variant ``kind`` (V3 checks the final offset itself)."""
    from .intpack import IntpackReader, packed_len

    p = PREFIXES[kind]
    view = byte_view(payload)
    if len(view) == 0:
        raise malformed(f"{p}: empty")
    if view[0] != kind:
        raise malformed(f"{p}: unknown kind {view[0]}")
    if len(view) < 9:
        raise malformed(f"{p}: truncated count")
    declared = _U64.unpack_from(view, 1)[0]
    table = view[9:]
    reader = IntpackReader(table)
    if reader.count == 0:
        raise malformed(f"{p}: offset table must hold n+1 >= 1")
    n = reader.count - 1
    if declared != n:
        raise malformed(f"{p}: declared count != offset count - 1")
    values = reader.all()
    if int(values[0]) != 0:
        raise malformed(f"{p}: first offset must be 0")
    table_len = packed_len(values)
    if table_len > len(table):
        raise malformed(f"{p}: truncated offset table")
    offsets = values.tolist()
    if any(b < a for a, b in pairwise(offsets)):
        raise malformed(f"{p}: non-monotonic offsets")
    region = table[table_len:]
    if check_final and offsets[-1] != len(region):
        raise malformed(f"{p}: final offset != streams length")
    return Container(n, offsets, region)


def txt_streams_frames(texts: list[str]) -> Iterator[bytes]:
    """The V1 frames one by one (one level-19 zstd frame per text), for ``write_container``."""
    return (zstd_compress(t.encode("utf-8")) for t in texts)


def encode_txt_streams(texts: list[str]) -> bytes:
    """V1 (id 10): one level-19 zstd frame per text behind the offset table."""
    return write_container(KIND_TXT_STREAMS, list(txt_streams_frames(texts)))


def _retag(exc: MalformedSectionPayload) -> MalformedSectionPayload:
    return malformed(exc.reason)


def _decode_frame(dctx: object, frame: memoryview) -> bytes:
    try:
        body = decompress_with(dctx, frame)
    except MalformedSectionPayload as exc:
        raise _retag(exc) from None
    decode_utf8(body, SECTION_CHUNKS_CANONICAL, "txt_streams: ")
    return body


def decode_txt_streams(payload: bytes | memoryview) -> bytes:
    """Rebuild the raw chunks_canonical payload from a V1 payload."""
    box = parse_container(payload, KIND_TXT_STREAMS)
    dctx = new_dctx()
    bodies = [_decode_frame(dctx, box.frame(i)) for i in range(box.count)]
    return build_canonical(bodies)


def txt_streams_text(payload: bytes | memoryview, i: int) -> str:
    """Decode only chunk ``i`` of a V1 payload (O(1) single-chunk access)."""
    box = parse_container(payload, KIND_TXT_STREAMS)
    if i < 0 or i >= box.count:
        raise malformed("txt_streams: index out of range")
    return _decode_frame(new_dctx(), box.frame(i)).decode("utf-8")
