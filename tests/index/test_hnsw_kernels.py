"""The query kernel against the previous one, and packed rows against their dequantised form.

``_previous_search`` is a plain-Python copy of the search kernel as it was before the visited
stamps, the heaps and the filtered beam were merged into one reused traversal: the faster
search must return the same candidates in the same order (hence the same scores) on random
graphs, with and without a ``where=`` mask, over many queries reusing the per-thread scratch.
Packed rows (float16 bits, int8, int4) must give the candidates of the float32 rows
``Slab.dequantize`` makes from them, and their row decoders the same bits.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from urna.format.sections.hnsw import decode_hnsw, encode_hnsw, payload_from_lists
from urna.index import _hnsw_dist as D
from urna.index import _hnsw_kernels as K
from urna.index import hnsw as H
from urna.index import hnsw_beam
from urna.index.exact import Slab
from urna.runtime.search import hnsw_vectors

F32_INF = np.float32(np.inf)


# ------------------------------------------------------------------ the previous kernel


def _previous_layer0(entry, q, ef, vecs, graph, allowed):
    """Layer-0 beam as the previous kernels ran it (fresh marks; the filtered variant)."""
    n = vecs.shape[0]
    mark = np.zeros(n, dtype=np.uint8)
    fk = np.empty(n + 2, dtype=np.float32)
    fv = np.empty(n + 2, dtype=np.int32)
    rk = np.empty(ef + 3, dtype=np.float32)
    rv = np.empty(ef + 3, dtype=np.int32)
    fs = rs = 0
    d = D.dist8(q, vecs[entry])
    fs = K._push(fk, fv, fs, -d, entry)
    if allowed[entry]:
        rs = K._push(rk, rv, rs, d, entry)
    mark[entry] = 1
    while fs > 0:
        cdist = -fk[0]
        c = fv[0]
        fs = K._pop_root(fk, fv, fs)
        worst = rk[0] if rs > 0 else F32_INF
        if cdist > worst and rs >= ef:
            break
        for nb in graph.neighbors(int(c), 0):
            if mark[nb]:
                continue
            mark[nb] = 1
            d = D.dist8(q, vecs[nb])
            worst = rk[0] if rs > 0 else F32_INF
            if rs < ef or d < worst:
                fs = K._push(fk, fv, fs, -d, nb)
                if allowed[nb]:
                    rs = K._push(rk, rv, rs, d, nb)
                    if rs > ef:
                        rs = K._pop_root(rk, rv, rs)
    keys = [K.order_key(rk[j], rk[j:j + 1].view(np.uint32)[0], j) for j in range(rs)]
    return [int(rv[j]) for j in np.argsort(np.array(keys, dtype=np.int64), kind="stable")]


def _previous_search(graph, vecs, q, ef, allowed=None):
    """Greedy descent then the layer-0 beam, beam width floored as ``hnsw_search`` does."""
    n = graph.n_nodes
    ef = max(min(max(ef, graph.ef_construction), n + 1), 0)
    allowed = np.ones(n, dtype=bool) if allowed is None else allowed
    curr = graph.entry_point
    for layer in range(graph.max_level, 0, -1):
        cd = D.dist8(q, vecs[curr])
        while True:
            best, bd = curr, cd
            for nb in graph.neighbors(int(curr), layer):
                d = D.dist8(q, vecs[nb])
                if d < bd:
                    best, bd = int(nb), d
            if best == curr:
                break
            curr, cd = best, bd
    return _previous_layer0(curr, q, ef, vecs, graph, allowed)


# ------------------------------------------------------------------ graphs


@st.composite
def built_graphs(draw):
    """A graph of the reference builder over random unit rows (dim 5..20)."""
    n = draw(st.integers(1, 120))
    dim = draw(st.integers(5, 20))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    g = H.build_hnsw(x, draw(st.integers(2, 8)), draw(st.integers(1, 40)), seed)
    return g, x, rng


@st.composite
def decodable_graphs(draw):
    """Any graph a file could carry (repeated, self and dangling-free ids in any order)."""
    n = draw(st.integers(1, 40))
    lists = [[draw(st.lists(st.integers(0, n - 1), max_size=10))
              for _ in range(draw(st.integers(0, 3)) + 1)] for _ in range(n)]
    g = payload_from_lists(4, 10, draw(st.integers(0, 30)), draw(st.integers(0, n - 1)),
                           draw(st.integers(0, 3)), lists)
    g = decode_hnsw(encode_hnsw(g), n)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return g, rng.normal(size=(n, 9)).astype(np.float32), rng


def _check_same_as_previous(g, x, rng, ef, masked):
    for _ in range(4):  # several queries in a row: the scratch is reused between them
        q = rng.normal(size=x.shape[1]).astype(np.float32)
        allowed = rng.random(g.n_nodes) < 0.5 if masked else None
        got = H.hnsw_search(g, x, q, ef, allowed)
        want = _previous_search(g, x, q, ef, allowed)
        assert got.tolist() == want
        # same ids in the same order, so the same distances and exact scores
        assert [D.dist8(q, x[i]) for i in got] == [D.dist8(q, x[i]) for i in want]


@settings(max_examples=60, deadline=None)
@given(built_graphs(), st.integers(0, 60), st.booleans())
def test_search_equals_the_previous_kernel_on_built_graphs(case, ef, masked) -> None:
    g, x, rng = case
    _check_same_as_previous(g, x, rng, ef, masked)


@settings(max_examples=60, deadline=None)
@given(decodable_graphs(), st.integers(0, 40), st.booleans())
def test_search_equals_the_previous_kernel_on_any_decodable_graph(case, ef, masked) -> None:
    g, x, rng = case
    _check_same_as_previous(g, x, rng, ef, masked)


def test_visited_stamps_survive_their_wrap() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    g = H.build_hnsw(x, 6, 20, 1)
    H._scratch.take(g.n_nodes, 20)
    H._scratch.epoch = K.EPOCH_LIMIT - 2  # the next queries cross the uint16 wrap
    for _ in range(5):
        q = rng.normal(size=16).astype(np.float32)
        assert H.hnsw_search(g, x, q, 20).tolist() == _previous_search(g, x, q, 20)
    assert H._scratch.epoch < 5


# ------------------------------------------------------------------ packed rows


def _slab(kind: str, n: int, dim: int, rng) -> Slab:
    if kind == "float16":
        bits = rng.integers(0, 1 << 16, size=(n, dim), dtype=np.uint16)
        bits[(bits & 0x7C00) == 0x7C00] &= 0x83FF  # finite halves only (inf/NaN rows never open)
        return Slab.float16(bits.view(np.float16))
    if kind == "int8":
        scales = (rng.random(n) * 0.02).astype(np.float32)
        return Slab.int8(scales, rng.integers(-128, 128, size=(n, dim), dtype=np.int8))
    scales = (rng.random((n, dim // 64)) * 0.2).astype(np.float16)
    return Slab.int4(scales, rng.integers(0, 256, size=(n, dim // 2), dtype=np.uint8), dim)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["float16", "int8", "int4"]), st.integers(1, 40),
       st.sampled_from([64, 128, 192]), st.integers(0, 2**32 - 1))
def test_packed_row_decoders_give_dequantize_bits(kind, n, dim, seed) -> None:
    slab = _slab(kind, n, dim, np.random.default_rng(seed))
    rows = H.beam_rows(slab)
    assert isinstance(rows, H.PackedRows)
    want = slab.dequantize(0, n)
    out = np.empty(dim, dtype=np.float32)
    for i in range(n):
        if kind == "float16":
            D.decode_f16_row(rows.codes, i, out)
        elif kind == "int8":
            D.decode_i8_row(rows.codes, rows.scales, i, out)
        else:
            D.decode_i4_row(rows.codes, rows.scales, i, out)
        assert out.tobytes() == want[i].tobytes()


SCALES = [0.0, -0.0, 6e-8, -6e-8, 1e-4, 0.5, -3.0, 65504.0, float("inf"), float("-inf"),
          float("nan")]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.sampled_from([64, 128, 320, 384]), st.integers(0, 2**32 - 1),
       st.lists(st.sampled_from(SCALES), min_size=1, max_size=12))
def test_the_vector_int4_decoder_gives_the_scalar_loops_bits(n, dim, seed, specials) -> None:
    # the beam's packed int4 rows decode 64 columns at a time as vectors (numba): every byte
    # value, and scales that are zero, subnormal, huge, infinite or NaN (a hostile file's)
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, size=(n, dim // 2), dtype=np.uint8)
    codes[0, :min(dim // 2, 256)] = np.arange(min(dim // 2, 256), dtype=np.uint8)
    scales = (rng.random((n, dim // 64)) * 0.2).astype(np.float16).astype(np.float32)
    flat = scales.reshape(-1)
    flat[:len(specials)] = np.array(specials[:len(flat)], dtype=np.float32)
    vector, scalar, plain = (np.empty(dim, np.float32) for _ in range(3))
    for i in range(n):
        D._decode_i4_row_vectors(codes, scales, i, vector)
        D.decode_i4_row(codes, scales, i, scalar)
        with np.errstate(invalid="ignore"):  # inf x 0: numpy's scalars warn, numba's do not
            D.decode_i4_row.py_func(codes, scales, i, plain)
        assert vector.tobytes() == scalar.tobytes() == plain.tobytes()


# (kind, n, seed, ef, masked) of a packed-row walk
PACKED_WALKS = (st.sampled_from(["float16", "int8", "int4"]), st.integers(1, 150),
                st.integers(0, 2**32 - 1), st.integers(0, 80), st.booleans())


@settings(max_examples=30, deadline=None)
@given(*PACKED_WALKS)
def test_packed_rows_give_the_candidates_of_their_dequantised_rows(kind, n, seed, ef,
                                                                   masked) -> None:
    rng = np.random.default_rng(seed)
    slab = _slab(kind, n, 64, rng)
    f32 = slab.dequantize(0, n)
    g = H.build_hnsw(f32, 4, 16, seed)
    packed = H.beam_rows(slab)
    for _ in range(3):
        q = rng.normal(size=64).astype(np.float32)
        allowed = rng.random(n) < 0.5 if masked else None
        assert (H.hnsw_search(g, packed, q, ef, allowed).tolist()
                == H.hnsw_search(g, f32, q, ef, allowed).tolist())


def test_packed_rows_reject_a_mismatched_query() -> None:
    slab = _slab("int8", 10, 64, np.random.default_rng(1))
    g = H.build_hnsw(slab.dequantize(0, 10), 4, 8, 1)
    with pytest.raises(ValueError):
        H.hnsw_search(g, H.beam_rows(slab), np.ones(32, dtype=np.float32), 5)


REF = __import__("pathlib").Path(__file__).resolve().parent.parent / "data" / "ref-0.5.1"


@pytest.mark.parametrize("name", ["synthetic-tiny.urna", "synthetic-nano.urna",
                                  "synthetic-f16_hnsw.urna", "synthetic-hybrid.urna"])
def test_an_opened_file_walks_its_stored_rows_in_place(name: str) -> None:
    with urna.open(REF / name) as f:
        f.search_ann(np.ones(f.embedding_dim, dtype=np.float32), 3, 32)
        st_ = f._st
        rows = hnsw_vectors(st_)
        if st_.stored.dtype == "float32":
            assert isinstance(rows, np.ndarray) and np.shares_memory(rows, st_.stored.a)
        else:  # the packed rows themselves, not a float32 copy of the slab
            assert isinstance(rows, H.PackedRows)
            assert np.shares_memory(rows.codes, st_.stored.a)


# ------------------------------------------------------------------ the numba-free beam


def _beam(g, x, q, ef, allowed):
    """``hnsw_beam.search_graph`` with ``hnsw_search``'s arguments (no kernel involved)."""
    ef = max(min(max(ef, g.ef_construction), g.n_nodes + 1), 0)
    mask = (np.zeros(0, np.uint8) if allowed is None
            else np.ascontiguousarray(allowed, np.uint8))
    return hnsw_beam.search_graph(q, ef, g.entry_point, g.max_level, x, g.node_ptr,
                                  g.nbr_ptr[:-1], g.nbr_ptr[1:], g.ids, mask).tolist()


def _check_beam_equals_kernel(g, x, rng, ef, masked):
    assert "urna.index._hnsw_kernels" in __import__("sys").modules  # hnsw_search: the kernel
    for _ in range(4):
        q = rng.normal(size=x.shape[1]).astype(np.float32)
        allowed = rng.random(g.n_nodes) < 0.5 if masked else None
        assert _beam(g, x, q, ef, allowed) == H.hnsw_search(g, x, q, ef, allowed).tolist()


@settings(max_examples=60, deadline=None)
@given(built_graphs(), st.integers(0, 60), st.booleans())
def test_the_numba_free_beam_equals_the_kernel_on_built_graphs(case, ef, masked) -> None:
    g, x, rng = case
    _check_beam_equals_kernel(g, x, rng, ef, masked)


@settings(max_examples=60, deadline=None)
@given(decodable_graphs(), st.integers(0, 40), st.booleans())
def test_the_numba_free_beam_equals_the_kernel_on_any_decodable_graph(case, ef, masked) -> None:
    g, x, rng = case
    _check_beam_equals_kernel(g, x, rng, ef, masked)


ROW_VALUES = st.one_of(st.floats(-2, 2, width=32), st.sampled_from([0.0, -0.0, 1e-40, -1e-40]))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 5), st.data())
def test_numpy_distances_are_dist8_bit_for_bit(dim, m, data) -> None:
    q = np.asarray(data.draw(st.lists(ROW_VALUES, min_size=dim, max_size=dim)), np.float32)
    rows = np.asarray([data.draw(st.lists(ROW_VALUES, min_size=dim, max_size=dim))
                       for _ in range(m)], np.float32)
    got = hnsw_beam.dist8_rows(q, rows).view(np.uint32).tolist()
    want = [np.float32(D.dist8(q, r)).view(np.uint32) for r in rows]
    assert got == [int(w) for w in want]


def test_a_cli_query_walks_without_numba_and_answers_like_the_kernel() -> None:
    # a fresh process (no kernels loaded) takes the numba-free beam for ANN and hybrid
    import subprocess
    import sys

    code = (
        "import sys, json, numpy as np, urna\n"
        f"f = urna.open({str(REF / 'synthetic-hybrid.urna')!r})\n"
        "q = np.ones(f.embedding_dim, dtype=np.float32)\n"
        "a = [(h.chunk_id, h.score) for h in f.search_ann(q, 5, 16)]\n"
        "b = [(h.chunk_id, h.score) for h in f.search_hybrid(q, 'alpha beta', 5, 50)]\n"
        "print(json.dumps({'numba': 'numba' in sys.modules, 'ann': a, 'hybrid': b}))\n")
    out = __import__("json").loads(subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    assert out["numba"] is False
    with urna.open(REF / "synthetic-hybrid.urna") as f:  # this process: the kernels
        q = np.ones(f.embedding_dim, dtype=np.float32)
        assert [list(p) for p in ((h.chunk_id, h.score) for h in f.search_ann(q, 5, 16))] \
            == out["ann"]
        assert [list(p) for p in ((h.chunk_id, h.score) for h in
                                  f.search_hybrid(q, "alpha beta", 5, 50))] == out["hybrid"]


# ------------------------------------------------------------------ layer 0's table, dist8 symmetry


def test_a_built_graph_walks_a_table_holding_its_stored_layer0_lists() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(200, 24)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    g = H.build_hnsw(x, 5, 30, 2)
    for table in (H.layer0_table(g), H.layer0_table(decode_hnsw(encode_hnsw(g), 200))):
        for i in range(g.n_nodes):
            want = g.neighbors(i, 0).tolist()
            assert table[i, 0] == len(want)
            assert table[i, 1:1 + len(want)].tolist() == want


def test_one_huge_list_continues_past_the_capped_table_and_answers_the_same() -> None:
    n = 300
    lists = [[[j for j in range(1, n)]]] + [[[0]] if i % 2 else [[]] for i in range(1, n)]
    g = decode_hnsw(encode_hnsw(payload_from_lists(4, 8, 0, 0, 0, lists)), n)
    table = H.layer0_table(g)
    # capped at twice the mean list length: the table stays the size of the ids, not n * n
    assert table.shape[1] - 1 < n - 1 and table.size <= 2 * g.ids.size + 9 * n
    rng = np.random.default_rng(9)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    for ef in (1, 10, 400):
        q = rng.normal(size=8).astype(np.float32)
        assert H.hnsw_search(g, x, q, ef).tolist() == _previous_search(g, x, q, ef)


def test_read_only_queries_and_masks_give_the_same_candidates() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(150, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    g = H.build_hnsw(x, 4, 20, 3)
    q = rng.normal(size=16).astype(np.float32)
    allowed = rng.random(150) < 0.5
    want = H.hnsw_search(g, x, q, 20, allowed).tolist()
    q.flags.writeable = False
    allowed.flags.writeable = False
    frozen = x.copy()
    frozen.flags.writeable = False
    assert H.hnsw_search(g, frozen, q, 20, allowed).tolist() == want
    assert want == _previous_search(g, x, q, 20, allowed)


EDGE_VALUES = st.one_of(st.floats(width=32, allow_nan=False),
                        st.sampled_from([0.0, -0.0, 1e-45, -1e-45, 3e38, -3e38]))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40), st.data())
def test_dist8_is_symmetric_bit_for_bit(dim, data) -> None:
    # the build stores dist8(i, v) and prunes v's list with it where the reference measures
    # dist8(v, i): the same bits, since every lane adds the same products in the same order
    a = np.asarray(data.draw(st.lists(EDGE_VALUES, min_size=dim, max_size=dim)), np.float32)
    b = np.asarray(data.draw(st.lists(EDGE_VALUES, min_size=dim, max_size=dim)), np.float32)
    ab, ba = np.float32(D.dist8(a, b)), np.float32(D.dist8(b, a))
    assert (np.isnan(ab) and np.isnan(ba)) or ab.tobytes() == ba.tobytes()


@settings(max_examples=40, deadline=None)
@given(*PACKED_WALKS)
def test_the_numba_free_beam_walks_packed_rows_as_the_kernel(kind, n, seed, ef,
                                                             masked) -> None:
    # quantised rows decoded only as a batch reads them, with the kernel's decoders' bits
    rng = np.random.default_rng(seed)
    slab = _slab(kind, n, 64 if kind == "int4" else int(rng.choice([8, 13, 64])), rng)
    g = H.build_hnsw(slab.dequantize(0, n), 4, 16, seed)
    packed = H.beam_rows(slab)
    assert isinstance(packed, H.PackedRows)
    rows = hnsw_beam.DecodedRows(packed.codes, packed.scales, packed.dim)
    assert rows[0:n].tobytes() == slab.dequantize(0, n).tobytes()
    for _ in range(3):
        q = rng.normal(size=slab.dim).astype(np.float32)
        allowed = rng.random(n) < 0.5 if masked else None
        assert _beam(g, rows, q, ef, allowed) == H.hnsw_search(g, packed, q, ef,
                                                               allowed).tolist()


def test_a_cli_query_of_a_quantised_file_never_imports_numba() -> None:
    import subprocess
    import sys

    for name in ("synthetic-tiny.urna", "synthetic-nano.urna", "synthetic-f16_hnsw.urna"):
        code = (
            "import sys, json, numpy as np, urna\n"
            f"f = urna.open({str(REF / name)!r})\n"
            "q = np.ones(f.embedding_dim, dtype=np.float32)\n"
            "a = [(h.chunk_id, h.score) for h in f.search_ann(q, 5, 16)]\n"
            "print(json.dumps({'numba': 'numba' in sys.modules, 'ann': a}))\n")
        out = __import__("json").loads(subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
        assert out["numba"] is False, name
        with urna.open(REF / name) as f:  # this process: the kernels
            q = np.ones(f.embedding_dim, dtype=np.float32)
            assert [list(p) for p in ((h.chunk_id, h.score) for h in f.search_ann(q, 5, 16))] \
                == out["ann"], name
