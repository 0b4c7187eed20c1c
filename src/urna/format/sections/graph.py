"""Section 0x0C graph_adjacency: the chunk graph as a CSR payload (03-runtime §10.1).

Payload (raw, little-endian)::

    u32 version = 1 | u64 n_nodes
    u32 len + intpack(n_nodes + 1 CSR offsets)
    u32 len + intpack(destinations, delta-coded inside each (source, edge type) run)
    edge types: u8 0 + u8 type (one type for every edge) | u8 1 + u32 len + intpack(types)

The encoder sorts edges by (source, type, destination), so one edge set has one byte form;
duplicates are kept (they become a 0 gap). The decoder runs the reference's checks in its
order and bounds every allocation by the bytes present (an intpack column cannot claim more
values than its blob can hold). Intpack failures keep section id 0, as the reference's do.
Not checked, as in the reference: trailing bytes, edge order, self loops, duplicates.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInput, MalformedSectionPayload, UnsupportedSectionVersion
from ..cursor import Cursor
from ..encodings.intpack import pack_u64s, unpack_u64s
from ..layout import SECTION_GRAPH_ADJACENCY

GRAPH_ADJACENCY_PAYLOAD_VERSION = 1
EDGE_TYPE_NEXT_CHUNK = 0
EDGE_TYPE_SEMANTIC = 1
EDGE_TYPE_CITATION = 2
GRAPH_MAX_DEGREE = 1 << 20

_COL_ONE_TYPE = 0
_COL_PER_EDGE = 1
_HEAD = struct.Struct("<IQ")
_U32 = struct.Struct("<I")
_U32_MASK = np.uint64(0xFFFFFFFF)


def _malformed(reason: str) -> MalformedSectionPayload:
    return MalformedSectionPayload(SECTION_GRAPH_ADJACENCY, f"graph_adjacency: {reason}")


@dataclass(frozen=True, eq=False)
class Csr:
    """Decoded adjacency: node v's out-edges are ``neighbors[offsets[v]:offsets[v+1]]``."""

    n_nodes: int
    offsets: np.ndarray  # int64, (n_nodes + 1,)
    neighbors: np.ndarray  # int64, absolute destination ids in stored order
    edge_types: np.ndarray  # uint8, aligned with neighbors

    def neighbors_of(self, node: int) -> np.ndarray:
        """Out-neighbours of ``node`` in stored order; empty for an out-of-range node."""
        if node < 0 or node >= self.n_nodes:
            return self.neighbors[:0]
        return self.neighbors[self.offsets[node]:self.offsets[node + 1]]

    def edge_type(self, node: int, i: int) -> int | None:
        """Type of ``node``'s ``i``-th out-edge, or None when there is no such edge."""
        if node < 0 or node >= self.n_nodes or i < 0:
            return None
        idx = int(self.offsets[node]) + i
        return int(self.edge_types[idx]) if idx < int(self.offsets[node + 1]) else None

    def edges(self) -> list[tuple[int, int, int]]:
        """Every edge as ``(src, edge_type, dst)`` in stored order."""
        src = np.repeat(np.arange(self.n_nodes, dtype=np.int64), np.diff(self.offsets))
        return list(zip(src.tolist(), self.edge_types.tolist(), self.neighbors.tolist(),
                        strict=False))


def _lp_intpack(values: np.ndarray) -> bytes:
    blob = pack_u64s(values)
    return _U32.pack(len(blob)) + blob


def _edge_array(edges: Iterable[tuple[int, int, int]] | np.ndarray) -> np.ndarray:
    """Edges as an (m, 3) int64 array of (src, type, dst), in input order."""
    if not isinstance(edges, np.ndarray):
        edges = list(edges)
    try:
        arr = np.asarray(edges, dtype=np.int64)
    except OverflowError as exc:
        raise InvalidInput(
            "graph edge value does not fit the wire types (u32 ids, u8 type)") from exc
    if arr.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise InvalidInput(
            f"graph edges must be (src, edge_type, dst) triples, got shape {arr.shape}")
    return arr


def _canonical_order(src: np.ndarray, typ: np.ndarray, dst: np.ndarray, n_nodes: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort edges by (src, type, dst): one edge set, one byte form."""
    if n_nodes <= 1 << 24:
        # src (24 bits) | type (8) | dst (32) packs into one u64 key; one sort beats lexsort.
        key = (src.astype(np.uint64) << np.uint64(40)) | (typ.astype(np.uint64) << np.uint64(32)) \
            | dst.astype(np.uint64)
        key.sort()
        return ((key >> np.uint64(40)).astype(np.int64),
                ((key >> np.uint64(32)) & np.uint64(0xFF)).astype(np.int64),
                (key & _U32_MASK).astype(np.int64))
    order = np.lexsort((dst, typ, src))
    return src[order], typ[order], dst[order]


def encode_graph(n_nodes: int, edges: Iterable[tuple[int, int, int]] | np.ndarray) -> bytes:
    """Encode ``(src, edge_type, dst)`` edges over ``n_nodes`` nodes into the 0x0C payload.

    ``edges`` may also be an (m, 3) integer array. Raises ``MalformedSectionPayload(0x0C)``
    for an endpoint >= n_nodes (the reference's text, first such edge in input order) and
    ``InvalidInput`` for values the wire types cannot hold (negative ids, ids past u32,
    edge types past u8).
    """
    if n_nodes < 0 or n_nodes >= 1 << 64:
        raise InvalidInput(f"graph n_nodes {n_nodes} does not fit u64")
    arr = _edge_array(edges)
    src, typ, dst = arr[:, 0], arr[:, 1], arr[:, 2]
    bad_type = (typ < 0) | (typ > 0xFF)
    if bad_type.any():
        raise InvalidInput(f"graph edge type {int(typ[np.argmax(bad_type)])} does not fit u8")
    bad_id = (src < 0) | (dst < 0) | (src > 0xFFFFFFFF) | (dst > 0xFFFFFFFF)
    if bad_id.any():
        i = int(np.argmax(bad_id))
        raise InvalidInput(f"graph edge ({int(src[i])},{int(dst[i])}) does not fit u32 node ids")
    past = (src >= n_nodes) | (dst >= n_nodes)
    if past.any():
        i = int(np.argmax(past))
        raise MalformedSectionPayload(
            SECTION_GRAPH_ADJACENCY,
            f"edge ({int(src[i])},{int(dst[i])}) out of range for n_nodes {n_nodes}"
        )
    src, typ, dst = _canonical_order(src, typ, dst, n_nodes)
    m = len(src)
    offsets = np.zeros(n_nodes + 1, dtype=np.uint64)
    offsets[1:] = np.cumsum(np.bincount(src, minlength=n_nodes)[:n_nodes], dtype=np.uint64)
    # A run restarts at every new (src, type) pair: its first edge keeps the absolute id.
    gaps = dst.copy()
    if m > 1:
        same_run = (src[1:] == src[:-1]) & (typ[1:] == typ[:-1])
        gaps[1:] = np.where(same_run, dst[1:] - dst[:-1], dst[1:])
    out = [_HEAD.pack(GRAPH_ADJACENCY_PAYLOAD_VERSION, n_nodes), _lp_intpack(offsets),
           _lp_intpack(gaps.astype(np.uint64))]
    first = int(typ[0]) if m else EDGE_TYPE_NEXT_CHUNK
    if m == 0 or bool(np.all(typ == first)):
        out.append(bytes([_COL_ONE_TYPE, first]))
    else:
        out.append(bytes([_COL_PER_EDGE]) + _lp_intpack(typ.astype(np.uint64)))
    return b"".join(out)


class _Reader(Cursor):
    """Bounded reads with the graph decoder's own EOF text."""

    __slots__ = ()

    def __init__(self, buf: bytes | memoryview) -> None:
        super().__init__(memoryview(buf).cast("B"), SECTION_GRAPH_ADJACENCY,
                         eof="graph_adjacency: unexpected EOF")

    def intpack(self) -> np.ndarray:
        return unpack_u64s(self.view(self.u32()))


def _check_offsets(offsets: np.ndarray) -> int:
    """Monotone offsets, degrees within the cap, last offset = edge count; returns the count."""
    if len(offsets) > 1:
        lo, hi = offsets[:-1], offsets[1:]
        backwards = hi < lo
        with np.errstate(over="ignore"):
            too_wide = ~backwards & ((hi - lo) > np.uint64(GRAPH_MAX_DEGREE))
        bad = backwards | too_wide
        if bad.any():  # the reference stops at the first bad window and names its fault
            first = int(np.argmax(bad))
            raise _malformed("offsets not monotone" if backwards[first] else "degree exceeds cap")
    # With offsets monotone, the degree sum telescopes to last - first (no overflow).
    total = int(offsets[-1]) - int(offsets[0])
    if int(offsets[-1]) != total:
        raise _malformed("final offset != edge count")
    return total


def _read_edge_types(rd: _Reader, total: int) -> np.ndarray:
    kind = rd.u8()
    if kind == _COL_ONE_TYPE:
        return np.full(total, rd.u8(), dtype=np.uint8)
    if kind == _COL_PER_EDGE:
        col = rd.intpack()
        if len(col) != total:
            raise _malformed("edge-type run length mismatch")
        if total and int(col.max()) > 0xFF:
            raise _malformed("edge-type > 255")
        return col.astype(np.uint8)
    raise _malformed(f"unknown edge-type kind {kind}")


def _degap(offsets: np.ndarray, gaps: np.ndarray, types: np.ndarray, n_nodes: int) -> np.ndarray:
    """Prefix-sum the gaps inside each (node, type) run; ids wrap to u32 as the reference's do."""
    total = len(gaps)
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.zeros(total, dtype=bool)
    starts[0] = True
    starts[1:] = starts[1:] | (types[1:] != types[:-1])
    first_of_node = offsets[:-1][np.diff(offsets) > 0]
    starts[first_of_node.astype(np.int64)] = True
    with np.errstate(over="ignore"):
        csum = np.cumsum(gaps, dtype=np.uint64)
        run = np.cumsum(starts) - 1
        start_idx = np.flatnonzero(starts)
        before = np.where(start_idx > 0, csum[start_idx - 1], np.uint64(0))
        dst = (csum - before[run]) & _U32_MASK
    if bool((dst >= np.uint64(n_nodes)).any()):
        raise _malformed("dst out of range")
    return dst.astype(np.int64)


def decode_graph(payload: bytes | memoryview, n: int | None = None) -> Csr:
    """Decode and validate a 0x0C payload; with ``n``, also require ``n_nodes == n``."""
    rd = _Reader(payload)
    version = rd.u32()
    if version != GRAPH_ADJACENCY_PAYLOAD_VERSION:
        raise UnsupportedSectionVersion(SECTION_GRAPH_ADJACENCY, version)
    n_nodes = rd.u64()
    offsets = rd.intpack()
    # Compare to the decoded length (bounded by the payload), never build n_nodes + 1.
    if len(offsets) == 0 or len(offsets) - 1 != n_nodes:
        raise _malformed("offsets length != n_nodes+1")
    total = _check_offsets(offsets)
    gaps = rd.intpack()
    if len(gaps) != total:
        raise _malformed("dst column length mismatch")
    types = _read_edge_types(rd, total)
    neighbors = _degap(offsets, gaps, types, n_nodes)
    if n is not None and n_nodes != n:
        raise MalformedSectionPayload(
            SECTION_GRAPH_ADJACENCY, f"graph node count {n_nodes} != n_embeddings {n}"
        )
    return Csr(n_nodes, offsets.astype(np.int64), neighbors, types)
