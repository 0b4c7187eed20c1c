"""The HNSW query beam without numba, for processes too short to pay for loading it.

A CLI query (``urna ask``, ``urna retrieve``) walks the graph once; importing numba and
loading the cached kernels costs more than the walk itself. This engine runs the same search
as ``_hnsw_kernels.search_graph`` on float32 rows: the same greedy descent and layer-0 beam,
heaps that push, pop and tie as ``_hnsw_heap``'s (``heapq``'s C heaps, see ``search_graph``),
its sort key (computed for all results at once), and each batch of distances computed with
numpy in ``dist8``'s operation order (eight f32 lanes summed block by block from +0.0, the
fixed reduction tree, the sequential tail, then ``1 - dot``), so it returns the same ids in the
same order (tests/index/test_hnsw_kernels.py and test_hnsw_beam_heaps.py compare it with the
kernel). A deferred id column is read as lists of ints (``BlockIds.read``), one decode per
block. Quantised rows (float16, int8, int4) are walked in place (``DecodedRows``): only the rows
a batch measures are decoded, each value the f32 product the kernel's packed-row decoders
compute, so their distances keep the kernel's bits too.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush

import numpy as np

from ..format.sections.hnsw import BlockIds
from .row_scores import dequantized

_F32 = np.float32
_BLOCK = np.dtype((np.void, 32))  # one block of eight float32 products
_CHUNK = 64  # neighbours marked and measured per batch, as the kernel does
_INF = float("inf")


def dist8_rows(q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``1 - dot8(q, row)`` of each row, in float32, bit for bit as ``_hnsw_dist.dist8``."""
    m, dim = rows.shape
    nb = dim // 8
    if nb:
        # The products row by row (one contiguous multiply), then moved block-major with each
        # block's eight products as one 32-byte item (a copy of m * nb items; multiplying
        # into a block-major view instead steps numpy's inner loop eight floats at a time),
        # so the block sum is a reduction over the outer axis: numpy adds those in order
        # (pairwise summation only ever runs along the fast axis), the kernel's lane chains.
        # They start at +0.0 in the kernel, here at the first block's products: that changes
        # only the sign of an all-zero lane, which ``1 - dot`` never shows (1 - +0 == 1 - -0;
        # inf and NaN propagate alike). The lanes are then read lane-major (8, m), so each
        # level of the fixed tree adds two strided rows.
        prod = (rows if dim == nb * 8 else rows[:, :nb * 8]) * q[:nb * 8]
        blocks = prod.view(_BLOCK).T.copy().view(_F32)  # (nb, m * 8)
        lanes = np.add.reduce(blocks, axis=0).reshape(m, 8).T
        pairs = lanes[0::2] + lanes[1::2]  # (l0 + l1), (l2 + l3), (l4 + l5), (l6 + l7)
        quads = pairs[0::2] + pairs[1::2]
        dot = quads[0] + quads[1]
    else:
        dot = np.zeros(m, dtype=_F32)
    if dim > nb * 8:  # the sequential tail from +0.0, added to the tree's sum
        tail = np.zeros(m, dtype=_F32)
        for j in range(nb * 8, dim):
            tail = tail + rows[:, j] * q[j]
        dot = dot + tail
    return _F32(1.0) - dot


class DecodedRows:
    """Packed rows (``hnsw.PackedRows``: float16 bits, int8 codes with f32 row scales, or int4
    nibbles with f32 group scales) read as float32 rows by index or slice: only the rows asked
    for are decoded, with ``_hnsw_dist``'s packed-row decoders' bits (``Slab.dequantize``'s)."""

    def __init__(self, codes: np.ndarray, scales: np.ndarray, dim: int) -> None:
        self.codes, self.scales = codes, scales
        self.shape = (int(codes.shape[0]), dim)

    def __getitem__(self, at: slice | list[int]) -> np.ndarray:
        codes = self.codes[at]
        if codes.dtype == np.uint16:  # float16 bits
            return dequantized("float16", codes.view(np.float16), None)
        return dequantized("int8" if codes.dtype == np.int8 else "int4", codes, self.scales[at])


def _reader(ids: np.ndarray | BlockIds) -> Callable[[int, int], list[int]]:
    """``ids[lo:hi]`` as a list of ints: a deferred column's blocks decoded once, as ints."""
    if isinstance(ids, BlockIds):
        return ids.read
    return lambda lo, hi: ids[lo:hi].tolist()


def _greedy(curr: int, q: np.ndarray, layer: int, rows: np.ndarray | DecodedRows,
            node_ptr: np.ndarray, row_start: np.ndarray, row_end: np.ndarray,
            read: Callable[[int, int], list[int]]) -> int:
    """Move to a strictly closer neighbour on ``layer`` until none is (earliest wins ties)."""
    cd = float(dist8_rows(q, rows[curr:curr + 1])[0])
    while True:
        if layer >= node_ptr[curr + 1] - node_ptr[curr]:
            return curr
        row = node_ptr[curr] + layer
        nbrs = read(int(row_start[row]), int(row_end[row]))
        best, bd = curr, cd
        if nbrs:
            for nb, d in zip(nbrs, dist8_rows(q, rows[nbrs]).tolist(), strict=True):
                if d < bd:
                    best, bd = nb, d
        if best == curr:
            return curr
        curr, cd = best, bd


def total_order(dist: np.ndarray) -> np.ndarray:
    """int64 keys of float32 ``dist`` that sort as ``_hnsw_heap.order_key``'s distance part:
    IEEE total order (-0.0 before +0.0), NaN last."""
    bits = dist.view(np.uint32).astype(np.int64)
    key = np.where(bits >= 0x80000000, 0x7FFFFFFF - bits, bits)
    key[np.isnan(dist)] = 0x7FFFFFFF
    return key


def _by_distance(dist: np.ndarray) -> np.ndarray:
    """The positions of ``dist`` sorted as ``_hnsw_heap.order_key`` sorts them: by distance in
    total order, NaN last, ties by position (its keys, computed for all at once)."""
    return np.argsort(total_order(dist), kind="stable")


class Node(int):
    """A node id riding in a heap item ``(key, node)``: it never orders two items. Tuples compare
    their keys first; on equal keys they would compare the ids, and this ``<`` is always false,
    so equal keys stay Equal, as ``_hnsw_heap`` (Rust's ``BinaryHeap``) compares them."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False


def search_graph(q: np.ndarray, ef: int, entry_point: int, max_level: int,
                 rows: np.ndarray | DecodedRows, node_ptr: np.ndarray, row_start: np.ndarray,
                 row_end: np.ndarray, ids: np.ndarray | BlockIds,
                 allowed: np.ndarray) -> np.ndarray:
    """Greedy descent to layer 1, beam of width ``ef`` on layer 0; int32 ids by distance.

    The arguments are ``_hnsw_kernels.search_graph``'s, minus its layer-0 table (this walk
    reads layer 0 from the CSR rows: the same lists in the same order) and its reusable
    scratch; ``rows`` are float32 (n, dim) or ``DecodedRows``, ``ids`` is read by slices
    only (the array, or a verified payload's ``BlockIds``) and ``allowed`` a uint8 ``where=``
    mask (empty: every row).

    The two heaps are ``heapq``'s (C) min-heaps over ``(key, node)``: the frontier keyed by
    distance, the results by minus distance. ``heapq`` pushes, pops and breaks ties as
    ``_hnsw_heap`` does (the last item sinks to the bottom taking the right child unless the
    left is less, then rises while less than its parent; NaN is never less), on the negated
    keys of its max-heaps, so both heaps hold the same items in the same places.
    """
    n = rows.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    read = _reader(ids)
    curr = int(entry_point)
    for layer in range(int(max_level), 0, -1):
        curr = _greedy(curr, q, layer, rows, node_ptr, row_start, row_end, read)
    ok = allowed.tolist() if allowed.shape[0] else None  # None: every row may be a result
    mark = bytearray(n)
    d0 = float(dist8_rows(q, rows[curr:curr + 1])[0])
    first = (d0, Node(curr))
    frontier = [first]
    results = [(-d0, first[1])] if ok is None or ok[curr] else []
    mark[curr] = 1
    while frontier:
        cdist, c = heappop(frontier)
        worst = -results[0][0] if results else _INF
        if cdist > worst and len(results) >= ef:
            break
        if node_ptr[c + 1] - node_ptr[c] <= 0:  # no layer-0 list
            continue
        row = node_ptr[c]
        nbrs = read(int(row_start[row]), int(row_end[row]))
        for at in range(0, len(nbrs), _CHUNK):  # marked and measured a chunk at a time
            batch = []
            for nb in nbrs[at:at + _CHUNK]:
                if not mark[nb]:
                    mark[nb] = 1
                    batch.append(nb)
            if not batch:
                continue
            for nb, d in zip(batch, dist8_rows(q, rows[batch]).tolist(), strict=True):
                # no result yet (the entry masked out, or ef 0): the worst is +inf
                if len(results) < ef or d < (-results[0][0] if results else _INF):
                    node = Node(nb)
                    heappush(frontier, (d, node))
                    if ok is None or ok[nb]:
                        heappush(results, (-d, node))
                        if len(results) > ef:
                            heappop(results)
    dist = np.asarray([-key for key, _ in results], dtype=_F32)
    return np.asarray([results[j][1] for j in _by_distance(dist).tolist()], dtype=np.int32)
