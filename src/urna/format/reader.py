"""UrnaView: the format reader over a bytes-like object (01-container §10).

``UrnaView.from_bytes`` runs the reference's 19 checks in the reference's order and stops at
the first failure; each table entry is fully checked (encoding class, alignment, bounds,
checksum) before the next one. It does no I/O: it takes bytes, a memoryview or an mmap.
What it deliberately does not enforce (§10.4): an allow-list of section ids, unique ids,
a sorted table, non-overlapping sections, flags/reserved/footer_size, n_embeddings vs
n_chunks, and the contents of 0x01..0x05 (decoded on demand).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from ..errors import (
    EmbeddingSizeMismatch,
    FileSizeMismatch,
    FileTruncated,
    FooterHashMismatch,
    InvalidHeaderChecksum,
    MagicMismatch,
    MalformedSectionPayload,
    ManifestInvalid,
    MissingRequiredSection,
    SectionChecksumMismatch,
    SectionCountMismatch,
    SectionMisaligned,
    SectionOffsetOutOfBounds,
    UnsupportedDType,
    UnsupportedIndexType,
    UnsupportedMetric,
    UnsupportedNormalize,
    UnsupportedRerankPolicy,
    UnsupportedScoreType,
    UnsupportedSectionEncoding,
    UnsupportedVersion,
)
from . import encodings
from .ahead import Job, Lane
from .dtypes import DTYPE_ENCODINGS, SPACE_DTYPES
from .identity import content_hash as _content_hash
from .identity import file_hash as _file_hash
from .layout import (
    CANONICAL_SECTIONS,
    LEGACY_MAGIC,
    SECTION_ALIGNMENT,
    SECTION_CHUNKS_CANONICAL,
    SECTION_CHUNKS_ORIGINAL_SPANS,
    SECTION_DEDUP_MAP,
    SECTION_DICTIONARY,
    SECTION_EMBEDDINGS,
    SECTION_SEARCH_CONTRACT,
    SECTION_SPACE_EMBEDDINGS_BASE,
    SECTION_SPACE_TABLE,
    U64_MAX,
    URNA_FOOTER_SIZE,
    URNA_HEADER_SIZE,
    URNA_MAGIC,
    URNA_SECTION_ENTRY_SIZE,
    URNA_VERSION_MAJOR,
    URNA_VERSION_MINOR,
    VECTOR_ENCODINGS,
    Footer,
    Header,
    SectionEntry,
    encoding_legal,
    h8,
    header_checksum,
)
from .manifest import Manifest
from .sections.canonical import CONTRACT_KEYS, decode_contract

_CONTRACT_ERRORS = {
    "metric": UnsupportedMetric, "score_type": UnsupportedScoreType,
    "normalize": UnsupportedNormalize, "index_type": UnsupportedIndexType,
    "rerank_policy": UnsupportedRerankPolicy,
}


def _body_digest(body: memoryview) -> hashlib._Hash:
    """SHA-256 state after the body: the footer check's digest, later extended to file_hash."""
    return hashlib.sha256(body)


def checked_size(dtype: str, n: int, dim: int) -> int | None:
    """Expected slab size with the reference's 64-bit overflow rule (None = unknown)."""
    size = encodings.expected_embeddings_size(dtype, n, dim)
    if size is None or size > U64_MAX or n * dim > U64_MAX:
        return None
    return size


class UrnaView:
    """A validated view of a .urna file's bytes."""

    def __init__(self, buf: memoryview, header: Header, entries: list[SectionEntry],
                 manifest: Manifest, manifest_bytes: bytes) -> None:
        self.buf = buf
        self.header = header
        self.entries = entries
        self.manifest = manifest
        self.manifest_bytes = manifest_bytes
        self._decoded: dict[int, bytes | memoryview] = {}
        self._content_hash: str | None = None
        self._body_hash = None  # SHA-256 state after the body, kept from the footer check

    # -- reading ---------------------------------------------------------------------------

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> UrnaView:
        """Parse and validate ``data`` (steps 1-19 of 01-container §10.1)."""
        buf = memoryview(data)
        if buf.format != "B" or buf.ndim != 1:
            buf = buf.cast("B")
        length = len(buf)
        if length < URNA_HEADER_SIZE + URNA_FOOTER_SIZE:
            raise FileTruncated()
        header = Header.unpack(buf)
        if header.magic not in (URNA_MAGIC, LEGACY_MAGIC):
            raise MagicMismatch(URNA_MAGIC, header.magic)
        if header.version_major != URNA_VERSION_MAJOR or header.version_minor > URNA_VERSION_MINOR:
            raise UnsupportedVersion(header.version_major, header.version_minor)
        if header_checksum(buf[:URNA_HEADER_SIZE]) != header.header_checksum:
            raise InvalidHeaderChecksum()
        if header.file_size != length:
            raise FileSizeMismatch(header.file_size, length)
        body_end = length - URNA_FOOTER_SIZE
        count, table_offset = header.section_table_count, header.section_table_offset
        table_len = count * URNA_SECTION_ENTRY_SIZE
        if table_len > U64_MAX or table_offset + table_len > U64_MAX:
            raise SectionOffsetOutOfBounds(0, 0)
        if table_offset + table_len > body_end:
            raise FileTruncated()
        with Lane() as lane:
            # The body digest and each section checksum are independent passes over the same
            # bytes: they start at once on worker threads and are claimed in the check order.
            body_job = lane.start_over(_body_digest, buf, 0, body_end)
            entries = cls._checked_entries(buf, header, body_end, lane)
            m_off, m_size = header.manifest_offset, header.manifest_size
            if m_off + m_size > U64_MAX or m_off + m_size > body_end:
                raise FileTruncated()
            manifest_bytes = bytes(buf[m_off:m_off + m_size])
            manifest = Manifest.from_json_bytes(manifest_bytes)
            manifest.validate()
            footer = Footer.unpack(buf, body_end)
            body_hash = body_job.result()
        if body_hash.digest() != footer.file_hash:
            raise FooterHashMismatch()
        if manifest.embedding_dim != header.embedding_dim:
            raise ManifestInvalid("manifest embedding_dim disagrees with header")
        if manifest.n_chunks != header.n_chunks:
            raise ManifestInvalid("manifest n_chunks disagrees with header")
        view = cls(buf, header, entries, manifest, manifest_bytes)
        view._body_hash = body_hash
        for section_id, name in CANONICAL_SECTIONS:
            if view.entry(section_id) is None:
                raise MissingRequiredSection(name)
        view.check_embeddings_layout()
        if view.entry(SECTION_SPACE_TABLE) is not None:
            view.check_space_bands()
        view.check_contract()
        return view

    @staticmethod
    def _checked_entries(buf: memoryview, header: Header, body_end: int,
                         lane: Lane) -> list[SectionEntry]:
        """Steps 7-11 per entry in table order; the checksums run ahead, claimed in order."""
        entries: list[SectionEntry] = []
        sums: list[tuple[SectionEntry, Job]] = []
        try:
            for i in range(header.section_table_count):
                entry = SectionEntry.unpack(
                    buf, header.section_table_offset + i * URNA_SECTION_ENTRY_SIZE)
                UrnaView._check_entry_bounds(entry, body_end)
                end = entry.offset + entry.size
                sums.append((entry, lane.start_over(h8, buf, entry.offset, end)))
                entries.append(entry)
        finally:  # an earlier entry's bad checksum wins over a later entry's bad bounds
            for entry, job in sums:
                if job.result() != entry.checksum:
                    raise SectionChecksumMismatch(entry.section_id)
        return entries

    @staticmethod
    def _check_entry_bounds(entry: SectionEntry, body_end: int) -> None:
        sid = entry.section_id
        if not encoding_legal(sid, entry.encoding):
            raise UnsupportedSectionEncoding(sid, entry.encoding)
        if entry.offset % SECTION_ALIGNMENT:
            raise SectionMisaligned(sid, entry.offset, SECTION_ALIGNMENT)
        end = entry.offset + entry.size
        if end > U64_MAX or end > body_end:
            raise SectionOffsetOutOfBounds(sid, entry.offset)

    # -- semantic checks (steps 17-19) ------------------------------------------------------

    def check_embeddings_layout(self) -> SectionEntry:
        """Step 17: dtype/encoding pairing and exact size of the first 0x04 entry."""
        entry = self.entry(SECTION_EMBEDDINGS)
        assert entry is not None  # step 15 refused a file without it
        dtype = self.manifest.dtype
        if DTYPE_ENCODINGS.get(dtype) != entry.encoding:
            raise ManifestInvalid(
                f"embeddings section encoding={entry.encoding} does not match dtype={dtype}")
        n, dim = self.header.n_embeddings, self.header.embedding_dim
        expected = checked_size(dtype, n, dim)
        if expected is None:
            raise UnsupportedDType(
                f"unknown embeddings dtype {dtype}, or n={n} x dim={dim} overflows")
        if entry.size != expected:
            raise EmbeddingSizeMismatch(expected, entry.size)
        return entry

    def space_entries(self) -> list:
        """Decode the 0x15 space table (wire-decoded)."""
        from .sections.space_table import decode_space_table

        return decode_space_table(self.decoded(SECTION_SPACE_TABLE))

    def check_space_bands(self) -> None:
        """Step 18: every listed band exists with the size its table entry implies."""
        for space in self.space_entries():
            if space.n_vectors != self.header.n_chunks:
                raise ManifestInvalid(f"space {space.name} lists {space.n_vectors} vectors but "
                                      f"the corpus has {self.header.n_chunks} chunks")
            band_id = SECTION_SPACE_EMBEDDINGS_BASE + space.space_index
            band = self.entry(band_id)
            if band is None:
                raise ManifestInvalid(
                    f"space {space.name} lists band {band_id:#04x} but the section is missing")
            dtype = SPACE_DTYPES.get(space.dtype_code)
            expected = None if dtype is None else checked_size(dtype, space.n_vectors, space.dim)
            if expected is None:
                raise UnsupportedDType(f"space {space.name} dtype code {space.dtype_code}")
            if band.size != expected:
                raise EmbeddingSizeMismatch(expected, band.size)

    def search_contract(self) -> dict[str, str]:
        """The decoded 0x06 search contract."""
        return decode_contract(self.decoded(SECTION_SEARCH_CONTRACT))

    def check_contract(self) -> None:
        """Step 19: the search contract agrees with the manifest, field by field."""
        contract = self.search_contract()
        for key in CONTRACT_KEYS:
            declared = getattr(self.manifest, key)
            if contract[key] != declared:
                raise _CONTRACT_ERRORS[key](
                    f"section says {contract[key]} but manifest says {declared}")

    def validate_embeddings_values(self) -> None:
        """Re-check the 0x04 layout, then reject any non-finite value or scale."""
        entry = self.check_embeddings_layout()
        encodings.validate_embedding_values(SECTION_EMBEDDINGS, entry.encoding, self.payload(entry),
                                            self.header.n_embeddings, self.header.embedding_dim)

    # -- access -----------------------------------------------------------------------------

    def entry(self, section_id: int) -> SectionEntry | None:
        """The first table entry with ``section_id``, or None."""
        for entry in self.entries:
            if entry.section_id == section_id:
                return entry
        return None

    def payload(self, entry: SectionEntry | int) -> memoryview:
        """Physical (encoded) bytes of a section, zero-copy."""
        if isinstance(entry, int):
            found = self.entry(entry)
            if found is None:
                from ..errors import SectionNotFound
                raise SectionNotFound(entry)
            entry = found
        return self.buf[entry.offset:entry.offset + entry.size]

    def decoded(self, section_id: int) -> bytes | memoryview:
        """Wire-decoded bytes of the first ``section_id`` entry (0x02 dictionary/dedup aware)."""
        if section_id in self._decoded:
            return self._decoded[section_id]
        entry = self.entry(section_id)
        if entry is None:
            from ..errors import SectionNotFound
            raise SectionNotFound(section_id)
        payload = self.payload(entry)
        out: bytes | memoryview
        if section_id == SECTION_CHUNKS_CANONICAL:
            out = b"".join(self._canonical_pieces()[1])
        elif entry.encoding in VECTOR_ENCODINGS:
            out = payload  # identity encodings: no copy (0x04 can be large)
        else:
            out = encodings.decode_section(section_id, entry.encoding, payload)
        self._decoded[section_id] = out
        return out

    def spans(self, expected: int) -> list[tuple[str, int, int]]:
        """Decode 0x03 to (source_uri, byte_start, byte_end) with ``expected`` records.

        A spans repack (encoding 4, kind 1) is read from its columns and its count compared
        before any raw form is rebuilt: a few KB of columns may claim a huge expansion. The
        outcome (spans, or the first error) is the one the raw path gives.
        """
        from .encodings.repack import spans_columns, spans_from_columns
        from .sections.canonical import decode_spans

        entry = self.entry(SECTION_CHUNKS_ORIGINAL_SPANS)
        payload = self.payload(entry) if entry is not None else b""
        if (entry is None or entry.encoding != 4 or SECTION_CHUNKS_ORIGINAL_SPANS in self._decoded
                or len(payload) == 0 or payload[0] != 1):
            return decode_spans(self.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), expected)
        try:
            count, pool, idx, starts, lens = spans_columns(payload[1:])
        except MalformedSectionPayload as exc:
            raise exc.retag(SECTION_CHUNKS_ORIGINAL_SPANS) from None
        if count != expected:
            raise SectionCountMismatch(SECTION_CHUNKS_ORIGINAL_SPANS, expected, count)
        return spans_from_columns(pool, idx, starts, lens)

    def file_hash(self) -> str:
        """``sha256:`` of the whole file: the footer check's body digest, extended by the footer."""
        if self._body_hash is None:
            return _file_hash(self.buf)
        h = self._body_hash.copy()
        h.update(self.buf[len(self.buf) - URNA_FOOTER_SIZE:])
        return "sha256:" + h.hexdigest()

    def content_hash(self) -> str:
        """``sha256:`` hash of the six decoded canonical sections."""
        if self._content_hash is None:
            self._content_hash = _content_hash(self._hash_input)
        return self._content_hash

    def _hash_input(self, section_id: int) -> bytes | memoryview | tuple[int, Iterable[bytes]]:
        # 0x02 is hashed piece by piece: a dedup expansion may be far larger than the file (a
        # hostile map can point every chunk at one pool text), so it is never held whole here.
        if section_id == SECTION_CHUNKS_CANONICAL and section_id not in self._decoded:
            return self._canonical_pieces()
        return self.decoded(section_id)

    def _canonical_pieces(self) -> tuple[int, Iterable[bytes]]:
        entry = self.entry(SECTION_CHUNKS_CANONICAL)
        assert entry is not None  # a required section, present since step 15
        dictionary = self.entry(SECTION_DICTIONARY)
        dedup = self.entry(SECTION_DEDUP_MAP)
        return encodings.chunks_canonical_pieces(
            entry.encoding, self.payload(entry),
            bytes(self.payload(dictionary)) if dictionary is not None else None,
            bytes(self.payload(dedup)) if dedup is not None else None)

    @property
    def magic(self) -> str:
        """``URNA`` or, for 0.4.0 files, ``NEST``."""
        return self.header.magic.decode("ascii")

    @property
    def is_legacy(self) -> bool:
        """True for a file written by 0.4.0 (magic NEST)."""
        return self.header.magic == LEGACY_MAGIC

    def release(self) -> None:
        """Drop cached views so an underlying mmap can be closed."""
        self._decoded.clear()
        self.buf.release()
