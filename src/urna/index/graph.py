"""The chunk graph's algorithms: which edges the writer emits, and the bounded BFS of search.

Works on decoded arrays only (03-runtime §10.3, §10.4); the payload codec lives in
``urna.format.sections.graph``. The BFS only proposes candidates; callers rerank them with
exact scores, so an edge can never change a returned score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np

from ..errors import InvalidInput
from ..format.sections.graph import EDGE_TYPE_NEXT_CHUNK, EDGE_TYPE_SEMANTIC

__all__ = ["graph_edges", "bounded_bfs"]


class _CsrLike(Protocol):
    n_nodes: int
    offsets: np.ndarray
    neighbors: np.ndarray


def graph_edges(n: int, level0_neighbors: Sequence[np.ndarray], top_m: int
                ) -> list[tuple[int, int, int]]:
    """The reference writer's edges ``(src, edge_type, dst)`` for ``n`` chunks.

    NEXT_CHUNK ``i -> i+1`` and ``i+1 -> i`` for every neighbouring pair (reading order), then
    for each node the first ``top_m`` entries of its HNSW layer-0 list in stored order,
    skipping self loops, as SEMANTIC edges. No threshold and no de-duplication: the encoder
    sorts. With ``n < 2`` the reference writes no 0x0C section at all; that choice belongs to
    the builder.

    Example: ``graph_edges(2, [np.array([1]), np.array([0])], 4)`` gives
    ``[(0, 0, 1), (1, 0, 0), (0, 1, 1), (1, 1, 0)]``.
    """
    if top_m < 0:
        raise InvalidInput(f"graph_top_m must be >= 0, got {top_m}")
    if len(level0_neighbors) != n:
        raise InvalidInput(f"graph needs one layer-0 neighbour list per chunk ({n}), "
                           f"got {len(level0_neighbors)}")
    edges: list[tuple[int, int, int]] = []
    for i in range(n - 1):
        edges.append((i, EDGE_TYPE_NEXT_CHUNK, i + 1))
        edges.append((i + 1, EDGE_TYPE_NEXT_CHUNK, i))
    for i, nbrs in enumerate(level0_neighbors):
        taken = 0
        for nbr in np.asarray(nbrs).tolist():
            if taken >= top_m:
                break
            if nbr == i:
                continue
            edges.append((i, EDGE_TYPE_SEMANTIC, int(nbr)))
            taken += 1
    return edges


def bounded_bfs(csr: _CsrLike, seeds: Iterable[int], hops: int, max_frontier: int) -> list[int]:
    """Level-synchronous BFS from ``seeds``: at most ``hops`` levels, ``max_frontier`` ids.

    Returns the de-duplicated ids, seeds first (in order), then in discovery order (each
    frontier node's neighbours in CSR order). Out-of-range ids are skipped; ``hops = 0``
    returns the seeds alone. Each call has its own visited marks, so calls never interfere.

    Example: on the line graph 0-1-...-9, ``bounded_bfs(csr, [5], 1, 100)`` is ``[5, 4, 6]``.
    """
    n = int(csr.n_nodes)
    offsets = csr.offsets
    neighbors = csr.neighbors
    seen = bytearray(n)  # one flat mark per node, fresh per call
    out: list[int] = []
    frontier: list[int] = []
    for s in seeds:
        if len(out) >= max_frontier:
            break
        s = int(s)
        if s < 0 or s >= n or seen[s]:
            continue
        seen[s] = 1
        out.append(s)
        frontier.append(s)
    for _ in range(max(hops, 0)):
        if len(out) >= max_frontier or not frontier:
            break
        nxt: list[int] = []
        full = False
        for node in frontier:
            for nbr in neighbors[offsets[node]:offsets[node + 1]].tolist():
                if len(out) >= max_frontier:
                    full = True
                    break
                if nbr < 0 or nbr >= n or seen[nbr]:
                    continue
                seen[nbr] = 1
                out.append(nbr)
                nxt.append(nbr)
            if full:
                break
        frontier = nxt
    return out
