"""The HNSW build without numba, for corpora small enough that loading the compiled builder
costs more than the build: the quickstart's twelve rows, a few documents an agent indexes, a
living corpus's new segment.

Importing numba and loading the cached ``_hnsw_kernels.build_graph`` takes ~0.9 s, and a
machine's first build compiles it (~10 s); a build of a few hundred rows here takes less.
``build_graph`` fills the arrays the compiled one fills, with the same values: nodes inserted
in id order, the greedy descent, the layer beam, heuristic selection with keep_pruned and the
back-link pruning of 03-runtime §7.5-7.7, step for step as ``_hnsw_kernels._insert_all``.
Every distance is ``dist8`` of two rows, measured once for every pair up front
(``hnsw_beam.dist8_rows``, the kernel's bits; ``dist8`` is symmetric bit for bit, so the
table serves both sides). The heaps are ``heapq``'s over ``(key, node)`` items as in
``hnsw_beam``, which push, pop and tie as the kernel's ``_hnsw_heap`` (its docstring says why);
candidates are ordered by ``hnsw_beam.total_order`` keys, as ``_hnsw_heap.order_key`` orders
them. ``tests/index/test_hnsw_small_build.py`` compares both builders' graphs.
"""

from __future__ import annotations

from heapq import heappop, heappush

import numpy as np

from .hnsw_beam import Node, dist8_rows, total_order

SMALL_BUILD_ROWS = 256
"""Rows up to which a process without the compiled builder builds here (README: the measured
crossover with loading numba's cached kernel)."""

_INF = float("inf")


def build_graph(vecs: np.ndarray, levels: np.ndarray, m: int, ef_c: int, node_ptr: np.ndarray,
                row_start: np.ndarray, row_end: np.ndarray, ids: np.ndarray,
                adj0: np.ndarray) -> tuple[int, int]:
    """``_hnsw_kernels.build_graph``'s contract: insert rows 0..n-1 of ``vecs`` (float32,
    normalised) in id order, write layer 0 to ``adj0`` (count, then ids) and upper layers to
    the CSR rows (``ids`` from ``row_start``, ``row_end`` moved); returns (entry_point,
    max_level)."""
    n = vecs.shape[0]
    if n == 0:
        return 0, 0
    dist = [dist8_rows(vecs[i], vecs).tolist() for i in range(n)]
    top: list[int] = levels.tolist()
    lists: list[list[list[int]]] = [[[] for _ in range(t + 1)] for t in top]
    entry_point, max_level = 0, top[0]
    for i in range(1, n):
        di, lvl = dist[i], top[i]
        curr = entry_point
        for layer in range(max_level, lvl, -1):
            curr = _greedy(curr, di, layer, lists, top)
        entry = curr
        for layer in range(min(lvl, max_level), -1, -1):
            results = _layer_search(entry, di, layer, ef_c, i, lists, top)
            found = [int(node) for _, node in results]
            found_d = [-key for key, _ in results]
            sel = _select(found, found_d, m, dist)
            lists[i][layer] = sel
            cap = 2 * m if layer == 0 else m
            for v in sel:
                if layer > top[v]:
                    continue
                own = lists[v][layer]
                if len(own) >= cap:  # prune: the heuristic over (the list + i), from v
                    dv = dist[v]
                    lists[v][layer] = _select([*own, i], [dv[u] for u in own] + [di[v]], cap,
                                              dist)
                elif i not in own:
                    own.append(i)
            if sel:
                entry = sel[0]
            elif results:  # the closest; equal distances keep the heap's array order
                keys = total_order(np.asarray(found_d, dtype=np.float32))
                entry = found[int(np.argmin(keys))]
        if lvl > max_level:
            max_level, entry_point = lvl, i
    _store(lists, node_ptr, row_start, row_end, ids, adj0)
    return entry_point, max_level


def _greedy(curr: int, di: list[float], layer: int, lists: list[list[list[int]]],
            top: list[int]) -> int:
    """Move to a strictly closer neighbour on ``layer`` until none is (earliest wins ties)."""
    cd = di[curr]
    while True:
        if layer > top[curr]:
            return curr
        best, bd = curr, cd
        for nb in lists[curr][layer]:
            if di[nb] < bd:
                best, bd = nb, di[nb]
        if best == curr:
            return curr
        curr, cd = best, bd


def _layer_search(entry: int, di: list[float], layer: int, ef: int, skip: int,
                  lists: list[list[list[int]]], top: list[int]) -> list[tuple[float, Node]]:
    """The beam of width ``ef`` from ``entry`` toward row ``skip`` (never visited itself): the
    result heap as ``(-distance, node)`` items, in the kernel's heap array order."""
    mark = bytearray(len(top))
    frontier: list[tuple[float, Node]] = []
    results: list[tuple[float, Node]] = []
    if entry != skip:
        node = Node(entry)
        heappush(frontier, (di[entry], node))
        heappush(results, (-di[entry], node))
        mark[entry] = 1
    while frontier:
        cdist, c = heappop(frontier)
        if cdist > (-results[0][0] if results else _INF) and len(results) >= ef:
            break
        if layer > top[c]:
            continue
        for nb in lists[c][layer]:
            if nb == skip or mark[nb]:
                continue
            mark[nb] = 1
            d = di[nb]
            if len(results) < ef or d < (-results[0][0] if results else _INF):
                node = Node(nb)
                heappush(frontier, (d, node))
                heappush(results, (-d, node))
                if len(results) > ef:
                    heappop(results)
    return results


def _select(cids: list[int], cdist: list[float], t: int, dist: list[list[float]]) -> list[int]:
    """Heuristic selection with keep_pruned of up to ``t`` of ``cids`` (their distances to the
    query in ``cdist``): in (distance, id) order, a candidate closer to a chosen one than to
    the query is pruned; the pruned fill what is left, in that order."""
    if not cids or t == 0:
        return []
    keys = total_order(np.asarray(cdist, dtype=np.float32)).tolist()
    chosen: list[int] = []
    pruned: list[int] = []
    for _, cid, d in sorted(zip(keys, cids, cdist, strict=True)):
        if len(chosen) >= t:
            break
        dc = dist[cid]
        if any(dc[s] < d for s in chosen):
            pruned.append(cid)
        else:
            chosen.append(cid)
    return chosen + pruned[:t - len(chosen)]


def _store(lists: list[list[list[int]]], node_ptr: np.ndarray, row_start: np.ndarray,
           row_end: np.ndarray, ids: np.ndarray, adj0: np.ndarray) -> None:
    """Write the lists where the compiled build writes them."""
    for v, per_layer in enumerate(lists):
        level0 = per_layer[0]
        adj0[v, 0] = len(level0)
        adj0[v, 1:1 + len(level0)] = level0
        for layer in range(1, len(per_layer)):
            row = int(node_ptr[v]) + layer
            lo = int(row_start[row])
            ids[lo:lo + len(per_layer[layer])] = per_layer[layer]
            row_end[row] = lo + len(per_layer[layer])
