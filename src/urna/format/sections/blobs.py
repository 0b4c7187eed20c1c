"""Sections 0x14 blob_refs, 0x16 blob_span_overlay, 0x17 blob_data (03-runtime §12).

All three are raw, little-endian, start with ``u32 version = 1 | u64 count`` and are
excluded from content_hash.

* 0x14: per record ``32-byte SHA-256 | u32 len + UTF-8 original_uri | u64 byte_len |
  u8 inlined (0/1)``. Record order is the contract: 0x16 and 0x17 address records by position.
* 0x16: per chunk ``u32 blob_ref_index | u64 byte_start | u64 byte_end`` (20 bytes);
  ``BLOB_REF_NONE`` keeps the chunk's 0x03 span. The reference bounds the count by
  ``remaining / 16`` (not 20), so an over-claim between the two fails later as EOF.
* 0x17: ``count x (u64 offset | u64 len)`` relative to the first data byte, then the inlined
  bytes in record order; an out-of-line record is ``(0, 0)``.

Decoders bound every count by the bytes present before allocating and raise the reference's
typed errors and reason texts.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from ...errors import InvalidInput, MalformedSectionPayload, UnsupportedSectionVersion
from ..cursor import Cursor
from ..hashing import sha256_text
from ..layout import SECTION_BLOB_DATA, SECTION_BLOB_REFS, SECTION_BLOB_SPAN_OVERLAY
from ..record import FrozenRecord

BLOB_PAYLOAD_VERSION = 1
BLOB_REF_NONE = 0xFFFFFFFF
_HEAD = struct.Struct("<IQ")
_U8 = struct.Struct("<B")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_OVERLAY_ENTRY = struct.Struct("<IQQ")
_DATA_ENTRY = struct.Struct("<QQ")
_REF_MIN_SIZE = 32 + 4 + 8 + 1
_OVERLAY_BOUND = 16  # the reference's divisor, smaller than the 20-byte entry


class BlobRef(FrozenRecord):
    """One 0x14 record: raw SHA-256 of the blob, where it came from, its size, inlined?"""

    __slots__ = _fields = ("content_hash", "original_uri", "byte_len", "inlined")
    content_hash: bytes
    original_uri: str
    byte_len: int
    inlined: bool

    def __init__(self, content_hash: bytes, original_uri: str, byte_len: int,
                 inlined: bool) -> None:
        self._set(content_hash, original_uri, byte_len, inlined)

    @property
    def content_hash_hex(self) -> str:
        """The hash as ``sha256:<64 hex>``, the form inspect and the API report."""
        return sha256_text(self.content_hash)


class _Reader(Cursor):
    """Bounded reads failing as ``MalformedSectionPayload(section_id, "unexpected EOF")``."""

    __slots__ = ()

    def __init__(self, buf: bytes | memoryview, section_id: int) -> None:
        super().__init__(bytes(buf), section_id, eof="unexpected EOF")

    def head(self) -> int:
        """Read the version (must be 1) and return the declared count."""
        version = self.unpack(_U32)[0]
        if version != BLOB_PAYLOAD_VERSION:
            raise UnsupportedSectionVersion(self.section_id, version)
        return self.unpack(_U64)[0]


def _fits(value: int, bits: int, what: str) -> int:
    value = int(value)
    if not 0 <= value < 1 << bits:
        raise InvalidInput(f"{what} {value} does not fit u{bits}")
    return value


def encode_blob_refs(refs: Iterable[BlobRef]) -> bytes:
    """Encode the 0x14 payload, records in the given order."""
    refs = list(refs)
    out = [_HEAD.pack(BLOB_PAYLOAD_VERSION, len(refs))]
    for i, r in enumerate(refs):
        digest = bytes(r.content_hash)
        if len(digest) != 32:
            raise InvalidInput(f"blob_refs[{i}] content_hash must be 32 bytes, got {len(digest)}")
        uri = r.original_uri.encode("utf-8")
        out.append(digest + _U32.pack(_fits(len(uri), 32, f"blob_refs[{i}] uri length")) + uri
                   + _U64.pack(_fits(r.byte_len, 64, f"blob_refs[{i}] byte_len"))
                   + _U8.pack(1 if r.inlined else 0))
    return b"".join(out)


def decode_blob_refs(payload: bytes | memoryview) -> list[BlobRef]:
    """Decode a 0x14 payload into its records, in stored order."""
    rd = _Reader(payload, SECTION_BLOB_REFS)
    count = rd.head()
    if count > rd.remaining // _REF_MIN_SIZE:
        raise MalformedSectionPayload(SECTION_BLOB_REFS, "blob_refs: entry count exceeds payload")
    refs: list[BlobRef] = []
    for _ in range(count):
        digest = rd.take(32)
        k = rd.unpack(_U32)[0]
        if k > rd.remaining:
            raise MalformedSectionPayload(SECTION_BLOB_REFS,
                                          "blob_refs: uri length exceeds payload")
        try:
            uri = rd.take(k).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedSectionPayload(SECTION_BLOB_REFS, "blob_refs: uri is not utf-8") from exc
        byte_len = rd.unpack(_U64)[0]
        flag = rd.unpack(_U8)[0]
        if flag > 1:
            raise MalformedSectionPayload(SECTION_BLOB_REFS, f"blob_refs: bad inlined flag {flag}")
        refs.append(BlobRef(digest, uri, byte_len, flag == 1))
    if rd.remaining:
        raise MalformedSectionPayload(SECTION_BLOB_REFS, "trailing bytes after records")
    return refs


def encode_overlay(entries: Iterable[tuple[int | None, int, int]]) -> bytes:
    """Encode the 0x16 payload from ``(blob_ref_index, byte_start, byte_end)`` per chunk.

    An index of ``None`` is written as ``BLOB_REF_NONE`` (keep the chunk's 0x03 span), as
    the reference's ``chunk_blob_spans`` does.
    """
    rows = list(entries)
    out = [_HEAD.pack(BLOB_PAYLOAD_VERSION, len(rows))]
    for i, (index, start, end) in enumerate(rows):
        idx = BLOB_REF_NONE if index is None else _fits(index, 32, f"overlay[{i}] blob_ref_index")
        out.append(_OVERLAY_ENTRY.pack(idx, _fits(start, 64, f"overlay[{i}] byte_start"),
                                       _fits(end, 64, f"overlay[{i}] byte_end")))
    return b"".join(out)


def decode_overlay(payload: bytes | memoryview) -> list[tuple[int, int, int]]:
    """Decode a 0x16 payload into ``(blob_ref_index, byte_start, byte_end)`` per entry.

    ``BLOB_REF_NONE`` stays as the integer 0xFFFFFFFF; whether an index names an existing
    0x14 record is checked when the file is opened, not here.
    """
    rd = _Reader(payload, SECTION_BLOB_SPAN_OVERLAY)
    count = rd.head()
    if count > rd.remaining // _OVERLAY_BOUND:
        raise MalformedSectionPayload(
            SECTION_BLOB_SPAN_OVERLAY, "blob_span_overlay: entry count exceeds payload")
    entries = [rd.unpack(_OVERLAY_ENTRY) for _ in range(count)]
    if rd.remaining:
        raise MalformedSectionPayload(SECTION_BLOB_SPAN_OVERLAY, "trailing bytes after entries")
    return entries


def encode_blob_data(blobs: Sequence[bytes | None]) -> bytes:
    """Encode the 0x17 payload: one entry per 0x14 record, ``None`` for out-of-line ones."""
    table = [_HEAD.pack(BLOB_PAYLOAD_VERSION, len(blobs))]
    offset = 0
    for b in blobs:
        if b is None:
            table.append(bytes(_DATA_ENTRY.size))
        else:
            table.append(_DATA_ENTRY.pack(offset, len(b)))
            offset += len(b)
    return b"".join(table) + b"".join(bytes(b) for b in blobs if b is not None)


def decode_blob_data(payload: bytes | memoryview) -> tuple[list[tuple[int, int]], int]:
    """Decode the 0x17 offset table: ``(entries, data_start)``; the data is not copied.

    ``entries[i]`` is record i's ``(offset, len)`` relative to ``data_start``, the payload
    offset of the first data byte; every entry is checked to end inside the data region.
    """
    buf = memoryview(payload).cast("B")
    size = len(buf)
    if size < _HEAD.size:
        raise MalformedSectionPayload(SECTION_BLOB_DATA, "blob_data: payload shorter than header")
    version, count = _HEAD.unpack_from(buf, 0)
    if version != BLOB_PAYLOAD_VERSION:
        raise UnsupportedSectionVersion(SECTION_BLOB_DATA, version)
    if count > (size - _HEAD.size) // _DATA_ENTRY.size:
        raise MalformedSectionPayload(SECTION_BLOB_DATA, "blob_data: entry count exceeds payload")
    data_start = _HEAD.size + count * _DATA_ENTRY.size
    data_len = size - data_start
    entries: list[tuple[int, int]] = []
    for i, (offset, length) in enumerate(_DATA_ENTRY.iter_unpack(buf[_HEAD.size:data_start])):
        end = offset + length
        if end >= 1 << 64:
            raise MalformedSectionPayload(SECTION_BLOB_DATA,
                                          f"blob_data: entry {i} offset overflow")
        if end > data_len:
            raise MalformedSectionPayload(
                SECTION_BLOB_DATA, f"blob_data: entry {i} spans past payload ({end} > {data_len})")
        entries.append((offset, length))
    return entries, data_start
