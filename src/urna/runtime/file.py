"""UrnaFile: a .urna file opened read-only through mmap (03-runtime §1, §13, §14).

Every search method returns one ``SearchResult`` (a list of hits plus how they were
found); ``retrieve`` returns the same envelope over RetrieveHits. ``open_file(path)`` maps
the file and runs every open step eagerly (``opening.open_state``), so a file that opens
answers every search. The object owns the map: ``close()`` (or leaving a
``with`` block) releases it; a search still running in another thread keeps its pages alive
until it returns. Searches only read shared state, so one UrnaFile serves many threads.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..argument_conversion import as_i32, as_str, as_u64, method_binding
from ..errors import BlobNotInlined, FileSizeMismatch, MalformedSectionPayload
from ..format.ahead import start_quietly
from ..format.citation import ResolvedCitation, locate_citation
from ..format.identity import format_citation
from ..format.layout import SECTION_BLOB_DATA, SECTION_CHUNKS_CANONICAL
from ..index import exact
from . import filtering as _f
from . import search as _s
from . import verdicts
from .hits import RetrieveHit, SearchHit, SearchResult
from .lazy_tables import TextsById
from .mapping import map_file
from .opening import OpenedFile, open_state
from .query import Vector, Vectors, as_f32, as_optional_str, as_path, prepare_batch
from .ranks import check_rank
from .routing import EXACT, choose_route

Where = Mapping[str, Any] | None


class BatchResult(Sequence):
    """Results of :meth:`UrnaFile.search_batch`: id/score arrays; one exact SearchResult per
    query, built on access."""

    def __init__(self, st: OpenedFile, ids: np.ndarray, scores: np.ndarray, k: int,
                 fm: _f.RowMask | None = None, ms: float = 0.0) -> None:
        self._st, self.ids, self.scores, self._k, self._fm = st, ids, scores, k, fm
        self._ms = ms  # the whole batch's time: every row's query_time_ms

    def __len__(self) -> int:
        return self.ids.shape[0]

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return _s.exact_result(self._st, self.ids[i], self.scores[i], self._k, self._ms,
                               self._fm)


class UrnaFile:
    """A validated, memory-mapped .urna file. Use :func:`open_file` (``urna.open``)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = as_path(path)
        self._mm, buf, stat_now = map_file(self.path)
        verdict = verdicts.lookup(self.path, stat_now)
        try:
            self._st: OpenedFile | None = open_state(buf, verdict)
        except BaseException:
            self._st = None
            self._release_map()
            raise
        if verdict is None:  # a full open: keep its verdict for the next open of this path
            verdict = verdicts.keep(self.path, stat_now, self._st.view, verdicts.OPEN_CHECKS)
        elif not self._st.view.trusted:
            verdict = None  # another body's: nothing of it holds for these bytes
        if verdict is not None:  # a proof of 0x02 here is kept with it
            proven = verdicts.Verdict(verdict.body_digest, verdict.content_hash,
                                      verdict.checks | {verdicts.TEXT_RECORDS})
            self._st.on_texts_proven = lambda: verdicts.remember(self.path, stat_now, proven)
            # so is the exact screen's row-norm bound, once a search has measured it
            self._st.scoring.norm_memo = verdicts.row_norm_memo(stat_now, verdict.body_digest)
        self._texts: list[str] | None = None
        self._by_id: TextsById | None = None
        self._inspect: dict | None = None

    @classmethod
    @method_binding
    def open(cls, path: str | os.PathLike) -> UrnaFile:
        """Open ``path`` (same as ``urna.open``)."""
        return cls(path)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> UrnaFile:
        """Open a file held in memory (same checks and answers as a mapped file)."""
        self = cls.__new__(cls)
        self.path, self._mm = "<bytes>", None
        self._st = open_state(bytes(data))
        self._texts, self._by_id, self._inspect = None, None, None
        return self

    # -- lifetime ------------------------------------------------------------------------

    @property
    def _state(self) -> OpenedFile:
        st = self._st
        if st is None:
            raise ValueError("I/O operation on closed UrnaFile")
        mm = self._mm
        if mm is not None and mm.size() < len(mm):
            # The file was cut under the map: touching the lost pages would be SIGBUS. (A cut
            # that lands during a call is outside this check; renames never are, see README.)
            raise FileSizeMismatch(len(mm), mm.size())
        return st

    def close(self) -> None:
        """Release the map (idempotent)."""
        st, self._st = self._st, None
        self._texts = self._by_id = None
        if st is not None:
            st.view.release()
            del st
        self._release_map()

    def _release_map(self) -> None:
        mm, self._mm = self._mm, None
        if mm is not None:
            # a view may still be alive (a running search, a traceback): the map is then
            # unmapped when its last view is collected
            with contextlib.suppress(BufferError):
                mm.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._st is None

    def __enter__(self) -> UrnaFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        st = self._st
        state = "closed" if st is None else f"n={st.n} dim={st.dim} dtype={st.dtype}"
        return f"<UrnaFile {self.path!r} {state}>"

    # -- properties ----------------------------------------------------------------------

    embedding_dim = property(lambda self: self._state.dim, doc="Vector width (header).")
    n_embeddings = property(lambda self: self._state.n, doc="Number of vectors (header).")
    dtype = property(lambda self: self._state.dtype, doc="Stored dtype of 0x04.")
    model_hash = property(lambda self: self._state.model_hash, doc="Manifest model_hash.")
    file_hash = property(lambda self: self._state.file_hash, doc="sha256 of the whole file.")
    content_hash = property(lambda self: self._state.content_hash, doc="Citation identity.")
    has_ann = property(lambda self: self._state.hnsw_index is not None, doc="HNSW opened.")
    has_bm25 = property(lambda self: self._state.bm25_index is not None, doc="BM25 opened.")
    has_graph = property(lambda self: self._state.graph is not None, doc="Graph opened.")
    has_spaces = property(lambda self: self._state.spaces is not None, doc="Spaces opened.")
    has_blobs = property(lambda self: self._state.blob_refs is not None, doc="Blob refs opened.")
    embedding_model = property(lambda self: self._state.embedding_model, doc="Text model.")
    index_type = property(lambda self: self._state.index_type, doc="Declared index type.")
    chunker_version = property(lambda self: self._state.view.manifest.chunker_version,
                               doc="Manifest chunker_version (what chunk ids were made with).")

    @property
    def metadata_schema(self) -> dict[str, str]:
        """``{field: type}`` of the metadata section (0x18); empty when the file has none."""
        return _f.schema(self._state)

    @method_binding
    def metadata(self, i: int) -> dict[str, Any]:
        """Chunk ``i``'s metadata (null keys left out); ``{}`` when the file has none."""
        st = self._state
        i = as_u64(i)
        if i >= st.n:
            raise IndexError(f"chunk {i} out of range [0, {st.n})")
        table = st.metadata
        return {} if table is None else table.row(i)

    @property
    def space_names(self) -> list[str]:
        """Names of the opened spaces in table order (empty when none)."""
        return [s.entry.name for s in self._state.spaces or ()]

    @method_binding
    def spaces(self) -> list[dict[str, Any]]:
        """The opened named spaces in table order: name, dim, dtype, n_vectors, model_hash."""
        return [{"name": s.entry.name, "dim": s.entry.dim, "dtype": s.entry.dtype,
                 "n_vectors": s.entry.n_vectors, "model_hash": s.entry.model_hash}
                for s in self._state.spaces or ()]

    @property
    def has_blob_data(self) -> bool:
        """Whether the blob bytes are inside this file (0x17 opened)."""
        return self._state.blob_data is not None

    def madvise_cold(self) -> None:
        """Hint the OS to drop the mapped pages (cold-cache benchmarks; not a guarantee)."""
        mm = self._mm
        if mm is not None and hasattr(mmap, "MADV_DONTNEED"):
            mm.madvise(mmap.MADV_DONTNEED)

    @property
    def simd_backend(self) -> str:
        """``scalar``, ``avx2`` or ``neon``: the kernels this process scores with."""
        return exact.simd_backend()

    # -- searches --------------------------------------------------------------------------

    # Every search returns a SearchResult: the hit list of the reference binding plus its
    # envelope (index_type, recall, truncated, timing, explain). ``where=`` (a filter mapping,
    # ``urna.index.filter``) restricts every path to the matching chunks; None = no filter.

    @method_binding
    def search(self, query: Vector, k: int, *, where: Where = None,
               threads: int | None = None) -> SearchResult[SearchHit]:
        """Exact top-k by cosine; recall 1.0 (rows split across ``threads``: same answer)."""
        k = as_i32(k)
        return _s.exact_search(self._state, as_f32(query), k, where=where, threads=threads)

    @method_binding
    def search_ann(self, query: Vector, k: int, ef: int, *,
                   where: Where = None) -> SearchResult[SearchHit]:
        """HNSW candidates (beam ``max(ef, k, ef_construction)``), exact rerank; else exact."""
        k, ef = as_i32(k), as_u64(ef)
        return _s.ann_search(self._state, as_f32(query), k, ef, where)

    @method_binding
    def search_hybrid(self, query: Vector, query_text: str, k: int, candidates: int, *,
                      where: Where = None,
                      rank: str = "cosine") -> SearchResult[SearchHit]:
        """Vector shortlist ∪ BM25 shortlist, exact rerank (no fallback); ordered by cosine, or
        by the fused cosine + BM25 score with ``rank="fused"``."""
        text, k, cand = as_str(query_text), as_i32(k), as_u64(candidates)
        return _s.hybrid_search(self._state, as_f32(query), text, k, cand, where,
                                check_rank(rank))

    @method_binding
    def search_bm25(self, query_text: str, k: int, *,
                    where: Where = None) -> SearchResult[SearchHit]:
        """Pure lexical top-k by BM25 (beyond the reference); hits carry ``score_type="bm25"``."""
        text, k = as_str(query_text), as_i32(k)
        return _s.bm25_search(self._state, text, k, where)

    @method_binding
    def search_graph(self, query: Vector, k: int, hops: int = 1, ef: int = 100, *,
                     where: Where = None, rank: str = "cosine",
                     query_text: str | None = None) -> SearchResult[SearchHit]:
        """Exact seeds, bounded BFS over the chunk graph, exact rerank; exact without a graph.
        ``rank="fused"`` with ``query_text`` orders the BFS union by cosine + BM25."""
        k, hops, ef = as_i32(k), as_u64(hops), as_u64(ef)
        text = as_optional_str(query_text)
        return _s.graph_search(self._state, as_f32(query), k, hops, ef, where, check_rank(rank),
                               text)

    @method_binding
    def search_space(self, name: str, query: Vector, k: int,
                     expected_model_hash: str | None = None, *,
                     where: Where = None) -> SearchResult[SearchHit]:
        """Exact search over one named vector space (never falls back to the text path)."""
        name, k, model_hash = as_str(name), as_i32(k), as_optional_str(expected_model_hash)
        return _s.space_search(self._state, name, as_f32(query), k, model_hash, where)

    @method_binding
    def search_routed(self, query: Vector, k: int, candidates: int | None = None, hops: int = 1,
                      ef: int = 100, query_text: str | None = None, *,
                      where: Where = None,
                      rank: str = "cosine") -> SearchResult[SearchHit]:
        """The route :meth:`retrieve` takes (``runtime.routing``), returning SearchHits."""
        k = as_i32(k)
        cand = None if candidates is None else as_u64(candidates)
        hops, ef, text = as_u64(hops), as_u64(ef), as_optional_str(query_text)
        return _s.routed_search(self._state, as_f32(query), k, cand, hops, ef, text, where,
                                check_rank(rank))

    @method_binding
    def retrieve(self, query: Vector, k: int, candidates: int | None = None, hops: int = 1,
                 ef: int = 100,
                 expected_model_hash: str | None = None,
                 query_text: str | None = None, *,
                 where: Where = None,
                 rank: str = "cosine") -> SearchResult[RetrieveHit]:
        """Routed search returning cited hits with their stored text and precision marker.

        Without ``query_text`` it routes by the manifest's index_type like the reference
        (hnsw -> ANN, hybrid -> hybrid with empty text, else exact); with it, by the sections
        present (BM25 -> hybrid on that text, else HNSW -> ANN, else exact). ``rank="fused"``
        orders the hybrid pool by cosine + BM25 (``runtime.fused``); ``"cosine"`` is the
        reference's order.
        """
        st = self._state
        k = as_i32(k)
        cand = None if candidates is None else as_u64(candidates)
        hops, ef = as_u64(hops), as_u64(ef)
        _s.check_model_hash(st, as_optional_str(expected_model_hash))
        x, text = as_f32(query), as_optional_str(query_text)
        # The stored texts are read while the search runs (their zstd frame and the numpy
        # proof release the GIL); a text error still comes first, as when they were read
        # before the search.
        reader = None if self._by_id is not None else start_quietly(self._text_table)
        try:
            res = _s.routed_search(st, x, k, cand, hops, ef, text, where, check_rank(rank))
        except BaseException:
            if reader is not None:
                reader.wait()
                self._text_table()  # raises the text error, if there is one
            raise
        if self._by_id is None:
            if reader is not None:
                reader.wait()
            self._by_id = _s.texts_by_id(st, self._text_table())
        return _s.with_text(res, self._by_id)

    @method_binding
    def search_batch(self, queries: Vectors, k: int, *, where: Where = None) -> BatchResult:
        """Exact top-k for many queries with one BLAS screen; equals :meth:`search` per row
        (each row's ``query_time_ms`` is the whole batch's)."""
        t0 = time.perf_counter()
        st = self._state
        Q, k = prepare_batch(queries, k, st.dim)
        fm = _f.row_mask(st, where)
        if fm is None:
            ids, scores = exact.search_batch(st.scoring, Q, k)
            return BatchResult(st, ids, scores, k, ms=(time.perf_counter() - t0) * 1e3)
        m = min(k, fm.matches)  # every query has the same matching rows: a rectangular batch
        ids = np.empty((Q.shape[0], m), dtype=np.int64)
        scores = np.empty((Q.shape[0], m), dtype=np.float32)
        for j in range(Q.shape[0]):
            ids[j], scores[j] = _s.filtered_exact(st, Q[j], k, fm)
        return BatchResult(st, ids, scores, k, fm, (time.perf_counter() - t0) * 1e3)

    @method_binding
    def retrieve_batch(self, queries: Vectors, k: int, candidates: int | None = None, hops: int = 1,
                       ef: int = 100, expected_model_hash: str | None = None,
                       query_texts: Sequence[str | None] | None = None, *,
                       where: Where = None,
                       rank: str = "cosine") -> list[SearchResult[RetrieveHit]]:
        """:meth:`retrieve` for many queries sharing every option (``query_texts[i]`` goes
        with ``queries[i]``); equals ``retrieve`` per row. When every row routes to the exact
        path they share one :meth:`search_batch` scan, else each row is retrieved alone."""
        st = self._state
        texts = [None] * len(queries) if query_texts is None else list(query_texts)
        if len(texts) != len(queries):
            raise ValueError(f"{len(texts)} query texts for {len(queries)} queries")
        _s.check_model_hash(st, expected_model_hash)
        k, rank = as_i32(k), check_rank(rank)
        cand = None if candidates is None else as_u64(candidates)
        routes = [choose_route(st.index_type, st.bm25 is not None, st.hnsw is not None, k, cand,
                               t) for t in texts]
        if any(r.path != EXACT for r in routes):
            return [self.retrieve(q, k, cand, hops, ef, None, t, where=where, rank=rank)
                    for q, t in zip(queries, texts, strict=True)]
        batch = self.search_batch(queries, k, where=where)
        if self._by_id is None:
            self._by_id = _s.texts_by_id(st, self._text_table())
        by_id = self._by_id
        return [_s.with_text(_s.routed_envelope(st, route, res, rank), by_id)
                for route, res in zip(routes, batch, strict=True)]

    # -- file-level accessors ------------------------------------------------------------

    @method_binding
    def inspect(self) -> dict[str, Any]:
        """The reference's inspect document (header, sections, manifest, blobs, spaces, hashes)."""
        from ..format.inspect import inspect_view

        if self._inspect is None:
            st = self._state
            self._inspect = inspect_view(st.view, self.simd_backend, st.file_hash)
        return self._inspect

    @method_binding
    def validate(self, *, full: bool = False) -> bool:
        """The reference binding's check (reader checks, value walk, contract); True or a typed
        error. ``full=True`` is ``urna validate``'s whole check: this object's full open proved
        the steps the open makes, so only the rest run (the canonical tables' records, every
        inlined blob's SHA-256); an open that trusted a kept verdict gets every check again
        (``runtime.validation.validate_opened``)."""
        from ..format.reader import UrnaView

        if full:
            from .validation import validate_opened

            validate_opened(self._state.view)
            return True
        # the reference's validate() stops here: the mutation cases pin files that pass it
        # and fail the CLI's fuller check
        view = UrnaView.from_bytes(self._state.view.buf)
        view.validate_embeddings_values()
        view.search_contract()
        return True

    @method_binding
    def chunk_ids(self) -> list[str]:
        """Chunk ids in file order."""
        return list(self._state.chunk_ids)

    @method_binding
    def spans(self) -> list[tuple[str, int, int]]:
        """Source spans ``(source_uri, byte_start, byte_end)`` in file order (blob overlay on)."""
        return list(self._state.spans)

    @method_binding
    def vectors(self, ids: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Stored embeddings as float32 rows (float16/int8/int4 dequantised), all or ``ids``."""
        st = self._state
        if ids is None:
            return st.stored.dequantize(0, st.n)
        rows = np.asarray(ids, dtype=np.int64).reshape(-1)
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= st.n):
            raise IndexError(f"row ids must be in [0, {st.n})")
        out = np.empty((rows.size, st.dim), dtype=np.float32)
        for j, i in enumerate(rows.tolist()):
            out[j] = st.stored.dequantize(i, i + 1)[0]
        return out

    @method_binding
    def texts(self) -> list[str]:
        """The stored canonical texts in file order (decoded once)."""
        if self._texts is None:
            from ..format.sections.canonical import decode_texts

            st = self._state
            self._texts = decode_texts(st.view.decoded(SECTION_CHUNKS_CANONICAL),
                                       st.view.header.n_chunks)
        return self._texts

    def _text_table(self) -> Sequence[str]:
        """The stored texts as a sequence: the eager list once built, else the open file's
        (``OpenedFile.texts``: each decoded when read)."""
        if self._texts is not None:
            return self._texts
        return self._state.texts

    @method_binding
    def blob_refs(self) -> list[dict[str, Any]]:
        """The 0x14 records as dicts (empty when the file has no blobs)."""
        return [{"content_hash": "sha256:" + r.content_hash.hex(), "original_uri": r.original_uri,
                 "byte_len": r.byte_len, "inlined": bool(r.inlined)}
                for r in self._state.blob_refs or ()]

    @method_binding
    def blob_bytes(self, index: int) -> bytes:
        """The bytes of inlined blob ``index``; BlobNotInlined when they are not in this file."""
        index = as_u64(index)
        st = self._state
        if st.blob_data is None or index >= len(st.blob_data.entries):
            raise BlobNotInlined(index)
        refs = st.blob_refs or []
        if index >= len(refs) or not refs[index].inlined:
            raise BlobNotInlined(index)
        offset, length = st.blob_data.entries[index]
        start = st.blob_data.abs_data_start + offset
        if start + length > len(st.view.buf):
            raise MalformedSectionPayload(SECTION_BLOB_DATA, f"blob {index} spans past the file")
        return bytes(st.view.buf[start:start + length])

    @method_binding
    def cite(self, citation: str) -> ResolvedCitation:
        """Resolve ``urna://<content_hash>/<chunk_id>`` to its stored text and (overlaid) span."""
        st = self._state
        wanted, ordinal = locate_citation(as_str(citation), st.content_hash, st.chunk_ids)
        uri, start, end = st.spans[ordinal]
        return ResolvedCitation(format_citation(st.content_hash, wanted), wanted, st.content_hash,
                                ordinal, self._text_table()[ordinal], uri, start, end)


def open_file(path: str | os.PathLike) -> UrnaFile:
    """Open a .urna file read-only (mmap) and validate it; the reference's open errors."""
    return UrnaFile(path)


def keep_verdicts(path: str | os.PathLike) -> bool:
    """Open ``path`` with every check and prove its stored texts, as a first open and a first
    retrieve do, so their verdicts are kept (``runtime.verdicts``) and the next open of these
    bytes is a repeat one; False when the cache keeps none (turned off, or a small file).

    For a writer that has just written ``path`` (``forge.emit``): the first query after a
    build then costs what every later one does. The checks read the file as written; a byte
    changed afterwards changes the body digest, so that open gets every check again.
    """
    if not verdicts.enabled() or os.path.getsize(path) < verdicts.MIN_BYTES:
        return False
    with UrnaFile(path) as f:
        f._state.texts  # noqa: B018 - the proof of 0x02 (lazy_tables) keeps TEXT_RECORDS
    return True
