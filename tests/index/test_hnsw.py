"""HNSW build and search against the reference: pinned digest, rebuilt payloads, ANN hits.

Expected values come from the reference (its pinned SHA-256, the 0x07 payloads and
``search_ann_ef32`` hits it wrote into tests/data) or from independent oracles (``heapq`` for
the heap tie rules, a numpy lane-by-lane ``dot8``, exact brute force for recall).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.vectors import sections
from urna.format.layout import Header
from urna.format.sections.hnsw import decode_hnsw, encode_hnsw, payload_from_lists
from urna.index import _hnsw_kernels as K
from urna.index import hnsw as hnsw_module
from urna.index import hnsw_small_build
from urna.index.hnsw import Lcg, build_hnsw, hnsw_search, level0_neighbors, sample_levels

REF = Path(__file__).resolve().parent.parent / "data" / "ref-0.5.1"
EXPECTED = json.loads((REF / "expected.json").read_text())["files"]
HNSW_FILES = sorted(name for name in EXPECTED
                    if name.split("-", 1)[1] in {"tiny.urna", "nano.urna", "hybrid.urna",
                                                 "f16_hnsw.urna"})
PIN_2000x128 = "0210ecf212b48524fea016a3033064259ce23075666cbae43f0bdb02d0b77f9b"


# ------------------------------------------------------------------ helpers (independent of src)


def random_l2(n: int, dim: int, seed: int) -> np.ndarray:
    """The reference test corpus: LCG values f32(u) - 0.5, rows / max(norm, f32 eps)."""
    rng = Lcg(seed)
    u = np.array([rng.next_f64() for _ in range(n * dim)], dtype=np.float64).astype(np.float32)
    v = (u - np.float32(0.5)).reshape(n, dim)
    sq = np.cumsum(v * v, axis=1, dtype=np.float32)[:, -1]  # sequential f32 sum
    norm = np.maximum(np.sqrt(sq), np.finfo(np.float32).eps)
    return (v / norm[:, None]).astype(np.float32)


def dot8_numpy(a: np.ndarray, b: np.ndarray) -> np.float32:
    """The spec's dot8 written with numpy: sequential lanes, fixed tree, sequential tail."""
    dim = a.shape[0]
    nb = dim // 8
    prod = (a * b).astype(np.float32)
    lanes = np.zeros(8, dtype=np.float32)
    if nb:
        lanes = np.cumsum(prod[:nb * 8].reshape(nb, 8), axis=0, dtype=np.float32)[-1]
    tail = np.float32(0)
    for x in prod[nb * 8:]:
        tail = np.float32(tail + x)
    low_half = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
    high_half = (lanes[4] + lanes[5]) + (lanes[6] + lanes[7])
    return np.float32((low_half + high_half) + tail)


def stored_rows(buf: bytes) -> np.ndarray:
    """Dequantise the 0x04 slab element by element (03-runtime §2.2), as the graph sees it."""
    h = Header.unpack(buf)
    n, dim = h.n_embeddings, h.embedding_dim
    enc, p = sections(buf)[0x04]
    if enc == 0:
        return np.frombuffer(p, dtype="<f4").reshape(n, dim).astype(np.float32)
    if enc == 2:
        return np.frombuffer(p, dtype="<f2").reshape(n, dim).astype(np.float32)
    if enc == 3:
        assert struct.unpack_from("<II", p) == (1, 0)
        scales = np.frombuffer(p, dtype="<f4", count=n, offset=8)
        codes = np.frombuffer(p, dtype=np.int8, count=n * dim, offset=8 + 4 * n).reshape(n, dim)
        return (codes.astype(np.float32) * scales[:, None]).astype(np.float32)
    assert enc == 7 and struct.unpack_from("<II", p) == (1, 1)
    groups = dim // 64
    scales = np.frombuffer(p, dtype="<f2", count=n * groups, offset=8).astype(np.float32)
    packed = np.frombuffer(p, dtype=np.uint8, offset=8 + 2 * n * groups).reshape(n, dim // 2)
    nib = np.empty((n, dim), dtype=np.int16)
    nib[:, 0::2] = packed & 0x0F
    nib[:, 1::2] = packed >> 4
    codes = np.where(nib >= 8, nib - 16, nib).astype(np.float32)
    return (codes * np.repeat(scales.reshape(n, groups), 64, axis=1)).astype(np.float32)


def normalise(x) -> np.ndarray:
    q = np.asarray(x, dtype=np.float32)
    norm = np.sqrt(np.cumsum(q * q, dtype=np.float32)[-1])
    return (q / norm).astype(np.float32)


def corpus_vectors(corpus: str) -> np.ndarray:
    data = json.loads((REF / f"{corpus}.chunks.json").read_text())
    return np.array([c["embedding"] for c in data["chunks"]], dtype=np.float32)


@pytest.fixture(scope="module")
def pinned_graph():
    vecs = random_l2(2000, 128, 0x5EED0001)
    return vecs, build_hnsw(vecs, 16, 400, 0xBEEF)


# ------------------------------------------------------------------ the reference's graphs


def test_pinned_digest_2000x128(pinned_graph) -> None:
    _, g = pinned_graph
    assert hashlib.sha256(encode_hnsw(g)).hexdigest() == PIN_2000x128


# Each reference graph rebuilt by the compiled builder, and (up to 400 rows: it is O(n^2)) by
# the numba-free one a process uses for small corpora (``hnsw_small_build``).
BUILDS = [(name, compiled) for name in HNSW_FILES for compiled in (True, False)
          if compiled or len(corpus_vectors(EXPECTED[name]["corpus"])) <= 400]


@pytest.mark.parametrize("name,compiled", BUILDS)
def test_rebuild_gives_the_reference_payload(name: str, compiled: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    info = EXPECTED[name]
    opts = info["build_options"]
    vecs = corpus_vectors(info["corpus"])
    monkeypatch.setattr(hnsw_module, "compiled_build", lambda n: compiled)
    monkeypatch.setattr(hnsw_small_build, "build_graph", _counted(hnsw_small_build.build_graph))
    g = build_hnsw(vecs, opts.get("hnsw_m", 16), opts.get("hnsw_ef_construction", 400),
                   opts.get("hnsw_seed", 42))
    assert encode_hnsw(g) == sections((REF / name).read_bytes())[0x07][1]
    assert hnsw_small_build.build_graph.calls == (0 if compiled else 1)  # type: ignore[attr-defined]


def _counted(fn):
    """``fn`` counting its calls (which builder ran)."""
    def call(*args):
        call.calls += 1
        return fn(*args)
    call.calls = 0
    return call


@pytest.mark.parametrize("name,m,seed", [("dedup-hybrid.urna", 16, 42),
                                         ("synthetic-f16_hnsw.urna", 8, 7)])
def test_levels_are_the_reference_draws(name: str, m: int, seed: int) -> None:
    buf = (REF / name).read_bytes()
    g = decode_hnsw(sections(buf)[0x07][1], Header.unpack(buf).n_embeddings)
    assert sample_levels(g.n_nodes, m, seed).tolist() == g.levels.tolist()


def test_build_is_deterministic_and_seeded() -> None:
    vecs = random_l2(300, 24, 11)
    a = encode_hnsw(build_hnsw(vecs, 6, 40, 5))
    assert encode_hnsw(build_hnsw(vecs.copy(), 6, 40, 5)) == a
    assert encode_hnsw(build_hnsw(vecs, 6, 40, 6)) != a


@pytest.mark.parametrize("name", [n for n in HNSW_FILES if "search_ann_ef32" in
                                  EXPECTED[n]["queries"][0]])
def test_search_plus_rerank_returns_the_reference_ann_hits(name: str) -> None:
    buf = (REF / name).read_bytes()
    h = Header.unpack(buf)
    g = decode_hnsw(sections(buf)[0x07][1], h.n_embeddings)
    rows = stored_rows(buf)
    info = EXPECTED[name]
    for query in info["queries"]:
        hits = query["search_ann_ef32"]
        q = normalise(query["vector"])
        cands = hnsw_search(g, rows, q, 32)
        assert len(set(cands.tolist())) == len(cands) == min(h.n_embeddings,
                                                             max(32, g.ef_construction))
        scores = rows[cands] @ q
        order = sorted(range(len(cands)), key=lambda j: (-scores[j], cands[j]))[:len(hits)]
        got = [info["chunk_ids"][cands[j]] for j in order]
        assert got == [hit["chunk_id"] for hit in hits]
        assert np.allclose([scores[j] for j in order], [hit["score"] for hit in hits], atol=1e-5)


_PLAIN = """
import sys
sys.modules["numba"] = None  # as if numba were not installed
import numpy as np
from urna.index import _hnsw_kernels
from urna.index import hnsw
from urna.index.hnsw import build_hnsw, hnsw_search
from urna.format.sections.hnsw import encode_hnsw
assert not _hnsw_kernels.HAVE_NUMBA
hnsw.compiled_build = lambda n: True  # the kernels' build run as plain Python, not the small one
x = np.frombuffer(sys.stdin.buffer.read(), dtype=np.float32).reshape(60, 12)
g = build_hnsw(x, 4, 12, 9)
sys.stdout.write(encode_hnsw(g).hex() + " " + ",".join(map(str, hnsw_search(g, x, x[7], 5))))
"""


def test_plain_python_path_gives_the_same_graph_and_candidates() -> None:
    x = random_l2(60, 12, 21)
    g = build_hnsw(x, 4, 12, 9)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", _PLAIN], input=x.tobytes(), env=env,
                         capture_output=True, check=True, timeout=300).stdout.decode()
    payload_hex, cands = out.split(" ")
    assert payload_hex == encode_hnsw(g).hex()
    assert cands == ",".join(map(str, hnsw_search(g, x, x[7], 5)))


# ------------------------------------------------------------------ search behaviour


def test_recall_floors_of_the_reference(pinned_graph) -> None:
    vecs, g = pinned_graph
    queries = random_l2(50, 128, 0xFACEFEED)
    exact = np.argsort(-(queries.astype(np.float64) @ vecs.T.astype(np.float64)), axis=1)
    r10 = np.mean([len(set(hnsw_search(g, vecs, q, 200)[:10]) & set(exact[i, :10])) / 10
                   for i, q in enumerate(queries)])
    r1 = np.mean([hnsw_search(g, vecs, q, 100)[0] == exact[i, 0] for i, q in enumerate(queries)])
    assert r10 >= 0.95 and r1 >= 0.90


def test_ef_is_floored_at_ef_construction(pinned_graph) -> None:
    vecs, g = pinned_graph
    q = random_l2(1, 128, 3)[0]
    at_floor = hnsw_search(g, vecs, q, 400)
    assert len(at_floor) == 400
    assert hnsw_search(g, vecs, q, 10).tolist() == at_floor.tolist()
    assert len(hnsw_search(g, vecs, q, 600)) == 600


def test_candidates_come_back_ascending_by_dot8_distance(pinned_graph) -> None:
    vecs, g = pinned_graph
    q = random_l2(1, 128, 4)[0]
    ids = hnsw_search(g, vecs, q, 50)
    d = [np.float32(1) - dot8_numpy(q, vecs[i]) for i in ids]
    assert all(a <= b for a, b in zip(d, d[1:], strict=False))


def test_level0_neighbors_is_the_stored_layer0_list(pinned_graph) -> None:
    _, g = pinned_graph
    back = decode_hnsw(encode_hnsw(g), g.n_nodes)
    for i in (0, 1, 999, 1999):
        assert level0_neighbors(g, i).tolist() == back.neighbors(i, 0).tolist()
        assert 0 < len(level0_neighbors(g, i)) <= 32
    assert level0_neighbors(g, 2000).size == 0


def test_empty_and_single_node_graphs() -> None:
    g = build_hnsw(np.zeros((0, 8), dtype=np.float32))
    assert encode_hnsw(g) == struct.pack("<7I", 2, 16, 32, 400, 0, 0, 0) + \
        (struct.pack("<I", 8) + bytes(8)) * 3
    assert hnsw_search(g, np.zeros((0, 8), dtype=np.float32), np.ones(8), 5).size == 0
    one = np.eye(1, 8, dtype=np.float32)
    g1 = build_hnsw(one)
    assert g1.entry_point == 0 and hnsw_search(g1, one, one[0], 5).tolist() == [0]


def test_search_rejects_mismatched_shapes(pinned_graph) -> None:
    vecs, g = pinned_graph
    with pytest.raises(ValueError):
        hnsw_search(g, vecs[:10], vecs[0], 10)
    with pytest.raises(ValueError):
        hnsw_search(g, vecs, vecs[0, :64], 10)


@st.composite
def hostile_graphs(draw):
    n = draw(st.integers(1, 30))
    lists = [[draw(st.lists(st.integers(0, n - 1), max_size=8))
              for _ in range(draw(st.integers(0, 3)) + 1)] for _ in range(n)]
    g = payload_from_lists(4, 8, draw(st.integers(0, 40)), draw(st.integers(0, n - 1)),
                           draw(st.integers(0, 64)), lists)
    # through the decoder, so the graph is one a file could carry
    return decode_hnsw(encode_hnsw(g), n)


@settings(max_examples=60, deadline=None)
@given(hostile_graphs(), st.integers(0, 2**32 - 1), st.integers(0, 50), st.booleans())
def test_search_terminates_on_any_decodable_graph(g, seed, ef, with_nan) -> None:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(g.n_nodes, 5)).astype(np.float32)
    if with_nan:
        vecs[rng.integers(0, g.n_nodes)] = np.nan
    ids = hnsw_search(g, vecs, rng.normal(size=5).astype(np.float32), ef)
    assert len(set(ids.tolist())) == len(ids) <= g.n_nodes
    assert all(0 <= i < g.n_nodes for i in ids)


# ------------------------------------------------------------------ kernels vs oracles


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 70), st.integers(0, 2**32 - 1))
def test_dot8_matches_the_lane_by_lane_definition(dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, dim)).astype(np.float32)
    want = (np.float32(1) - dot8_numpy(a, b)).tobytes()
    assert np.float32(K.dist8(a, b)).tobytes() == want


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 70), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_batched_distances_equal_dot8_row_by_row(dim: int, count: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(12, dim)).astype(np.float32)
    q = rng.normal(size=dim).astype(np.float32)
    rows = rng.integers(0, 12, count).astype(np.int32)
    out = np.empty(count, dtype=np.float32)
    acc = np.empty(32, dtype=np.float32)
    with K.vectorizing():
        K.dists(q[None, :], 0, vecs, rows, 0, count, out, 0, acc)
        one = K.dist_one(q[None, :], 0, vecs, int(rows[0]), acc)
    want = [np.float32(1) - dot8_numpy(q, vecs[r]) for r in rows]
    assert out.tobytes() == np.array(want, dtype=np.float32).tobytes()
    assert np.float32(one).tobytes() == np.float32(want[0]).tobytes()


def test_order_key_sorts_nan_last_and_total_order() -> None:
    d = np.array([np.nan, 2.0, np.inf, 0.0, np.nan, -1.0, -0.0], dtype=np.float32)
    bits = d.view(np.uint32)
    keys = [K.order_key(d[j], bits[j], j) for j in range(len(d))]
    order = np.argsort(keys, kind="stable").tolist()
    assert order == [5, 6, 3, 1, 2, 0, 4]


class _MaxItem:
    """heapq item that orders like the Rust heap (a NaN key compares as not greater)."""

    def __init__(self, key: float, val: int) -> None:
        self.key, self.val = key, val

    def __lt__(self, other: _MaxItem) -> bool:
        return self.key > other.key


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([0.0, 0.5, 1.0, 1.0, float("nan")]),
                          st.just(None)), max_size=60))
def test_heap_replays_rust_binaryheap_ties(ops) -> None:
    key = np.empty(64, dtype=np.float32)
    val = np.empty(64, dtype=np.int32)
    size = 0
    oracle: list[_MaxItem] = []
    for i, op in enumerate(ops):
        if op is None:
            if not oracle:
                continue
            top = heapq.heappop(oracle)
            assert val[0] == top.val
            size = K._pop_root(key, val, size)
        else:
            size = K._push(key, val, size, np.float32(op), i)
            heapq.heappush(oracle, _MaxItem(np.float32(op), i))
        assert val[:size].tolist() == [it.val for it in oracle]


def _select(vectors, cands, t):
    vecs = np.asarray(vectors, dtype=np.float32)
    ids = np.array([c[0] for c in cands], dtype=np.int32)
    dist = np.array([c[1] for c in cands], dtype=np.float32)
    out = np.empty(t + 1, dtype=np.int32)
    out_d = np.empty(t + 1, dtype=np.float32)
    pruned = np.empty(len(cands) + 1, dtype=np.int32)
    pruned_d = np.empty(len(cands) + 1, dtype=np.float32)
    keys = np.empty(len(cands) + 1, dtype=np.int64)
    order = np.empty(len(cands) + 1, dtype=np.int32)
    k = K.select_heuristic(ids, dist, len(cands), t, vecs, out, out_d, pruned, pruned_d, keys,
                           order, np.empty(64, dtype=np.float32), np.empty(32, dtype=np.float32))
    # each chosen id comes back with its own distance
    assert out_d[:k].tolist() == [dist[ids.tolist().index(i)] for i in out[:k]]
    return out[:k].tolist()


def test_heuristic_keeps_the_closest_and_at_most_t() -> None:
    axes = [[1, 0], [0, 1], [-1, 0], [0, -1]]
    picked = _select(axes, [(0, 0.0), (1, 0.5), (2, 1.0), (3, 1.5)], 2)
    assert 0 in picked and len(picked) <= 2


def test_heuristic_drops_a_shadowed_candidate() -> None:
    vecs = [[1, 0], [0.99, 0.01], [0, 1]]
    assert sorted(_select(vecs, [(0, 0.05), (1, 0.06), (2, 1.0)], 2)) == [0, 2]


def test_heuristic_refills_from_pruned_in_order() -> None:
    vecs = [[1, 0], [0.99, 0.01], [0.98, 0.02]]
    assert _select(vecs, [(2, 0.07), (0, 0.05), (1, 0.06)], 3) == [0, 1, 2]


def test_heuristic_breaks_distance_ties_by_id() -> None:
    vecs = [[1, 0], [0, 1], [-1, 0], [0, -1]]
    assert _select(vecs, [(3, 0.5), (1, 0.5), (2, 0.5)], 3)[0] == 1
    assert _select(vecs, [(1, 0.5)], 0) == [] and _select(vecs, [], 3) == []


def test_vectorizing_window_restores_numba_config(pinned_graph) -> None:
    from numba.core import config

    vecs, g = pinned_graph
    before = config.SLP_VECTORIZE
    with K.vectorizing():
        with K.vectorizing():
            assert config.SLP_VECTORIZE == 1
        assert config.SLP_VECTORIZE == 1
        hnsw_search(g, vecs, vecs[0], 10)
    assert before == config.SLP_VECTORIZE
