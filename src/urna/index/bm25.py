"""BM25 over flat posting arrays: build, score, and the hybrid path's RRF union (03-runtime §8).

Build follows §8.2 (doc id = chunk ordinal, terms in UTF-8 byte order, postings by doc id,
``avgdl = f32(sum) / f32(n_docs)``). Scoring follows §8.4 in f32, operation for operation::

    idf   = ln((N - df + 0.5) / (df + 0.5) + 1)
    denom = tf + k1 * ((1 - b) + (b * dl) / max(avgdl, 1))
    score[doc] += (idf * (tf * (k1 + 1))) / denom        # query tokens in order, repeats kept

Everything that does not depend on the query (each posting's ``denom`` and ``tf * (k1 + 1)``)
is computed once, so a query costs two vector operations and one scatter-add per query
token; there is no Python loop over documents or postings. ``ln`` is the C library's
``logf`` when it can be loaded (what the reference calls), else a correctly rounded log.
Documents whose score is not finite are dropped, and the rest are ranked by score
descending, then doc id ascending (§4). This module never parses a file: it takes a
decoded :class:`~urna.format.sections.bm25.Bm25Payload` and produces one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Sequence

import numpy as np

from ..format.sections.bm25 import BM25_PAYLOAD_VERSION, Bm25Payload, decode_bm25, encode_bm25
from .tokenize import tokenize

DEFAULT_K1 = 1.5
DEFAULT_B = 0.75
RRF_K = 60.0
_F32 = np.float32


def _py_logf(x: float) -> np.float32:
    # math.log rounds once from the exact value: correctly rounded except in rare ties.
    if x > 0:
        return _F32(math.log(x))
    return _F32("-inf") if x == 0 else _F32("nan")


def _load_logf():
    """The C library's ``logf`` (what Rust's ``f32::ln`` calls), or a Python fallback."""
    name = ctypes.util.find_library("m")
    try:
        fn = ctypes.CDLL(name).logf if name else None
    except (OSError, AttributeError):
        fn = None
    if fn is None:
        return _py_logf
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return lambda x: _F32(fn(x))


_logf = _load_logf()


def f32_ln(x: float) -> np.float32:
    """Natural log in f32, as the reference's ``f32::ln``."""
    return _logf(float(x))


class Bm25Index:
    """A BM25 index: parameters, doc lengths and postings as flat arrays in term order."""

    def __init__(self, payload: Bm25Payload) -> None:
        self.payload = payload
        self.k1 = _F32(payload.k1)
        self.b = _F32(payload.b)
        self.avgdl = _F32(payload.avgdl)
        self.n_docs = int(payload.n_docs)
        self.n_terms = int(payload.n_terms)
        self.terms = payload.terms
        self.offsets = np.asarray(payload.post_offsets, dtype=np.int64)
        self.docs = np.asarray(payload.post_docs, dtype=np.uint32).astype(np.intp)
        self.term_index = {t: i for i, t in enumerate(payload.terms)}
        dl = np.asarray(payload.doc_lens, dtype=np.uint32).astype(_F32)
        with np.errstate(all="ignore"):  # hostile payloads may overflow; the scores say so
            norm = (_F32(1.0) - self.b) + (self.b * dl) / max(self.avgdl, _F32(1.0))
            knorm = self.k1 * norm
            tf = np.asarray(payload.post_tfs, dtype=np.uint32).astype(_F32)
            self._tfk = tf * (self.k1 + _F32(1.0))
            self._denom = tf + knorm[self.docs]
        # Postings we build are strictly increasing per term; a decoded v1 payload may repeat a
        # doc inside one term, which then needs the slower unbuffered add.
        step = np.diff(self.docs) > 0
        starts = self.offsets[1:-1] - 1
        step[starts[(starts >= 0) & (starts < len(step))]] = True
        self._simple = np.ones(len(self.terms), dtype=bool)
        bad = np.flatnonzero(~step) + 1
        if len(bad):
            self._simple[np.searchsorted(self.offsets, bad, side="right") - 1] = False

    # -- construction ------------------------------------------------------------------
    @classmethod
    def build(cls, docs: Sequence[str], k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> "Bm25Index":
        """Index ``docs`` (canonical chunk texts in chunk order) as the reference does."""
        vocab: dict[str, int] = {}
        tids: list[int] = []
        lens = np.zeros(len(docs), dtype=np.int64)
        for d, text in enumerate(docs):
            toks = tokenize(text)
            lens[d] = len(toks)
            tids.extend([vocab.setdefault(t, len(vocab)) for t in toks])
        n_docs = len(docs)
        terms = sorted(vocab)  # code point order == UTF-8 byte order
        rank = np.empty(len(vocab), dtype=np.int64)
        rank[[vocab[t] for t in terms]] = np.arange(len(terms), dtype=np.int64)
        doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), lens)
        keys = rank[np.asarray(tids, dtype=np.int64)] * max(n_docs, 1) + doc_of
        uniq, tf = np.unique(keys, return_counts=True)  # sorted: term, then doc
        term_of = uniq // max(n_docs, 1)
        offsets = np.searchsorted(term_of, np.arange(len(terms) + 1), side="left").astype(np.int64)
        total = int(lens.sum())
        avgdl = float(_F32(total) / _F32(n_docs)) if n_docs else 0.0
        payload = Bm25Payload(
            BM25_PAYLOAD_VERSION, float(_F32(k1)), float(_F32(b)), avgdl, n_docs, len(terms),
            lens.astype(np.uint32), terms, offsets, (uniq % max(n_docs, 1)).astype(np.uint32),
            tf.astype(np.uint32),
        )
        return cls(payload)

    @classmethod
    def from_payload(cls, payload: Bm25Payload) -> "Bm25Index":
        """Wrap a decoded 0x08 payload (see ``urna.format.sections.bm25.decode_bm25``)."""
        return cls(payload)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> "Bm25Index":
        """Decode a raw (decompressed) 0x08 payload and wrap it."""
        return cls(decode_bm25(data))

    def to_bytes(self) -> bytes:
        """The version-2 0x08 payload, byte-identical to the reference's for the same docs."""
        return encode_bm25(self.payload)

    # -- scoring -----------------------------------------------------------------------
    def idf(self, df: int) -> np.float32:
        """``ln((N - df + 0.5) / (df + 0.5) + 1)`` in f32."""
        n, d, half = _F32(self.n_docs), _F32(df), _F32(0.5)
        with np.errstate(all="ignore"):
            return f32_ln((n - d + half) / (d + half) + _F32(1.0))

    def scores(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Every matched doc id (ascending) and its accumulated f32 score, before ranking."""
        if self.n_docs == 0:
            return np.zeros(0, np.intp), np.zeros(0, _F32)
        acc = None
        touched = None
        for tok in tokenize(text):
            t = self.term_index.get(tok)
            if t is None:
                continue
            lo, hi = int(self.offsets[t]), int(self.offsets[t + 1])
            if acc is None:
                acc = np.zeros(self.n_docs, dtype=_F32)
                touched = np.zeros(self.n_docs, dtype=bool)
            with np.errstate(all="ignore"):
                contrib = (self.idf(hi - lo) * self._tfk[lo:hi]) / self._denom[lo:hi]
                docs = self.docs[lo:hi]
                if self._simple[t]:
                    acc[docs] += contrib
                else:
                    np.add.at(acc, docs, contrib)
            touched[docs] = True
        if acc is None:
            return np.zeros(0, np.intp), np.zeros(0, _F32)
        ids = np.flatnonzero(touched)
        return ids, acc[ids]

    def search_arrays(self, text: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` doc ids and f32 scores as arrays (see :meth:`search`)."""
        if k <= 0:
            return np.zeros(0, np.intp), np.zeros(0, _F32)
        ids, sc = self.scores(text)
        keep = np.isfinite(sc)
        if not keep.all():
            ids, sc = ids[keep], sc[keep]
        if len(ids) > k:
            # keep everything tied with the k-th score, then order exactly
            kth = np.partition(sc, len(sc) - k)[len(sc) - k]
            sel = sc >= kth
            ids, sc = ids[sel], sc[sel]
        order = np.lexsort((ids, -sc))[:k]
        return ids[order], sc[order]

    def search(self, text: str, k: int) -> list[tuple[int, float]]:
        """Top-``k`` ``(doc, score)`` pairs for ``text``: score descending, doc ascending.

        Example: ``Bm25Index.build(["red fox", "blue sky"]).search("fox", 5)`` -> ``[(0, 0.69...)]``.
        """
        ids, sc = self.search_arrays(text, k)
        return [(int(i), float(s)) for i, s in zip(ids.tolist(), sc.tolist())]


def rrf_union(vector_ids: Sequence[int], lexical_ids: Sequence[int]) -> list[int]:
    """Union of two ranked id lists ordered by reciprocal-rank fusion (§8.5 step 4).

    Rank ``r`` (0-based) contributes ``1 / (60 + r + 1)`` in f32, vector list first; the union
    is sorted by fused score descending, ties by id ascending.
    """
    fused: dict[int, np.float32] = {}
    one = _F32(1.0)
    for ids in (vector_ids, lexical_ids):
        for rank, i in enumerate(ids):
            c = one / (_F32(RRF_K) + _F32(rank) + one)
            fused[int(i)] = fused.get(int(i), _F32(0.0)) + c
    return sorted(fused, key=lambda i: (-fused[i], i))
