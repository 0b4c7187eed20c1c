"""BM25 over flat posting arrays: build, score, and the hybrid path's RRF union (03-runtime §8).

Build follows §8.2 (doc id = chunk ordinal, terms in UTF-8 byte order, postings by doc id,
``avgdl = f32(sum) / f32(n_docs)``): the corpus is tokenized at once into term ids
(``tokenize_corpus``), and postings come from one stable radix sort of those ids. Scoring
follows §8.4 in f32, operation for operation::

    idf   = ln((N - df + 0.5) / (df + 0.5) + 1)
    denom = tf + k1 * ((1 - b) + (b * dl) / max(avgdl, 1))
    score[doc] += (idf * (tf * (k1 + 1))) / denom        # query tokens in order, repeats kept

Nothing in a posting's term score depends on the query, so every posting's contribution is
computed once, with the same f32 operations in the same order; a query is then one
scatter-add per query token (in query order, so the f32 sums match) and a top-k selection,
done by numpy or, for large indexes (``NUMBA_MIN_POSTINGS``), by one numba kernel (without
fastmath; ``URNA_FORCE_SCALAR=1`` forces numpy; tests check both give the same hits). The
numpy top-k first drops every doc below the least of ``k`` disjoint blocks' best scores
(``k`` docs reach it, so the k-th best does too): no sort or partition of all matches.
There is no Python loop over documents or postings. ``ln`` is the C library's
``logf`` when it can be loaded (what the reference calls), else a correctly rounded log.
Documents whose score is not finite are dropped, and the rest are ranked by score
descending, then doc id ascending (§4). This module never parses a file: it takes a
decoded :class:`~urna.format.sections.bm25.Bm25Payload` and produces one.
"""

from __future__ import annotations

import math
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..format.sections.bm25 import (
    BM25_PAYLOAD_VERSION,
    Bm25Payload,
    decode_bm25,
    encode_bm25,
)
from ..format.sections.bm25_terms import NameOrder
from . import kernel_rent
from .arrays import sorted_distinct
from .cpu import force_scalar

DEFAULT_K1 = 1.5
DEFAULT_B = 0.75
RRF_K = 60.0
_F32 = np.float32
# Which indexes the numba top-k kernel scores (about twice numpy's speed; identical answers).
# Importing numba costs ~0.5-1 s, more than numpy loses on thousands of queries, so the kernel
# runs on an index of NUMBA_MIN_POSTINGS postings or more, or, once something else has imported
# numba (a server, a build, an HNSW search), of NUMBA_LOADED_MIN_POSTINGS or more.
NUMBA_MIN_POSTINGS = 1 << 22
NUMBA_LOADED_MIN_POSTINGS = 1 << 16
# Below NUMBA_MIN_POSTINGS the kernel also waits for the index to have its whole scoring arrays
# or to have answered this many queries: the kernel reads every posting's contribution, and
# building those for a per-term (lazy) index costs ~35 ms on 650,000 postings, more than a
# query saves. A process that opens the file anew for each query (the warm command line) then
# never pays that build; one that keeps it open (a server) pays it once, on this query.
KERNEL_AFTER_QUERIES = 16
_PREPARE_LOCK = threading.Lock()


def _py_logf(x: float) -> np.float32:
    # math.log rounds once from the exact value: correctly rounded except in rare ties.
    if x > 0:
        return _F32(math.log(x))
    return _F32("-inf") if x == 0 else _F32("nan")


def _libm_names():
    yield from ("libm.so.6", "libSystem.dylib", "msvcrt")
    import ctypes.util  # only when those fail: it imports subprocess (~7 ms)

    yield ctypes.util.find_library("m")  # last: it may run ldconfig or a compiler


def _load_logf():
    """The C library's ``logf`` (what Rust's ``f32::ln`` calls), or a Python fallback."""
    import ctypes  # loaded with the first query's idf, not at import

    fn = None
    for name in _libm_names():
        if not name:
            continue
        try:
            fn = ctypes.CDLL(name).logf
            break
        except (OSError, AttributeError):
            continue
    if fn is None:
        return _py_logf
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return lambda x: _F32(fn(x))


_logf = None


def f32_ln(x: float | np.floating) -> np.float32:
    """Natural log in f32, as the reference's ``f32::ln`` (the C library is loaded on first use)."""
    global _logf
    if _logf is None:
        _logf = _load_logf()
    return _logf(float(x))


def tokenize(text: str) -> list[str]:
    """The reference tokenizer, imported on first use (its Unicode tables cost ~0.1 s)."""
    from .tokenize import tokenize as reference_tokenize

    return reference_tokenize(text)


_KERNEL = None
_KERNEL_LOADED = False
_KERNEL_LOCK = threading.Lock()


def _numba_kernel():
    """The compiled top-k kernel, or None (no numba, or URNA_FORCE_SCALAR set)."""
    global _KERNEL, _KERNEL_LOADED
    if _KERNEL_LOADED:
        return _KERNEL
    with _KERNEL_LOCK:  # one compile even when the first searches run concurrently
        if not _KERNEL_LOADED and not force_scalar():
            from .kernel_cache import check

            check()  # before numba loads any cached kernel
            try:
                import numba
            except ImportError:  # numba is the optional "fast" extra
                numba = None
            if numba is not None:
                # no fastmath: the f32 sums must be added in the reference's order
                jit = numba.njit(cache=True, nogil=True, boundscheck=False)
                # the kernel calls the compiled helper: rebind its global to the jitted one
                scope = dict(_topk_kernel.__globals__, _heap_offer=jit(_heap_offer))
                _KERNEL = jit(types.FunctionType(_topk_kernel.__code__, scope, "_topk_kernel"))
        _KERNEL_LOADED = True
    return _KERNEL


def _heap_offer(out_sc, out_ids, size, k, s, d):
    """Offer hit (s, d) to the k-heap whose root is the worst kept hit; returns the new size.

    The caller has checked that a full heap's root loses to (s, d).
    """
    if size < k:
        c = size
        while c > 0:  # sift up
            par = (c - 1) // 2
            ps, pd = out_sc[par], out_ids[par]
            if ps < s or (ps == s and pd > d):
                break
            out_sc[c], out_ids[c] = ps, pd
            c = par
        out_sc[c], out_ids[c] = s, d
        return size + 1
    c = 0
    while True:  # replace the root, sift down
        lo = 2 * c + 1
        if lo >= size:
            break
        w = lo
        r = lo + 1
        if r < size and (out_sc[r] < out_sc[lo]
                         or (out_sc[r] == out_sc[lo] and out_ids[r] > out_ids[lo])):
            w = r
        ws, wd = out_sc[w], out_ids[w]
        if s < ws or (s == ws and d > wd):
            break
        out_sc[c], out_ids[c] = ws, wd
        c = w
    out_sc[c], out_ids[c] = s, d
    return size


def _topk_kernel(tids, offs, docs, contrib, n_docs, k, marked, out_ids, out_sc):
    """Scatter-add the query terms' postings, then keep the best ``k`` finite scores.

    With ``marked`` false every contribution is > 0, so a doc was touched iff its sum is not 0
    and the scan runs over the sums in doc order; otherwise touched docs are listed at first
    touch. Returns how many hits were kept in ``out_ids`` / ``out_sc`` (unordered).
    """
    acc = np.zeros(n_docs, dtype=np.float32)
    size = 0
    if not marked:
        for j in range(tids.shape[0]):
            t = tids[j]
            for p in range(offs[t], offs[t + 1]):
                acc[docs[p]] += contrib[p]
        for d in range(n_docs):
            s = acc[d]
            if size == k:
                # docs arrive in id order, so only a strictly better score enters; untouched
                # docs (0) and NaN fail this one well-predicted test, as the root is > 0
                if not s > out_sc[0]:
                    continue
            elif s == 0:
                continue
            if not np.isfinite(s):
                continue
            size = _heap_offer(out_sc, out_ids, size, k, s, d)
        return size
    mark = np.zeros(n_docs, dtype=np.uint8)
    total = 0
    for j in range(tids.shape[0]):
        total += offs[tids[j] + 1] - offs[tids[j]]
    touched = np.empty(total, dtype=np.int64)
    n = 0
    for j in range(tids.shape[0]):
        t = tids[j]
        for p in range(offs[t], offs[t + 1]):
            d = docs[p]
            if mark[d] == 0:
                mark[d] = 1
                touched[n] = d
                n += 1
            acc[d] += contrib[p]
    for i in range(n):
        d = touched[i]
        s = acc[d]
        if size == k and not (s > out_sc[0] or (s == out_sc[0] and d < out_ids[0])):
            continue
        if not np.isfinite(s):
            continue
        size = _heap_offer(out_sc, out_ids, size, k, s, d)
    return size


def _by_term(term_ids: np.ndarray, n_terms: int) -> np.ndarray:
    """The stable order of ``term_ids`` (numpy's radix sort, on 16-bit digits)."""
    if n_terms <= 1 << 16:
        return np.argsort(term_ids.astype(np.uint16), kind="stable")
    low = np.argsort((term_ids & 0xFFFF).astype(np.uint16), kind="stable")
    high = np.argsort((term_ids[low] >> 16).astype(np.uint16), kind="stable")  # n_terms < 2**32
    return low[high]


def _postings(term_ids: np.ndarray, doc_lens: np.ndarray,
              n_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc ids, term frequencies, offsets) of every term's postings, docs ascending (§8.2).

    ``term_ids`` lists the tokens doc after doc, so a stable sort by term leaves each term's
    tokens in doc order, and a posting is a run of one (term, doc) pair.
    """
    doc_of = np.repeat(np.arange(len(doc_lens), dtype=np.uint32), doc_lens)
    order = _by_term(term_ids, n_terms)
    terms, docs = term_ids[order], doc_of[order]
    head = np.ones(len(order), dtype=bool)
    head[1:] = (terms[1:] != terms[:-1]) | (docs[1:] != docs[:-1])
    heads = np.flatnonzero(head)
    tfs = np.diff(np.append(heads, len(order))).astype(np.uint32)
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms[heads], minlength=n_terms), out=offsets[1:])
    return docs[heads], tfs, offsets


def doc_knorms(k1: np.float32, b: np.float32, avgdl: np.float32,
               doc_lens: np.ndarray) -> np.ndarray:
    """``k1 * ((1 - b) + b * dl / max(avgdl, 1))`` of every doc, in the reference's f32 order."""
    dl = np.asarray(doc_lens, dtype=np.uint32).astype(_F32)
    with np.errstate(all="ignore"):  # hostile payloads may overflow; the scores say so
        return k1 * ((_F32(1.0) - b) + (b * dl) / max(avgdl, _F32(1.0)))


def posting_contributions(idf: np.ndarray | np.float32, tfs: np.ndarray, docs: np.ndarray,
                          knorms: np.ndarray, k1: np.float32) -> np.ndarray:
    """The query-independent score of each posting, the same f32 operations and order as the
    reference's per-query loop: ``(idf * (tf * (k1 + 1))) / (tf + knorm[doc])``."""
    with np.errstate(all="ignore"):
        tf = np.asarray(tfs, dtype=np.uint32).astype(_F32)
        return (idf * (tf * (k1 + _F32(1.0)))) / (tf + knorms[docs])


class Bm25Index:
    """A BM25 index: parameters, doc lengths and postings as flat arrays in term order."""

    def __init__(self, payload: Bm25Payload) -> None:
        self.payload = payload
        self.k1 = _F32(payload.k1)
        self.b = _F32(payload.b)
        self.avgdl = _F32(payload.avgdl)
        self.n_docs = int(payload.n_docs)
        self.n_terms = int(payload.n_terms)
        self.terms: Sequence[str] = payload.terms
        self.offsets = np.asarray(payload.post_offsets, dtype=np.int64)
        self.doc_lens = payload.doc_lens

    # The scoring tables below are built on the first query, not at open: a file's other verbs
    # never score BM25, and an open must not pay for it (the payload was validated already).
    _PREPARED = frozenset(("docs", "term_index", "_contrib", "_positive", "_nonpositive",
                           "_simple"))

    def __getattr__(self, name: str):
        if name in Bm25Index._PREPARED and "payload" in self.__dict__:
            with _PREPARE_LOCK:  # one build when the first queries arrive together
                if name not in self.__dict__:
                    self._prepare()
            return self.__dict__[name]
        raise AttributeError(name)

    def _prepare(self) -> None:
        """Per-posting contributions and the lookup tables every query reads."""
        payload = self.payload
        # int32 doc ids halve the index traffic of the scatter-add; n_docs is a u32, so ids past
        # 2**31 (never seen in practice) keep 64-bit ids
        # numpy indexes with intp: narrower doc ids would be converted on every query
        self.docs: np.ndarray[Any, np.dtype[np.signedinteger]] = np.asarray(
            payload.post_docs, dtype=np.uint32).astype(np.intp)
        self.term_index = {t: i for i, t in enumerate(payload.terms)}
        dfs = np.diff(self.offsets)
        term_of = np.repeat(np.arange(len(self.terms), dtype=np.intp), dfs)
        # idf depends only on (N, df): one logf call per distinct df
        uniq, inv = np.unique(dfs, return_inverse=True)
        idf = np.array([self.idf(int(d)) for d in uniq], dtype=_F32)[inv.reshape(-1)]
        self._contrib = posting_contributions(
            idf[term_of], payload.post_tfs, self.docs,
            doc_knorms(self.k1, self.b, self.avgdl, payload.doc_lens), self.k1)
        # A term whose every contribution is > 0 marks its docs through the sum alone.
        self._positive = np.ones(len(self.terms), dtype=bool)
        self._positive[term_of[~(self._contrib > 0)]] = False
        self._nonpositive = not self._positive.all()
        # Postings we build are strictly increasing per term; a decoded v1 payload may repeat a
        # doc inside one term, which then needs the slower unbuffered add.
        step = np.diff(self.docs) > 0
        starts = self.offsets[1:-1] - 1
        step[starts[(starts >= 0) & (starts < len(step))]] = True
        self._simple = np.ones(len(self.terms), dtype=bool)
        bad = np.flatnonzero(~step) + 1
        if len(bad):
            self._simple[np.searchsorted(self.offsets, bad, side="right") - 1] = False

    def _term(self, t: int) -> tuple[np.ndarray, np.ndarray, bool, bool]:
        """Term ``t``'s (doc ids, contributions, docs strictly increasing, every
        contribution > 0): what a query reads of one term."""
        lo, hi = self.offsets[t], self.offsets[t + 1]
        return (self.docs[lo:hi], self._contrib[lo:hi], bool(self._simple[t]),
                bool(self._positive[t]))

    def term_postings(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Term ``t``'s postings: (doc ids, uint32 term frequencies)."""
        lo, hi = int(self.offsets[t]), int(self.offsets[t + 1])
        return self.docs[lo:hi], np.asarray(self.payload.post_tfs[lo:hi], dtype=np.uint32)

    # -- construction ------------------------------------------------------------------
    @classmethod
    def build(cls, docs: Sequence[str], k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> Bm25Index:
        """Index ``docs`` (canonical chunk texts in chunk order) as the reference does."""
        from .tokenize_corpus import tokenize_corpus

        corpus = tokenize_corpus(docs)
        n_docs, n_terms = len(docs), len(corpus.terms)
        lens = corpus.doc_lens
        post_docs, post_tfs, offsets = _postings(corpus.term_ids, lens, n_terms)
        total = int(lens.sum())
        avgdl = float(_F32(total) / _F32(n_docs)) if n_docs else 0.0
        payload = Bm25Payload(
            BM25_PAYLOAD_VERSION, float(_F32(k1)), float(_F32(b)), avgdl, n_docs, n_terms,
            lens.astype(np.uint32), corpus.terms, offsets, post_docs, post_tfs,
        )
        return cls(payload)

    @classmethod
    def from_payload(cls, payload: Bm25Payload) -> Bm25Index:
        """Wrap a decoded 0x08 payload (see ``urna.format.sections.bm25.decode_bm25``)."""
        return cls(payload)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> Bm25Index:
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

    def term_id(self, term: str) -> int | None:
        """The id of ``term`` in the vocabulary, or None."""
        return self.term_index.get(term)

    def prefixed_terms(self, prefix: str) -> list[int]:
        """Ids of the vocabulary terms that begin with ``prefix``, in code point order."""
        order = self.__dict__.get("_by_order")
        if order is None:
            order = self._by_order = NameOrder(self.terms)  # racing threads: equal copies
        return order.prefixed(prefix)

    def _query_terms(self, text: str) -> list[int]:
        """The index's term ids of ``text``'s tokens, in query order, repeats kept."""
        return [t for t in map(self.term_id, tokenize(text)) if t is not None]

    def _dense_scores(self, tids: list[int]) -> np.ndarray:
        """Every doc's f32 score for the query terms ``tids`` (0 where untouched)."""
        acc = np.zeros(self.n_docs, dtype=_F32)
        fresh = True  # acc is still all zeros
        # a hostile payload's huge weights sum to inf, as the reference's f32 sums do: no warning
        with np.errstate(over="ignore", invalid="ignore"):
            for t in tids:  # query order, repeats included: f32 sums in the reference's order
                docs, contrib, simple, _ = self._term(t)
                if not simple:
                    np.add.at(acc, docs, contrib)
                elif fresh:
                    acc[docs] = contrib + _F32(0.0)  # 0.0 + x, as the reference
                else:
                    acc[docs] += contrib
                fresh = False
        return acc

    def scores(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Every matched doc id (in no particular order) and its f32 score, before ranking."""
        if self.n_docs == 0:
            return np.zeros(0, np.intp), np.zeros(0, _F32)
        return self._matches(self._query_terms(text), None)

    def _matches(self, tids: list[int], k: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Matched doc ids and scores for the query terms ``tids``; with ``k``, possibly only
        those that can still make the top ``k`` (a superset of it, ties included)."""
        if not tids:
            return np.zeros(0, np.intp), np.zeros(0, _F32)
        if len(tids) == 1:
            docs, contrib, simple, _ = self._term(tids[0])
            if simple:
                ids, sc = docs, contrib + _F32(0.0)  # 0.0 + x, as the reference
                bound = None if k is None else _top_k_bound(sc, k)
                if bound is None:
                    return ids, sc
                keep = sc >= bound
                return ids[keep], sc[keep]
        acc = self._dense_scores(tids)
        if all(self._term(t)[3] for t in tids):
            # sums of positive terms are never 0; the bound (when it holds) skips most docs
            bound = None if k is None else _top_k_bound(acc, k)
            ids = np.flatnonzero(acc != 0 if bound is None else acc >= bound)
        else:
            touched = np.zeros(self.n_docs, dtype=bool)
            for t in tids:
                touched[self._term(t)[0]] = True
            ids = np.flatnonzero(touched)
        return ids, acc[ids]

    def scores_of(self, text: str, rows: np.ndarray) -> np.ndarray:
        """The f32 BM25 score of each of ``rows`` for ``text`` (0 where a row has no match)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(rows.shape, dtype=_F32)
        ids, sc = self.scores(text)
        if len(ids) == 0 or rows.size == 0:
            return out
        dense = np.zeros(self.n_docs, dtype=_F32)
        with np.errstate(invalid="ignore"):
            dense[ids] = np.where(np.isfinite(sc), sc, _F32(0.0))
        inside = (rows >= 0) & (rows < self.n_docs)  # n_docs is not tied to the chunk count
        out[inside] = dense[rows[inside]]
        return out

    def document_frequency(self, term: str) -> int:
        """How many docs contain ``term`` (0 for a term the index lacks)."""
        t = self.term_id(term)
        return 0 if t is None else int(self.offsets[t + 1] - self.offsets[t])

    def doc_has_term(self, doc: int, term: str) -> bool:
        """Whether ``doc``'s postings hold ``term`` (a binary search in the term's postings)."""
        t = self.term_id(term)
        if t is None:
            return False
        posts, _, simple, _ = self._term(t)
        if simple:  # strictly increasing postings
            j = int(np.searchsorted(posts, doc))
            return j < len(posts) and int(posts[j]) == doc
        return bool(np.any(posts == doc))

    def _kernel_pays(self) -> bool:
        """Whether the scoring arrays are built, or this index has now answered enough queries
        (``KERNEL_AFTER_QUERIES``) for building them to pay; counts this query."""
        seen = self.__dict__  # not getattr: a missing scoring array would be built
        if "_contrib" in seen:
            return True
        queries = seen["_queries"] = seen.get("_queries", 0) + 1  # a race only miscounts
        return queries > KERNEL_AFTER_QUERIES

    def search_arrays(self, text: str, k: int,
                      mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` doc ids and f32 scores as arrays (see :meth:`search`).

        ``mask`` (one bool per doc, a ``where=`` filter) scores only the docs it keeps; a doc
        past its end is kept, so the caller still sees a doc id that has no chunk.
        """
        if k <= 0 or self.n_docs == 0:
            return np.zeros(0, np.intp), np.zeros(0, _F32)
        n_posts = int(self.offsets[-1]) if len(self.offsets) else 0
        # a thread preparing the kernels (kernel_rent) compiles this one too; the others wait
        # for it on numpy
        use_kernel = mask is None and kernel_rent.allowed() and (
            n_posts >= NUMBA_MIN_POSTINGS or (
                n_posts >= NUMBA_LOADED_MIN_POSTINGS and "numba" in sys.modules
                and (kernel_rent.forced() or self._kernel_pays())))
        kernel = _numba_kernel() if use_kernel else None
        if kernel is not None:
            tids = np.asarray([t for t in map(self.term_id, tokenize(text)) if t is not None],
                              np.intp)
            if len(tids) == 0:
                return np.zeros(0, np.intp), np.zeros(0, _F32)
            m = min(k, self.n_docs)
            ids, sc = np.empty(m, np.intp), np.empty(m, _F32)
            marked = bool(self._nonpositive) and not self._positive[tids].all()
            n = kernel(tids, self.offsets, self.docs, self._contrib, self.n_docs, m, marked,
                       ids, sc)
            ids, sc = ids[:n], sc[:n]
            order = np.lexsort((ids, -sc))
            return ids[order], sc[order]
        ids, sc = self._matches(self._query_terms(text), k if mask is None else None)
        if mask is not None:
            keep = ids >= len(mask)
            keep[~keep] = mask[ids[~keep]]
            ids, sc = ids[keep], sc[keep]
        keep = np.isfinite(sc)
        if not keep.all():
            ids, sc = ids[keep], sc[keep]
        if len(ids) > 4 * k:  # a few candidates are cheaper to sort whole
            # keep everything tied with the k-th score, then order exactly
            kth = np.partition(sc, len(sc) - k)[len(sc) - k]
            sel = sc >= kth
            ids, sc = ids[sel], sc[sel]
        order = np.lexsort((ids, -sc))[:k]
        return ids[order], sc[order]

    def search(self, text: str, k: int) -> list[tuple[int, float]]:
        """Top-``k`` ``(doc, score)`` pairs for ``text``: score descending, doc ascending.

        Example: ``Bm25Index.build(["red fox", "blue sky"]).search("fox", 5)``
        -> ``[(0, 0.69...)]``.
        """
        ids, sc = self.search_arrays(text, k)
        return [(int(i), float(s)) for i, s in zip(ids.tolist(), sc.tolist(), strict=True)]


def _top_k_bound(scores: np.ndarray, k: int) -> np.float32 | None:
    """A score the ``k``-th best finite score of ``scores`` reaches, or None.

    It is the least of ``k`` disjoint blocks' maxima: ``k`` scores reach it. None when that
    would not narrow much (few scores), when a block's maximum is not finite (NaN or inf are
    no witnesses: they are dropped from answers), or when it is not positive (0 is the score
    of an untouched doc in a dense array).
    """
    if len(scores) < 8 * k:
        return None
    maxima = scores[:len(scores) // k * k].reshape(k, -1).max(axis=1)  # NaN propagates
    if not np.isfinite(maxima).all():
        return None
    bound = maxima.min()
    return bound if bound > 0 else None


def rrf_union(vector_ids: Sequence[int], lexical_ids: Sequence[int]) -> list[int]:
    """Union of two ranked id lists ordered by reciprocal-rank fusion (§8.5 step 4).

    Rank ``r`` (0-based) contributes ``1 / (60 + r + 1)`` in f32, vector list first; the union
    is sorted by fused score descending, ties by id ascending.
    """
    vec = np.asarray(vector_ids, dtype=np.int64).reshape(-1)
    lex = np.asarray(lexical_ids, dtype=np.int64).reshape(-1)
    ids = sorted_distinct(np.concatenate((vec, lex)))
    if len(sorted_distinct(vec)) != len(vec) or len(sorted_distinct(lex)) != len(lex):
        return _rrf_union_in_turn(vec.tolist(), lex.tolist())  # a list repeats an id
    # Each id has at most one contribution from each list: the vector one, then the lexical
    # one, added in f32 to 0 in that order, as the sum in turn does.
    fused = np.zeros(len(ids), dtype=_F32)
    fused[np.searchsorted(ids, vec)] += _rrf_contributions(len(vec))
    fused[np.searchsorted(ids, lex)] += _rrf_contributions(len(lex))
    return ids[np.lexsort((ids, -fused))].tolist()


def _rrf_contributions(n: int) -> np.ndarray:
    """``1 / (60 + r + 1)`` in f32 for ranks ``r`` below ``n`` (elementwise IEEE f32, as the
    scalar sum)."""
    one = _F32(1.0)
    return one / (_F32(RRF_K) + np.arange(n, dtype=np.int64).astype(_F32) + one)


def _rrf_union_in_turn(vector_ids: list[int], lexical_ids: list[int]) -> list[int]:
    fused: dict[int, np.float32] = {}
    for ids in (vector_ids, lexical_ids):
        for i, c in zip(ids, _rrf_contributions(len(ids)), strict=True):
            fused[int(i)] = fused.get(int(i), _F32(0.0)) + c
    return sorted(fused, key=lambda i: (-fused[i], i))
