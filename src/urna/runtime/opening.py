"""The runtime open steps over a mapped file (03-runtime §1.1, §11.3-11.4, §12.4).

``open_state(buf)`` runs, in the reference's order and failing on the first error: the format
reader (19 checks), the 0x04 value walk, the dtype, the optional 0x09 rerank slab, 0x01 and
0x03 with the header's ``n_embeddings`` as the expected count, HNSW (iff a 0x07 entry),
BM25 (iff a 0x08 entry), the graph (iff ``graph_present`` and 0x0C), blobs (iff
``blobs_present``; the 0x16 overlay replaces spans), spaces (iff ``supports_multimodal`` and
0x15), then ``file_hash`` and ``content_hash``. Everything is decoded eagerly, so a file that
opens never fails later except in ``blob_bytes``. Vector slabs are numpy views on ``buf``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..errors import MalformedSectionPayload, SectionNotFound, UnsupportedDType, UrnaError
from ..format import encodings
from ..format.ahead import Job, Lane, start_quietly
from ..format.encodings.repack import BlockSpans, ColumnSpans, digest_ids
from ..format.layout import (
    ENCODING_INTPACK,
    SECTION_BLOB_DATA,
    SECTION_BLOB_REFS,
    SECTION_BLOB_SPAN_OVERLAY,
    SECTION_BM25_INDEX,
    SECTION_CHUNK_IDS,
    SECTION_CHUNKS_CANONICAL,
    SECTION_CHUNKS_ORIGINAL_SPANS,
    SECTION_EMBEDDINGS,
    SECTION_EMBEDDINGS_FP,
    SECTION_GRAPH_ADJACENCY,
    SECTION_HNSW_INDEX,
    SECTION_METADATA,
    SECTION_SPACE_EMBEDDINGS_BASE,
    SECTION_SPACE_TABLE,
)
from ..format.reader import SPACE_DTYPES, UrnaView
from ..format.record import Record
from ..format.sections.canonical import SpanRecords, StringRecords, decode_chunk_ids
from ..index.exact import Slab
from .lazy_tables import (
    LazyChunkIds,
    LazySpans,
    WalkedSpans,
    WalkedTexts,
    lazy_chunk_ids,
    lazy_spans,
    lazy_texts,
)
from .verdicts import CITE_RECORDS, TEXT_RECORDS, Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

DTYPES = ("float32", "float16", "int8", "int4")
_WHOLE = 1 << 62  # more bytes than any section decodes to: ``Prefix.extend`` decodes it all
BLOB_REF_NONE = 0xFFFFFFFF


# Records, not dataclasses: every search and question opens a file through this module, and
# the three generated classes cost ~2 ms of a one-shot verb (format/record.py says why).
class OpenSpace(Record):
    """One opened space: its table entry and its band as a slab."""

    _fields = ("entry", "slab", "dtype")

    def __init__(self, entry: Any, slab: Slab, dtype: str) -> None:
        self.entry = entry  # format.sections.space_table.SpaceEntry
        self.slab = slab
        self.dtype = dtype


class BlobData(Record):
    """The opened 0x17 table: per-record (offset, len) and the absolute first data byte."""

    _fields = ("entries", "abs_data_start")

    def __init__(self, entries: list[tuple[int, int]], abs_data_start: int) -> None:
        self.entries = entries
        self.abs_data_start = abs_data_start


class OpenedFile(Record):
    """Everything the searches need, decoded once at open."""

    _fields = ("view", "dim", "n", "dtype", "stored", "scoring", "scoring_dtype", "chunk_ids",
               "spans", "hnsw_index", "bm25_index", "graph", "blob_refs", "blob_data", "spaces",
               "embedding_model", "model_hash", "index_type", "score_type", "file_hash",
               "content_hash", "texts_proven", "on_texts_proven")

    def __init__(self, view: UrnaView, dim: int, n: int, dtype: str, stored: Slab,
                 scoring: Slab, scoring_dtype: str, chunk_ids: Sequence[str], spans: Any,
                 hnsw_index: Any | None, bm25_index: Any | None, graph: Any | None,
                 blob_refs: list | None, blob_data: BlobData | None,
                 spaces: list[OpenSpace] | None, embedding_model: str, model_hash: str,
                 index_type: str, score_type: str, file_hash: str, content_hash: str,
                 texts_proven: bool = False,
                 on_texts_proven: Callable[[], None] | None = None) -> None:
        self.view = view
        self.dim = dim
        self.n = n
        self.dtype = dtype
        self.stored = stored  # 0x04: the HNSW beam walks it
        self.scoring = scoring  # 0x09 when present, else 0x04: every score comes from here
        self.scoring_dtype = scoring_dtype
        self.chunk_ids = chunk_ids  # lazy_tables.LazyChunkIds or a list
        self.spans = spans  # lazy_tables.LazySpans or a list of (uri, start, end)
        self.hnsw_index = hnsw_index  # the decoded 0x07, or a Deferred one (a verified body)
        self.bm25_index = bm25_index  # the opened 0x08, or a Deferred one
        self.graph = graph
        self.blob_refs = blob_refs
        self.blob_data = blob_data
        self.spaces = spaces
        self.embedding_model = embedding_model
        self.model_hash = model_hash
        self.index_type = index_type
        self.score_type = score_type
        self.file_hash = file_hash
        self.content_hash = content_hash
        # A verdict of these very bytes says 0x02 parsed as records before (``verdicts``'
        # TEXT_RECORDS or CITE_RECORDS): its bodies' UTF-8 is not walked again.
        self.texts_proven = texts_proven
        # Called once 0x02 is proven here without that verdict, to keep it (set by UrnaFile).
        self.on_texts_proven = on_texts_proven

    @property
    def hnsw(self) -> Any | None:
        """The HNSW graph (0x07), None without one; a deferred decode runs on first use."""
        index = self.hnsw_index
        if isinstance(index, Deferred):
            index = self.hnsw_index = index.load()
        return index

    @property
    def bm25(self) -> Any | None:
        """The BM25 index (0x08), None without one; a deferred decode runs on first use."""
        index = self.bm25_index
        if isinstance(index, Deferred):
            index = self.bm25_index = index.load()
        return index

    @cached_property
    def metadata(self) -> Any | None:
        """Section 0x18 (a ``MetadataTable``) decoded on first use; None without one.

        Lazy so that opening, and every search without ``where=``, never pays for it; a
        malformed 0x18 raises its typed error at that first use.
        """
        if self.view.entry(SECTION_METADATA) is None:  # no import for a file without one
            return None
        from ..format.sections.metadata import read_metadata

        return read_metadata(self.view)

    @cached_property
    def hit_metadata(self) -> Any | None:
        """Section 0x18 as the hits of a search without ``where=`` carry it: None without one,
        and None when it does not decode.

        The reference ignores 0x18, so a broken one must not fail a search that does not ask
        for it; ``where=`` and ``metadata(i)`` still read ``metadata`` and raise its error.
        """
        if self.view.entry(SECTION_METADATA) is None:
            return None
        try:
            return self.metadata
        except UrnaError:
            return None

    @cached_property
    def texts(self) -> Sequence[str]:
        """The canonical texts (0x02), each decoded when read when the payload is proven well
        formed (``lazy_tables.lazy_texts``), else decoded whole (raising the decoder's error).

        A verdict that proved these records (``texts_proven``) leaves the proof out: the
        records are walked only as far as the rows read (``lazy_tables.WalkedTexts``).
        """
        view, n = self.view, self.view.header.n_chunks
        if self.texts_proven:
            # Decoded here, on the caller's worker: a zstd 0x02 straight into one buffer
            # (``UrnaView.decoded_prefix``), not decoded and then copied into bytes.
            source = view.decoded_prefix(SECTION_CHUNKS_CANONICAL)
            source.extend(_WHOLE)
            digest = view.body_digest()
            return WalkedTexts(lambda: source, n,
                               lambda: view.decoded(SECTION_CHUNKS_CANONICAL),
                               None if digest is None else (digest, SECTION_CHUNKS_CANONICAL))
        raw = view.decoded(SECTION_CHUNKS_CANONICAL)  # here: on the caller's worker
        lazy = lazy_texts(raw, n)
        if lazy is not None:
            if self.on_texts_proven is not None:
                self.on_texts_proven()
            return lazy
        from ..format.sections.canonical import decode_texts

        return decode_texts(raw, n)


class Deferred:
    """An index decode proven to succeed (its bytes were decoded whole when verified), run on
    first use: a verb that never searches it never pays for it. Two threads racing decode it
    twice into equal objects; either is kept."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self.load = load


def preload_bm25(st: OpenedFile) -> Job | None:
    """Start decoding a deferred 0x08 on a worker (``format.ahead.start_quietly``: the search's
    own read of ``st.bm25`` raises its errors); None when it is decoded (or absent). Wait for
    the job before the file may close."""
    return start_quietly(lambda: st.bm25) if isinstance(st.bm25_index, Deferred) else None


def _decode_hnsw(view: UrnaView, n: int, verified: bool = False) -> Any:
    """0x07 decoded; ``verified`` (it decoded whole before): its neighbour ids on use."""
    from ..format.sections.hnsw import decode_hnsw

    return decode_hnsw(view.decoded(SECTION_HNSW_INDEX), n, defer_ids=verified)


def _decode_bm25(view: UrnaView) -> Any:
    from ..index.bm25 import Bm25Index

    return Bm25Index.from_bytes(view.decoded(SECTION_BM25_INDEX))


def _load_verified_bm25(view: UrnaView) -> Any:
    """A verified body's 0x08 (it decoded whole before): each term's postings decoded when a
    query first reads them (``index.bm25_lazy``), else eagerly."""
    from ..index.bm25_lazy import lazy_index

    raw = view.decoded(SECTION_BM25_INDEX)
    lazy = lazy_index(raw)
    return lazy if lazy is not None else _decode_bm25(view)


def _flag(view: UrnaView, name: str) -> bool:
    ext = view.manifest.capabilities_ext
    return bool(ext is not None and getattr(ext, name, None) is True)


def slab_from_payload(dtype: str, payload: memoryview, n: int, dim: int) -> Slab:
    """A zero-copy slab over a fixed-stride vector payload (layouts of §2.1)."""
    if dtype == "float32":
        arr = np.frombuffer(payload, dtype="<f4", count=n * dim).reshape(n, dim)
        return Slab.float32(arr)
    if dtype == "float16":
        return Slab.float16(encodings.f16_view(payload, n, dim))
    if dtype == "int8":
        scales, codes = encodings.int8_view(payload, n, dim)
        return Slab.int8(scales, codes)
    if dtype == "int4":
        scales, packed = encodings.int4_view(payload, n, dim)
        return Slab.int4(scales, packed, dim)
    raise UnsupportedDType(dtype)


def _fp_slab(view: UrnaView, n: int, dim: int) -> tuple[Slab, str] | None:
    """Step 6: the optional full-precision rerank slab 0x09, dtype read from its stride."""
    entry = view.entry(SECTION_EMBEDDINGS_FP)
    if entry is None:
        return None
    nd = n * dim
    stride = entry.size // nd if nd > 0 else None
    dtype = {4: "float32", 2: "float16"}.get(stride) if stride is not None else None
    if dtype is None:
        raise MalformedSectionPayload(
            SECTION_EMBEDDINGS_FP, f"fp slab {entry.size} bytes is not f32/f16 for n={n} dim={dim}")
    payload = view.payload(entry)
    encodings.validate_embedding_values(SECTION_EMBEDDINGS_FP, entry.encoding, payload, n, dim)
    width = 4 if dtype == "float32" else 2
    raw = payload[:nd * width]
    arr = np.frombuffer(raw, dtype="<f4" if dtype == "float32" else "<f2").reshape(n, dim)
    return (Slab.float32(arr) if dtype == "float32" else Slab.float16(arr)), dtype


def _chunk_ids(view: UrnaView, n: int, proven: StringRecords | None = None,
               verified: bool = False) -> Sequence[str]:
    """Step 7: 0x01, decoded on use when provably well formed, else eagerly (its error).

    ``proven``: the records a parse of this view's 0x01 with ``n`` records passed (``urna
    validate``'s step before the open's): that proof is not made again. ``verified``: these
    bytes decoded whole before, so a repacked 0x01 is read from its digests (an id is hexed
    when read, not all 18,000 at open)."""
    if proven is not None:
        return LazyChunkIds(proven)
    entry = view.entry(SECTION_CHUNK_IDS)
    if verified and entry is not None and entry.encoding == ENCODING_INTPACK:
        digests = digest_ids(view.payload(entry))
        if digests is not None and len(digests) == n:
            return LazyChunkIds(digests)
    raw = view.decoded(SECTION_CHUNK_IDS)
    lazy = lazy_chunk_ids(raw, n)
    return lazy if lazy is not None else decode_chunk_ids(raw, n)


def _spans(view: UrnaView, n: int, proven: SpanRecords | ColumnSpans | None = None) -> Any:
    """Step 8: 0x03 as a fresh sequence (the blob overlay may replace entries); ``proven`` as
    for ``_chunk_ids``."""
    entry = view.entry(SECTION_CHUNKS_ORIGINAL_SPANS)
    if entry is not None and entry.encoding != ENCODING_INTPACK and view.trusted:  # whole before
        # a zstd 0x03 decoded only as far as the rows read
        digest = view.body_digest()
        return WalkedSpans(lambda: view.decoded_prefix(SECTION_CHUNKS_ORIGINAL_SPANS), n,
                           lambda: view.decoded(SECTION_CHUNKS_ORIGINAL_SPANS),
                           None if digest is None else (digest, SECTION_CHUNKS_ORIGINAL_SPANS))
    if proven is not None:  # the records validate proved (a repack's: its checked columns)
        return LazySpans(proven)
    if entry is not None and entry.encoding == ENCODING_INTPACK and view.trusted:
        # a repack decoded whole before: each record read when asked
        blocks = BlockSpans.of(view.payload(entry))
        if blocks is not None and len(blocks) == n:
            return LazySpans(blocks)
    if entry is not None and entry.encoding != ENCODING_INTPACK:  # a repack: view.spans below
        lazy = lazy_spans(view.decoded(SECTION_CHUNKS_ORIGINAL_SPANS), n)
        if lazy is not None:
            return lazy
    spans = view.spans(n)
    return spans if isinstance(spans, list) else LazySpans(spans)  # a repack's columns


def _open_blobs(view: UrnaView, spans: list[tuple[str, int, int]]):
    """Step 12: blob refs, the span overlay (in place) and the 0x17 table."""
    if not _flag(view, "blobs_present"):
        return None, None
    from ..format.sections.blobs import decode_blob_data, decode_blob_refs, decode_overlay

    refs = None
    if view.entry(SECTION_BLOB_REFS) is not None:
        refs = decode_blob_refs(view.decoded(SECTION_BLOB_REFS))
    if view.entry(SECTION_BLOB_SPAN_OVERLAY) is not None:
        overlay = decode_overlay(view.decoded(SECTION_BLOB_SPAN_OVERLAY))
        for i, (idx, start, end) in enumerate(overlay[:len(spans)]):
            if idx == BLOB_REF_NONE:
                continue
            if refs is None or idx >= len(refs):
                raise MalformedSectionPayload(
                    SECTION_BLOB_SPAN_OVERLAY,
                    f"overlay entry {i} references missing blob_ref {idx}")
            spans[i] = (refs[idx].original_uri, start, end)
    data = None
    entry = view.entry(SECTION_BLOB_DATA)
    if refs is not None and entry is not None:
        if entry.encoding != 0:
            raise MalformedSectionPayload(
                SECTION_BLOB_DATA, f"blob_data must be raw, found encoding {entry.encoding}")
        table, data_start = decode_blob_data(view.payload(entry))
        if len(table) != len(refs):
            raise MalformedSectionPayload(
                SECTION_BLOB_DATA,
                f"blob_data has {len(table)} entries but blob_refs has {len(refs)} records")
        data = BlobData(table, entry.offset + data_start)
    return refs, data


def _open_spaces(view: UrnaView) -> list[OpenSpace] | None:
    """Step 13: the space table and each listed band, value-walked."""
    if not _flag(view, "supports_multimodal") or view.entry(SECTION_SPACE_TABLE) is None:
        return None
    out = []
    for space in view.space_entries():
        band_id = SECTION_SPACE_EMBEDDINGS_BASE + space.space_index
        band = view.entry(band_id)
        if band is None:
            raise SectionNotFound(band_id)
        payload = view.payload(band)
        # The NaN walk follows the band's wire encoding, scoring its dtype code (§11.3). A
        # band's int8 / int4 parse failures name section 0x04, as the reference's do.
        encodings.validate_embedding_values(band_id, band.encoding, payload, space.n_vectors,
                                            space.dim, errors_as=SECTION_EMBEDDINGS)
        dtype = SPACE_DTYPES.get(space.dtype_code)
        if dtype is None:
            raise UnsupportedDType(str(space.dtype_code))
        out.append(OpenSpace(space, slab_from_payload(dtype, payload, space.n_vectors, space.dim),
                             dtype))
    return out


def open_state(buf: bytes | bytearray | memoryview, verdict: Verdict | None = None) -> OpenedFile:
    """Validate and decode a mapped file; raises the reference's typed error on failure.

    ``verdict``: what a full open of this path found before (``runtime.verdicts``). When the
    body digest shows the same bytes, the passes it settled (checksums, NaN walk, content
    hash) are not repeated and the indexes decode on first use; otherwise all steps run.
    """
    with Lane() as lane:
        # The body digest, the section checksums and (when it reads only file bytes) the
        # content hash start at once on workers inside from_bytes; then the NaN walk of 0x04,
        # while this thread decodes the tables. Each is claimed in the reference's order, so a
        # file fails with its first error; leaving the lane waits for every pass.
        view = UrnaView.from_bytes(buf, trusted_body=None if verdict is None
                                   else verdict.body_digest, lane=lane)
        if view.trusted:
            assert verdict is not None  # trusted only against a verdict's digest
            state = open_steps(view, deferred=True)
            view.adopt_content_hash(verdict.content_hash)
            state.file_hash = view.file_hash()
            state.content_hash = verdict.content_hash
            state.texts_proven = not verdict.checks.isdisjoint((TEXT_RECORDS, CITE_RECORDS))
            return state
        vectors = view.check_embeddings_layout().size  # the first 0x04 entry (checked at parse)
        finite = lane.start(vectors, view.validate_embeddings_values)
        # The content hash decodes 0x02 (zstd) and rebuilds 0x01 / 0x03 beside the index
        # decodes below; it is claimed after them, as it was computed before.
        view.start_content_hash(lane)
        try:
            state = open_steps(view)
        except BaseException:
            finite.result()
            raise
        finite.result()
        state.file_hash = view.file_hash()
        state.content_hash = view.content_hash()  # the pass started ahead, else in order
    return state


def open_steps(view: UrnaView, deferred: bool = False, *,
               proven_ids: StringRecords | None = None,
               proven_spans: SpanRecords | ColumnSpans | None = None) -> OpenedFile:
    """The open's steps 5-13 after the NaN walk, on a checked view: dtype, slabs, tables and
    the optional indexes (``urna validate`` runs them too, in this order).

    ``deferred``: the body was verified whole before, so HNSW and BM25 decode on first use.
    ``proven_ids`` / ``proven_spans``: the 0x01 / 0x03 records that ``urna validate``'s own
    parses of this view proved, with ``n_embeddings`` records each (``format.verify.Checking``):
    the open's parse of that section would pass with the same records, so it is not run.
    """
    dim, n = view.header.embedding_dim, view.header.n_embeddings
    m = view.manifest
    if m.dtype not in DTYPES:
        raise UnsupportedDType(m.dtype)
    stored = slab_from_payload(m.dtype, view.payload(SECTION_EMBEDDINGS), n, dim)
    fp = _fp_slab(view, n, dim)
    scoring, scoring_dtype = fp if fp is not None else (stored, m.dtype)
    chunk_ids = _chunk_ids(view, n, proven_ids, verified=deferred)
    spans = _spans(view, n, proven_spans)
    hnsw: Any = None
    bm25: Any = None
    graph = None
    if view.entry(SECTION_HNSW_INDEX) is not None:
        hnsw = (Deferred(lambda: _decode_hnsw(view, n, verified=True)) if deferred
                else _decode_hnsw(view, n))
    if view.entry(SECTION_BM25_INDEX) is not None:
        bm25 = Deferred(lambda: _load_verified_bm25(view)) if deferred else _decode_bm25(view)
    if _flag(view, "graph_present") and view.entry(SECTION_GRAPH_ADJACENCY) is not None:
        from ..format.sections.graph import decode_graph
        graph = decode_graph(view.decoded(SECTION_GRAPH_ADJACENCY), n)
    blob_refs, blob_data = _open_blobs(view, spans)
    spaces = _open_spaces(view)
    return OpenedFile(view, dim, n, m.dtype, stored, scoring, scoring_dtype, chunk_ids, spans,
                      hnsw, bm25, graph, blob_refs, blob_data, spaces, m.embedding_model,
                      m.model_hash, m.index_type, m.score_type, "", "")
