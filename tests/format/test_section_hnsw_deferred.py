"""``decode_hnsw(..., defer_ids=True)``: a verified 0x07 payload's neighbour ids read by block.

Claims: every field of the deferred decode equals the eager decode's; any slice of its id
column (``BlockIds``) equals the eager array's slice, dtype included, and the whole ``ids``
array (decoded on first use) equals the eager one; the HNSW walk returns the same candidates
over either; every damage the eager decoder rejects outside the id values is rejected at
decode with the same error, and an out-of-range id raises the eager decoder's error when its
block is read.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import MalformedSectionPayload, UnsupportedSectionVersion
from urna.format.encodings.intpack import pack_u64s
from urna.format.sections.hnsw import BlockIds, decode_hnsw, encode_hnsw, payload_from_lists
from urna.index import hnsw_beam
from urna.index.hnsw import build_hnsw, hnsw_search

HEAD = (2, 16, 32, 400, 0, 0)


def v2_bytes(head: tuple, levels, counts, ids) -> bytes:
    """A version-2 payload from explicit columns."""
    out = struct.pack("<7I", *head, len(levels))
    for col in (levels, counts, ids):
        blob = pack_u64s(np.asarray(col, dtype=np.uint64))
        out += struct.pack("<I", len(blob)) + blob
    return out


@st.composite
def big_graphs(draw):
    """Graphs whose id column spans several intpack blocks (lists drawn from a seed)."""
    n = draw(st.integers(1, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    width = draw(st.integers(0, 40))
    lists = [[rng.integers(0, n, rng.integers(0, width + 1)).tolist()
              for _ in range(int(rng.integers(0, 3)) + 1)] for _ in range(n)]
    ml = max(len(x) - 1 for x in lists)
    return payload_from_lists(8, 16, draw(st.integers(0, 500)), int(rng.integers(0, n)), ml,
                              lists)


@settings(max_examples=80, deadline=None)
@given(big_graphs(), st.data())
def test_deferred_decode_equals_the_eager_decode(g, data) -> None:
    blob = encode_hnsw(g)
    eager = decode_hnsw(blob, g.n_nodes)
    lazy = decode_hnsw(blob, g.n_nodes, defer_ids=True)
    for name in ("m", "m_max0", "ef_construction", "entry_point", "max_level", "n_nodes",
                 "version"):
        assert getattr(lazy, name) == getattr(eager, name)
    for name in ("levels", "node_ptr", "nbr_ptr"):
        a, b = getattr(lazy, name), getattr(eager, name)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    column = lazy.id_column()
    assert isinstance(column, BlockIds) and len(column) == eager.ids.size
    total = eager.ids.size
    for _ in range(8):
        lo = data.draw(st.integers(0, total + 3))
        hi = data.draw(st.integers(0, total + 3))
        got = column[lo:hi]
        assert got.dtype == np.int32 and np.array_equal(got, eager.ids[lo:hi])
    for row in range(eager.nbr_ptr.size - 1):  # every stored list, as a walk slices them
        lo, hi = eager.nbr_ptr[row], eager.nbr_ptr[row + 1]
        assert np.array_equal(column[lo:hi], eager.ids[lo:hi])
    assert lazy.ids.dtype == np.int32 and np.array_equal(lazy.ids, eager.ids)
    assert lazy.id_column() is lazy.ids  # once whole, walks read the array
    assert encode_hnsw(lazy) == blob


def test_walk_over_deferred_ids_returns_the_eager_candidates() -> None:
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(700, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    blob = encode_hnsw(build_hnsw(vecs, m=8, ef_construction=40))
    eager = decode_hnsw(blob, 700)
    assert eager.ids.size > 20 * 128  # many blocks
    for seed in range(5):
        q = np.random.default_rng(seed).normal(size=16).astype(np.float32)
        q /= np.linalg.norm(q)
        lazy = decode_hnsw(blob, 700, defer_ids=True)
        walk = [q, 50, lazy.entry_point, lazy.max_level, vecs, lazy.node_ptr,
                lazy.nbr_ptr[:-1], lazy.nbr_ptr[1:]]
        want = hnsw_beam.search_graph(*walk, eager.ids, np.zeros(0, np.uint8))
        got = hnsw_beam.search_graph(*walk, lazy.id_column(), np.zeros(0, np.uint8))
        assert np.array_equal(got, want)
        assert "ids" not in lazy.__dict__  # the walk read blocks, not the whole column
        # the routed search (numba-free walk or compiled kernels) gives the eager candidates
        assert np.array_equal(hnsw_search(lazy, vecs, q, 50), hnsw_search(eager, vecs, q, 50))


def _error(payload: bytes, n: int, **kw) -> tuple[type, int, str]:
    with pytest.raises((MalformedSectionPayload, UnsupportedSectionVersion)) as exc:
        g = decode_hnsw(payload, n, **kw)
        g.ids  # noqa: B018 - a deferred decode raises here at the latest
    e = exc.value
    return type(e), e.section_id, str(e)


@settings(max_examples=60, deadline=None)
@given(big_graphs(), st.data())
def test_damaged_payloads_raise_the_eager_error(g, data) -> None:
    blob = bytearray(encode_hnsw(g))
    if data.draw(st.booleans()):
        blob = blob[:data.draw(st.integers(0, len(blob) - 1))]
    else:
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    try:
        decode_hnsw(bytes(blob), g.n_nodes)
    except (MalformedSectionPayload, UnsupportedSectionVersion):
        assert _error(bytes(blob), g.n_nodes, defer_ids=True) == _error(bytes(blob), g.n_nodes)


def test_out_of_range_id_raises_when_its_block_is_read() -> None:
    ids = list(range(2)) * 100
    ids[150] = 9  # in the second block
    lazy = decode_hnsw(v2_bytes(HEAD, [0, 0], [100, 100], ids), 2, defer_ids=True)
    column = lazy.id_column()
    assert column[0:100].tolist() == ids[:100]  # the first block is sound
    with pytest.raises(MalformedSectionPayload) as exc:
        column[100:200]
    assert (exc.value.section_id, exc.value.reason) == (7, "hnsw v2: neighbour id out of range")
    with pytest.raises(MalformedSectionPayload, match="neighbour id out of range"):
        lazy.ids  # noqa: B018


def test_v1_payload_is_decoded_whole() -> None:
    g = payload_from_lists(16, 32, 400, 0, 0, [[[1]], [[0]]])
    v1 = struct.pack("<7I", 1, 16, 32, 400, 0, 0, 2) + struct.pack("<IIIIII", 0, 1, 1, 0, 1, 0)
    lazy = decode_hnsw(v1, 2, defer_ids=True)
    assert isinstance(lazy.id_column(), np.ndarray)
    assert np.array_equal(lazy.ids, g.ids)
