"""UrnaView: the format reader over a bytes-like object (01-container §10).

``UrnaView.from_bytes`` runs the reference's 19 checks in the reference's order and stops at
the first failure (``CheckSteps`` yields them one ``CheckStep`` at a time, for a UI); each
table entry is fully checked (encoding class, alignment, bounds, checksum) before the next
one. It does no I/O: it takes bytes, a memoryview or an mmap.
What it deliberately does not enforce (§10.4): an allow-list of section ids, unique ids,
a sorted table, non-overlapping sections, flags/reserved/footer_size, n_embeddings vs
n_chunks, and the contents of 0x01..0x05 (decoded on demand).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable, Iterator

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
    UrnaError,
)
from . import encodings
from .ahead import Job, Lane
from .body_digest import claim_body_digest
from .dtypes import DTYPE_ENCODINGS, SPACE_DTYPES
from .hashing import sha256_state
from .identity import content_hash as _content_hash
from .identity import file_hash as _file_hash
from .layout import (
    CANONICAL_SECTIONS,
    ENCODING_INTPACK,
    ENCODING_RAW,
    ENCODING_ZSTD,
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
from .record import FrozenRecord
from .sections.canonical import CONTRACT_KEYS, decode_contract

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .encodings.repack import ColumnSpans
    from .sections.canonical import Prefix, SpanRecords

_CONTRACT_ERRORS = {
    "metric": UnsupportedMetric, "score_type": UnsupportedScoreType,
    "normalize": UnsupportedNormalize, "index_type": UnsupportedIndexType,
    "rerank_policy": UnsupportedRerankPolicy,
}


def checked_size(dtype: str, n: int, dim: int) -> int | None:
    """Expected slab size with the reference's 64-bit overflow rule (None = unknown)."""
    size = encodings.expected_embeddings_size(dtype, n, dim)
    if size is None or size > U64_MAX or n * dim > U64_MAX:
        return None
    return size


def _byte_view(data: bytes | bytearray | memoryview) -> memoryview:
    buf = memoryview(data)
    if buf.format != "B" or buf.ndim != 1:
        buf = buf.cast("B")
    return buf


class CheckStep(FrozenRecord):
    """One check of the open (01-container §10.1): its step number, name, and outcome.

    ``error`` is None when it passed, else the exact error ``UrnaView.from_bytes`` raises
    for the file. The section steps carry the entry's id and ``nbytes`` (its payload size);
    the file-length and footer-hash steps carry the bytes they covered.
    """

    __slots__ = _fields = ("step", "check", "error", "section_id", "nbytes", "note")
    step: str
    check: str
    error: UrnaError | None
    section_id: int | None
    nbytes: int
    note: str

    def __init__(self, step: str, check: str, error: UrnaError | None = None,
                 section_id: int | None = None, nbytes: int = 0, note: str = "") -> None:
        self._set(step, check, error, section_id, nbytes, note)

    @property
    def ok(self) -> bool:
        """Whether this check passed."""
        return self.error is None

    @property
    def name(self) -> str:
        """The check's label, with the section id for the per-section steps."""
        if self.section_id is None:
            return self.check
        return f"{self.check} 0x{self.section_id:02x}"


# The passed form of each step that carries no count (steps are immutable: shared, not rebuilt).
_PASSED = {number: CheckStep(number, check) for number, check in (
    ("2", "magic"), ("3", "version"), ("4", "header checksum"), ("5", "file size"),
    ("12", "manifest JSON"), ("13", "manifest fields"), ("15", "manifest agrees with header"),
    ("16", "required sections"), ("17", "embeddings layout"), ("18", "space bands"),
    ("19", "contract agrees with manifest"))}


class CheckSteps:
    """The open checks as an iterator of ``CheckStep``, stopping after the first failure.

    The section checksums and the footer digest start at once on worker threads (as in the
    open); each checksum step is yielded when its own digest is in, so a large file reports
    progress section by section. ``planned`` (the step count when all pass) and
    ``checksum_bytes`` are known once the section table's bounds step has passed; ``view`` is
    the opened ``UrnaView`` once the last step has passed. Run the iterator out, or close it,
    before releasing ``data``: closing waits for the digests still running.

    ``lane``: the caller's lane (``format.ahead``), which then waits for the digests instead;
    the content hash also starts with them when it reads only bytes of the file (see
    ``_start_content_hash``), claimed later by ``view.content_hash()``.
    """

    def __init__(self, data: bytes | bytearray | memoryview, *,
                 trusted_body: bytes | None = None, lane: Lane | None = None) -> None:
        self.buf = _byte_view(data)
        self.planned: int | None = None
        self.checksum_bytes: int | None = None
        self.view: UrnaView | None = None
        self.trusted_body = trusted_body
        self.lane = lane

    def __iter__(self) -> Generator[CheckStep, None, None]:
        return self._run()

    def _run(self) -> Generator[CheckStep, None, None]:
        buf = self.buf
        length = len(buf)
        if length < URNA_HEADER_SIZE + URNA_FOOTER_SIZE:
            yield CheckStep("1", "file length", FileTruncated(), nbytes=length)
            return
        yield CheckStep("1", "file length", nbytes=length)
        header = Header.unpack(buf)
        for step in _header_steps(buf, header, length):
            yield step
            if step.error is not None:
                return
        body_end = length - URNA_FOOTER_SIZE
        # The CLI's head start (format.body_digest) may be hashing this very body already.
        ahead = claim_body_digest(buf)
        trusted = False
        if self.trusted_body is not None:
            # A body once verified whole (runtime.verdicts): its digest, one pass, decides
            # whether these are the same bytes; if so every checksum is known to hold.
            if ahead is not None:
                known = ahead.result()
            else:
                with buf[:body_end] as body:
                    known = sha256_state(body)
            trusted = known.digest() == self.trusted_body
        content_job: Job | None = None
        with Lane() if self.lane is None else self.lane.borrowed() as lane:
            # The body digest and each section checksum are independent passes over the same
            # bytes: they start at once on worker threads and are claimed in the check order.
            if self.trusted_body is not None:
                body_job = Job(value=known)
            elif ahead is not None:
                body_job = lane.adopt(ahead)
            else:
                body_job = lane.start_over(sha256_state, buf, 0, body_end)
            sums, bad_entry = _start_checksums(buf, header, body_end, lane, trusted)
            if self.lane is not None and not trusted and bad_entry is None:
                content_job = _start_content_hash(buf, [entry for entry, _ in sums], lane)
            self.planned = 15 + 2 * len(sums)
            self.checksum_bytes = sum(entry.size for entry, _ in sums)
            entries: list[SectionEntry] = []
            for entry, job in sums:  # entry i's checksum is judged before entry i+1's bounds
                yield CheckStep("7-9", "section entry", None, entry.section_id, entry.size)
                error = (None if job.result() == entry.checksum
                         else SectionChecksumMismatch(entry.section_id))
                yield CheckStep("10", "section checksum", error, entry.section_id, entry.size)
                if error is not None:
                    return
                entries.append(entry)
            if bad_entry is not None:
                yield bad_entry
                return
            m_off, m_size = header.manifest_offset, header.manifest_size
            if m_off + m_size > U64_MAX or m_off + m_size > body_end:
                yield CheckStep("11", "manifest bounds", FileTruncated(), nbytes=m_size)
                return
            yield CheckStep("11", "manifest bounds", nbytes=m_size)
            manifest_bytes = bytes(buf[m_off:m_off + m_size])
            try:
                manifest = Manifest.from_json_bytes(manifest_bytes)
            except UrnaError as exc:
                yield CheckStep("12", "manifest JSON", detached(exc))
                return
            yield _PASSED["12"]
            try:
                manifest.validate()
            except UrnaError as exc:
                yield CheckStep("13", "manifest fields", detached(exc))
                return
            yield _PASSED["13"]
            footer = Footer.unpack(buf, body_end)
            body_hash = body_job.result()
        if body_hash.digest() != footer.file_hash:
            yield CheckStep("14", "footer hash", FooterHashMismatch(), nbytes=body_end)
            return
        yield CheckStep("14", "footer hash", nbytes=body_end)
        if manifest.embedding_dim != header.embedding_dim:
            yield CheckStep("15", "manifest agrees with header",
                            ManifestInvalid("manifest embedding_dim disagrees with header"))
            return
        if manifest.n_chunks != header.n_chunks:
            yield CheckStep("15", "manifest agrees with header",
                            ManifestInvalid("manifest n_chunks disagrees with header"))
            return
        yield _PASSED["15"]
        view = UrnaView(buf, header, entries, manifest, manifest_bytes)
        view._body_hash = body_hash
        view._content_job = content_job
        view.trusted = trusted
        for section_id, name in CANONICAL_SECTIONS:
            if view.entry(section_id) is None:
                yield CheckStep("16", "required sections", MissingRequiredSection(name))
                return
        yield _PASSED["16"]
        for step in _semantic_steps(view):
            yield step
            if step.error is not None:
                return
        self.view = view


def detached(exc: UrnaError) -> UrnaError:
    """``exc`` with no traceback on it or on the errors it chains to: a kept error (a check's
    step, a validate row) must not keep the check's frames alive.

    Those frames hold memoryviews of the file and arrays over them, and a frame's ``f_back``
    leads to the one holding the error; kept in a reference cycle, the collector may clear a
    memoryview that still exports a buffer, which crashes CPython.
    """
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:  # a chain may loop
        visited.add(id(seen))
        seen.with_traceback(None)
        seen = seen.__cause__ or seen.__context__
    return exc


def _first_failure(steps: CheckSteps) -> UrnaError | None:
    """The first failed step's error, or None; the digests still running are waited for."""
    run = iter(steps)
    try:
        for step in run:
            if step.error is not None:
                return step.error
    finally:
        run.close()
    return None


def _header_steps(buf: memoryview, header: Header, length: int) -> Iterator[CheckStep]:
    """Steps 2-6b, each yielded; the caller stops at the first failure."""
    yield (_PASSED["2"] if header.magic in (URNA_MAGIC, LEGACY_MAGIC)
           else CheckStep("2", "magic", MagicMismatch(URNA_MAGIC, header.magic)))
    version_ok = (header.version_major == URNA_VERSION_MAJOR
                  and header.version_minor <= URNA_VERSION_MINOR)
    yield (_PASSED["3"] if version_ok else CheckStep(
        "3", "version", UnsupportedVersion(header.version_major, header.version_minor)))
    yield (_PASSED["4"] if header_checksum(buf[:URNA_HEADER_SIZE]) == header.header_checksum
           else CheckStep("4", "header checksum", InvalidHeaderChecksum()))
    yield (_PASSED["5"] if header.file_size == length
           else CheckStep("5", "file size", FileSizeMismatch(header.file_size, length)))
    table_offset = header.section_table_offset
    table_len = header.section_table_count * URNA_SECTION_ENTRY_SIZE
    error: UrnaError | None = None
    if table_len > U64_MAX or table_offset + table_len > U64_MAX:
        error = SectionOffsetOutOfBounds(0, 0)
    elif table_offset + table_len > length - URNA_FOOTER_SIZE:
        error = FileTruncated()
    yield CheckStep("6", "section table bounds", error, nbytes=table_len)


def _start_checksums(buf: memoryview, header: Header, body_end: int, lane: Lane,
                     trusted: bool = False
                     ) -> tuple[list[tuple[SectionEntry, Job]], CheckStep | None]:
    """Steps 7-9 per entry in table order, starting each checksum; stops at a bad entry.

    ``trusted``: the body is a verified one (same digest), so each checksum is its own.
    """
    sums: list[tuple[SectionEntry, Job]] = []
    for i in range(header.section_table_count):
        entry = SectionEntry.unpack(buf, header.section_table_offset + i * URNA_SECTION_ENTRY_SIZE)
        try:
            UrnaView._check_entry_bounds(entry, body_end)
        except UrnaError as exc:
            bad = CheckStep("7-9", "section entry", detached(exc), entry.section_id, entry.size)
            return sums, bad
        sums.append((entry, Job(value=entry.checksum) if trusted
                     else lane.start_over(h8, buf, entry.offset, entry.offset + entry.size)))
    return sums, None


def _start_content_hash(buf: memoryview, entries: list[SectionEntry], lane: Lane) -> Job | None:
    """The content hash started beside the checksums, when it reads only bytes of the file:
    each canonical section's first entry raw (0x04 in its vector encoding), no dedup map.

    Otherwise it waits its turn: a compressed or repacked section may claim a huge expansion
    that a later check (a record count) refuses cheaply. Every entry's bounds passed step 9.
    """
    first: dict[int, SectionEntry] = {}
    for entry in entries:
        first.setdefault(entry.section_id, entry)
    if SECTION_DEDUP_MAP in first:
        return None
    bounds: list[tuple[int, int, int]] = []
    for section_id, _ in CANONICAL_SECTIONS:
        found = first.get(section_id)
        if found is None:
            return None
        raw = (found.encoding in VECTOR_ENCODINGS if section_id == SECTION_EMBEDDINGS
               else found.encoding == ENCODING_RAW)
        if not raw:
            return None
        bounds.append((section_id, found.offset, found.offset + found.size))
    return lane.start(sum(end - start for _, start, end in bounds), _content_hash_over, buf,
                      bounds)


def _content_hash_over(buf: memoryview, bounds: list[tuple[int, int, int]]) -> str:
    """``identity.content_hash`` of sections read in place at ``(id, start, end)``."""
    parts = {section_id: buf[start:end] for section_id, start, end in bounds}
    try:
        return _content_hash(parts.__getitem__)
    finally:  # released before the job reports: the map may close then
        for part in parts.values():
            part.release()


def _semantic_steps(view: UrnaView) -> Iterator[CheckStep]:
    """Steps 17-19 on the opened view; the caller stops at the first failure."""
    checks: list[tuple[str, str, Callable[[], object] | None]] = [
        ("17", "embeddings layout", view.check_embeddings_layout),
        ("18", "space bands",
         view.check_space_bands if view.entry(SECTION_SPACE_TABLE) is not None else None),
        ("19", "contract agrees with manifest", view.check_contract)]
    for number, name, check in checks:
        if check is None:
            yield CheckStep(number, name, note="no space table")
            continue
        if number == "19" and view.trusted:
            # These very bytes passed it in a full open: decoding the (zstd) contract again
            # would only load libzstd (~2 ms of a CLI call) to learn the same answer.
            yield CheckStep(number, name, note="settled by the kept verdict")
            continue
        try:
            check()
        except UrnaError as exc:
            yield CheckStep(number, name, detached(exc))
            return
        yield _PASSED[number]


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
        # one lock a section: a decode started on one thread (the content hash's) is waited
        # for, not repeated, by another (the open's steps)
        self._decoding: dict[int, threading.Lock] = {}
        self._content_hash: str | None = None
        self._body_hash = None  # SHA-256 state after the body, kept from the footer check
        self._content_job: Job | None = None  # the content hash started with the checksums
        self.trusted = False  # the body's digest is that of a body verified whole before

    # -- reading ---------------------------------------------------------------------------

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, *,
                   trusted_body: bytes | None = None, lane: Lane | None = None) -> UrnaView:
        """Parse and validate ``data`` (steps 1-19 of 01-container §10.1).

        ``trusted_body``: the SHA-256 of a body that passed every check before. The body
        digest is computed first; when it equals this one the section checksums are not
        recomputed (same bytes) and ``view.trusted`` is set; otherwise every check runs.
        ``lane``: as for ``CheckSteps`` (the caller's exit waits for the passes it started).
        """
        steps = CheckSteps(data, trusted_body=trusted_body, lane=lane)
        error = _first_failure(steps)
        if error is None:
            assert steps.view is not None  # every step passed
            return steps.view
        # No cycle error -> traceback -> this frame -> error / buffer: the collector may not
        # clear a memoryview that still exports (a cycle holding one can crash it).
        del steps
        try:
            raise error
        finally:
            del error

    @staticmethod
    def check_steps(data: bytes | bytearray | memoryview) -> CheckSteps:
        """The open checks one by one, in the reference's order (see ``CheckSteps``)."""
        return CheckSteps(data)

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
        with self._decoding.setdefault(section_id, threading.Lock()):
            if section_id in self._decoded:  # another thread's decode, over meanwhile
                return self._decoded[section_id]
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

    def decoded_prefix(self, section_id: int) -> Prefix:
        """The wire-decoded bytes of the first ``section_id`` entry as a ``canonical.Prefix``:
        on a trusted view (a body whose every section decoded whole before), a zstd section
        decodes only as far as its reader asks (``encodings.zstd.DecodedPrefix``); any other
        section, or a view not trusted, is decoded whole (``decoded``) first."""
        from .sections.canonical import WholePayload

        entry = self.entry(section_id)
        if (self.trusted and entry is not None and entry.encoding == ENCODING_ZSTD
                and section_id not in self._decoded
                and (section_id != SECTION_CHUNKS_CANONICAL
                     or self.entry(SECTION_DEDUP_MAP) is None)):
            from .encodings.zstd import DecodedPrefix

            return DecodedPrefix(self.payload(entry))
        return WholePayload(self.decoded(section_id))

    def _spans_repack_body(self) -> memoryview | None:
        """The body (after the kind byte) of a 0x03 stored as a spans repack (encoding 4, kind
        1) and not decoded yet; None for any other 0x03 (its raw form decides)."""
        from .encodings.repack import KIND_SPANS

        entry = self.entry(SECTION_CHUNKS_ORIGINAL_SPANS)
        if (entry is None or entry.encoding != ENCODING_INTPACK
                or SECTION_CHUNKS_ORIGINAL_SPANS in self._decoded):
            return None
        payload = self.payload(entry)
        return payload[1:] if len(payload) and payload[0] == KIND_SPANS else None

    def span_records(self, expected: int) -> SpanRecords | ColumnSpans:
        """0x03's records with ``canonical.span_records``' checks and outcome; a spans repack
        (encoding 4, kind 1) gives its checked columns (``ColumnSpans``), as ``spans`` does:
        its raw form, which may be far larger than the file, is never built."""
        from .sections.canonical import span_records

        if self._spans_repack_body() is not None:
            spans = self.spans(expected)
            assert not isinstance(spans, list)  # a repack body gives its columns
            return spans
        return span_records(self.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), expected)

    def spans(self, expected: int) -> list[tuple[str, int, int]] | ColumnSpans:
        """0x03's (source_uri, byte_start, byte_end) records, ``expected`` of them: a list, or
        for a spans repack (encoding 4, kind 1) its checked columns (``ColumnSpans``), each
        record built when read.

        A repack's count is compared before any raw form is rebuilt: a few KB of columns may
        claim a huge expansion. The outcome (spans, or the first error) is the raw path's.
        """
        from .encodings.repack import ColumnSpans, spans_columns
        from .sections.canonical import decode_spans

        body = self._spans_repack_body()
        if body is None:
            return decode_spans(self.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), expected)
        try:
            count, pool, idx, starts, lens = spans_columns(body)
        except MalformedSectionPayload as exc:
            raise exc.retag(SECTION_CHUNKS_ORIGINAL_SPANS) from None
        if count != expected:
            raise SectionCountMismatch(SECTION_CHUNKS_ORIGINAL_SPANS, expected, count)
        return ColumnSpans(pool, idx, starts, lens)

    def body_digest(self) -> bytes | None:
        """The footer check's SHA-256 of the body (None for a view not opened by the checks)."""
        return None if self._body_hash is None else self._body_hash.digest()

    def file_hash(self) -> str:
        """``sha256:`` of the whole file: the footer check's body digest, extended by the footer."""
        if self._body_hash is None:
            return _file_hash(self.buf)
        h = self._body_hash.copy()
        h.update(self.buf[len(self.buf) - URNA_FOOTER_SIZE:])
        return "sha256:" + h.hexdigest()

    def adopt_content_hash(self, value: str) -> None:
        """Take the content hash a full check of these same bytes computed (a trusted view)."""
        if not self.trusted:
            raise ValueError("only a trusted view takes a kept content hash")
        self._content_hash = value

    def content_hash(self, *, keep_texts: bool = False) -> str:
        """``sha256:`` hash of the six decoded canonical sections.

        ``keep_texts``: keep the decoded 0x02 for a read that follows (one decode, not two);
        a deduplicated 0x02 is hashed piece by piece all the same.
        """
        if self._content_hash is None and self._content_job is not None:
            job, self._content_job = self._content_job, None
            self._content_hash = job.result()
        if self._content_hash is None:
            self._content_hash = self._computed_content_hash(keep_texts)
        return self._content_hash

    def start_content_hash(self, lane: Lane) -> None:
        """Start the content hash on ``lane`` now, for ``content_hash()`` to claim later: a
        full open that asks for it after its decodes has it computed beside them. Its error,
        if any, is raised by that claim, so the checks still fail in their order."""
        if self._content_hash is None and self._content_job is None:
            canonical = {section_id for section_id, _ in CANONICAL_SECTIONS}
            size = sum(e.size for e in self.entries if e.section_id in canonical)
            self._content_job = lane.start(size, self._computed_content_hash)

    def _computed_content_hash(self, keep_texts: bool = False) -> str:
        keep = keep_texts and self.entry(SECTION_DEDUP_MAP) is None
        return _content_hash(lambda sid: self._hash_input(sid, keep))

    def _hash_input(self, section_id: int, keep_texts: bool = False
                    ) -> bytes | memoryview | tuple[int, Iterable[bytes | memoryview]]:
        # 0x02 is hashed piece by piece: a dedup expansion may be far larger than the file (a
        # hostile map can point every chunk at one pool text), so it is never held whole here
        # unless asked for (and then only without a dedup map). Sections decode in hash order.
        # A spans repack is hashed as it is rebuilt, for the same reason: a legal one may name
        # one long URI in every record.
        if (section_id == SECTION_CHUNKS_CANONICAL and section_id not in self._decoded
                and not keep_texts):
            return self._canonical_pieces()
        if section_id == SECTION_CHUNKS_ORIGINAL_SPANS:
            body = self._spans_repack_body()
            if body is not None:
                from .encodings.repack import spans_raw_pieces

                try:
                    return spans_raw_pieces(body)
                except MalformedSectionPayload as exc:
                    raise exc.retag(section_id) from None
        return self.decoded(section_id)

    def _canonical_pieces(self) -> tuple[int, Iterable[bytes | memoryview]]:
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
