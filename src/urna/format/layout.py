"""The byte map of a .urna v1 file (01-container §1-5): constants and fixed records.

File map::

    [0, 128)                          header (HEADER, checksum over bytes 0..72 + 80..128)
    [table_offset, +32*count)         section table (SECTION_ENTRY records)
    [manifest_offset, +manifest_size) manifest JSON, directly after the table, unaligned
    [align64(manifest_end), ...)      payloads, each at a multiple of 64, zero padding between
    [file_size-40, file_size)         footer (FOOTER: u64 footer_size, 32-byte SHA-256 of the body)

Header fields (little-endian): magic 0..4, version_major 4..6, version_minor 6..8,
flags 8..12, embedding_dim 12..16, n_chunks 16..24, n_embeddings 24..32, file_size 32..40,
section_table_offset 40..48, section_table_count 48..56, manifest_offset 56..64,
manifest_size 64..72, header_checksum 72..80, reserved 80..128.

Section entry: section_id 0..4, encoding 4..8, offset 8..16, size 16..24, checksum 24..32.

This module does no I/O; tests poke fields through the helpers here.
"""

from __future__ import annotations

import struct

from .hashing import sha256_digest
from .record import FrozenRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

URNA_MAGIC = b"URNA"
LEGACY_MAGIC = b"NEST"
URNA_VERSION_MAJOR = 1
URNA_VERSION_MINOR = 0
URNA_FORMAT_VERSION = 1
URNA_SCHEMA_VERSION = 1
URNA_HEADER_SIZE = 128
URNA_SECTION_ENTRY_SIZE = 32
URNA_FOOTER_SIZE = 40
SECTION_ALIGNMENT = 64
SECTION_PAYLOAD_PREFIX_SIZE = 12
SECTION_PAYLOAD_VERSION = 1
REPRODUCIBLE_CREATED = "1970-01-01T00:00:00Z"
DEFAULT_ZSTD_LEVEL = 19
CHUNK_ID_DOMAIN = b"urna:chunk_id:v1\n"
LEGACY_CHUNK_ID_DOMAIN = b"nest:chunk_id:v1\n"
CITATION_SCHEME = "urna://"
U64_MAX = (1 << 64) - 1
U32_MAX = (1 << 32) - 1

# Wire encoding ids (01-container §1.2).
ENCODING_RAW = 0
ENCODING_FLOAT32 = ENCODING_RAW  # a float32 slab is stored as is
ENCODING_ZSTD = 1
ENCODING_FLOAT16 = 2
ENCODING_INT8 = 3
ENCODING_INTPACK = 4
ENCODING_ZSTD_DICT = 5
ENCODING_FRONTCODE = 6  # reserved, rejected
ENCODING_INT4 = 7
ENCODING_RABITQ = 8  # reserved, rejected
ENCODING_FSST = 9
ENCODING_TXT_STREAMS = 10
TEXT_ENCODINGS = frozenset({0, 1, 4, 5, 9, 10})
VECTOR_ENCODINGS = frozenset({0, 2, 3, 7})
ENCODING_NAMES = {0: "raw", 1: "zstd", 2: "float16", 3: "int8", 4: "intpack", 5: "zstd_dict",
                  7: "int4", 9: "fsst", 10: "txt_streams"}
# The names the reference's ``info`` prints: the later text encodings (5, 9, 10) show "unknown".
INFO_ENCODING_NAMES = {k: ENCODING_NAMES[k] for k in (0, 1, 2, 3, 4, 7)}

# Section ids (01-container §1.3).
SECTION_CHUNK_IDS = 0x01
SECTION_CHUNKS_CANONICAL = 0x02
SECTION_CHUNKS_ORIGINAL_SPANS = 0x03
SECTION_EMBEDDINGS = 0x04
SECTION_PROVENANCE = 0x05
SECTION_SEARCH_CONTRACT = 0x06
SECTION_HNSW_INDEX = 0x07
SECTION_BM25_INDEX = 0x08
SECTION_EMBEDDINGS_FP = 0x09
SECTION_DICTIONARY = 0x0A
SECTION_DEDUP_MAP = 0x0B
SECTION_GRAPH_ADJACENCY = 0x0C
SECTION_BLOB_REFS = 0x14
SECTION_SPACE_TABLE = 0x15
SECTION_BLOB_SPAN_OVERLAY = 0x16
SECTION_BLOB_DATA = 0x17
SECTION_METADATA = 0x18  # urna-py extension: per-chunk metadata; the reference ignores it
SECTION_SPACE_EMBEDDINGS_BASE = 0x20
SECTION_SPACE_EMBEDDINGS_FP_BASE = 0x30
SPACE_BAND_LEN = 0x10
MAX_SPACES = SPACE_BAND_LEN - 1  # space indices 1..15; index 0 is the 0x04 embeddings

CANONICAL_SECTIONS: tuple[tuple[int, str], ...] = (
    (SECTION_CHUNK_IDS, "chunk_ids"),
    (SECTION_CHUNKS_CANONICAL, "chunks_canonical"),
    (SECTION_CHUNKS_ORIGINAL_SPANS, "chunks_original_spans"),
    (SECTION_EMBEDDINGS, "embeddings"),
    (SECTION_PROVENANCE, "provenance"),
    (SECTION_SEARCH_CONTRACT, "search_contract"),
)
REQUIRED_SECTIONS = CANONICAL_SECTIONS
OPTIONAL_SECTIONS: tuple[tuple[int, str], ...] = (
    (SECTION_HNSW_INDEX, "hnsw_index"),
    (SECTION_BM25_INDEX, "bm25_index"),
    (SECTION_GRAPH_ADJACENCY, "graph_adjacency"),
    (SECTION_BLOB_REFS, "blob_refs"),
    (SECTION_BLOB_SPAN_OVERLAY, "blob_span_overlay"),
    (SECTION_BLOB_DATA, "blob_data"),
    (SECTION_SPACE_TABLE, "space_table"),
)
_NAMES = dict(CANONICAL_SECTIONS + OPTIONAL_SECTIONS)

HEADER = struct.Struct("<4sHHIIQQQQQQQ8s48s")
SECTION_ENTRY = struct.Struct("<IIQQ8s")
FOOTER = struct.Struct("<Q32s")
PREFIX = struct.Struct("<IQ")
assert HEADER.size == URNA_HEADER_SIZE
assert SECTION_ENTRY.size == URNA_SECTION_ENTRY_SIZE
assert FOOTER.size == URNA_FOOTER_SIZE
assert PREFIX.size == SECTION_PAYLOAD_PREFIX_SIZE

HEADER_CHECKSUM_OFFSET = 72
HEADER_CHECKSUM_END = 80
# Field offsets, for tests and tools that poke one field.
HEADER_FIELD_OFFSETS = {
    "magic": 0, "version_major": 4, "version_minor": 6, "flags": 8, "embedding_dim": 12,
    "n_chunks": 16, "n_embeddings": 24, "file_size": 32, "section_table_offset": 40,
    "section_table_count": 48, "manifest_offset": 56, "manifest_size": 64,
    "header_checksum": 72, "reserved": 80,
}
ENTRY_FIELD_OFFSETS = {"section_id": 0, "encoding": 4, "offset": 8, "size": 16, "checksum": 24}


def align_up(n: int, alignment: int = SECTION_ALIGNMENT) -> int:
    """Round ``n`` up to the next multiple of ``alignment``."""
    return (n + alignment - 1) // alignment * alignment


def h8(data: bytes | memoryview) -> bytes:
    """First 8 bytes of SHA-256: the checksum used by the header and the section table."""
    return sha256_digest(data)[:8]


def is_vector_section(section_id: int) -> bool:
    """True for 0x04 and the space band ranges 0x20..0x3F (vector encoding class)."""
    return section_id == SECTION_EMBEDDINGS or 0x20 <= section_id <= 0x3F


def encoding_legal(section_id: int, encoding: int) -> bool:
    """Whether ``encoding`` belongs to the class of ``section_id`` (reader step 7)."""
    allowed = VECTOR_ENCODINGS if is_vector_section(section_id) else TEXT_ENCODINGS
    return encoding in allowed


def encoding_name(encoding: int, *, info: bool = False) -> str:
    """A wire encoding id's name, "unknown" when it has none (``info``: the info verb's set)."""
    return (INFO_ENCODING_NAMES if info else ENCODING_NAMES).get(encoding, "unknown")


def section_name(section_id: int) -> str | None:
    """The reference's name for a section id, or None when it has none."""
    if section_id in _NAMES:
        return _NAMES[section_id]
    if 0x20 <= section_id <= 0x2F:
        return "space_embeddings"
    if 0x30 <= section_id <= 0x3F:
        return "space_embeddings_fp"
    return None


def header_checksum(header: bytes | bytearray | memoryview) -> bytes:
    """H8 of the 128 header bytes with the checksum field cut out (not zeroed)."""
    hb = bytes(header[:URNA_HEADER_SIZE])
    return h8(hb[:HEADER_CHECKSUM_OFFSET] + hb[HEADER_CHECKSUM_END:])


class Header(FrozenRecord):
    """The 128-byte file header."""

    __slots__ = _fields = (
        "magic", "version_major", "version_minor", "flags", "embedding_dim", "n_chunks",
        "n_embeddings", "file_size", "section_table_offset", "section_table_count",
        "manifest_offset", "manifest_size", "header_checksum", "reserved")
    magic: bytes
    version_major: int
    version_minor: int
    flags: int
    embedding_dim: int
    n_chunks: int
    n_embeddings: int
    file_size: int
    section_table_offset: int
    section_table_count: int
    manifest_offset: int
    manifest_size: int
    header_checksum: bytes
    reserved: bytes

    def __init__(self, magic: bytes, version_major: int, version_minor: int, flags: int,
                 embedding_dim: int, n_chunks: int, n_embeddings: int, file_size: int,
                 section_table_offset: int, section_table_count: int, manifest_offset: int,
                 manifest_size: int, header_checksum: bytes, reserved: bytes = bytes(48)) -> None:
        self._set(magic, version_major, version_minor, flags, embedding_dim, n_chunks,
                  n_embeddings, file_size, section_table_offset, section_table_count,
                  manifest_offset, manifest_size, header_checksum, reserved)

    @classmethod
    def unpack(cls, buf: bytes | memoryview) -> Header:
        """Decode the first 128 bytes of ``buf``."""
        return cls(*HEADER.unpack_from(buf, 0))

    @classmethod
    def new(cls, embedding_dim: int, n_chunks: int, n_embeddings: int, file_size: int,
            table_offset: int, count: int, manifest_offset: int, manifest_size: int) -> Header:
        """A writer header (magic URNA, version 1.0, flags 0) with its checksum computed."""
        draft = cls(URNA_MAGIC, URNA_VERSION_MAJOR, URNA_VERSION_MINOR, 0, embedding_dim,
                    n_chunks, n_embeddings, file_size, table_offset, count, manifest_offset,
                    manifest_size, bytes(8))
        return draft.with_checksum()

    def pack(self) -> bytes:
        """Encode the header (the stored checksum as it is)."""
        return HEADER.pack(self.magic, self.version_major, self.version_minor, self.flags,
                           self.embedding_dim, self.n_chunks, self.n_embeddings, self.file_size,
                           self.section_table_offset, self.section_table_count,
                           self.manifest_offset, self.manifest_size, self.header_checksum,
                           self.reserved)

    def with_checksum(self) -> Header:
        """The same header with a freshly computed checksum."""
        fields: dict[str, Any] = self.as_dict()
        fields["header_checksum"] = header_checksum(self.pack())
        return Header(**fields)


class SectionEntry(FrozenRecord):
    """One 32-byte section-table entry."""

    __slots__ = _fields = ("section_id", "encoding", "offset", "size", "checksum")
    section_id: int
    encoding: int
    offset: int
    size: int
    checksum: bytes

    def __init__(self, section_id: int, encoding: int, offset: int, size: int,
                 checksum: bytes) -> None:
        self._set(section_id, encoding, offset, size, checksum)

    @classmethod
    def unpack(cls, buf: bytes | memoryview, pos: int) -> SectionEntry:
        """Decode the entry starting at ``pos``."""
        return cls(*SECTION_ENTRY.unpack_from(buf, pos))

    def pack(self) -> bytes:
        """Encode the entry."""
        return SECTION_ENTRY.pack(self.section_id, self.encoding, self.offset, self.size,
                                  self.checksum)


class Footer(FrozenRecord):
    """The 40-byte footer: footer_size (never checked) and the body digest."""

    __slots__ = _fields = ("footer_size", "file_hash")
    footer_size: int
    file_hash: bytes

    def __init__(self, footer_size: int, file_hash: bytes) -> None:
        self._set(footer_size, file_hash)

    @classmethod
    def unpack(cls, buf: bytes | memoryview, pos: int) -> Footer:
        """Decode the footer starting at ``pos``."""
        return cls(*FOOTER.unpack_from(buf, pos))

    def pack(self) -> bytes:
        """Encode the footer."""
        return FOOTER.pack(self.footer_size, self.file_hash)


def pack_prefix(count: int, version: int = SECTION_PAYLOAD_VERSION) -> bytes:
    """The common 12-byte payload prefix: u32 version, u64 count."""
    return PREFIX.pack(version, count)
