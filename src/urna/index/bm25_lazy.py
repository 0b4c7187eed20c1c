"""A verified 0x08 payload read per term: a query decodes only the postings it scores (#20).

A file opened against its verdict (``runtime.verdicts``) had its BM25 payload decoded whole
by an earlier open, so its bytes are known to decode. Decoding all of it again costs more
than a one-shot ``urna ask``'s query: 650,000 postings on a 19,000-chunk file are ~35 ms of
intpack, gap and contribution arrays, of which a query reads a few thousand. Here only the
header, the doc lengths and the term table are read up front, the table in place
(``format.sections.bm25_terms``: its records found and its names checked, no dict of 20,000
names; a query's terms are binary-searched there); a term's postings are decoded from the intpack
blocks that hold them the first time a query reads that term, and its contributions are
computed with the same f32 operations, in the same order, as ``Bm25Index._prepare`` (the
answers are the eager index's, bit for bit). Whatever a version-1 payload, a repeated term or
any irregularity, :func:`lazy_index` declines and the caller decodes eagerly; an attribute
only the whole arrays answer (``docs``, ``payload``, the numba kernel's inputs) decodes them.
"""

from __future__ import annotations

import struct
import threading
from typing import Any

import numpy as np

from ..errors import MalformedSectionPayload
from ..format.encodings.intpack import INTPACK_BLOCK, IntpackReader
from ..format.layout import SECTION_BM25_INDEX
from ..format.sections.bm25 import decode_bm25
from ..format.sections.bm25_terms import TermTable, read_term_table
from .bm25 import Bm25Index, doc_knorms, posting_contributions

_F32 = np.float32
_HEAD = struct.Struct("<IfffII")  # version, k1, b, avgdl, n_docs, n_terms
_U32 = struct.Struct("<I")
_U32_MASK = np.uint64(0xFFFFFFFF)
_WHOLE_LOCK = threading.Lock()


def _column(data: bytes, pos: int) -> tuple[IntpackReader, int] | None:
    """The ``u32 len | intpack`` column at ``pos`` and the position after it, or None."""
    if pos + 4 > len(data):
        return None
    end = pos + 4 + _U32.unpack_from(data, pos)[0]
    if end > len(data):
        return None
    try:
        return IntpackReader(data[pos + 4:end]), end
    except MalformedSectionPayload:  # a malformed directory: the eager decoder names it
        return None


def _values(reader: IntpackReader, lo: int, hi: int) -> np.ndarray:
    """Values ``lo:hi`` of an intpack column, decoding only the blocks that hold them.

    A few blocks are decoded one by one; a longer run is copied into a blob of its own
    (its blocks and a directory pointing at them) and decoded by one vectorized ``all``.
    """
    if hi <= lo:
        return np.zeros(0, np.uint64)
    first, last = lo // INTPACK_BLOCK, (hi - 1) // INTPACK_BLOCK
    base = first * INTPACK_BLOCK
    if last - first < 4:
        blocks = [reader.block(b) for b in range(first, last + 1)]
        return (blocks[0] if len(blocks) == 1 else np.concatenate(blocks))[lo - base:hi - base]
    buf, n_blocks = reader.buf, last - first + 1
    count = min(reader.count, (last + 1) * INTPACK_BLOCK) - base
    pieces, starts, at = [], [], 8 + 4 * n_blocks
    for b, offset in zip(range(first, last + 1), reader.offsets[first:last + 1].tolist(),
                         strict=True):
        if offset + 9 > len(buf):
            reader.block(b)  # raises that block's error
        width = buf[offset + 8]
        values = min(INTPACK_BLOCK, reader.count - b * INTPACK_BLOCK)
        size = 9 + (values * width + 7) // 8
        pieces.append(bytes(buf[offset:offset + size]))
        starts.append(at)
        at += size
    blob = struct.pack(f"<II{n_blocks}I", count, n_blocks, *starts) + b"".join(pieces)
    return IntpackReader(blob).all()[lo - base:hi - base]


class LazyBm25Index(Bm25Index):
    """A :class:`Bm25Index` over a verified version-2 payload, its postings decoded per term."""

    def __init__(self, data: bytes, head: tuple[int, float, float, float, int, int],
                 doc_lens: np.ndarray, terms: TermTable, offsets: np.ndarray,
                 gaps: IntpackReader, tfs: IntpackReader) -> None:
        # no Bm25Index.__init__: the payload object is built only when asked for
        _, k1, b, avgdl, n_docs, n_terms = head
        self._data, self._gaps, self._tfs = data, gaps, tfs
        self.k1, self.b, self.avgdl = _F32(k1), _F32(b), _F32(avgdl)
        self.n_docs, self.n_terms = int(n_docs), int(n_terms)
        self.terms: TermTable = terms  # names read in place: a query looks up a few
        self.offsets = offsets
        self.doc_lens = doc_lens
        self._knorm = doc_knorms(self.k1, self.b, self.avgdl, doc_lens)
        self._terms: dict[int, tuple[np.ndarray, np.ndarray, bool, bool, np.ndarray]] = {}

    def __getattr__(self, name: str) -> Any:
        # the whole arrays (``docs``, ``_contrib``, ..., ``payload``): decode everything once
        if name == "payload" or name in Bm25Index._PREPARED:
            if "_data" in self.__dict__ and "payload" not in self.__dict__:
                with _WHOLE_LOCK:
                    if "payload" not in self.__dict__:
                        self.payload = decode_bm25(self._data)
            if name == "payload":
                return self.__dict__["payload"]
        return super().__getattr__(name)

    def term_id(self, term: str) -> int | None:
        """The id of ``term`` in the vocabulary, or None (looked up in the payload)."""
        return self.terms.find(term)

    def prefixed_terms(self, prefix: str) -> list[int]:
        """Ids of the vocabulary terms that begin with ``prefix``, in code point order."""
        return self.terms.prefixed(prefix)

    def _decoded(self, t: int) -> tuple[np.ndarray, np.ndarray, bool, bool, np.ndarray]:
        got = self._terms.get(t)
        if got is None:
            lo, hi = int(self.offsets[t]), int(self.offsets[t + 1])
            gaps = (_values(self._gaps, lo, hi) & _U32_MASK).astype(np.uint32)
            # a term's gaps restart at its first posting: its doc ids are their running u32 sum
            docs = np.cumsum(gaps, dtype=np.uint32).astype(np.intp)
            if docs.size and int(docs.max()) >= self.n_docs:  # never in a verified payload
                raise MalformedSectionPayload(SECTION_BM25_INDEX, "bm25: posting doc id >= n_docs")
            tf_u32 = (_values(self._tfs, lo, hi) & _U32_MASK).astype(np.uint32)
            contrib = posting_contributions(self.idf(hi - lo), tf_u32, docs, self._knorm, self.k1)
            simple = bool((np.diff(docs) > 0).all())
            positive = bool((contrib > 0).all())
            got = self._terms[t] = (docs, contrib, simple, positive, tf_u32)
        return got

    def _term(self, t: int) -> tuple[np.ndarray, np.ndarray, bool, bool]:
        docs, contrib, simple, positive, _ = self._decoded(t)
        return docs, contrib, simple, positive

    def term_postings(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Term ``t``'s postings: (doc ids, uint32 term frequencies)."""
        docs, _, _, _, tfs = self._decoded(t)
        return docs, tfs


def lazy_index(raw: bytes | memoryview) -> LazyBm25Index | None:
    """A per-term index over a verified payload, or None (the caller decodes it eagerly)."""
    data = bytes(raw)
    if len(data) < _HEAD.size:
        return None
    head = _HEAD.unpack_from(data, 0)
    version, k1, b, avgdl, n_docs, n_terms = head
    if version != 2 or not all(np.isfinite((k1, b, avgdl))):
        return None
    lens = _column(data, _HEAD.size)
    if lens is None or len(lens[0]) != n_docs:
        return None
    terms = read_term_table(data, lens[1], n_terms)
    if terms is None:
        return None
    gaps = _column(data, terms.end)
    if gaps is None:
        return None
    tfs = _column(data, gaps[1])
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(terms.dfs, out=offsets[1:])
    if tfs is None or len(gaps[0]) != offsets[-1] or len(tfs[0]) != offsets[-1]:
        return None
    try:  # block by block: IntpackReader.all's np.unique would import numpy.ma (~12 ms)
        doc_lens = (_values(lens[0], 0, n_docs) & _U32_MASK).astype(np.uint32)
    except MalformedSectionPayload:  # the eager decoder gives its error
        return None
    # a repeated term: the eager rule (the last one wins) drops the others' postings
    if not terms.strictly_sorted() and len(terms.names()) != len(set(terms.names())):
        return None
    return LazyBm25Index(data, head, doc_lens, terms, offsets, gaps[0], tfs[0])
