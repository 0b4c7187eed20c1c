"""HNSW side by side: urna (reference-exact graph) vs hnswlib vs faiss IndexHNSWFlat.

Same clustered, L2-normalised float32 corpus for all three, one thread each, M=16,
efConstruction=200. Prints build times (process CPU time, the libraries alternating
``--build-rounds`` times, best of each), then recall@10 (against exact brute force) and the
single-query latency for each ef. Latencies alternate the methods query by query (the
order rotating), and each query counts with its best wall time over ``--rounds`` rounds: on
a shared machine that drops the rounds another job interrupted, and no method runs
with a cache the previous one warmed for it more often than another.
urna's search applies the reference's floor (beam = max(ef, efConstruction)) and includes the
exact rerank of the candidates; "urna (no floor)" runs the same traversal with beam = ef;
"urna beam" is that traversal alone, returning its candidates ascending by distance (what
hnswlib's ``knn_query`` returns too, without urna's exact rerank).
"hnswlib (same graph)" loads urna's graph and rows into hnswlib (written in hnswlib's own
index format), so both libraries walk one graph: recall is then equal, and the ratios
against it compare the searches on one graph. Last, the beam over float16 / int8 / int4
rows read packed in place vs the same rows dequantised to float32 up front (candidates
must match).

    .venv/bin/python benchmarks/bench_hnsw.py                  # 100,000 x 384
    .venv/bin/python benchmarks/bench_hnsw.py --n 20000        # quicker
    .venv/bin/python benchmarks/bench_hnsw.py --pins           # check both pinned digests

``--pins`` rebuilds the reference's two pinned graphs (03-runtime §7.7: 2000x128 and
10000x384, efConstruction 400) and checks their SHA-256; the 10000x384 one takes a while,
which is why it lives here and not in the test suite.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import struct
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before faiss / BLAS load

import numpy as np  # noqa: E402

from urna.format.sections.hnsw import HnswPayload, encode_hnsw  # noqa: E402
from urna.index.exact import Slab  # noqa: E402
from urna.index.hnsw import Lcg, beam_rows, build_hnsw, hnsw_search  # noqa: E402

PINS = [(2000, 128, 0x5EED0001, 0xBEEF,
         "0210ecf212b48524fea016a3033064259ce23075666cbae43f0bdb02d0b77f9b"),
        (10000, 384, 0xCAFEBABE, 0xDEADBEEF,
         "bf93c2fecdb6bba867787f23b0b541e1e9534bdeec625007162eb0d152254139")]
EFS = (16, 32, 64, 128, 256)


def clustered(n: int, dim: int, n_queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A Gaussian-mixture corpus (sqrt(n) centres) and queries drawn near the same centres."""
    rng = np.random.default_rng(seed)
    k = max(1, int(np.sqrt(n)))
    centres = rng.normal(size=(k, dim)).astype(np.float32)

    def draw(m: int) -> np.ndarray:
        x = centres[rng.integers(0, k, m)] + rng.normal(scale=0.35, size=(m, dim))
        x = x.astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    return draw(n), draw(n_queries)


def exact_top(corpus: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((len(queries), k), dtype=np.int64)
    for s in range(0, len(queries), 256):
        sc = queries[s:s + 256] @ corpus.T
        out[s:s + 256] = np.argsort(-sc, axis=1)[:, :k]
    return out


def recall(found: list[np.ndarray], truth: np.ndarray, k: int) -> float:
    return float(np.mean([len(set(f[:k].tolist()) & set(t[:k].tolist())) / k
                          for f, t in zip(found, truth, strict=True)]))


def run_alternating(fns, queries: np.ndarray, rounds: int) -> tuple[list[list], np.ndarray]:
    """Each method's answers and mean latency (us): per query its best time over the rounds.

    The methods alternate query by query, their order rotating with the query and round.
    """
    for fn in fns:
        fn(queries[0])  # warm
    best = np.full((len(fns), len(queries)), np.inf)
    found: list[list] = [[None] * len(queries) for _ in fns]
    for r in range(rounds):
        for i, q in enumerate(queries):
            shift = (i + r) % len(fns)
            for j in [*range(shift, len(fns)), *range(shift)]:
                t0 = time.perf_counter()
                found[j][i] = fns[j](q)
                best[j, i] = min(best[j, i], time.perf_counter() - t0)
    return found, best.mean(axis=1) * 1e6


def without_floor(graph: HnswPayload) -> HnswPayload:
    """The graph with ``ef_construction`` 0: its beam is then exactly ef."""
    return HnswPayload(**(graph.as_dict() | {"ef_construction": 0}))


def urna_query(graph, vecs, ef, floor=True, rerank=True):
    g = graph if floor else without_floor(graph)
    if not rerank:
        return lambda q: hnsw_search(g, vecs, q, ef)

    def q_fn(q):
        cands = hnsw_search(g, vecs, q, ef)
        scores = vecs[cands] @ q  # the exact rerank
        return cands[np.argsort(-scores, kind="stable")[:10]]
    return q_fn


def save_for_hnswlib(graph, vecs: np.ndarray, path: str) -> None:
    """Write urna's graph and float32 rows as an hnswlib 0.8 index file (``Index.load_index``).

    Layout of hnswlib's ``saveIndex``: a header of sizes, then per element its layer-0 record
    (u32 count, ``maxM0`` int32 links, the vector, a u64 label), then per element the size of
    its upper-layer block and ``level`` records of (u32 count, ``M`` int32 links).
    """
    n, dim = vecs.shape
    m, m0 = graph.m, graph.m_max0
    links0, links_up = 4 + 4 * m0, 4 + 4 * m
    per = links0 + 4 * dim + 8
    rec = np.zeros((n, per), dtype=np.uint8)
    counts = np.diff(graph.nbr_ptr)
    rows0 = graph.node_ptr[:-1]
    rec[:, :4].view(np.uint32)[:, 0] = counts[rows0]
    links = rec[:, 4:links0].view(np.int32)
    for i in range(n):
        links[i, :counts[rows0[i]]] = graph.neighbors(i, 0)
    rec[:, links0:links0 + 4 * dim] = vecs.view(np.uint8).reshape(n, 4 * dim)
    rec[:, links0 + 4 * dim:].view(np.uint64)[:, 0] = np.arange(n)
    with open(path, "wb") as f:
        f.write(struct.pack("<QQQQQQiIQQQdQ", 0, n, n, per, links0 + 4 * dim, links0,
                            graph.max_level, graph.entry_point, m, m0, m, 1 / math.log(m),
                            graph.ef_construction))
        f.write(rec.tobytes())
        for i in range(n):
            top = int(graph.levels[i])
            f.write(struct.pack("<I", links_up * top))
            block = np.zeros((top, m + 1), dtype=np.uint32)
            for layer in range(1, top + 1):
                ids = graph.neighbors(i, layer)
                block[layer - 1, 0] = len(ids)
                block[layer - 1, 1:1 + len(ids)] = ids
            f.write(block.tobytes())


def quantised_slabs(x: np.ndarray) -> dict[str, Slab]:
    """float16, int8 (per-row scale) and int4 (per-64 group scale) forms of the rows ``x``."""
    s8 = (np.abs(x).max(axis=1) / 127).astype(np.float32)
    codes8 = np.clip(np.rint(x / s8[:, None]), -127, 127).astype(np.int8)
    g = x.reshape(len(x), -1, 64)
    s4 = (np.abs(g).max(axis=2) / 7).astype(np.float16)
    c4 = np.clip(np.rint(g / s4.astype(np.float32)[:, :, None]), -8, 7).astype(np.int8)
    nib = (c4.reshape(len(x), -1) & 0x0F).astype(np.uint8)
    packed = nib[:, 0::2] | (nib[:, 1::2] << 4)
    return {"float16": Slab.float16(x.astype(np.float16)), "int8": Slab.int8(s8, codes8),
            "int4": Slab.int4(s4, packed, x.shape[1])}


def compare_packed(graph, corpus: np.ndarray, queries: np.ndarray, rounds: int) -> None:
    """Latency at ef 64 (no floor) over packed rows vs the same rows dequantised up front."""
    unfloored = without_floor(graph)
    print("quantised rows, ef 64, beam only: packed in place vs dequantised float32 copy")
    for name, slab in quantised_slabs(corpus).items():
        f32 = slab.dequantize(0, slab.n)
        packed = beam_rows(slab)
        fns = [lambda q, r=packed: hnsw_search(unfloored, r, q, 64),
               lambda q, r=f32: hnsw_search(unfloored, r, q, 64)]
        got, best = run_alternating(fns, queries, rounds)
        same = all(np.array_equal(a, b) for a, b in zip(*got, strict=True))
        print(f"  {name:8} packed {best[0]:8.1f} us  dequantised {best[1]:8.1f} us  "
              f"({best[0] / best[1]:.2f}x; {f32.nbytes / 2**20:.0f} MiB not allocated)  "
              f"same candidates: {same}")


def check_pins() -> int:
    bad = 0
    for n, dim, cseed, bseed, want in PINS:
        rng = Lcg(cseed)
        u = np.array([rng.next_f64() for _ in range(n * dim)]).astype(np.float32)
        v = (u - np.float32(0.5)).reshape(n, dim)
        norm = np.maximum(np.sqrt(np.cumsum(v * v, axis=1, dtype=np.float32)[:, -1]),
                          np.finfo(np.float32).eps)
        v = (v / norm[:, None]).astype(np.float32)
        t0 = time.perf_counter()
        got = hashlib.sha256(encode_hnsw(build_hnsw(v, 16, 400, bseed))).hexdigest()
        ok = got == want
        bad += not ok
        print(f"pin {n}x{dim}: {'OK' if ok else 'MISMATCH'} {got} "
              f"({time.perf_counter() - t0:.1f} s)")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3, help="alternating timing rounds per ef")
    ap.add_argument("--build-rounds", type=int, default=1, help="alternating builds per library")
    ap.add_argument("--pins", action="store_true", help="check the two pinned digests and exit")
    args = ap.parse_args()
    if args.pins:
        return 1 if check_pins() else 0

    import faiss
    import hnswlib
    faiss.omp_set_num_threads(1)
    corpus, queries = clustered(args.n, args.dim, args.queries)
    truth = exact_top(corpus, queries, 10)
    print(f"corpus {args.n} x {args.dim}, {args.queries} queries, M={args.m}, "
          f"efConstruction={args.ef_construction}, 1 thread")

    build_hnsw(corpus[:200], args.m, args.ef_construction)  # compile the kernels first

    def build_hl():
        index = hnswlib.Index(space="ip", dim=args.dim)
        index.init_index(max_elements=args.n, M=args.m, ef_construction=args.ef_construction,
                         random_seed=42)
        index.set_num_threads(1)
        index.add_items(corpus, np.arange(args.n), num_threads=1)
        return index

    def build_fx():
        index = faiss.IndexHNSWFlat(args.dim, args.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = args.ef_construction
        index.add(corpus)
        return index

    builders = [lambda: build_hnsw(corpus, args.m, args.ef_construction), build_hl, build_fx]
    built: list = [None] * 3
    t_build = [float("inf")] * 3
    for _ in range(args.build_rounds):
        for j, build in enumerate(builders):
            t0 = time.process_time()
            built[j] = build()
            t_build[j] = min(t_build[j], time.process_time() - t0)
    graph, hl, fx = built
    t_urna, t_hl, t_fx = t_build

    with tempfile.TemporaryDirectory() as tmp:
        save_for_hnswlib(graph, corpus, os.path.join(tmp, "urna-graph.bin"))
        same = hnswlib.Index(space="ip", dim=args.dim)
        same.load_index(os.path.join(tmp, "urna-graph.bin"))
    same.set_num_threads(1)

    print(f"build (CPU s)  urna {t_urna:7.1f} s   hnswlib {t_hl:7.1f} s   faiss {t_fx:7.1f} s   "
          f"urna/hnswlib {t_urna / t_hl:.2f}x")
    print(f"{'ef':>4} | {'urna':>18} | {'urna (no floor)':>18} | {'urna beam':>18} | "
          f"{'hnswlib':>18} | {'faiss':>18} | {'hnswlib (same graph)':>20} | "
          "same graph: beam / no floor + rerank")
    # each urna method reads its own copy of the rows, as each library reads its own: one
    # method's walk never warms the cache for the next on the same query
    own = [corpus.copy() for _ in range(3)]
    for ef in EFS:
        hl.set_ef(ef)
        fx.hnsw.efSearch = ef
        same.set_ef(ef)
        fns = [urna_query(graph, own[0], ef), urna_query(graph, own[1], ef, floor=False),
               urna_query(graph, own[2], ef, floor=False, rerank=False),
               lambda q: hl.knn_query(q, k=10)[0][0],
               lambda q: fx.search(q[None, :], 10)[1][0],
               lambda q: same.knn_query(q, k=10)[0][0]]
        hits, best = run_alternating(fns, queries, args.rounds)
        row = [(recall(found, truth, 10), us) for found, us in zip(hits, best, strict=True)]
        cells = " | ".join(f"R {r:.3f} {us:8.1f} us" for r, us in row)
        print(f"{ef:>4} | {cells} | {row[2][1] / row[5][1]:.2f}x / {row[1][1] / row[5][1]:.2f}x")
    compare_packed(graph, corpus, queries, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
