"""HNSW over decoded arrays: the deterministic build and the graph search (03-runtime §7.4-7.7).

``build_hnsw`` reproduces the reference graph bit for bit (same RNG and level rule, ``dot8``
distance, Rust ``BinaryHeap`` tie behaviour, heuristic selection with keep_pruned, back-link
pruning), so ``encode_hnsw(build_hnsw(...))`` is the reference's 0x07 payload.
``hnsw_search`` returns candidate ids only; scoring them (the exact rerank) is the caller's job.

This module never parses a file: it takes vectors and an ``HnswPayload``; the loops live in
``_hnsw_kernels`` (numba when installed). A graph of a few hundred rows is built without them
(``hnsw_small_build``, the same graph) unless the process has loaded them already. A query
(on float32 rows, or quantised ones decoded as they are read) walks the graph with the
numba-free ``hnsw_beam`` (same ids, same order) until a process has spent
``kernel_rent.KERNEL_RENT_SECONDS`` in such walks, then with the compiled kernels: a CLI query
never pays for importing numba, and a server switches once its background thread has
prepared them (``kernel_rent.preparing``, ``runtime.resident``).
The kernels read layer 0 from ``layer0_table`` (one row per node: the list's length, then its
ids), made once per graph and kept while it lives.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING

import numpy as np

from ..format.record import FrozenRecord
from ..format.sections.hnsw import HnswPayload
from . import hnsw_beam, kernel_rent
from ._hnsw_heap import EPOCH_LIMIT
from .kernel_rent import KernelRent

if TYPE_CHECKING:
    from types import ModuleType

    from .exact import Slab

DEFAULT_M = 16  # "M" in Malkov & Yashunin: target out-degree above layer 0
DEFAULT_EF_CONSTRUCTION = 400  # "efConstruction": beam width while inserting
DEFAULT_SEED = 42
MAX_SAMPLED_LEVEL = 31

_MASK64 = (1 << 64) - 1
_INV_2_53 = 1.0 / float(1 << 53)


class Lcg:
    """The reference's 64-bit LCG (levels and the pinned test corpora draw from it)."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = ((seed & _MASK64) * 2862933555777941757 + 3037000493) & _MASK64

    def next_u64(self) -> int:
        """Advance and return the new state."""
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & _MASK64
        return self.state

    def next_f64(self) -> float:
        """Uniform in [0, 1): the top 53 bits times 2^-53."""
        return (self.next_u64() >> 11) * _INV_2_53


def sample_levels(n: int, m: int, seed: int) -> np.ndarray:
    """Draw the ``n`` node levels exactly as the reference does (all before any insertion)."""
    rng = Lcg(seed)
    # m_l = 1/ln(m) in binary64; m = 1 gives +inf (every positive draw lands on the cap),
    # m = 0 gives -0.0 (every node on layer 0), as Rust's float arithmetic does.
    if m == 1:
        m_l = math.inf
    elif m == 0:
        m_l = -0.0
    else:
        m_l = 1.0 / math.log(m)
    out = np.zeros(n, dtype=np.int32)
    for i in range(n):
        r = rng.next_f64()
        if r <= 0.0:
            continue
        x = -math.log(r) * m_l
        if math.isinf(x):
            out[i] = MAX_SAMPLED_LEVEL if x > 0 else 0
        else:
            out[i] = min(max(math.floor(x), 0), MAX_SAMPLED_LEVEL)
    return out


def _as_matrix(vectors: np.ndarray) -> np.ndarray:
    vecs = np.ascontiguousarray(vectors, dtype=np.float32)
    if vecs.ndim != 2:
        raise ValueError(f"vectors must be a 2-D (n, dim) array, got shape {vecs.shape}")
    return vecs


def build_hnsw(vectors: np.ndarray, m: int = DEFAULT_M,
               ef_construction: int = DEFAULT_EF_CONSTRUCTION,
               seed: int = DEFAULT_SEED) -> HnswPayload:
    """Build the reference's HNSW graph over ``vectors`` (n, dim) float32, L2-normalised.

    Args: ``m`` ("M", out-degree; layer 0 allows ``2*m``), ``ef_construction``
    ("efConstruction"), ``seed`` (level draws). Same inputs give the same graph on every
    machine. Returns the graph as an ``HnswPayload`` ready for ``encode_hnsw``.
    """
    if m < 0 or ef_construction < 0:
        raise ValueError("hnsw m and ef_construction must be >= 0")
    vecs = _as_matrix(vectors)
    n = vecs.shape[0]
    m_max0 = 2 * m
    levels = sample_levels(n, m, seed)
    rows_per_node = levels.astype(np.int64) + 1
    node_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rows_per_node, out=node_ptr[1:])
    n_rows = int(node_ptr[-1])
    layer_of_row = np.arange(n_rows, dtype=np.int64) - np.repeat(node_ptr[:-1], rows_per_node)
    cap = np.where(layer_of_row == 0, 0, m).astype(np.int64)  # layer 0 is built in adj0
    row_start = np.zeros(n_rows, dtype=np.int64)
    if n_rows:
        np.cumsum(cap[:-1], out=row_start[1:])
    row_end = row_start.copy()
    ids = np.zeros(int(cap.sum()), dtype=np.int32)
    adj0 = np.zeros((n, m_max0 + 1), dtype=np.int32)
    # A beam wider than n+1 behaves exactly like n+1 (nothing is ever evicted); clamping
    # keeps a huge ef_construction from allocating.
    ef_eff = min(ef_construction, n + 1)
    if compiled_build(n):
        _k = _kernels()
        with _k.vectorizing():
            entry_point, max_level = _k.build_graph(vecs, levels, m, ef_eff, node_ptr,
                                                    row_start, row_end, ids, adj0)
    else:
        from . import hnsw_small_build  # a build's module: no query imports it

        entry_point, max_level = hnsw_small_build.build_graph(
            vecs, levels, m, ef_eff, node_ptr, row_start, row_end, ids, adj0)
    counts = row_end - row_start
    counts[node_ptr[:-1]] = adj0[:, 0]
    nbr_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=nbr_ptr[1:])
    out = np.empty(int(nbr_ptr[-1]), dtype=np.int32)
    out[_ranges(nbr_ptr[node_ptr[:-1]], counts[node_ptr[:-1]])] = \
        adj0[:, 1:][np.arange(m_max0) < adj0[:, :1]]
    upper = np.flatnonzero(layer_of_row > 0)
    out[_ranges(nbr_ptr[upper], counts[upper])] = ids[_ranges(row_start[upper], counts[upper])]
    # The payload field is a u32: the reference builds with the whole value and stores it `as
    # u32` (its low 32 bits).
    graph = HnswPayload(m, m_max0, ef_construction & 0xFFFFFFFF, int(entry_point),
                        int(max_level), n, levels, node_ptr, nbr_ptr, out)
    _plan(graph, adj0)  # adj0 is already a layer0_table (width 2m >= every count)
    return graph


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concat(arange(s, s + c))`` over the pairs of ``starts`` and ``counts``."""
    counts = counts.astype(np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()), dtype=np.int64)


_MIN_TABLE_WIDTH = 8


class _WalkPlan(FrozenRecord):
    """What the kernels take of one graph besides its payload: layer 0's table, the CSR rows."""

    _fields = ("table", "row_start", "row_end")
    __slots__ = _fields
    __eq__ = object.__eq__  # holds arrays: identity, as the dataclass's eq=False gave
    __hash__ = object.__hash__

    table: np.ndarray
    row_start: np.ndarray
    row_end: np.ndarray

    def __init__(self, table: np.ndarray, row_start: np.ndarray, row_end: np.ndarray) -> None:
        self._set(table, row_start, row_end)


# keyed by id(graph); each entry leaves with its graph (weakref.finalize), so ids never clash
_plans: dict[int, _WalkPlan] = {}
_plans_lock = threading.Lock()


def _plan(graph: HnswPayload, table: np.ndarray | None = None) -> _WalkPlan:
    """The graph's ``_WalkPlan``, made once (from ``table`` if given) and kept while it lives."""
    plan = _plans.get(id(graph))
    if plan is not None:
        return plan
    with _plans_lock:
        plan = _plans.get(id(graph))
        if plan is None:
            plan = _WalkPlan(_layer0_table(graph) if table is None else table,
                             graph.nbr_ptr[:-1], graph.nbr_ptr[1:])
            _plans[id(graph)] = plan
            weakref.finalize(graph, _plans.pop, id(graph), None)
    return plan


def layer0_table(graph: HnswPayload) -> np.ndarray:
    """Layer 0 as the kernels walk it: (n, w+1) int32 rows, each list's length then its ids.

    Computed once per graph (and kept while the graph lives). ``w`` is the longest list,
    capped at twice the mean length (at least ``_MIN_TABLE_WIDTH``) so a hostile graph with
    one huge list cannot make the table outgrow its ids; the rest of a longer list is read
    from the graph's CSR row.
    """
    return _plan(graph).table


def _layer0_table(graph: HnswPayload) -> np.ndarray:
    n = graph.n_nodes
    rows0 = graph.node_ptr[:-1]
    starts = graph.nbr_ptr[rows0]
    counts = graph.nbr_ptr[rows0 + 1] - starts
    width = 0
    if n:
        mean = -(-int(counts.sum()) // n)
        width = int(min(int(counts.max()), max(_MIN_TABLE_WIDTH, 2 * mean)))
    table = np.zeros((n, width + 1), dtype=np.int32)
    table[:, 0] = counts
    kept = np.minimum(counts, width)
    table[:, 1:][np.arange(width) < kept[:, None]] = graph.ids[_ranges(starts, kept)]
    return table


class PackedRows(FrozenRecord):
    """Quantised stored rows as the beam reads them, in place (nothing is dequantised ahead).

    ``codes``: float16 rows as their uint16 bits (n, dim), int8 codes (n, dim) or int4
    nibbles (n, dim/2) uint8, low nibble = even column. ``scales``: empty for float16, the
    per-row f32 scales (n,) for int8, the per-group scales (n, dim/64) as f32 for int4. Rows
    must be finite (an opened file's are). Distances equal those over ``dequantize``'s rows.
    (A slotted record, not a dataclass: format/record.py says why.)
    """

    _fields = ("codes", "scales", "dim")
    __slots__ = _fields
    __eq__ = object.__eq__  # holds arrays: identity, as the dataclass's eq=False gave
    __hash__ = object.__hash__

    codes: np.ndarray
    scales: np.ndarray
    dim: int

    def __init__(self, codes: np.ndarray, scales: np.ndarray, dim: int) -> None:
        self._set(codes, scales, dim)

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.codes.shape[0])


def beam_rows(slab: Slab) -> np.ndarray | PackedRows:
    """The rows of ``slab`` for ``hnsw_search``: a float32 view, else the packed rows."""
    if slab.dtype == "float32":
        return _as_matrix(slab.a)
    if slab.dtype == "float16":
        return PackedRows(np.ascontiguousarray(slab.a).view(np.uint16),
                          np.zeros(0, dtype=np.float32), slab.dim)
    assert slab.scales is not None  # quantised slabs always carry their scales
    # int4 group scales are f16 in the file; widening them is exact (n * dim/64 values)
    return PackedRows(np.ascontiguousarray(slab.a), np.ascontiguousarray(slab.scales,
                                                                         dtype=np.float32),
                      slab.dim)


class _BeamScratch(threading.local):
    """Per-thread query scratch: the visited stamps and the heaps, reused across queries."""

    def __init__(self) -> None:
        self.mark = np.zeros(0, dtype=np.uint16)
        self.epoch = 0
        self.fk = np.zeros(0, dtype=np.float32)
        self.fv = np.zeros(0, dtype=np.int32)
        self.rk = np.zeros(0, dtype=np.float32)
        self.rv = np.zeros(0, dtype=np.int32)

    def take(self, n: int, ef: int) -> int:
        """Size the buffers for ``n`` nodes and beam ``ef``; returns a fresh visited stamp."""
        if self.mark.shape[0] < n:
            self.mark = np.zeros(n, dtype=np.uint16)
            self.fk = np.empty(n + 2, dtype=np.float32)
            self.fv = np.empty(n + 2, dtype=np.int32)
            self.epoch = 0
        if self.rk.shape[0] < ef + 3:
            self.rk = np.empty(ef + 3, dtype=np.float32)
            self.rv = np.empty(ef + 3, dtype=np.int32)
        if self.epoch >= EPOCH_LIMIT:  # uint16 stamps wrap: clear them once
            self.mark.fill(0)
            self.epoch = 0
        self.epoch += 1
        return self.epoch


_scratch = _BeamScratch()

_RENT = KernelRent()  # numba's import + the cached kernels' load measured ~0.65 s here


_loaded: list[ModuleType] = []  # the kernels module once imported (an import costs ~1 us)


def _kernels() -> ModuleType:
    """The compiled HNSW loops (importing them imports numba)."""
    if not _loaded:
        from . import _hnsw_kernels

        _loaded.append(_hnsw_kernels)
    return _loaded[0]


def compiled_build(n: int) -> bool:
    """Whether ``build_hnsw`` of ``n`` rows runs the compiled builder: past
    ``hnsw_small_build.SMALL_BUILD_ROWS``, or once this process has loaded the kernels."""
    from .hnsw_small_build import SMALL_BUILD_ROWS

    return n > SMALL_BUILD_ROWS or (
        "urna.index._hnsw_kernels" in sys.modules and kernel_rent.allowed())


def _kernels_ready() -> bool:
    """Whether a walk should use the kernels: already loaded, or the numba-free walks paid
    (never while another thread prepares them: ``kernel_rent.allowed``)."""
    return kernel_rent.allowed() and ("urna.index._hnsw_kernels" in sys.modules or _RENT.paid())


# Array kinds (dtype, writeable, aligned: what numba's types tell apart) of the rows, scales
# and graph arrays the query kernel has run on, so compiled; only a new kind needs the
# ``vectorizing`` window (a lock and two flag flips per query otherwise).
_compiled: set[tuple[object, ...]] = set()


def _kind(*arrays: np.ndarray) -> tuple[object, ...]:
    return tuple((a.dtype.char, a.flags.writeable, a.flags.aligned) for a in arrays)


_ALL_ROWS = np.zeros(0, dtype=np.uint8)
_NO_SCALES = np.zeros(0, dtype=np.float32)


def hnsw_search(graph: HnswPayload, rows: np.ndarray | PackedRows, q: np.ndarray,
                ef: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """Candidate ids for normalised query ``q``, ascending by ``dot8`` distance (§7.5).

    The beam width is ``max(ef, graph.ef_construction)``, the reference's floor. ``rows`` are
    the graph's rows: float32 (n, dim), or ``PackedRows`` (``beam_rows``) read in place.
    ``allowed`` (one bool per row, a ``where=`` mask) keeps only those rows as results while
    the beam still walks through the others. Terminates on any graph ``decode_hnsw`` accepts.
    """
    if graph.n_nodes == 0:
        return np.zeros(0, dtype=np.int64)
    if isinstance(rows, PackedRows):
        codes, scales, n, dim = rows.codes, rows.scales, rows.n, rows.dim
    else:
        codes = _as_matrix(rows)
        scales, n, dim = _NO_SCALES, codes.shape[0], codes.shape[1]
    if n != graph.n_nodes:
        raise ValueError(f"graph has {graph.n_nodes} nodes but {n} vectors given")
    # fresh writeable copies: a read-only query or mask would be another kernel signature
    qv = np.array(q, dtype=np.float32).reshape(-1)
    if qv.shape[0] != dim:
        raise ValueError(f"query has {qv.shape[0]} values, vectors have {dim}")
    ef_eff = int(max(min(max(ef, graph.ef_construction), graph.n_nodes + 1), 0))
    mask = _ALL_ROWS if allowed is None else np.array(allowed, dtype=np.uint8)
    if not _kernels_ready():
        t0 = time.perf_counter()
        walked = codes if isinstance(rows, np.ndarray) else hnsw_beam.DecodedRows(codes, scales,
                                                                                  dim)
        out = hnsw_beam.search_graph(qv, ef_eff, graph.entry_point, graph.max_level, walked,
                                     graph.node_ptr, graph.nbr_ptr[:-1], graph.nbr_ptr[1:],
                                     graph.id_column(), mask)
        _RENT.charge(t0)
        return out.astype(np.int64)
    _k = _kernels()
    plan = _plan(graph)
    sc = _scratch
    epoch = sc.take(n, ef_eff)
    args = (qv, ef_eff, int(graph.entry_point), int(graph.max_level), codes, scales, plan.table,
            graph.node_ptr, plan.row_start, plan.row_end, graph.ids, mask, sc.mark, epoch,
            sc.fk, sc.fv, sc.rk, sc.rv)
    kind = _kind(codes, scales, graph.node_ptr, graph.ids, plan.row_start)
    if kind in _compiled:
        out = _k.search_graph(*args)
    else:
        with _k.vectorizing():
            out = _k.search_graph(*args)
        _compiled.add(kind)
    return out.astype(np.int64)


def level0_neighbors(graph: HnswPayload, i: int) -> np.ndarray:
    """Layer-0 neighbours of node ``i`` in stored order (empty when ``i`` is out of range)."""
    return graph.neighbors(i, 0)


__all__ = ["DEFAULT_EF_CONSTRUCTION", "DEFAULT_M", "DEFAULT_SEED", "Lcg", "PackedRows",
           "beam_rows", "build_hnsw", "hnsw_search", "layer0_table", "level0_neighbors",
           "sample_levels"]
