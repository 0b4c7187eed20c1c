"""Section 0x15 space_table: the directory of extra vector spaces (03-runtime §11.1).

Payload (raw, little-endian): ``u32 version = 1 | u64 count`` then per entry ``u8
space_index | u32 len + UTF-8 name | u32 dim | u8 dtype code | u32 len + UTF-8 model_hash |
u64 n_vectors``. Space 0 is the text space in 0x04 and is never listed; space ``s`` keeps
its vectors in band section ``0x20 + s``. Encoder and decoder apply the same entry rules
(index 1..15, dtype code <= 3, non-empty name, ``sha256:`` model hash, unique index and
name); the decoder bounds the count by ``remaining / 22`` before allocating and rejects
trailing bytes. Reasons are the reference's texts.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from ...errors import InvalidInput, MalformedSectionPayload, UnsupportedSectionVersion
from ..cursor import Cursor
from ..dtypes import SPACE_DTYPES
from ..hashing import HASH_PREFIX
from ..layout import SECTION_SPACE_EMBEDDINGS_BASE, SECTION_SPACE_TABLE, SPACE_BAND_LEN
from ..record import FrozenRecord

SPACE_TABLE_PAYLOAD_VERSION = 1
_MAX_DTYPE_CODE = max(SPACE_DTYPES)
# u8 index + u32 name len + u32 dim + u8 dtype + u32 hash len + u64 n_vectors
_MIN_ENTRY_SIZE = 22
_HEAD = struct.Struct("<IQ")
_U8 = struct.Struct("<B")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_DIM_DTYPE = struct.Struct("<IB")


def _malformed(reason: str) -> MalformedSectionPayload:
    return MalformedSectionPayload(SECTION_SPACE_TABLE, reason)


class SpaceEntry(FrozenRecord):
    """One listed space; its vectors are band section ``0x20 + space_index``."""

    __slots__ = _fields = ("space_index", "name", "dim", "dtype_code", "model_hash", "n_vectors")
    space_index: int
    name: str
    dim: int
    dtype_code: int
    model_hash: str
    n_vectors: int

    def __init__(self, space_index: int, name: str, dim: int, dtype_code: int, model_hash: str,
                 n_vectors: int) -> None:
        self._set(space_index, name, dim, dtype_code, model_hash, n_vectors)

    @property
    def dtype(self) -> str:
        """The manifest-style dtype name of the band ("unknown" for a bad code)."""
        return SPACE_DTYPES.get(self.dtype_code, "unknown")

    @property
    def band_section_id(self) -> int:
        """The section id holding this space's vectors."""
        return SECTION_SPACE_EMBEDDINGS_BASE + self.space_index


def _check_entry(e: SpaceEntry) -> None:
    if e.space_index == 0 or e.space_index >= SPACE_BAND_LEN:
        raise _malformed(
            f"space_table: space_index {e.space_index} outside 1..{SPACE_BAND_LEN - 1}")
    if e.dtype_code > _MAX_DTYPE_CODE:
        raise _malformed(f"space_table: unknown dtype code {e.dtype_code}")
    if not e.name:
        raise _malformed("space_table: empty space name")
    if not e.model_hash.startswith(HASH_PREFIX):
        raise _malformed("space_table: model_hash must be sha256:<hex>")


def _check_widths(e: SpaceEntry) -> None:
    """Values the wire types cannot hold are caller errors, not payload faults."""
    for label, value, bits in (("space_index", e.space_index, 8), ("dim", e.dim, 32),
                               ("dtype code", e.dtype_code, 8), ("n_vectors", e.n_vectors, 64)):
        if not 0 <= value < 1 << bits:
            raise InvalidInput(f"space {e.name!r}: {label} {value} does not fit u{bits}")


def encode_space_table(entries: Iterable[SpaceEntry]) -> bytes:
    """Encode the 0x15 payload; same entries in the same order give the same bytes.

    Raises ``MalformedSectionPayload(0x15)`` for an entry breaking a rule or a duplicate
    index / name, ``InvalidInput`` for a value that does not fit its field.
    """
    entries = list(entries)
    for i, e in enumerate(entries):
        _check_widths(e)
        _check_entry(e)
        if any(p.space_index == e.space_index for p in entries[:i]):
            raise _malformed(f"space_table: duplicate space_index {e.space_index}")
        if any(p.name == e.name for p in entries[:i]):
            raise _malformed(f"space_table: duplicate name {e.name}")
    out = [_HEAD.pack(SPACE_TABLE_PAYLOAD_VERSION, len(entries))]
    for e in entries:
        name = e.name.encode("utf-8")
        mh = e.model_hash.encode("utf-8")
        out.append(struct.pack(f"<BI{len(name)}sIBI{len(mh)}sQ", e.space_index, len(name), name,
                               e.dim, e.dtype_code, len(mh), mh, e.n_vectors))
    return b"".join(out)


class _Reader(Cursor):
    """Bounded reads that fail with the space table's texts."""

    __slots__ = ()

    def __init__(self, buf: bytes | memoryview) -> None:
        super().__init__(bytes(buf), SECTION_SPACE_TABLE, eof="unexpected EOF")

    def text(self) -> str:
        k = self.unpack(_U32)[0]
        if k > self.remaining:
            raise _malformed("space_table: string length exceeds payload")
        try:
            return self.take(k).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _malformed("space_table: string is not utf-8") from exc


def decode_space_table(payload: bytes | memoryview) -> list[SpaceEntry]:
    """Decode and validate a 0x15 payload into its entries, in stored order."""
    rd = _Reader(payload)
    version = rd.unpack(_U32)[0]
    if version != SPACE_TABLE_PAYLOAD_VERSION:
        raise UnsupportedSectionVersion(SECTION_SPACE_TABLE, version)
    count = rd.unpack(_U64)[0]
    if count > rd.remaining // _MIN_ENTRY_SIZE:
        raise _malformed("space_table: entry count exceeds payload")
    entries: list[SpaceEntry] = []
    for _ in range(count):
        index = rd.unpack(_U8)[0]
        name = rd.text()
        dim, dtype_code = rd.unpack(_DIM_DTYPE)
        model_hash = rd.text()
        n_vectors = rd.unpack(_U64)[0]
        e = SpaceEntry(index, name, dim, dtype_code, model_hash, n_vectors)
        _check_entry(e)
        if any(p.space_index == index or p.name == name for p in entries):
            raise _malformed("space_table: duplicate index or name")
        entries.append(e)
    if rd.pos != len(rd.buf):
        raise _malformed("trailing bytes after entries")
    return entries
