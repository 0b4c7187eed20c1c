"""Exact scoring and top-k over a vector slab, per stored dtype (03-runtime §2.3, §4, §5).

One job: given a slab view (float32 / float16 / int8 / int4, as laid out in the file) and a
normalised float32 query, score rows and select the best k. Knows nothing of files or hits.

Invariants:
* **Rerank invariant.** :func:`score_rows` gives every row a score that depends only on
  (query, row bytes, dtype): the reference's own operation order per dtype
  (:mod:`urna.index.row_scores`), whether that is every row (exact search) or a candidate
  list (HNSW / hybrid / graph rerank), so scores equal the reference wheel's bit for bit.
* **Exact top-k.** :func:`top_k` returns exactly the first k of the full sort by
  (score desc, index asc, NaN last); ties at the cut-off go to the lower index.
* The batch path (:func:`search_batch`) screens with one BLAS ``sgemm`` and then rescores the
  screened rows with :func:`score_rows`, widening the screen by a rigorous bound on the f32
  rounding of both computations, so it returns exactly what :func:`search` returns.

Backends compute the same bits: ``numpy`` (:mod:`row_scores`, vectorised across rows) for
short row lists, so a CLI query never imports numba; ``numba`` (:mod:`_row_scores_jit`) for
long scans when it imports, passes its self-check and ``URNA_FORCE_SCALAR`` is unset or "0".
The order follows :func:`simd_backend`: the reference's AVX2 lanes, or its sequential scalar
sums when that label is ``scalar``.
"""

from __future__ import annotations

import math
import os
import platform
import threading
from dataclasses import dataclass, field

import numpy as np

from .row_scores import score_block, unpack_int4

F32 = np.float32
_U = 2.0 ** -24  # unit roundoff of binary32
_BLOCK = 8192  # rows per block in the numpy / BLAS paths (bounds the temporaries)
# Row lists shorter than this many values are scored by numpy: importing numba and loading
# its kernels costs ~0.5 s, more than a lifetime of short rescoring. Both give the same bits.
NUMBA_MIN_VALUES = 1 << 20
# Slabs with more rows than this are screened (one BLAS product) before the exact rescoring.
SCREEN_MIN_ROWS = 64


# --- backend --------------------------------------------------------------------------------

def _force_scalar() -> bool:
    v = os.environ.get("URNA_FORCE_SCALAR")
    return v is not None and v != "0"


def _load_numba():
    if _order() != "lanes":  # the compiled kernels implement the lane order only
        return None
    try:
        from . import _row_scores_jit
    except Exception:  # numba is an optional extra; its absence means the numpy path
        return None
    return _row_scores_jit.load()


_NUMBA = None
_NUMBA_LOADED = False
_NUMBA_LOCK = threading.Lock()


def _kernels():
    global _NUMBA, _NUMBA_LOADED
    if not _NUMBA_LOADED:
        with _NUMBA_LOCK:  # first searches from several threads compile once
            if not _NUMBA_LOADED:
                _NUMBA = _load_numba()
                _NUMBA_LOADED = True
    return _NUMBA


def load_kernels() -> bool:
    """Load the compiled kernels now (long-running processes: every rescoring then uses them).

    Returns whether they are in use. Scores are the same bits either way; a CLI call never
    needs this (numpy rescoring of a few hundred rows costs ~1-2 ms, loading ~0.3 s).
    """
    return _kernels() is not None


def backend() -> str:
    """The scoring backend in use: ``"numba"`` or ``"numpy"``."""
    return "numba" if _kernels() is not None else "numpy"


_SIMD: list[str] = []


def simd_backend() -> str:
    """The reference's label for this machine's kernels: ``scalar``, ``avx2`` or ``neon``.

    Detected once per process like the reference: ``URNA_FORCE_SCALAR``, then the CPU.
    """
    if not _SIMD:
        _SIMD.append(_detect_simd())
    return _SIMD[0]


def _order() -> str:
    """The reduction order of the scores: the reference's on this machine's label."""
    return "sequential" if simd_backend() == "scalar" else "lanes"


def _detect_simd() -> str:
    if _force_scalar():
        return "scalar"
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "neon"
    if machine in ("x86_64", "amd64"):
        try:
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
                flags = fh.read()
            if " avx2" in flags and " fma" in flags:
                return "avx2"
        except OSError:
            return "scalar"
    return "scalar"


# --- slabs ----------------------------------------------------------------------------------

@dataclass
class Slab:
    """A read-only view of ``n`` stored rows of width ``dim`` in one dtype.

    float32: ``a`` (n, dim) float32. float16: ``a`` (n, dim) float16. int8: ``a`` codes
    (n, dim) int8 and ``scales`` (n,) float32. int4: ``a`` packed (n, dim/2) uint8 and
    ``scales`` (n, dim/64) float16.
    """

    dtype: str
    n: int
    dim: int
    a: np.ndarray
    scales: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def float32(cls, a: np.ndarray) -> Slab:
        """Wrap an (n, dim) float32 matrix (no copy)."""
        return cls("float32", a.shape[0], a.shape[1], a)

    @classmethod
    def float16(cls, a: np.ndarray) -> Slab:
        """Wrap an (n, dim) float16 matrix (no copy)."""
        return cls("float16", a.shape[0], a.shape[1], a)

    @classmethod
    def int8(cls, scales: np.ndarray, codes: np.ndarray) -> Slab:
        """Wrap per-row f32 scales and (n, dim) int8 codes (no copy)."""
        return cls("int8", codes.shape[0], codes.shape[1], codes, scales)

    @classmethod
    def int4(cls, scales: np.ndarray, packed: np.ndarray, dim: int) -> Slab:
        """Wrap (n, dim/64) f16 group scales and (n, dim/2) packed nibbles (no copy)."""
        return cls("int4", packed.shape[0], dim, packed, scales)

    def _get(self, key: str, make):
        val = self._cache.get(key)
        if val is None:
            val = make()
            self._cache[key] = val
        return val

    # finite but huge scales overflow to inf, as in f32
    @np.errstate(over="ignore", invalid="ignore")
    def dequantize(self, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo..hi`` as float32 values (§2.2 element-wise, for screening and HNSW)."""
        if self.dtype == "float32":
            return np.asarray(self.a[lo:hi], dtype=F32)
        if self.dtype == "float16":
            return self.a[lo:hi].astype(F32)
        assert self.scales is not None  # quantised slabs always carry their scales
        if self.dtype == "int8":
            return self.a[lo:hi].astype(F32) * self.scales[lo:hi, None]
        codes = unpack_int4(self.a[lo:hi]).astype(F32)
        g = self.dim // 64
        sc = self.scales[lo:hi].astype(F32).reshape(hi - lo, g, 1)
        return (codes.reshape(hi - lo, g, 64) * sc).reshape(hi - lo, self.dim)

    def max_row_norm(self) -> float:
        """An upper bound of the largest L2 norm of a dequantized row (cached; inf on overflow)."""
        def make() -> float:
            best = 0.0
            for lo in range(0, self.n, _BLOCK):
                x = self.dequantize(lo, min(self.n, lo + _BLOCK))
                with np.errstate(over="ignore", invalid="ignore"):
                    sq = np.einsum("ij,ij->i", x, x)
                if sq.size:
                    best = max(best, float(sq.max()))
            # an f32 sum of d non-negative terms is within gamma_d of the true sum
            return math.sqrt(best * (1.0 + 2.0 * (self.dim + 2) * _U)) * (1.0 + 2.0 * _U)
        return self._get("rnorm", make)


# --- deterministic per-row scores -----------------------------------------------------------

_NUMPY_BLOCK = 1024  # rows per numpy block: the f64 products of a block stay in cache


def _score_numpy(slab: Slab, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rows' scores by :func:`row_scores.score_block`, block by block."""
    order = _order()
    out = np.empty(len(rows), dtype=F32)
    for lo in range(0, len(rows), _NUMPY_BLOCK):
        r = rows[lo:lo + _NUMPY_BLOCK]
        sc = None if slab.scales is None else slab.scales[r]
        out[lo:lo + len(r)] = score_block(slab.dtype, slab.a[r], sc, q, order)
    return out


def _use_numba(rows: int, dim: int) -> bool:
    """Long scans go to the compiled kernels (same bits); short ones never import numba."""
    if _NUMBA_LOADED:
        return _NUMBA is not None
    return rows * dim >= NUMBA_MIN_VALUES and _order() == "lanes" and _kernels() is not None


def score_rows(slab: Slab, q: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Scores of ``rows`` (all rows when None) against the normalised query ``q`` (float32)."""
    q = np.ascontiguousarray(q, dtype=F32)
    if rows is None:
        rows = slab._get("arange", lambda: np.arange(slab.n, dtype=np.int64))
    else:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= slab.n):
        raise IndexError("row index out of range")
    if not len(rows) or not _use_numba(len(rows), slab.dim):
        return _score_numpy(slab, q, rows)
    from ._hnsw_dist import vectorizing  # numba is loaded by now

    with vectorizing():  # a new array layout compiles on this call: lanes into SIMD
        return _score_compiled(slab, q, rows)


def _score_compiled(slab: Slab, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    k = _kernels()
    out = np.empty(len(rows), dtype=F32)
    if slab.dtype == "float32":
        k["f32"](slab.a, q, rows, out)
    elif slab.dtype == "float16":
        u16 = slab._get("u16", lambda: slab.a.view(np.uint16))
        k["f16"](u16, q, rows, out)
    elif slab.dtype == "int8":
        k["i8"](slab.a, slab.scales, q, rows, out)
    else:
        sc = slab._get("sc32", lambda: np.ascontiguousarray(slab.scales, dtype=F32))
        k["i4"](slab.a, sc, q, rows, out)
    return out


# --- ordering -------------------------------------------------------------------------------

def rank(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` (id, score) pairs by score desc, id asc, NaN last (§4), full-sort exact."""
    ids = np.asarray(ids, dtype=np.int64)
    scores = np.asarray(scores, dtype=F32)
    n = len(ids)
    if n == 0 or k <= 0:
        return ids[:0], scores[:0]
    neg = -scores + F32(0.0)  # +0.0 folds -0.0, so both zeros tie and the index decides
    if k < n:
        kth = np.partition(neg, k - 1)[k - 1]
        if not np.isnan(kth):
            sel = np.flatnonzero(neg <= kth)  # every row that can be in the top k, ties too
            ids, scores, neg = ids[sel], scores[sel], neg[sel]
    order = np.lexsort((ids, neg))  # NaN sorts last in numpy's order
    order = order[:k]
    return ids[order], scores[order]


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the best ``k`` of ``scores`` (index = position)."""
    return rank(np.arange(len(scores), dtype=np.int64), scores, k)


def search(slab: Slab, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of the slab for one normalised query: (row ids, scores).

    Slabs past a few rows are screened with one BLAS product (float32 straight over the map)
    and only the rows near the cut-off are scored exactly; the result is the same as scoring
    every row (see :func:`search_batch`). Long quantised slabs are scanned by the compiled
    kernels instead when numba is there (faster than dequantising for the screen).
    """
    if 0 < k < slab.n and slab.n > SCREEN_MIN_ROWS:
        scan = (slab.dtype != "float32" and slab.n * slab.dim >= NUMBA_MIN_VALUES
                and _use_numba(slab.n, slab.dim))
        if not scan:
            ids, scores = search_batch(slab, np.asarray(q, dtype=F32)[None, :], k)
            return ids[0], scores[0]
    return top_k(score_rows(slab, q), k)


def rerank(slab: Slab, q: np.ndarray, candidates, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Score a candidate set with the exact kernel and keep the best ``k`` (§7.6 step 4)."""
    cand = np.unique(np.asarray(list(candidates) if not isinstance(candidates, np.ndarray)
                                else candidates, dtype=np.int64))
    return rank(cand, score_rows(slab, q, cand), k)


def search_batch(slab: Slab, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k for every row of ``Q`` (normalised queries): (m, k') ids and scores.

    One BLAS ``sgemm`` per chunk of queries screens every row (straight over the mapped
    float32 slab; quantised slabs are dequantised block by block); rows whose screened score
    is within twice the rounding bound of the k-th are rescored by :func:`score_rows`, so each
    answer equals :func:`search` on that query.
    """
    Q = np.ascontiguousarray(Q, dtype=F32)
    m, n = Q.shape[0], slab.n
    kk = min(k, n)
    ids = np.zeros((m, kk), dtype=np.int64)
    out = np.zeros((m, kk), dtype=F32)
    if m == 0 or kk <= 0:
        return ids, out
    # |sgemm - kernel| <= 2 * gamma_{dim+2} * |q| * max|row| (dequantisation included); delta
    # is twice that, and a window of two deltas below the k-th catches every true top-k row.
    qn = float(np.sqrt((Q.astype(np.float64) ** 2).sum(axis=1)).max())
    delta = 4.0 * (slab.dim + 4) * _U * qn * slab.max_row_norm()
    chunk = max(1, min(m, (64 << 20) // (4 * n)))  # bound the score matrix to ~64 MB
    for lo in range(0, m, chunk):
        Qc = Q[lo:lo + chunk]
        S = _screen(slab, Qc)
        kth = np.partition(S, n - kk, axis=1)[:, n - kk]
        for j in range(Qc.shape[0]):
            s = S[j]
            if not (np.isfinite(delta) and np.isfinite(s).all()):
                rid, rsc = top_k(score_rows(slab, Qc[j]), kk)  # overflow: score every row
            else:
                cand = np.flatnonzero(s >= kth[j] - 2.0 * delta)
                rid, rsc = rank(cand, score_rows(slab, Qc[j], cand), kk)
            ids[lo + j, :len(rid)], out[lo + j, :len(rsc)] = rid, rsc
    return ids, out


def _screen(slab: Slab, Qc: np.ndarray) -> np.ndarray:
    """Approximate scores of every row for a chunk of queries (BLAS)."""
    if slab.dtype == "float32":
        with np.errstate(all="ignore"):
            return Qc @ slab.a.T  # the mapped rows, no copy: sgemm reads them transposed
    S = np.empty((Qc.shape[0], slab.n), dtype=F32)
    for lo in range(0, slab.n, _BLOCK):
        hi = min(slab.n, lo + _BLOCK)
        with np.errstate(all="ignore"):
            S[:, lo:hi] = Qc @ slab.dequantize(lo, hi).T
    return S
