"""Section 0x08 (bm25_index): encode version 2, decode versions 1 and 2 (03-runtime §8.3).

Both versions open with ``u32 version | f32 k1 | f32 b | f32 avgdl | u32 n_docs | u32 n_terms``.
Version 2 (what we write) follows with three intpack columns framed by ``u32 byte_len``: the
doc lengths, then per term (UTF-8 byte order) ``u32 len | bytes | u32 df``, then the doc-id
gaps of all postings (restarting at every term) and their term frequencies. Version 1 stores
flat ``u32`` doc lengths and ``df x (u32 doc, u32 tf)`` after each term.

The decoder reads in the reference's order and raises its exact reasons; every count is
checked against the bytes left before anything is allocated. As in the reference, trailing
bytes are ignored, intpack failures keep section id 0, a repeated term replaces the earlier
one (only the survivors' postings are kept and range-checked) and the stored ``n_terms`` is
kept as read, not recounted. This module works on decompressed payload bytes only.
"""

from __future__ import annotations

import struct

import numpy as np

from ...errors import MalformedSectionPayload, UnsupportedSectionVersion
from ..cursor import Cursor, utf8_error_text
from ..encodings.intpack import pack_u64s, unpack_low_u32s
from ..layout import SECTION_BM25_INDEX
from ..record import Record
from .bm25_terms import read_term_table

BM25_PAYLOAD_VERSION = 2
_HEAD_U = struct.Struct("<IfffII")
_U32 = struct.Struct("<I")


def _malformed(reason: str) -> MalformedSectionPayload:
    return MalformedSectionPayload(SECTION_BM25_INDEX, reason)


class Bm25Payload(Record):
    """A decoded 0x08 payload: parameters plus postings as flat arrays in term order.

    ``terms[t]`` owns postings ``post_offsets[t]:post_offsets[t+1]`` of ``post_docs`` /
    ``post_tfs`` (doc ids ascending in anything we build). ``k1``, ``b`` and ``avgdl`` are
    f32 values held as Python floats. A record, not a dataclass: every text question decodes
    one, and ``dataclasses`` costs a one-shot verb ~2 ms (format/record.py says why).
    """

    _fields = ("version", "k1", "b", "avgdl", "n_docs", "n_terms", "doc_lens", "terms",
               "post_offsets", "post_docs", "post_tfs")

    def __init__(self, version: int, k1: float, b: float, avgdl: float, n_docs: int,
                 n_terms: int, doc_lens: np.ndarray, terms: list[str], post_offsets: np.ndarray,
                 post_docs: np.ndarray, post_tfs: np.ndarray) -> None:
        self.version = version
        self.k1 = k1
        self.b = b
        self.avgdl = avgdl
        self.n_docs = n_docs
        self.n_terms = n_terms
        self.doc_lens = doc_lens  # uint32, n_docs
        self.terms = terms
        self.post_offsets = post_offsets  # int64, len(terms) + 1
        self.post_docs = post_docs  # uint32
        self.post_tfs = post_tfs  # uint32

    @property
    def dfs(self) -> np.ndarray:
        """Document frequency of each term (its number of postings)."""
        return np.diff(self.post_offsets)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Bm25Payload):
            return NotImplemented
        same_f32 = all(
            struct.pack("<f", x) == struct.pack("<f", y)
            for x, y in ((self.k1, other.k1), (self.b, other.b), (self.avgdl, other.avgdl))
        )
        return (
            same_f32
            and (self.version, self.n_docs, self.n_terms, self.terms)
            == (other.version, other.n_docs, other.n_terms, other.terms)
            and np.array_equal(self.doc_lens, other.doc_lens)
            and np.array_equal(self.post_offsets, other.post_offsets)
            and np.array_equal(self.post_docs, other.post_docs)
            and np.array_equal(self.post_tfs, other.post_tfs)
        )


def encode_bm25(p: Bm25Payload) -> bytes:
    """Encode ``p`` as the reference's version-2 payload (terms written in UTF-8 byte order)."""
    out = [_HEAD_U.pack(BM25_PAYLOAD_VERSION, p.k1, p.b, p.avgdl,
                        p.n_docs & 0xFFFFFFFF, p.n_terms & 0xFFFFFFFF)]
    _blob(out, pack_u64s(np.asarray(p.doc_lens, dtype=np.uint64)))
    offsets = np.asarray(p.post_offsets, dtype=np.int64)
    docs = np.asarray(p.post_docs, dtype=np.uint32)
    tfs = np.asarray(p.post_tfs, dtype=np.uint32)
    terms = p.terms
    # Python str order is code point order, which is UTF-8 byte order; what we build is sorted
    order = sorted(range(len(terms)), key=terms.__getitem__)
    if any(t != i for i, t in enumerate(order)):  # a decoded payload may list terms unsorted
        idx = _ranges(offsets[:-1][order], np.diff(offsets)[order])
        docs, tfs = docs[idx], tfs[idx]
        offsets = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(np.diff(p.post_offsets)[order], out=offsets[1:])
        terms = [terms[t] for t in order]
    dfs = np.diff(offsets).tolist()
    pack = _U32.pack
    out.append(b"".join([pack(len(raw)) + raw + pack(df)
                         for raw, df in zip((t.encode("utf-8") for t in terms), dfs,
                                            strict=True)]))
    # each term's first posting absolute, then differences; u32 wrapping like the reference
    gaps = np.empty_like(docs)
    if len(docs):
        gaps[0] = docs[0]
        np.subtract(docs[1:], docs[:-1], out=gaps[1:])
        firsts = offsets[:-1][np.diff(offsets) > 0]
        gaps[firsts] = docs[firsts]
    _blob(out, pack_u64s(gaps.astype(np.uint64)))
    _blob(out, pack_u64s(tfs.astype(np.uint64)))
    return b"".join(out)


def _ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + n)`` for every (s, n)."""
    total = int(lens.sum())
    ends = np.cumsum(lens)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lens), lens)


def _blob(out: list[bytes], blob: bytes) -> None:
    out.append(_U32.pack(len(blob)) + blob)


class _Reader(Cursor):
    """The reference's BM25 byte cursor: one EOF text, ``bm25: unexpected EOF (need n)``."""

    __slots__ = ()

    def __init__(self, buf: bytes | memoryview) -> None:
        super().__init__(memoryview(buf).cast("B"), SECTION_BM25_INDEX,
                         eof="bm25: unexpected EOF (need {k})")

    def term(self) -> str:
        raw = self.take(self.u32())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _malformed(f"term utf-8: {utf8_error_text(raw, exc)}") from exc

    def u32_array(self, count: int) -> np.ndarray:
        # The reference reads one u32 at a time, so a short buffer always fails "need 4".
        if 4 * count > len(self.buf) - self.pos:
            raise _malformed("bm25: unexpected EOF (need 4)")
        arr = np.frombuffer(self.buf, dtype="<u4", count=count, offset=self.pos)
        self.pos += 4 * count
        return arr.astype(np.uint32)

    def intpack_column(self) -> np.ndarray:
        """The next intpack column, each value cut to its low 32 bits (as the reference does)."""
        blob = self.view(self.u32())
        return unpack_low_u32s(blob)  # errors keep section id 0, as the reference


def decode_bm25(payload: bytes | memoryview) -> Bm25Payload:
    """Decode a (decompressed) 0x08 payload of version 1 or 2 with the reference's checks.

    Raises ``UnsupportedSectionVersion(8, v)`` for another version and
    ``MalformedSectionPayload`` (section 8, or 0 for intpack) for anything malformed.
    """
    cur = _Reader(payload)
    version = cur.u32()
    k1, b, avgdl = (struct.unpack("<f", bytes(cur.take(4)))[0] for _ in range(3))
    n_docs = cur.u32()
    n_terms = cur.u32()
    if version == 1:
        doc_lens, names, counts, docs, tfs = _decode_v1(cur, n_docs, n_terms)
    elif version == 2:
        doc_lens, names, counts, docs, tfs = _decode_v2(cur, n_docs, n_terms)
    else:
        raise UnsupportedSectionVersion(SECTION_BM25_INDEX, version)
    if not all(np.isfinite((k1, b, avgdl))):
        raise _malformed("bm25: non-finite k1 / b / avgdl")
    if len(doc_lens) != n_docs:
        raise _malformed("bm25: doc-length count != n_docs")
    names, offsets, docs, tfs = _keep_last(names, counts, docs, tfs)
    if len(docs) and int(docs.max()) >= n_docs:
        raise _malformed("bm25: posting doc id >= n_docs")
    return Bm25Payload(version, k1, b, avgdl, n_docs, n_terms, doc_lens, names, offsets,
                       docs, tfs)


def _decode_v1(cur: _Reader, n_docs: int, n_terms: int):
    doc_lens = cur.u32_array(n_docs)
    names: list[str] = []
    counts: list[int] = []
    doc_parts: list[np.ndarray] = []
    tf_parts: list[np.ndarray] = []
    for _ in range(n_terms):  # each term costs >= 8 bytes, so this loop is bounded
        names.append(cur.term())
        df = cur.u32()
        pairs = cur.u32_array(2 * df)
        counts.append(df)
        doc_parts.append(pairs[0::2])
        tf_parts.append(pairs[1::2])
    docs = np.concatenate(doc_parts) if doc_parts else np.zeros(0, np.uint32)
    tfs = np.concatenate(tf_parts) if tf_parts else np.zeros(0, np.uint32)
    return doc_lens, names, np.asarray(counts, dtype=np.int64), docs, tfs


def _decode_v2(cur: _Reader, n_docs: int, n_terms: int):
    dls = cur.intpack_column()
    if len(dls) != n_docs:
        raise _malformed("bm25 v2: doc-length column mismatch")
    doc_lens = dls
    table = read_term_table(cur.buf, cur.pos, n_terms, names=True)
    if table is not None:
        names, counts, cur.pos = table.names(), table.dfs, table.end
    else:  # the cursor reports the first term that runs out or is not UTF-8, as the reference
        names, dfs = [], []
        for _ in range(n_terms):
            names.append(cur.term())
            dfs.append(cur.u32())
        counts = np.asarray(dfs, dtype=np.int64)
    total = int(counts.sum())
    gaps = cur.intpack_column()
    tfs = cur.intpack_column()
    if len(gaps) != total or len(tfs) != total:
        raise _malformed("bm25 v2: posting column mismatch")
    docs = _undo_gaps(gaps, counts)
    return doc_lens, names, counts, docs, tfs


def _undo_gaps(gaps: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Doc ids from per-term gaps: a running u32 sum that restarts at every term."""
    if len(gaps) == 0:
        return np.zeros(0, np.uint32)
    # A running sum mod 2**32 in uint32 (numpy integer arithmetic wraps): the reference's
    # wrapping u32 adds, at half the memory traffic of a uint64 sum.
    csum = np.cumsum(gaps, dtype=np.uint32)
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    firsts = starts[:-1]
    before = csum[np.maximum(firsts - 1, 0)]  # the sum before each term's first gap
    before[firsts == 0] = 0
    return np.subtract(csum, np.repeat(before, counts), out=csum)


def _keep_last(names: list[str], counts: np.ndarray, docs: np.ndarray, tfs: np.ndarray):
    """Resolve repeated terms the reference's way: the last occurrence wins."""
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    if len(set(names)) == len(names):  # none repeated (a set in C, not a dict in bytecode)
        return names, starts, docs, tfs
    last = {name: i for i, name in enumerate(names)}
    keep = sorted(last.values())
    idx = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in keep] or
                         [np.zeros(0, np.int64)]).astype(np.int64)
    kept_counts = counts[np.asarray(keep, dtype=np.int64)]
    offsets = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(kept_counts, out=offsets[1:])
    return [names[i] for i in keep], offsets, docs[idx], tfs[idx]
