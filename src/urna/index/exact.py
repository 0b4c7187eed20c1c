"""Exact scoring and top-k over a vector slab, per stored dtype (03-runtime §2.3, §4, §5).

One job: given a slab view (float32 / float16 / int8 / int4, as laid out in the file) and a
normalised float32 query, score rows and select the best k. Knows nothing of files or hits.

Invariants:
* **Rerank invariant.** :func:`score_rows` gives every row a score that depends only on
  (query, row bytes, dtype): one compiled kernel per dtype walks the requested rows, whether
  that is every row (exact search) or a candidate list (HNSW / hybrid / graph rerank).
* **Exact top-k.** :func:`top_k` returns exactly the first k of the full sort by
  (score desc, index asc, NaN last); ties at the cut-off go to the lower index.
* The batch path (:func:`search_batch`) screens with one BLAS ``sgemm`` and then rescores the
  screened rows with :func:`score_rows`, widening the screen by a rigorous bound on the f32
  rounding of both computations, so it returns exactly what :func:`search` returns.

Backends: ``numba`` (compiled row loops, SIMD through LLVM) when numba imports and
``URNA_FORCE_SCALAR`` is unset or "0"; otherwise ``numpy`` (per-row reductions along the
contiguous axis, which numpy evaluates identically for every row). Chosen once per process.
"""

from __future__ import annotations

import math
import os
import platform
import threading
from dataclasses import dataclass, field

import numpy as np

F32 = np.float32
_U = 2.0 ** -24  # unit roundoff of binary32
_BLOCK = 8192  # rows per block in the numpy / BLAS paths (bounds the temporaries)
# Slabs smaller than this many values are scored by numpy: importing numba costs ~1 s, more
# than a lifetime of scans of a small file. The choice is per slab, so every row of one slab
# is always scored by the same kernel (the rerank invariant holds per slab).
NUMBA_MIN_VALUES = 1 << 20
_TWO112 = np.float32(2.0 ** 112)  # exact power of two: rescales a shifted half to its value


# --- backend --------------------------------------------------------------------------------

def _force_scalar() -> bool:
    v = os.environ.get("URNA_FORCE_SCALAR")
    return v is not None and v != "0"


def _load_numba():
    if _force_scalar():
        return None
    try:
        import numba  # noqa: F401
    except Exception:  # numba is an optional extra; its absence means the numpy path
        return None
    return _build_numba_kernels()


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


def _numba_available() -> bool:
    if _NUMBA_LOADED:
        return _NUMBA is not None
    import importlib.util

    return not _force_scalar() and importlib.util.find_spec("numba") is not None


def backend() -> str:
    """The scoring backend in use: ``"numba"`` or ``"numpy"``."""
    return "numba" if _kernels() is not None else "numpy"


def simd_backend() -> str:
    """The reference's label for this machine's kernels: ``scalar``, ``avx2`` or ``neon``.

    Answered without importing numba (~0.5 s) when no kernel has been needed yet: whether
    numba is installed (and not disabled) decides, as it decides which kernels would run.
    """
    if not _numba_available():
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
        if self.dtype == "int8":
            return self.a[lo:hi].astype(F32) * self.scales[lo:hi, None]
        codes = _unpack_int4(self.a[lo:hi]).astype(F32)
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


def _unpack_int4(packed: np.ndarray) -> np.ndarray:
    """Packed nibbles (rows, dim/2) -> int8 codes (rows, dim); low nibble = even component."""
    p = np.asarray(packed, dtype=np.uint8)
    out = np.empty(p.shape[:-1] + (p.shape[-1] * 2,), dtype=np.int8)
    out[..., 0::2] = ((p & 0x0F).astype(np.int8) ^ 8) - 8
    out[..., 1::2] = ((p >> 4).astype(np.int8) ^ 8) - 8
    return out


# --- deterministic per-row scores -----------------------------------------------------------

# overflow gives inf or NaN as f32 does (NaN ranks last)
@np.errstate(over="ignore", invalid="ignore")
def _score_numpy(slab: Slab, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Row-wise reductions along the contiguous axis: the same arithmetic for every row."""
    out = np.empty(len(rows), dtype=F32)
    for lo in range(0, len(rows), _BLOCK):
        r = rows[lo:lo + _BLOCK]
        if slab.dtype == "float32":
            s = (slab.a[r] * q).sum(axis=1, dtype=F32)
        elif slab.dtype == "float16":
            s = (slab.a[r].astype(F32) * q).sum(axis=1, dtype=F32)
        elif slab.dtype == "int8":
            s = (slab.a[r].astype(F32) * q).sum(axis=1, dtype=F32) * slab.scales[r]
        else:
            g = slab.dim // 64
            prod = _unpack_int4(slab.a[r]).astype(F32) * q
            parts = prod.reshape(len(r), g, 64).sum(axis=2, dtype=F32)
            sc = slab.scales[r].astype(F32)
            s = np.zeros(len(r), dtype=F32)
            for j in range(g):  # groups in order, scale applied per finished group (§2.3)
                s += parts[:, j] * sc[:, j]
        out[lo:lo + len(r)] = s
    return out


def score_rows(slab: Slab, q: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Scores of ``rows`` (all rows when None) against the normalised query ``q`` (float32)."""
    q = np.ascontiguousarray(q, dtype=F32)
    if rows is None:
        rows = slab._get("arange", lambda: np.arange(slab.n, dtype=np.int64))
    else:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= slab.n):
        raise IndexError("row index out of range")
    k = slab._get("kernels", lambda: _kernels() if slab.n * slab.dim >= NUMBA_MIN_VALUES
                  else False)
    if not k:
        return _score_numpy(slab, q, rows)
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
        k["i4"](slab.a, sc, np.ascontiguousarray(q[0::2]), np.ascontiguousarray(q[1::2]),
                rows, out)
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

    Large float32 slabs are screened with one BLAS ``sgemv`` over the map (the memory-bound
    floor) and only the rows near the cut-off are scored by the kernel; the result is the
    same as scoring every row with the kernel (see :func:`search_batch`).
    """
    if (slab.dtype == "float32" and 0 < k < slab.n and slab.n * slab.dim >= NUMBA_MIN_VALUES
            and _kernels() is not None):
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


# --- numba kernels --------------------------------------------------------------------------

def _build_numba_kernels() -> dict:
    """Compile the per-dtype row loops (lazily, cached on disk by numba)."""
    import numba

    # reassociation lets LLVM vectorise the reductions; no nnan/ninf, so an overflow stays inf
    opts = dict(nogil=True, cache=True, boundscheck=False,
                fastmath={"reassoc", "contract", "nsz", "arcp"})

    @numba.njit(**opts)
    def f32(M, q, rows, out):
        d = M.shape[1]
        for t in range(rows.shape[0]):
            i = rows[t]
            acc = np.float32(0.0)
            for j in range(d):
                acc += M[i, j] * q[j]
            out[t] = acc

    @numba.njit(**opts)
    def f16(H, q, rows, out):
        d = H.shape[1]
        bits = np.empty(d, dtype=np.uint32)
        vals = bits.view(np.float32)
        for t in range(rows.shape[0]):
            i = rows[t]
            # Exact binary16 -> binary32 widening: move exponent+mantissa into place, scale
            # by 2^112 (also exact for subnormal halves), then apply the sign. Rows are
            # finite (checked at open), so Inf/NaN halves never reach this loop.
            for j in range(d):
                bits[j] = np.uint32(H[i, j] & 0x7FFF) << np.uint32(13)
            acc = np.float32(0.0)
            for j in range(d):
                sign = np.float32(1.0) - np.float32(2.0) * np.float32(H[i, j] >> 15)
                acc += (vals[j] * _TWO112) * sign * q[j]
            out[t] = acc

    @numba.njit(**opts)
    def i8(C, scales, q, rows, out):
        d = C.shape[1]
        for t in range(rows.shape[0]):
            i = rows[t]
            acc = np.float32(0.0)
            for j in range(d):
                acc += q[j] * np.float32(C[i, j])
            out[t] = acc * scales[i]

    @numba.njit(**opts)
    def i4(P, scales, qe, qo, rows, out):
        g_count = scales.shape[1]
        for t in range(rows.shape[0]):
            i = rows[t]
            acc = np.float32(0.0)
            for g in range(g_count):
                part = np.float32(0.0)
                base = g * 32
                for b in range(32):
                    byte = np.int32(P[i, base + b])
                    lo = ((byte & 0x0F) ^ 8) - 8
                    hi = ((byte >> 4) ^ 8) - 8
                    part += qe[base + b] * np.float32(lo) + qo[base + b] * np.float32(hi)
                acc += part * scales[i, g]
            out[t] = acc

    return {"f32": f32, "f16": f16, "i8": i8, "i4": i4}
