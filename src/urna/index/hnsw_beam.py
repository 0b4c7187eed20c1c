"""The HNSW query beam without numba, for processes too short to pay for loading it.

A CLI query (``urna ask``, ``urna retrieve``) walks the graph once; importing numba and
loading the cached kernels costs more than the walk itself. This engine runs the same search
as ``_hnsw_kernels.search_graph`` on float32 rows: the same greedy descent and layer-0 beam,
the heaps and sort key of ``_hnsw_heap``, and each batch of distances computed with numpy in
``dist8``'s operation order (eight f32 lanes summed block by block from +0.0, the fixed
reduction tree, the sequential tail, then ``1 - dot``), so it returns the same ids in the same
order (tests/index/test_hnsw_beam.py compares it with the kernel).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._hnsw_heap import order_key, pop_root, push

if TYPE_CHECKING:
    from ..format.sections.hnsw import BlockIds

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
        # inf and NaN propagate alike).
        prod = np.empty((m, nb * 8), dtype=_F32)
        np.multiply(rows[:, :nb * 8], q[:nb * 8], out=prod)
        blocks = prod.view(_BLOCK).T.copy().view(_F32)  # (nb, m * 8)
        lanes = np.add.reduce(blocks, axis=0).reshape(m, 8)
        pairs = lanes[:, 0::2] + lanes[:, 1::2]  # (l0 + l1), (l2 + l3), (l4 + l5), (l6 + l7)
        quads = pairs[:, 0::2] + pairs[:, 1::2]
        dot = quads[:, 0] + quads[:, 1]
    else:
        dot = np.zeros(m, dtype=_F32)
    if dim > nb * 8:  # the sequential tail from +0.0, added to the tree's sum
        tail = np.zeros(m, dtype=_F32)
        for j in range(nb * 8, dim):
            tail = tail + rows[:, j] * q[j]
        dot = dot + tail
    return _F32(1.0) - dot


def _greedy(curr: int, q: np.ndarray, layer: int, rows: np.ndarray, node_ptr: np.ndarray,
            row_start: np.ndarray, row_end: np.ndarray, ids: np.ndarray | BlockIds) -> int:
    """Move to a strictly closer neighbour on ``layer`` until none is (earliest wins ties)."""
    cd = float(dist8_rows(q, rows[curr:curr + 1])[0])
    while True:
        if layer >= node_ptr[curr + 1] - node_ptr[curr]:
            return curr
        row = node_ptr[curr] + layer
        nbrs = ids[row_start[row]:row_end[row]]
        best, bd = curr, cd
        if nbrs.size:
            for nb, d in zip(nbrs.tolist(), dist8_rows(q, rows[nbrs]).tolist(), strict=True):
                if d < bd:
                    best, bd = nb, d
        if best == curr:
            return curr
        curr, cd = best, bd


def search_graph(q: np.ndarray, ef: int, entry_point: int, max_level: int, rows: np.ndarray,
                 node_ptr: np.ndarray, row_start: np.ndarray, row_end: np.ndarray,
                 ids: np.ndarray | BlockIds, allowed: np.ndarray) -> np.ndarray:
    """Greedy descent to layer 1, beam of width ``ef`` on layer 0; int32 ids by distance.

    The arguments are ``_hnsw_kernels.search_graph``'s, minus its layer-0 table (this walk
    reads layer 0 from the CSR rows: the same lists in the same order) and its reusable
    scratch; ``rows`` are float32 (n, dim), ``ids`` is read by slices only (the array, or a
    verified payload's ``BlockIds``) and ``allowed`` a uint8 ``where=`` mask (empty: every
    row).
    """
    n = rows.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    curr = int(entry_point)
    for layer in range(int(max_level), 0, -1):
        curr = _greedy(curr, q, layer, rows, node_ptr, row_start, row_end, ids)
    ok = allowed.tolist() if allowed.shape[0] else None  # None: every row may be a result
    mark = bytearray(n)
    fk: list[float] = [0.0] * (n + 2)
    fv: list[int] = [0] * (n + 2)
    rk: list[float] = [0.0] * (ef + 3)
    rv: list[int] = [0] * (ef + 3)
    d0 = float(dist8_rows(q, rows[curr:curr + 1])[0])
    fs = push(fk, fv, 0, -d0, curr)
    rs = push(rk, rv, 0, d0, curr) if ok is None or ok[curr] else 0
    mark[curr] = 1
    while fs > 0:
        cdist, c = -fk[0], fv[0]
        fs = pop_root(fk, fv, fs)
        worst = rk[0] if rs > 0 else _INF
        if cdist > worst and rs >= ef:
            break
        if node_ptr[c + 1] - node_ptr[c] <= 0:  # no layer-0 list
            continue
        row = node_ptr[c]
        lo, hi = int(row_start[row]), int(row_end[row])
        while lo < hi:
            stop = min(lo + _CHUNK, hi)
            batch = []
            for nb in ids[lo:stop].tolist():
                if not mark[nb]:
                    mark[nb] = 1
                    batch.append(nb)
            lo = stop
            if not batch:
                continue
            for nb, d in zip(batch, dist8_rows(q, rows[batch]).tolist(), strict=True):
                worst = rk[0] if rs > 0 else _INF
                if rs < ef or d < worst:
                    fs = push(fk, fv, fs, -d, nb)
                    if ok is None or ok[nb]:
                        rs = push(rk, rv, rs, d, nb)
                        if rs > ef:
                            rs = pop_root(rk, rv, rs)
    dist = np.asarray(rk[:rs], dtype=_F32)
    bits = dist.view(np.uint32)
    keys = [int(order_key(dist[j], bits[j], j)) for j in range(rs)]
    order = sorted(range(rs), key=keys.__getitem__)
    return np.asarray([rv[j] for j in order], dtype=np.int32)
