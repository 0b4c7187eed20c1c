"""The numba-free beam's heaps (``heapq`` over ``(key, node)``) and its reads of a deferred id
column (``BlockIds.read``), against the compiled kernel and the eager array.

Claims: on graphs whose rows tie (repeated rows, so equal distances everywhere), hold NaN or
zero rows, with or without a ``where=`` mask, the beam returns the kernel's ids in the
kernel's order (its heaps pop, push and break ties as Rust's ``BinaryHeap`` does); a walk
over a deferred column returns what a walk over the eager array does; ``read(lo, hi)`` is the
eager slice as ints for any range, and a block holding an out-of-range id raises the eager
decoder's error when read, whichever way it is read.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import MalformedSectionPayload
from urna.format.encodings.intpack import pack_u64s
from urna.format.sections.hnsw import decode_hnsw, encode_hnsw, payload_from_lists
from urna.index import _hnsw_kernels as K
from urna.index import hnsw as H
from urna.index import hnsw_beam


def _beam(g, x, q, ef, allowed, ids=None):
    ef = max(min(max(ef, g.ef_construction), g.n_nodes + 1), 0)
    mask = (np.zeros(0, np.uint8) if allowed is None
            else np.ascontiguousarray(allowed, np.uint8))
    return hnsw_beam.search_graph(q, ef, g.entry_point, g.max_level, x, g.node_ptr,
                                  g.nbr_ptr[:-1], g.nbr_ptr[1:],
                                  g.ids if ids is None else ids, mask).tolist()


def _kernel(g, x, q, ef, allowed):
    assert K.search_graph is not None  # imported: hnsw_search runs the compiled kernel
    return H.hnsw_search(g, x, q, ef, allowed).tolist()


@st.composite
def tied_rows(draw):
    """Rows drawn from a few distinct ones (ties everywhere), some NaN or zero."""
    n = draw(st.integers(1, 90))
    dim = draw(st.sampled_from([3, 8, 9, 16, 20]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    distinct = rng.normal(size=(draw(st.integers(1, 6)), dim)).astype(np.float32)
    distinct /= np.linalg.norm(distinct, axis=1, keepdims=True)
    x = distinct[rng.integers(0, distinct.shape[0], n)]
    for _ in range(draw(st.integers(0, 3))):
        x[int(rng.integers(0, n))] = draw(st.sampled_from([np.nan, 0.0, -0.0]))
    return x, rng


@st.composite
def tied_graphs(draw):
    """A built graph over tied rows, or any decodable graph over them."""
    x, rng = draw(tied_rows())
    n = x.shape[0]
    if draw(st.booleans()):
        clean = np.nan_to_num(x)  # the builder's own walk needs comparable distances
        g = H.build_hnsw(clean, draw(st.integers(2, 8)), draw(st.integers(1, 40)),
                         int(rng.integers(0, 2**31)))
    else:
        lists = [[rng.integers(0, n, int(rng.integers(0, 12))).tolist()
                  for _ in range(int(rng.integers(0, 3)) + 1)] for _ in range(n)]
        g = payload_from_lists(4, 10, draw(st.integers(0, 30)), int(rng.integers(0, n)),
                               max(len(lv) - 1 for lv in lists), lists)
        g = decode_hnsw(encode_hnsw(g), n)
    return g, x, rng


@settings(max_examples=120, deadline=None)
@given(tied_graphs(), st.integers(0, 50), st.booleans())
def test_tied_nan_and_zero_rows_walk_as_the_kernel_walks(case, ef, masked) -> None:
    g, x, rng = case
    for _ in range(3):
        q = x[int(rng.integers(0, x.shape[0]))].copy() if rng.random() < 0.5 else \
            rng.normal(size=x.shape[1]).astype(np.float32)
        allowed = rng.random(g.n_nodes) < 0.5 if masked else None
        with np.errstate(all="ignore"):
            assert _beam(g, x, q, ef, allowed) == _kernel(g, x, q, ef, allowed)


@settings(max_examples=60, deadline=None)
@given(tied_graphs(), st.integers(0, 50))
def test_a_walk_over_deferred_ids_equals_the_walk_over_the_array(case, ef) -> None:
    g, x, rng = case
    lazy = decode_hnsw(encode_hnsw(g), g.n_nodes, defer_ids=True)
    q = rng.normal(size=x.shape[1]).astype(np.float32)
    with np.errstate(all="ignore"):
        assert _beam(lazy, x, q, ef, None, lazy.id_column()) == _beam(g, x, q, ef, None)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5000), st.integers(0, 2**32 - 1), st.data())
def test_read_is_the_eager_slice_as_ints(n, seed, data) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, n, int(rng.integers(0, 1200)))
    if ids.size and data.draw(st.booleans()):
        ids[: ids.size // 2] = ids[0]  # constant blocks (width 0)
    blob = _v2(n, ids)
    lazy = decode_hnsw(blob, n, defer_ids=True).id_column()
    eager = decode_hnsw(blob, n).ids
    for _ in range(10):
        lo = data.draw(st.integers(0, ids.size + 2))
        hi = data.draw(st.integers(0, ids.size + 300))
        assert lazy.read(lo, hi) == eager[lo:hi].tolist()


@pytest.mark.parametrize("bad", [2, 3, 2**32 - 1, 2**40, 2**64 - 1])
def test_an_out_of_range_id_raises_when_its_block_is_read(bad: int) -> None:
    ids = [0, 1] * 100
    ids[150] = bad  # in the second block
    lazy = decode_hnsw(_v2(2, ids), 2, defer_ids=True).id_column()
    assert lazy.read(0, 128) == ids[:128]  # the first block is sound
    for read in (lambda: lazy.read(140, 160), lambda: lazy[140:160]):
        with pytest.raises(MalformedSectionPayload) as exc:
            read()
        assert (exc.value.section_id, exc.value.reason) == \
            (7, "hnsw v2: neighbour id out of range")


def _v2(n: int, ids) -> bytes:
    """A version-2 payload of ``n`` layer-0-only nodes, node 0 holding every id."""
    counts = [len(ids)] + [0] * (n - 1)
    out = struct.pack("<7I", 2, 16, 32, 400, 0, 0, n)
    for col in ([0] * n, counts, list(ids)):
        blob = pack_u64s(np.asarray(col, dtype=np.uint64))
        out += struct.pack("<I", len(blob)) + blob
    return out


@settings(max_examples=80, deadline=None)
@given(tied_graphs(), st.sampled_from([0, 1, 2]), st.data())
def test_a_beam_of_width_zero_or_one_with_its_entry_masked_out_walks_as_the_kernel(
        case, ef, data) -> None:
    # results start empty (the entry is not allowed): every closer row is measured against +inf
    g, x, rng = case
    g = decode_hnsw(encode_hnsw(payload_from_lists(
        g.m, g.m_max0, 0, g.entry_point, g.max_level,
        [[g.neighbors(i, layer).tolist() for layer in range(int(g.levels[i]) + 1)]
         for i in range(g.n_nodes)])), g.n_nodes)  # ef_construction 0: the beam is ef wide
    allowed = rng.random(g.n_nodes) < data.draw(st.sampled_from([0.0, 0.3, 0.7]))
    allowed[g.entry_point] = False
    q = rng.normal(size=x.shape[1]).astype(np.float32)
    with np.errstate(all="ignore"):
        assert _beam(g, x, q, ef, allowed) == _kernel(g, x, q, ef, allowed)
