"""The HNSW graph payload of section 0x07 (03-runtime §7.1-7.2): encode v2, decode v1 and v2.

Layout: seven little-endian u32 (version, m, m_max0, ef_construction, entry_point, max_level,
n_nodes), then either v1 inline node records or v2's three length-prefixed intpack columns
(levels, per-layer neighbour counts, neighbour ids in stored order).

The decoded graph is flat arrays (a CSR of CSRs), never one object per node: the neighbours of
node ``i`` on layer ``l`` (``l <= levels[i]``) are
``ids[nbr_ptr[node_ptr[i] + l] : nbr_ptr[node_ptr[i] + l + 1]]``. A payload known to decode
(a verified body's) may leave ``ids`` to be decoded block by block as a walk reads it
(``decode_hnsw(..., defer_ids=True)``, ``BlockIds``).

The decoder runs the reference's checks in the reference's order with its reason texts.
intpack failures keep section id 0, as the reference reports them. Every count is checked
against the bytes present before anything is allocated from it.
"""

from __future__ import annotations

import struct

import numpy as np

from ...errors import MalformedSectionPayload, UnsupportedSectionVersion
from ..encodings.intpack import INTPACK_BLOCK, IntpackReader, pack_u64s
from ..layout import SECTION_HNSW_INDEX
from ..record import Record

HNSW_PAYLOAD_VERSION = 2
MAX_LEVEL = 64  # hostile-input caps of the reference decoder; real graphs stay far below
MAX_DEGREE = 4096
_HEAD = struct.Struct("<7I")
_U32 = struct.Struct("<I")


class HnswPayload(Record):
    """A decoded (or freshly built) HNSW graph held as flat arrays.

    ``levels`` (n,) int32: top layer of each node. ``node_ptr`` (n+1,) int64: index of node
    ``i``'s layer-0 row in the per-layer arrays (rows of one node are consecutive, layer order).
    ``nbr_ptr`` (rows+1,) int64: offsets of each row's neighbours in ``ids``. ``ids`` int32:
    every neighbour id, node by node, layer by layer, in stored (build) order.

    Immutable. A record, not a dataclass: every question opens one, and ``dataclasses`` costs
    a one-shot verb ~2 ms (format/record.py says why).
    """

    _fields = ("m", "m_max0", "ef_construction", "entry_point", "max_level", "n_nodes",
               "levels", "node_ptr", "nbr_ptr", "ids", "version")
    m: int
    m_max0: int
    ef_construction: int
    entry_point: int
    max_level: int
    n_nodes: int
    levels: np.ndarray
    node_ptr: np.ndarray
    nbr_ptr: np.ndarray
    ids: np.ndarray
    version: int
    # holds arrays: equality is identity (compare fields explicitly), hashable as an object
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self, m: int, m_max0: int, ef_construction: int, entry_point: int,
                 max_level: int, n_nodes: int, levels: np.ndarray, node_ptr: np.ndarray,
                 nbr_ptr: np.ndarray, ids: np.ndarray,
                 version: int = HNSW_PAYLOAD_VERSION) -> None:
        for name, value in zip(self._fields, (m, m_max0, ef_construction, entry_point,
                                              max_level, n_nodes, levels, node_ptr, nbr_ptr,
                                              ids, version), strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def neighbors(self, i: int, layer: int = 0) -> np.ndarray:
        """Neighbour ids of node ``i`` on ``layer`` (empty if the node is not on that layer)."""
        if not 0 <= i < self.n_nodes or layer < 0 or layer > int(self.levels[i]):
            return np.zeros(0, dtype=np.int32)
        row = int(self.node_ptr[i]) + layer
        return self.ids[int(self.nbr_ptr[row]):int(self.nbr_ptr[row + 1])]

    def counts(self) -> np.ndarray:
        """Per-(node, layer) neighbour counts, in payload order."""
        return np.diff(self.nbr_ptr)

    def id_column(self) -> np.ndarray | BlockIds:
        """``ids`` as a walk reads it (slices only): the array, or its blocks decoded on use."""
        return self.ids


class BlockIds:
    """The neighbour-id column of a verified v2 payload, each intpack block decoded the first
    time a slice reads it: a query walks a few hundred of a graph's neighbour lists (~400 of
    4,066 blocks on a 19,000-node graph), so decoding all 520,000 ids costs more than the walk.
    The values are the eager decode's (int32, each checked against ``n_nodes``)."""

    def __init__(self, reader: IntpackReader, n_nodes: int) -> None:
        self._reader, self._n_nodes = reader, n_nodes
        self._blocks: dict[int, np.ndarray] = {}  # racing threads store equal arrays
        self._lists: dict[int, list[int]] = {}  # the same blocks as ints (``read``)
        self.size = reader.count

    def _checked(self, b: int) -> np.ndarray:
        """Block ``b`` decoded, every id checked against ``n_nodes``."""
        values = self._reader.block(b)
        if values.size and int(values.max()) >= self._n_nodes:  # never in a verified body
            raise _malformed("hnsw v2: neighbour id out of range")
        return values

    def _block(self, b: int) -> np.ndarray:
        got = self._blocks.get(b)
        if got is None:
            got = self._blocks[b] = self._checked(b).astype(np.int32)
        return got

    def _ints(self, b: int) -> list[int]:
        """Block ``b`` as ints, checked as ``_block`` checks it."""
        got = self._lists.get(b)
        if got is None:
            got = self._lists[b] = self._checked(b).tolist()
        return got

    def read(self, lo: int, hi: int) -> list[int]:
        """``self[lo:hi]`` as a list of ints (how the numba-free walk reads a stored list)."""
        hi = min(hi, self.size)
        if hi <= lo:
            return []
        first, last = lo // INTPACK_BLOCK, (hi - 1) // INTPACK_BLOCK
        base = first * INTPACK_BLOCK
        if first == last:
            return self._ints(first)[lo - base:hi - base]
        whole: list[int] = []
        for b in range(first, last + 1):
            whole += self._ints(b)
        return whole[lo - base:hi - base]

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, at: slice) -> np.ndarray:
        lo, hi, _ = at.indices(self.size)
        if hi <= lo:
            return np.zeros(0, dtype=np.int32)
        first, last = lo // INTPACK_BLOCK, (hi - 1) // INTPACK_BLOCK
        base = first * INTPACK_BLOCK
        if first == last:
            return self._block(first)[lo - base:hi - base]
        whole = np.concatenate([self._block(b) for b in range(first, last + 1)])
        return whole[lo - base:hi - base]

    def whole(self) -> np.ndarray:
        """Every id, as the eager decode returns them (one vectorised pass)."""
        ids = self._reader.all()
        if ids.size and int(ids.max()) >= self._n_nodes:
            raise _malformed("hnsw v2: neighbour id out of range")
        return ids.astype(np.int32)


class _DeferredIdsPayload(HnswPayload):
    """An ``HnswPayload`` whose ``ids`` array is decoded on first use (``BlockIds`` serves
    the walks until then); every other field is decoded and checked."""

    _column: BlockIds

    def __init__(self, head: tuple[int, ...], levels: np.ndarray, node_ptr: np.ndarray,
                 nbr_ptr: np.ndarray, column: BlockIds) -> None:
        # not HnswPayload's __init__: ``ids`` stays unset until __getattr__ decodes it
        names = ("m", "m_max0", "ef_construction", "entry_point", "max_level", "n_nodes",
                 "version")
        for name, value in zip(names, (*head, HNSW_PAYLOAD_VERSION), strict=True):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "node_ptr", node_ptr)
        object.__setattr__(self, "nbr_ptr", nbr_ptr)
        object.__setattr__(self, "_column", column)

    def __getattr__(self, name: str) -> np.ndarray:
        if name != "ids":
            raise AttributeError(name)
        ids = self._column.whole()
        object.__setattr__(self, "ids", ids)  # two racing threads store equal arrays
        return ids

    def id_column(self) -> np.ndarray | BlockIds:
        """The whole array once decoded, else the block-by-block column."""
        return self.__dict__.get("ids", self._column)


def _malformed(reason: str) -> MalformedSectionPayload:
    return MalformedSectionPayload(SECTION_HNSW_INDEX, reason)


def payload_from_lists(m: int, m_max0: int, ef_construction: int, entry_point: int,
                       max_level: int, lists: list[list[list[int]]]) -> HnswPayload:
    """Build an ``HnswPayload`` from per-node, per-layer id lists (tests and small tools)."""
    n = len(lists)
    levels = np.array([len(node) - 1 for node in lists], dtype=np.int32)
    node_ptr = np.zeros(n + 1, dtype=np.int64)
    node_ptr[1:] = np.cumsum(levels.astype(np.int64) + 1)
    rows = [layer for node in lists for layer in node]
    nbr_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    nbr_ptr[1:] = np.cumsum([len(r) for r in rows]) if rows else []
    ids = np.array([x for r in rows for x in r], dtype=np.int32)
    return HnswPayload(m, m_max0, ef_construction, entry_point, max_level, n, levels,
                       node_ptr, nbr_ptr, ids)


def encode_hnsw(graph: HnswPayload) -> bytes:
    """Serialise ``graph`` as a version-2 0x07 payload, byte-identical to the reference."""
    head = _HEAD.pack(HNSW_PAYLOAD_VERSION, graph.m, graph.m_max0, graph.ef_construction,
                      graph.entry_point, graph.max_level, graph.n_nodes)
    parts = [head]
    for col in (graph.levels, np.diff(graph.nbr_ptr), graph.ids):
        blob = pack_u64s(np.asarray(col, dtype=np.uint64))
        parts.append(_U32.pack(len(blob)))
        parts.append(blob)
    return b"".join(parts)


class _Reader:
    """The payload cursor: u32 reads and length-prefixed intpack columns, reference texts."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: memoryview) -> None:
        self.buf = buf
        self.pos = 0

    def u32(self) -> int:
        if len(self.buf) - self.pos < 4:
            raise _malformed("hnsw: unexpected EOF")
        v = _U32.unpack_from(self.buf, self.pos)[0]
        self.pos += 4
        return v

    def column(self, expected: int, mismatch: str) -> np.ndarray:
        """Decode one intpack column whose length must be ``expected``."""
        return self.column_reader(expected, mismatch).all()

    def column_reader(self, expected: int, mismatch: str) -> IntpackReader:
        """The reader of one intpack column whose length must be ``expected`` (not decoded)."""
        size = self.u32()
        if size > len(self.buf) - self.pos:
            raise _malformed("hnsw: truncated intpack column")
        blob = self.buf[self.pos:self.pos + size]
        self.pos += size
        reader = IntpackReader(blob)
        if reader.count != expected:
            # The reference decodes the whole column before comparing its length; walk the
            # blocks (one at a time, so a hostile count allocates nothing) to raise the same
            # intpack error it would, then report the mismatch.
            for b in range(reader.n_blocks):
                reader.block(b)
            raise _malformed(mismatch)
        return reader


def _decode_v2(rd: _Reader, n_nodes: int,
               defer_ids: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | BlockIds]:
    levels = rd.column(n_nodes, "hnsw v2: level count mismatch")
    if levels.size and int(levels.max()) > MAX_LEVEL:
        raise _malformed(f"hnsw: level exceeds cap {MAX_LEVEL}")
    total_rows = int(levels.sum()) + n_nodes
    counts = rd.column(total_rows, "hnsw v2: layer-count column mismatch")
    if counts.size and int(counts.max()) > MAX_DEGREE:
        raise _malformed(f"hnsw: degree exceeds cap {MAX_DEGREE}")
    total_ids = int(counts.sum())
    column = BlockIds(rd.column_reader(total_ids, "hnsw v2: neighbour-id column mismatch"),
                      n_nodes)
    nbr_ptr = np.zeros(total_rows + 1, dtype=np.int64)
    np.cumsum(counts.astype(np.int64), out=nbr_ptr[1:])
    return levels.astype(np.int32), nbr_ptr, column if defer_ids else column.whole()


def _decode_v1(rd: _Reader, n_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    levels = np.zeros(n_nodes, dtype=np.int32)
    counts: list[int] = []
    chunks: list[np.ndarray] = []
    buf = rd.buf
    for i in range(n_nodes):
        level = rd.u32()
        if level > MAX_LEVEL:
            raise _malformed("hnsw v1: level exceeds cap")
        levels[i] = level
        for _ in range(level + 1):
            k = rd.u32()
            if k > MAX_DEGREE:
                raise _malformed("hnsw v1: degree exceeds cap")
            avail = min(k, (len(buf) - rd.pos) // 4)  # ids physically present
            got = np.frombuffer(buf, dtype="<u4", count=avail, offset=rd.pos)
            # The reference reads id by id: the first bad id or the first missing one fails.
            if avail and int(got.max()) >= n_nodes:
                raise _malformed("hnsw v1: neighbour id out of range")
            if avail < k:
                raise _malformed("hnsw: unexpected EOF")
            rd.pos += 4 * k
            counts.append(k)
            chunks.append(got.astype(np.int32))
    nbr_ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    if counts:
        np.cumsum(np.asarray(counts, dtype=np.int64), out=nbr_ptr[1:])
    ids = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)
    return levels, nbr_ptr, ids


def decode_hnsw(payload: bytes | memoryview, n: int, *, defer_ids: bool = False) -> HnswPayload:
    """Parse and validate a 0x07 payload (v1 or v2) for a file of ``n`` embeddings.

    Raises ``MalformedSectionPayload`` (section 7, or 0 for intpack failures) and
    ``UnsupportedSectionVersion`` with the reference's texts, in the reference's order.
    ``defer_ids``: the payload is known to decode (a verified body's, decoded whole by an
    earlier open), so a v2 neighbour-id column is decoded only as it is read (``BlockIds``);
    every other field is decoded and checked as without it.
    """
    rd = _Reader(memoryview(payload).cast("B"))
    version, m, m_max0, ef_c, entry_point, max_level, n_nodes = (rd.u32() for _ in range(7))
    if n_nodes != n:
        raise _malformed(f"node count {n_nodes} != n_embeddings {n}")
    ids: np.ndarray | BlockIds
    if version == 2:
        levels, nbr_ptr, ids = _decode_v2(rd, n_nodes, defer_ids)
    elif version == 1:
        levels, nbr_ptr, ids = _decode_v1(rd, n_nodes)
    else:
        raise UnsupportedSectionVersion(SECTION_HNSW_INDEX, version)
    if max_level > MAX_LEVEL:
        raise _malformed("hnsw: max_level exceeds cap")
    if n_nodes > 0 and entry_point >= n_nodes:
        raise _malformed("hnsw: entry_point out of range")
    node_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(levels.astype(np.int64) + 1, out=node_ptr[1:])
    if isinstance(ids, BlockIds):
        return _DeferredIdsPayload((m, m_max0, ef_c, entry_point, max_level, n_nodes), levels,
                                   node_ptr, nbr_ptr, ids)
    return HnswPayload(m, m_max0, ef_c, entry_point, max_level, n_nodes, levels, node_ptr,
                       nbr_ptr, ids, version)


__all__ = ["HNSW_PAYLOAD_VERSION", "BlockIds", "HnswPayload", "decode_hnsw", "encode_hnsw",
           "payload_from_lists"]
