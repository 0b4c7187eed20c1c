"""Filtered ANN: urna's ``where=`` against post-filtering and hnswlib's in-index filter.

One clustered, L2-normalised float32 corpus with an int metadata column ``bucket`` (uniform
in 0..999); the filters ``bucket < 500 / 100 / 10 / 1`` keep 50%, 10%, 1% and 0.1% of the
rows. For each selectivity and each method: mean single-query latency (process CPU time, one
thread) and recall@10 against brute-force exact search over the matching rows.

* ``urna where=``: ``search_ann(q, 10, ef, where=...)`` as a user calls it (the path it
  chose is printed: ``hnsw-filtered`` or ``exact-filtered``).
* ``urna hnsw-filtered`` / ``urna exact-filtered``: each path forced, which is how the switch
  threshold in ``urna.runtime.filtering`` was chosen.
* ``urna post-filter``: ``search_ann`` for ``k' = 10 / selectivity`` hits, then filtered.
* ``hnswlib filter=``: hnswlib 0.8 ``knn_query(..., filter=callable)``, the same M and
  efConstruction (its filter is a Python callback per visited candidate).

    .venv/bin/python benchmarks/bench_filter.py                # 20,000 x 384
    .venv/bin/python benchmarks/bench_filter.py --rows 100000  # the README figure
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy / BLAS load

import numpy as np  # noqa: E402
from scratch import scratch_dir  # noqa: E402  (this folder)

import urna  # noqa: E402
from urna.runtime import search as _s  # noqa: E402
from urna.runtime.filtering import row_mask  # noqa: E402

SELECTIVITIES = ((500, "50%"), (100, "10%"), (10, "1%"), (1, "0.1%"))
K = 10


def clustered(n: int, dim: int, n_queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A Gaussian-mixture corpus (sqrt(n) centres) and queries near the same centres."""
    rng = np.random.default_rng(seed)
    c = max(1, int(np.sqrt(n)))
    centres = rng.normal(size=(c, dim)).astype(np.float32)

    def draw(m: int) -> np.ndarray:
        x = (centres[rng.integers(0, c, m)] + rng.normal(scale=0.35, size=(m, dim)))
        x = x.astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    return draw(n), draw(n_queries)


def truth(X: np.ndarray, Q: np.ndarray, mask: np.ndarray) -> list[set[int]]:
    rows = np.flatnonzero(mask)
    out = []
    for q in Q:
        sc = X[rows] @ q
        out.append(set(rows[np.argsort(-sc, kind="stable")[:K]].tolist()))
    return out


def timed(run, Q: np.ndarray) -> tuple[float, list[list[int]]]:
    """Mean CPU ms per query and each query's ids."""
    run(Q[0])  # warm (numba compiles, caches fill)
    ids, t0 = [], time.process_time()
    for q in Q:
        ids.append(run(q))
    return (time.process_time() - t0) * 1000.0 / len(Q), ids


def recall(got: list[list[int]], want: list[set[int]]) -> float:
    return float(np.mean([len(set(g) & w) / max(1, len(w)) for g, w in zip(got, want,
                                                                            strict=True)]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--ef", type=int, default=64)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=100)
    args = ap.parse_args()
    X, Q = clustered(args.rows, args.dim, args.queries)
    bucket = np.random.default_rng(1).integers(0, 1000, args.rows)
    chunks = [{"canonical_text": f"row {i}", "source_uri": f"r/{i}", "byte_start": 0,
               "byte_end": 1, "embedding": X[i]} for i in range(args.rows)]
    t0 = time.perf_counter()
    path = os.path.join(scratch_dir("urna-bench-filter-"), "filter.urna")
    urna.build(path, "bench", args.dim, "bench/1", "sha256:" + "0" * 64, chunks,
               with_hnsw=True, hnsw_m=args.m, hnsw_ef_construction=args.ef_construction,
               metadata=[{"bucket": int(b)} for b in bucket])
    print(f"{args.rows} x {args.dim}, M={args.m}, efConstruction={args.ef_construction}, "
          f"ef={args.ef}, k={K}, {args.queries} queries; urna build "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    peer = None
    try:
        import hnswlib

        peer = hnswlib.Index(space="ip", dim=args.dim)
        peer.init_index(args.rows, M=args.m, ef_construction=args.ef_construction,
                        random_seed=42)
        peer.set_num_threads(1)
        peer.add_items(X, np.arange(args.rows))
        peer.set_ef(args.ef)
    except ImportError:
        print("hnswlib not installed (pip install 'urna[bench]'): its rows are skipped")
    f = urna.open(path)
    st = f._state
    ids = {cid: i for i, cid in enumerate(f.chunk_ids())}
    print(f"{'selectivity':<12} {'method':<22} {'ms/query':>9} {'recall@10':>10}  path")
    for cut, label in SELECTIVITIES:
        where = {"bucket": {"$lt": cut}}
        mask = bucket < cut
        want = truth(X, Q, mask)
        fm = row_mask(st, where)
        assert fm is not None
        paths: set[str] = set()

        def with_where(q: np.ndarray, where=where, paths=paths) -> list[int]:
            res = f.search_ann(q, K, args.ef, where=where)
            paths.add(res.explain.filter["path"])
            return [ids[h.chunk_id] for h in res]

        def forced_hnsw(q: np.ndarray, fm=fm) -> list[int]:
            cand = _s._hnsw_candidates(st, q, max(args.ef, K), fm)
            return _s._rerank(st, q, cand, K)[0].tolist()

        def forced_exact(q: np.ndarray, fm=fm) -> list[int]:
            return _s.filtered_exact(st, q, K, fm)[0].tolist()

        def post_filter(q: np.ndarray, mask=mask, sel=fm.selectivity) -> list[int]:
            kk = min(args.rows, math.ceil(K / max(sel, 1e-9)))
            res = f.search_ann(q, kk, max(args.ef, kk))
            return [i for i in (ids[h.chunk_id] for h in res) if mask[i]][:K]

        rows = [("urna where=", with_where), ("urna hnsw-filtered", forced_hnsw),
                ("urna exact-filtered", forced_exact), ("urna post-filter", post_filter)]
        if peer is not None:
            found = min(K, fm.matches)  # hnswlib refuses to return fewer than k

            def peer_filter(q: np.ndarray, mask=mask, k=found) -> list[int]:
                got, _ = peer.knn_query(q, k=k, filter=lambda i: bool(mask[i]))
                return got[0].tolist()
            rows.append(("hnswlib filter=", peer_filter))
        for name, run in rows:
            ms, got = timed(run, Q)
            note = ",".join(sorted(paths)) if name == "urna where=" else ""
            print(f"{label:<12} {name:<22} {ms:>9.3f} {recall(got, want):>10.4f}  {note}",
                  flush=True)
    f.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
