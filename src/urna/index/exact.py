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
* The screened search (:func:`search`, over every row or a row list ``rows=``, split across
  threads) rescores only the rows within a proven bound of the screened cut-off (the note
  above :func:`resolve_threads`), so it returns what scoring every candidate returns. With
  the compiled screens, the cut, the exact rescoring (the :mod:`_row_scores_jit` kernels) and
  the ranking run in one compiled call after the screen (``finish``), or with it on one
  thread (``top``); the numpy path computes the same answer.
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
import threading
import time
from collections.abc import Iterable

import numpy as np

from ..errors import InvalidInput
from ..format.record import Record
from . import kernel_rent
from .arrays import negative_zeros, sorted_distinct
from .cpu import simd_backend
from .kernel_rent import KernelRent
from .row_scores import dequantized, score_block

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class NormMemo(Protocol):
        """Where a slab's row-norm bound is kept between processes (``runtime.verdicts``)."""

        def get(self) -> float | None: ...

        def put(self, bound: float) -> None: ...

F32 = np.float32
_U = 2.0 ** -24  # unit roundoff of binary32
_BLOCK = 8192  # rows per block in the numpy / BLAS paths (bounds the temporaries)
# Row lists shorter than this many values are scored by numpy: importing numba and loading
# its kernels costs ~0.5 s, more than a lifetime of short rescoring. Both give the same bits.
NUMBA_MIN_VALUES = 1 << 20
# Slabs with more rows than this are screened (one BLAS product) before the exact rescoring.
SCREEN_MIN_ROWS = 64


# --- backend --------------------------------------------------------------------------------

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
    """Load the compiled kernels now (long-running processes: every rescoring and screen then
    uses them, from the first query on instead of after the screens' rent is paid).

    Returns whether they are in use. Scores are the same bits either way; a CLI call never
    needs this (numpy rescoring of a few hundred rows costs ~1-2 ms, loading ~0.5 s).
    """
    if _kernels() is None:
        return False
    _scan_kernels()
    return True


def backend() -> str:
    """The scoring backend in use: ``"numba"`` or ``"numpy"``."""
    return "numba" if _kernels() is not None else "numpy"


def _order() -> str:
    """The reduction order of the scores: the reference's on this machine's label."""
    return "sequential" if simd_backend() == "scalar" else "lanes"


# --- slabs ----------------------------------------------------------------------------------

# Slotted records, not dataclasses: every search imports this module (format/record.py says
# why; the generated classes cost ~2 ms of a one-shot ``urna search``).
class Slab(Record):
    """A read-only view of ``n`` stored rows of width ``dim`` in one dtype.

    float32: ``a`` (n, dim) float32. float16: ``a`` (n, dim) float16. int8: ``a`` codes
    (n, dim) int8 and ``scales`` (n,) float32. int4: ``a`` packed (n, dim/2) uint8 and
    ``scales`` (n, dim/64) float16. ``_cache`` (not a field) keeps what ``_get`` derived;
    ``norm_memo`` (not a field either) keeps :meth:`max_row_norm` beyond this process.
    """

    _fields = ("dtype", "n", "dim", "a", "scales")
    __slots__ = (*_fields, "_cache", "norm_memo")

    def __init__(self, dtype: str, n: int, dim: int, a: np.ndarray,
                 scales: np.ndarray | None = None, _cache: dict | None = None) -> None:
        self.dtype, self.n, self.dim, self.a, self.scales = dtype, n, dim, a, scales
        self._cache = {} if _cache is None else _cache
        self.norm_memo: NormMemo | None = None

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

    def dequantize(self, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo..hi`` as float32 values (§2.2 element-wise, for screening and HNSW)."""
        return dequantized(self.dtype, self.a[lo:hi],
                           None if self.scales is None else self.scales[lo:hi])

    def max_row_norm(self) -> float:
        """An upper bound of the largest L2 norm of a dequantized row (cached; inf on overflow).

        A ``norm_memo`` (the runtime's, for rows of a verified body) gives the bound an earlier
        process measured on these same rows, and keeps the one measured here: the pass reads
        every row, as the screen it serves does (2 ms for 20,000 x 256 float32 rows, ~11 ms
        for int8 ones, which it dequantizes)."""
        def make() -> float:
            memo = self.norm_memo
            kept = None if memo is None else memo.get()
            if kept is not None:
                return kept
            bound = row_norm_bound(self)
            if memo is not None:
                memo.put(bound)
            return bound
        return self._get("rnorm", make)


def row_norm_bound(slab: Slab) -> float:
    """An upper bound of the largest L2 norm of a dequantized row of ``slab``: one pass over
    every row (inf on overflow)."""
    best = 0.0
    for lo in range(0, slab.n, _BLOCK):
        x = slab.dequantize(lo, min(slab.n, lo + _BLOCK))
        with np.errstate(over="ignore", invalid="ignore"):
            sq = np.einsum("ij,ij->i", x, x)
        if sq.size:
            best = max(best, float(sq.max()))
    # an f32 sum of d non-negative terms is within gamma_d of the true sum
    return math.sqrt(best * (1.0 + 2.0 * (slab.dim + 2) * _U)) * (1.0 + 2.0 * _U)


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
    """Long scans go to the compiled kernels (same bits), and every scoring once the numpy
    paths have spent their load (``_RENT``: a resident process rescoring pools query after
    query); a short process never imports numba, nor one whose kernels another thread is
    preparing (``kernel_rent.allowed``)."""
    if not kernel_rent.allowed():
        return False
    if _NUMBA_LOADED:
        return _NUMBA is not None
    return ((rows * dim >= NUMBA_MIN_VALUES or _RENT.paid()) and _order() == "lanes"
            and _kernels() is not None)


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
        t0 = time.perf_counter()
        scores = _score_numpy(slab, q, rows)
        _RENT.charge(t0)
        return scores
    from ._hnsw_dist import vectorizing  # numba is loaded by now

    with vectorizing():  # a new array layout compiles on this call: lanes into SIMD
        return _score_compiled(slab, q, rows)


_KERNEL_NAMES = {"float32": "f32", "float16": "f16", "int8": "i8", "int4": "i4"}


def _exact_args(slab: Slab) -> tuple:
    """The slab as the compiled exact kernels take it (before the query)."""
    if slab.dtype == "float32":
        return (slab.a,)
    if slab.dtype == "float16":
        return (slab._get("u16", lambda: slab.a.view(np.uint16)),)
    if slab.dtype == "int8":
        return (slab.a, slab.scales)
    return (slab.a, slab._get("sc32", lambda: np.ascontiguousarray(slab.scales, dtype=F32)))


def _score_compiled(slab: Slab, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    out = np.empty(len(rows), dtype=F32)
    _kernels()[_KERNEL_NAMES[slab.dtype]](*_exact_args(slab), q, rows, out)
    return out


# --- ordering -------------------------------------------------------------------------------

def rank(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` (id, score) pairs by score desc, id asc, NaN last (§4), full-sort exact."""
    ids = np.asarray(ids, dtype=np.int64)
    scores = np.asarray(scores, dtype=F32)
    n = len(ids)
    if n == 0 or k <= 0:
        return ids[:0], scores[:0]
    neg = -scores
    if k < n:
        kth = np.partition(neg, k - 1)[k - 1]
        if not np.isnan(kth):
            sel = np.flatnonzero(neg <= kth)  # every row that can be in the top k, ties too
            ids, scores, neg = ids[sel], scores[sel], neg[sel]
    # IEEE total order puts +0.0 before -0.0 (an int8 score, its sum times the row's scale,
    # is -0.0 when that product underflows from below or the scale is 0);
    # numpy's compare calls them equal, so the sign of a zero is a key of its own.
    order = np.lexsort((ids, negative_zeros(scores), neg))  # NaN sorts last in numpy's order
    order = order[:k]
    return ids[order], scores[order]


def descending_key(score: float) -> tuple[bool, float, bool]:
    """Sort key of one score in :func:`rank`'s order: NaN last, then descending IEEE total
    order (+0.0 before -0.0)."""
    nan = score != score
    return (nan, 0.0 if nan else -score, score == 0 and math.copysign(1.0, score) < 0)


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the best ``k`` of ``scores`` (index = position)."""
    return rank(np.arange(len(scores), dtype=np.int64), scores, k)


def search(slab: Slab, q: np.ndarray, k: int, threads: int | None = None,
           rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of the slab (or of its ``rows``) for one normalised query: (row ids, scores).

    Past a few rows the candidates are screened (:func:`screen`, split across ``threads``)
    and only those within the proven screen bound of the cut-off are scored exactly; the
    result is the same as scoring every candidate, whatever the thread count. ``rows`` (the
    filtered scan: distinct row indices) restricts the candidates; ids are slab rows.
    """
    cand = None if rows is None else _row_list(slab, rows)
    count = slab.n if cand is None else len(cand)
    if 0 < k < count and count > SCREEN_MIN_ROWS:
        got = _screened_search(slab, np.ascontiguousarray(q, dtype=F32), k, threads, cand)
        if got is not None:
            return got
    if cand is None:
        return top_k(score_rows(slab, q), k)
    return rank(cand, score_rows(slab, q, cand), k)


def _row_list(slab: Slab, rows: np.ndarray) -> np.ndarray:
    """``rows`` as contiguous int64 slab indices, checked against the slab."""
    cand = np.ascontiguousarray(rows, dtype=np.int64)
    if cand.ndim != 1:
        raise InvalidInput("rows must be a one-dimensional list of row indices")
    if len(cand) and (cand.min() < 0 or cand.max() >= slab.n):
        raise IndexError("row index out of range")
    return cand


def rerank(slab: Slab, q: np.ndarray, candidates: Iterable[int] | np.ndarray,
           k: int) -> tuple[np.ndarray, np.ndarray]:
    """Score a candidate set with the exact kernel and keep the best ``k`` (§7.6 step 4)."""
    cand = sorted_distinct(np.asarray(list(candidates) if not isinstance(candidates, np.ndarray)
                                else candidates, dtype=np.int64))
    return rank(cand, score_rows(slab, q, cand), k)


# --- the screen: approximate scores at the read rate, then the exact kernel near the cut-off --
#
# Why the answers equal the full per-row scan. Let R bound every dequantized row's norm
# (:meth:`Slab.max_row_norm`), t = r . q the real dot product, K the exact kernel's score and
# s the screen's. Any f32 sum of d rounded (or fused) products, in any order, is within
# gamma_d * sum|r_j q_j| <= gamma_d * R * |q| of t (Higham, Thm 3.1 for every summation tree);
# the kernels' lanes, tails, scale products and int4 groups add at most G + 2 roundings
# (G = groups), so |K - t| <= gamma_m R |q| with m = dim + G + 4. The quantised screens use an
# integer query q' = qscale * qi (int16 levels, or int8 for the VNNI / AVX2 ones; error
# e = q - q'); their integer dot products are exact (the +128 / +8 offsets come back off in
# integers). int8 then adds an f32 conversion and two products (3 roundings); int4 sums its
# exact integer lanes (2, 8 or 16 per group, each |lane| <= the sum of its |c_j q'_j|) times the
# group scale in f32 in some tree: one rounding per product, at most 16 G - 1 in the tree and
# one for qscale, 16 G + 1 <= m since 16 G = dim / 4. So |s - t| <= R |e| + gamma_m R |q'|
# (the sum of |r_j q'_j| is <= R |q'|). Hence |s - K| <= delta with
#     delta = R (|e| + gamma_m (|q| + |q'|)) + an underflow slack.
# If s_k is the k-th largest screened score, k rows have K >= s_k - delta, so the k-th exact
# score is >= s_k - delta and every row of the exact top k (ties included) has
# s >= s_k - 2 delta: scoring exactly the rows above that cut and ranking them gives the full
# scan's answer. The screen's own bits may differ between runs, threads or backends; the
# answer cannot. Non-finite screens or bounds score every row instead.

_INT_DOT = 2 ** 31 - 1  # int32 accumulators of the integer screens
_UNDERFLOW = 2.0 ** -120  # per-rounding absolute slack for subnormal products, generously
_ROWS_PER_TASK = 16384  # a thread hop costs ~50 us: each task scans at least this many rows
# Loading numba and the cached kernels costs ~1-1.7 s of wall time here (bench_exact.py's
# "kernel break-even" line; they save ~0.1 ms per MB scanned, so one query pays it back only
# past ~10 GB): numpy / BLAS screens and numpy rescoring run until together they have cost
# that (index.kernel_rent).
_RENT = KernelRent()
_SCAN: list = []  # [kernels dict or None] once tried
_POOL: list = []


def _gamma(m: int) -> float:
    return m * _U / (1.0 - m * _U)


def resolve_threads(threads: int | None) -> int:
    """The scan's thread count: ``threads`` when given, else ``URNA_THREADS``, else the cores."""
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise InvalidInput(f"threads must be a whole number >= 1, not {threads!r}")
        return threads
    from ..format.ahead import worker_count

    return worker_count()


def _scan_kernels() -> dict | None:
    """The numba screens once rented out (or numba already loaded), else None (numpy); None
    while another thread prepares them (``kernel_rent.allowed``)."""
    if not kernel_rent.allowed():
        return None
    if _SCAN:
        return _SCAN[0]
    loaded = _NUMBA_LOADED and _NUMBA is not None
    if not loaded and (not _RENT.paid() or _kernels() is None):
        return None
    with _NUMBA_LOCK:
        if not _SCAN:
            try:
                from . import _scan_kernels
                _SCAN.append(_scan_kernels.SCREENS)
            except Exception:  # an optional extra that fails to compile means numpy screens
                _SCAN.append(None)
    return _SCAN[0]


def _loaded_screens() -> dict | None:
    """The compiled screens if this process has loaded them (never loads them), else None;
    None while another thread prepares them (``kernel_rent.allowed``)."""
    return _SCAN[0] if _SCAN and kernel_rent.allowed() else None


def _run_tasks(fn, tasks: list, threads: int) -> None:
    """Run ``fn(*task)`` for every task, on up to ``threads`` threads; errors re-raised here."""
    if threads < 2 or len(tasks) < 2:
        for t in tasks:
            fn(*t)
        return
    if not _POOL:
        with _NUMBA_LOCK:
            if not _POOL:
                from concurrent.futures import ThreadPoolExecutor

                _POOL.append(ThreadPoolExecutor(max(2, os.cpu_count() or 2),
                                                thread_name_prefix="urna-scan"))
    pool = _POOL[0]
    per = -(-len(tasks) // threads)
    groups = [tasks[i:i + per] for i in range(0, len(tasks), per)]
    futures = [pool.submit(lambda g=g: [fn(*t) for t in g]) for g in groups[1:]]
    for t in groups[0]:
        fn(*t)
    for fut in futures:
        fut.result()


def _ranges(n: int, threads: int) -> list[tuple[int, int]]:
    """``threads`` contiguous row ranges (fewer when the slab is short)."""
    parts = max(1, min(threads, n // _ROWS_PER_TASK))
    cuts = [n * p // parts for p in range(parts + 1)]
    return [(cuts[p], cuts[p + 1]) for p in range(parts)]


class _Probe(Record):
    """The query as one dtype's screen takes it, with the norms the bound needs: ``err`` is
    ``|q - q'|``, ``norm`` is ``|q'|``, ``qnorm`` is ``|q|`` when the probe computed it."""

    _fields = ("args", "err", "norm", "qnorm")
    __slots__ = _fields

    def __init__(self, args: tuple, err: float, norm: float,
                 qnorm: float | None = None) -> None:
        self.args, self.err, self.norm, self.qnorm = args, err, norm, qnorm


def _probe(slab: Slab, q: np.ndarray, kern: dict | None = None,
           scratch: bool = False) -> _Probe:
    """The query for ``slab``'s screen in ``kern`` (None: numpy's); integer screens take it as
    the tier's ``bits``-bit levels (computed by its compiled ``quantise``: one call instead of
    ~20 numpy ops, into this thread's scratch buffers when ``scratch``: the caller is done
    with the probe before its next one)."""
    bits = 16 if kern is None else kern["bits"].get(slab.dtype, 16)
    quantise = None if kern is None else kern.get("quantise")
    if slab.dtype in ("float32", "float16"):
        norm = _norm(q)
        return _Probe((q,), 0.0, norm, norm)
    if bits == 8:  # vpdpbusd: int8 levels; sums of (c + 128) * q or (nibble + 8) * q stay exact
        levels = 127
    else:  # int16 levels, as many as keep every int32 partial sum exact
        width = 128 * slab.dim if slab.dtype == "int8" else 8 * 64
        levels = max(1, min(32767, _INT_DOT // width))
    if quantise is not None:
        return _probe_compiled(slab, q, bits, levels, quantise, scratch)
    top = float(np.abs(q).max()) if q.size else 0.0
    qscale = F32(top / levels) if top > 0 else F32(1.0)
    if not np.isfinite(qscale) or qscale == 0:
        qscale = F32(1.0)
    qi = np.clip(np.rint(q.astype(np.float64) / float(qscale)), -levels, levels)
    qi = qi.astype(np.int8 if bits == 8 else np.int16)
    qp = qi.astype(np.float64) * float(qscale)  # exact: 16 x 24 bits
    err = float(np.sqrt(((q.astype(np.float64) - qp) ** 2).sum())) * (1 + 1e-9)
    norm = float(np.sqrt((qp ** 2).sum())) * (1 + 1e-9)
    if slab.dtype == "int8":
        if bits != 8:
            return _Probe((qi, qscale), err, norm)
        # the codes read as c + 128: 128 x the query sum over the vector part comes back off
        head = (slab.dim // 64) * 64
        return _Probe((qi, 128 * int(qi[:head].astype(np.int64).sum()), qscale), err, norm)
    qe, qo = np.ascontiguousarray(qi[0::2]), np.ascontiguousarray(qi[1::2])
    # the nibbles read as value + 8: -8 x each int32 lane's query sum corrects it (a lane
    # covers 2 bytes with pmaddwd, 4 with vpdpbusd)
    pairs = (qe.astype(np.int32) + qo).reshape(-1, 4 if bits == 8 else 2).sum(axis=1)
    corr = np.ascontiguousarray(-8 * pairs, dtype=np.int32)
    return _Probe((qe, qo, corr, qscale), err, norm)


def _probe_compiled(slab: Slab, q: np.ndarray, bits: int, levels: int, quantise,
                    scratch: bool = False) -> _Probe:
    """:func:`_probe` by the compiled ``quantise_query`` (the same levels and norms, and
    ``|q|`` rounded up)."""
    dim = slab.dim
    int4 = slab.dtype == "int4"
    half = dim // 2 if int4 else 0
    lane = 4 if bits == 8 else 2

    def new(name: str, count: int, dtype) -> np.ndarray:
        # fresh arrays cost ~1-3 us each from cold caches after a scan
        return _scratch(f"{name}{bits}", count, dtype) if scratch else np.empty(count, dtype)

    qt = np.int8 if bits == 8 else np.int16
    qi, qe, qo = new("qi", dim, qt), new("qe", half, qt), new("qo", half, qt)
    corr = new("corr", half // lane, np.int32)
    head = (dim // 64) * 64 if bits == 8 else 0
    scale, err, norm, fix, qnorm = quantise(q, levels, head, lane, qi, qe, qo, corr)
    qscale = F32(scale)  # the screens take it as f32
    if int4:
        return _Probe((qe, qo, corr, qscale), err, norm, qnorm)
    if bits == 8:
        return _Probe((qi, fix, qscale), err, norm, qnorm)
    return _Probe((qi, qscale), err, norm, qnorm)


def screen_bound(slab: Slab, qnorm: float, probe_err: float = 0.0,
                 probe_norm: float | None = None) -> float:
    """delta: how far a screened score can be from the exact kernel's (see the note above)."""
    groups = slab.dim // 64 if slab.dtype == "int4" else 1
    g = _gamma(slab.dim + groups + 4)
    qp = qnorm if probe_norm is None else probe_norm
    # Python floats: an infinite row norm gives inf (or nan), never an exception
    return (slab.max_row_norm() * (probe_err + g * (qnorm + qp))
            + 4 * (slab.dim + groups + 4) * _UNDERFLOW)


def _slab_args(slab: Slab) -> tuple:
    # the integer screens read each row's bytes through its address: rows must be contiguous
    a = slab._get("rows", lambda: slab.a if slab.a.flags.c_contiguous
                  else np.ascontiguousarray(slab.a))
    if slab.dtype == "float32":
        return (a,)
    if slab.dtype == "float16":
        return (slab._get("u16", lambda: a.view(np.uint16)),)
    if slab.dtype == "int8":
        return (a, slab.scales)
    return (a, slab._get("sc32", lambda: np.ascontiguousarray(slab.scales, dtype=F32)))


def screen(slab: Slab, q: np.ndarray, threads: int | None = None,
           rows: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Approximate scores of every row (or of ``rows``, in their order) and their bound
    ``delta`` (|screen - exact| <= delta); the rows are split across ``threads``."""
    got = _screen(slab, np.ascontiguousarray(q, dtype=F32), resolve_threads(threads),
                  None if rows is None else _row_list(slab, rows))
    return got.scores, got.delta


class _Screened(Record):
    """A screen's scores and their bound."""

    _fields = ("scores", "delta")
    __slots__ = _fields

    def __init__(self, scores: np.ndarray, delta: float) -> None:
        self.scores, self.delta = scores, delta


# A row list keeping at least this share of the rows is screened by scanning every row in
# order and picking its scores: the hardware streams sequential rows, and a list of every
# other row cost 1.4x (float32) the whole scan here (bench_exact.py's "rows= half" line).
DENSE_ROWS = 0.25


def _norm(q: np.ndarray) -> float:
    """|q| in f64."""
    v = q.astype(np.float64)
    return float(np.sqrt(np.dot(v, v)))


def _screens_for(slab: Slab) -> dict | None:
    """The compiled screens when they can take this slab, else None (numpy / BLAS)."""
    kern = _scan_kernels()
    if kern is not None and (slab.dtype == "int8" and kern["bits"]["int8"] == 8
                             and 255 * 127 * slab.dim > _INT_DOT):  # too wide for int32 sums
        return None
    return kern


def _screen(slab: Slab, q: np.ndarray, nthreads: int, cand: np.ndarray | None,
            reuse: bool = False) -> _Screened:
    """The screen of every row or of ``cand``; ``reuse``: into this thread's scratch buffer
    (the caller reads the scores before its next screen)."""
    if cand is not None and len(cand) >= DENSE_ROWS * slab.n:
        every = _screen(slab, q, nthreads, None, reuse)
        return _Screened(every.scores[cand], every.delta)
    count = slab.n if cand is None else len(cand)
    out = _scratch("scores", count, F32) if reuse else np.empty(count, dtype=F32)
    qnorm = _norm(q)
    kern = _screens_for(slab)
    if kern is None:
        t0 = time.perf_counter()

        def blas(lo: int, hi: int) -> None:
            for b in range(lo, hi, _BLOCK):
                e = min(hi, b + _BLOCK)
                block = (slab.dequantize(b, e) if cand is None
                         else _gathered(slab, cand[b:e]).dequantize(0, e - b))
                with np.errstate(all="ignore"):
                    out[b:e] = block @ q

        _run_tasks(blas, _ranges(count, nthreads), nthreads)
        _RENT.charge(t0)
        return _Screened(out, screen_bound(slab, qnorm))
    probe = _probe(slab, q, kern)
    head = _slab_args(slab)
    if cand is None:
        fn = kern["range"][slab.dtype]
        _run_tasks(lambda lo, hi: fn(*head, *probe.args, lo, hi, out),
                   _ranges(count, nthreads), nthreads)
    else:
        fn_rows = kern["rows"][slab.dtype]
        _run_tasks(lambda lo, hi: fn_rows(*head, *probe.args, cand, lo, hi, out),
                   _ranges(count, nthreads), nthreads)
    return _Screened(out, screen_bound(slab, qnorm, probe.err, probe.norm))


_NO_ROWS = np.zeros(0, dtype=np.int64)
_SCRATCH = threading.local()
# Scratch buffers up to this many items are kept per thread: a fresh 0.4-0.8 MB array per
# query costs a map, page faults and an unmap (~0.05 ms, a tenth of an int4 scan here).
_SCRATCH_MAX = 1 << 22


def _scratch(name: str, count: int, dtype) -> np.ndarray:
    """A buffer of ``count`` items, this thread's own and reused by its next query."""
    if count > _SCRATCH_MAX:
        return np.empty(count, dtype=dtype)
    buf = getattr(_SCRATCH, name, None)
    if buf is None or len(buf) < count:
        buf = np.empty(count, dtype=dtype)
        setattr(_SCRATCH, name, buf)
    return buf[:count]


def _gathered(slab: Slab, rows: np.ndarray) -> Slab:
    """A slab of copies of ``rows`` (the numpy screen of a row list dequantises these)."""
    sc = None if slab.scales is None else slab.scales[rows]
    return Slab(slab.dtype, len(rows), slab.dim, slab.a[rows], sc)


def _kth(s: np.ndarray, k: int) -> float:
    kern = _loaded_screens()
    if kern is not None and k <= 4096:
        return float(kern["kth"](s, k))
    return float(np.partition(s, len(s) - k)[len(s) - k])


def _cut(kth: float, delta: float) -> F32:
    """The f32 cut ``kth - 2 delta``, rounded down (an f32 compare must not lose a row)."""
    c = F32(kth - 2.0 * delta)
    return np.nextafter(c, F32(-np.inf)) if float(c) > kth - 2.0 * delta else c


def _finish(slab: Slab, q: np.ndarray, s: np.ndarray, delta: float, k: int,
            rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact top-k from screened scores ``s`` (of ``rows``, or of every row) within ``delta``;
    None when they are unusable."""
    if not math.isfinite(delta):
        return None
    kern = _loaded_screens()
    if kern is not None and "finish" in kern and k <= 4096:
        ids, best = np.empty(k, dtype=np.int64), np.empty(k, dtype=F32)
        got = kern["finish"][slab.dtype](
            *_exact_args(slab), q, s, k, 2.0 * delta, _NO_ROWS if rows is None else rows,
            rows is not None, _scratch("found", len(s), np.int64),
            _scratch("exact", len(s), F32), ids, best)
        if got >= 0:
            return ids[:got], best[:got]
        if not np.isfinite(s).all():
            return None
        # a NaN exact score: the numpy ranking below puts it last
    if kern is not None and "select" in kern and k <= 4096:
        found = _scratch("found", len(s), np.int64)
        count = kern["select"](s.view(np.int32), k, 2.0 * delta, found)
        if count < 0:  # an inf or NaN screen
            return None
        cand = found[:count]
    elif not np.isfinite(s).all():
        return None
    else:
        cand = np.flatnonzero(s >= _cut(_kth(s, k), delta))
    if rows is not None:
        cand = rows[cand]
    return rank(cand, score_rows(slab, q, cand), k)


def _screened_search(slab: Slab, q: np.ndarray, k: int, threads: int | None,
                     rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    nthreads = resolve_threads(threads)
    if rows is None and len(_ranges(slab.n, nthreads)) == 1:
        kern = _screens_for(slab)
        if kern is not None and "top" in kern and k <= 4096:
            return _compiled_top(slab, q, k, kern)
    got = _screen(slab, q, nthreads, rows, reuse=True)
    return _finish(slab, q, got.scores, got.delta, k, rows)


def _compiled_top(slab: Slab, q: np.ndarray, k: int,
                  kern: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """One thread's whole screened search in one compiled call; None when a score is not
    finite (the caller scores every row)."""
    probe = _probe(slab, q, kern, scratch=True)
    qnorm = _norm(q) if probe.qnorm is None else probe.qnorm
    delta = screen_bound(slab, qnorm, probe.err, probe.norm)
    if not math.isfinite(delta):
        return None
    ids, best = np.empty(k, dtype=np.int64), np.empty(k, dtype=F32)
    got = kern["top"][slab.dtype](
        *_slab_args(slab), *probe.args, q, k, 2.0 * delta, _scratch("scores", slab.n, F32),
        _scratch("found", slab.n, np.int64), _scratch("exact", slab.n, F32), ids, best)
    return (ids[:got], best[:got]) if got >= 0 else None


def search_batch(slab: Slab, Q: np.ndarray, k: int,
                 threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k for every row of ``Q`` (normalised queries): (m, k') ids and scores.

    Chunks of queries are screened with one BLAS ``sgemm`` per block of rows (straight over
    the mapped float32 slab; quantised blocks dequantised once per chunk), the blocks split
    across ``threads``; each query then keeps the rows within the screen bound of its k-th
    and rescores them exactly, so each answer equals :func:`search` on that query.
    """
    Q = np.ascontiguousarray(Q, dtype=F32)
    m, n = Q.shape[0], slab.n
    kk = min(k, n)
    ids = np.zeros((m, kk), dtype=np.int64)
    out = np.zeros((m, kk), dtype=F32)
    if m == 0 or kk <= 0:
        return ids, out
    nthreads = resolve_threads(threads)
    with np.errstate(over="ignore", invalid="ignore"):
        qnorms = np.sqrt((Q.astype(np.float64) ** 2).sum(axis=1))
    chunk = max(1, min(m, (64 << 20) // (4 * n)))  # bound the score matrix to ~64 MB
    blocks = [(lo, min(n, lo + _BLOCK)) for lo in range(0, n, _BLOCK)]
    for lo in range(0, m, chunk):
        Qc = Q[lo:lo + chunk]
        S = np.empty((Qc.shape[0], n), dtype=F32)
        t0 = time.perf_counter()

        def gemm(b0: int, b1: int, S=S, Qc=Qc) -> None:
            with np.errstate(all="ignore"):
                S[:, b0:b1] = Qc @ slab.dequantize(b0, b1).T

        _run_tasks(gemm, blocks, nthreads)
        _RENT.charge(t0)
        _scan_kernels()  # a long batch pays for the compiled selection and rescoring

        def finish(j: int, S=S, Qc=Qc, lo=lo) -> None:
            got = _finish(slab, Qc[j], S[j], screen_bound(slab, float(qnorms[lo + j])), kk)
            if got is None:  # overflow or NaN: score every row
                got = top_k(score_rows(slab, Qc[j]), kk)
            ids[lo + j, :len(got[0])], out[lo + j, :len(got[1])] = got

        _run_tasks(finish, [(j,) for j in range(Qc.shape[0])], nthreads)
    return ids, out
