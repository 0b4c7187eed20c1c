"""Exact search side by side: urna (mmap'd file) vs numpy, faiss Flat / SQ, usearch, read floors.

One clustered, L2-normalised 100,000 x 384 float32 corpus (2000 centres, as the reference's
harness), written with ``urna.build`` as float32, float16, int8 and int4 files. BLAS, OpenMP
and faiss are pinned to 1 thread; urna runs once on 1 thread and once on ``--threads``
(default: the cores). Warm cache; the methods take turns query by query, so a shared machine
slows them alike and the ratios stay meaningful (read those, not the absolute times).

* single query, per dtype: p50 of one top-10 query; urna = ``exact.search`` on the file's
  mapped slab (numba screen + exact rescoring) and ``UrnaFile.search`` (the whole path);
  faiss = ``IndexFlatIP`` / ``IndexScalarQuantizer`` fp16 / 8 bit / 4 bit; the read floor is
  an integer sum over the same bytes viewed as uint64, timed three ways in the same rounds
  (numpy's ``add.reduce``, a compiled numba loop, and that loop with the screens' software
  prefetch; the ratios use the fastest of the three medians, the paired ratios each query's
  fastest), and the same split across threads for the thread figure. The filtered scan
  (``exact.search(..., rows=)``, a mask of every other row) on 1 and on ``--threads``
  threads. float32 also: numpy ``M @ q`` + argpartition, usearch exact, and urna's numpy /
  BLAS screen (the path of a process that has not loaded numba). Two diagnostics of the
  compiled screen alone (no cut, no rescoring): over every row as the scan reads them, and
  over the first ``L2_BLOCK_BYTES`` of rows scanned again and again for as many rows (so
  the bytes come from L2: what the kernel costs when the memory keeps up); "memory share"
  is how much of the streaming screen the in-L2 one does not explain.
* kernel break-even: the wall time a fresh interpreter needs to import numba and load the
  cached scan kernels, against the time they save per float32 query.
* batch: queries per second for ``--batch`` float32 queries at once; urna = ``search_batch``
  (sgemm per block of rows over the map, then exact rescoring), numpy = ``Q @ M.T`` +
  argpartition, faiss ``IndexFlatIP``, usearch exact.

    .venv/bin/python benchmarks/bench_exact.py                 # 100,000 x 384
    .venv/bin/python benchmarks/bench_exact.py --n 20000       # quicker
    .venv/bin/python benchmarks/bench_exact.py --clock cpu     # a busy machine: CPU time
    .venv/bin/python benchmarks/bench_exact.py --dtypes int4   # one dtype's table only

Files are cached in ``--dir`` (default: a temp folder) so reruns skip the build. Figures: the
README's "Exact search" paragraph.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy / faiss load

import numpy as np  # noqa: E402
from scratch import scratch_dir  # noqa: E402  (this folder)

import urna  # noqa: E402
from urna.index import exact  # noqa: E402

MODEL_HASH = "sha256:" + "5e" * 32


def clustered(n: int, dim: int, n_queries: int, centres: int, seed: int = 7):
    """Gaussian mixture rows and queries drawn near the same centres, unit norm."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, dim)).astype(np.float32)

    def draw(m: int) -> np.ndarray:
        centre = c[rng.integers(0, centres, m)]  # drawn before the noise (cached files)
        x = (centre + rng.normal(scale=0.35, size=(m, dim))).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    return draw(n), draw(n_queries)


def build_file(folder: str, rows: np.ndarray, dtype: str) -> str:
    """Write (or reuse) the corpus as a .urna file of ``dtype``."""
    path = os.path.join(folder, f"bench-{rows.shape[0]}x{rows.shape[1]}-{dtype}.urna")
    if os.path.exists(path):
        return path
    chunks = [{"canonical_text": f"row {i}", "source_uri": "bench", "byte_start": i,
               "byte_end": i + 1, "embedding": rows[i]} for i in range(rows.shape[0])]
    t0 = time.perf_counter()
    urna.build(path, "bench/384", rows.shape[1], "bench/1", MODEL_HASH, chunks, dtype=dtype,
               reproducible=True)
    print(f"built {path} in {time.perf_counter() - t0:.1f} s")
    return path


def latencies(fns: dict, queries: np.ndarray, clock=time.perf_counter) -> dict:
    """Milliseconds per call of each ``fn(q)``; the methods take turns on every query, so a
    busy machine slows them alike (the ratios stay meaningful)."""
    for fn in fns.values():
        fn(queries[0])  # warm-up: page cache, kernels, BLAS
    out = {name: np.empty(len(queries)) for name in fns}
    for i, q in enumerate(queries):
        for name, fn in fns.items():
            t0 = clock()
            fn(q)
            out[name][i] = (clock() - t0) * 1e3
    return out


def ratio(a: float, b: float) -> float:
    """a / b, nan when b is 0 (a CPU clock can read 0 for a call that only waited)."""
    return a / b if b else float("nan")


def paired(a: np.ndarray, b: np.ndarray) -> float:
    """The median of per-query ratios a_i / b_i (each pair timed back to back: on a shared
    machine steadier than a ratio of medians)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.median(a / b))


def qps(fns: dict, batch: np.ndarray, repeat: int = 3) -> dict:
    """Best-of-``repeat`` queries per second of each ``fn(batch)``, methods interleaved."""
    for fn in fns.values():
        fn(batch[:8])
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn(batch)
            best[name] = min(best[name], time.perf_counter() - t0)
    return {name: len(batch) / t for name, t in best.items()}


def read_floor(a: np.ndarray) -> int:
    """One pass over the slab's bytes (an integer sum of them as uint64): what any scan pays."""
    return int(np.add.reduce(a.reshape(-1).view(np.uint64)))


_NUMBA_SUM: list = []


def numba_floor(a: np.ndarray) -> int:
    """The same pass as a compiled loop (LLVM vectorises the uint64 sum)."""
    if not _NUMBA_SUM:
        import numba

        @numba.njit(nogil=True, cache=False, boundscheck=False)
        def total(u):
            acc = np.uint64(0)
            for i in range(u.shape[0]):
                acc += u[i]
            return acc

        _NUMBA_SUM.append(total)
    return int(_NUMBA_SUM[0](a.reshape(-1).view(np.uint64)))


_PREFETCHED_SUM: list = []


def prefetched_floor(a: np.ndarray) -> int:
    """The same pass with the screens' software prefetch (one line per 512 bytes, as far
    ahead): the scans prefetch, so a floor that did not would not be one."""
    if not _PREFETCHED_SUM:
        import numba

        from urna.index._scan_kernels import PREFETCH_BYTES, _prefetch

        @numba.njit(nogil=True, cache=False, boundscheck=False)
        def total(u):
            acc = np.uint64(0)
            n = u.shape[0]
            for lo in range(0, n, 64):
                _prefetch(u.ctypes.data + min(lo + PREFETCH_BYTES // 8, n - 1) * 8)
                block = u[lo:lo + 64]  # a slice: the inner sum vectorises
                for j in range(block.shape[0]):
                    acc += block[j]
            return acc

        _PREFETCHED_SUM.append(total)
    return int(_PREFETCHED_SUM[0](a.reshape(-1).view(np.uint64)))


def threaded_floor(a: np.ndarray, threads: int, pool) -> int:
    """The same pass split into ``threads`` row ranges summed at once (numpy drops the GIL)."""
    n = a.shape[0]
    cuts = [n * t // threads for t in range(threads + 1)]
    parts = pool.map(lambda t: read_floor(a[cuts[t]:cuts[t + 1]]), range(threads))
    return sum(parts)


# The in-L2 screen diagnostic's block: half of a 1 MB L2 (Zen 4's), so the rows stay there.
L2_BLOCK_BYTES = 512 * 1024
_REPEATED: list = []


def screen_fns(slab) -> dict:
    """The compiled screen alone over every row, and over one L2-sized block of rows repeated
    for as many rows (empty without the compiled screens)."""
    kern = exact._scan_kernels()
    if kern is None:
        return {}
    if not _REPEATED:
        import numba

        @numba.njit(nogil=True, cache=False)
        def repeated(screen, rows, reps, out, head, args):
            for _ in range(reps):
                screen(*head, *args, 0, rows, out)

        _REPEATED.append(repeated)
    screen, head = kern["range"][slab.dtype], exact._slab_args(slab)
    row_bytes = sum(a.strides[0] for a in head)
    rows = max(4, min(slab.n, L2_BLOCK_BYTES // row_bytes) // 4 * 4)
    reps = max(1, slab.n // rows)
    out = np.empty(slab.n, np.float32)

    def stream(q):
        screen(*head, *exact._probe(slab, q, kern).args,
               0, slab.n, out)

    def in_l2(q):
        _REPEATED[0](screen, rows, reps, out, head,
                     exact._probe(slab, q, kern).args)

    return {"screen alone, streaming": stream,
            f"screen alone, {L2_BLOCK_BYTES >> 10} KB in L2": in_l2}


def kernel_load_seconds() -> float:
    """Wall time of a fresh interpreter's numba import + cached scan kernels (the rent)."""
    code = ("import time; t = time.perf_counter(); from urna.index import exact; "
            "exact.load_kernels(); exact._RENT.spent = exact._RENT.budget; "
            "exact._scan_kernels(); print(time.perf_counter() - t)")
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout) for _ in range(3)]
    return min(runs)


def numpy_top(M: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    s = M @ q
    part = np.argpartition(-s, k)[:k]
    return part[np.argsort(-s[part])]


def numpy_batch(M: np.ndarray, Q: np.ndarray, k: int) -> np.ndarray:
    S = Q @ M.T
    part = np.argpartition(-S, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(S, part, 1), axis=1)
    return np.take_along_axis(part, order, 1)


DTYPES = ("float32", "float16", "int8", "int4")


def faiss_peers(rows: np.ndarray, dtypes: tuple[str, ...] = DTYPES) -> dict:
    """faiss IndexFlatIP and its scalar quantisers (fp16 / 8 / 4 bit), inner product."""
    import faiss

    d = rows.shape[1]
    peers: dict[str, Any] = {"float32": faiss.IndexFlatIP(d)}
    for dt, qt in (("float16", faiss.ScalarQuantizer.QT_fp16),
                   ("int8", faiss.ScalarQuantizer.QT_8bit),
                   ("int4", faiss.ScalarQuantizer.QT_4bit)):
        if dt not in dtypes:
            continue
        peers[dt] = faiss.IndexScalarQuantizer(d, qt, faiss.METRIC_INNER_PRODUCT)
        peers[dt].train(rows)
    for index in peers.values():
        index.add(rows)
    return peers


def pct(t: np.ndarray) -> float:
    """The median of a latency series (ms)."""
    return float(np.percentile(t, 50))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: the calling thread's CPU time (time.thread_time), for a machine "
                         "shared with other jobs; the multi-thread figures then count only "
                         "the calling thread's share, so read the 1-thread ones")
    ap.add_argument("--dtypes", default=",".join(DTYPES),
                    help="comma-separated dtypes of the single-query table (default: all); "
                         "the kernel break-even and the batch figures need float32")
    args = ap.parse_args()
    dtypes = tuple(dt for dt in DTYPES if dt in args.dtypes.split(","))
    if not dtypes:
        ap.error(f"--dtypes: one or more of {', '.join(DTYPES)}")
    import faiss
    from usearch.index import MetricKind
    from usearch.index import search as usearch_search

    faiss.omp_set_num_threads(1)
    folder = args.dir or scratch_dir("urna-bench-")
    rows, queries = clustered(args.n, args.dim, max(args.queries, args.batch), centres=2000)
    single, batch = queries[:args.queries], queries[:args.batch]
    k, nt = args.k, args.threads
    paths = {dt: build_file(folder, rows, dt) for dt in dtypes}
    peers = faiss_peers(rows, dtypes)
    M = np.ascontiguousarray(rows)
    pool = ThreadPoolExecutor(nt)
    load = kernel_load_seconds() if "float32" in dtypes else 0.0
    exact.load_kernels()  # a long-running process: the compiled screens from the first query
    files = {dt: urna.open(paths[dt]) for dt in paths}
    print(f"\nn={args.n} dim={args.dim} k={k}, warm cache, BLAS/faiss on 1 thread; urna "
          f"backend={exact.backend()} ({exact.simd_backend()}); threads figure: {nt} threads. "
          f"The machine may be shared: methods alternate query by query, read the ratios.")
    if "float32" in files:
        f = files["float32"]
        agree = sum(np.array_equal([f.chunk_ids().index(h.chunk_id) for h in f.search(q, k)],
                                   numpy_top(M, q, k)) for q in single[:20])
        print(f"(top-{k} ids equal to numpy's full sort on {agree}/20 queries)")

    print(f"\n{'single query, p50 ms':<34}" + "".join(f"{dt:>10}" for dt in files))
    table: dict[str, dict[str, float]] = {}
    raw: dict[str, dict[str, np.ndarray]] = {}
    for dt, uf in files.items():
        slab = uf._state.scoring
        slab.max_row_norm()
        every_other = np.arange(0, slab.n, 2, dtype=np.int64)
        fns: dict[str, Callable[..., object]] = {
               "read floor numpy, 1 thread": lambda q, a=slab.a: read_floor(a),
               "read floor numba, 1 thread": lambda q, a=slab.a: numba_floor(a),
               "read floor prefetched, 1 thread": lambda q, a=slab.a: prefetched_floor(a),
               "urna, 1 thread": lambda q, s=slab: exact.search(s, q, k, threads=1),
               "faiss Flat / SQfp16 / SQ8 / SQ4": lambda q, i=peers[dt]: i.search(q[None], k),
               f"read floor, {nt} threads": lambda q, a=slab.a: threaded_floor(a, nt, pool),
               f"urna, {nt} threads": lambda q, s=slab: exact.search(s, q, k, threads=nt),
               "urna UrnaFile.search (default)": lambda q, u=uf: u.search(q, k),
               "urna rows= half, 1 thread": lambda q, s=slab, r=every_other: exact.search(
                   s, q, k, threads=1, rows=r),
               f"urna rows= half, {nt} threads": lambda q, s=slab, r=every_other: exact.search(
                   s, q, k, threads=nt, rows=r)}
        fns.update(screen_fns(slab))
        if dt == "float32":
            fns["numpy matmul+argpartition"] = lambda q: numpy_top(M, q, k)
            fns["usearch exact"] = lambda q: usearch_search(M, q, k, MetricKind.IP, exact=True,
                                                            threads=1)
            fns["urna numpy screen (CLI path)"] = lambda q, s=slab: numpy_screen(s, q, k)
        clock = time.thread_time if args.clock == "cpu" else time.perf_counter
        for name, t in latencies(fns, single, clock).items():
            table.setdefault(name, {})[dt] = pct(t)
            raw.setdefault(name, {})[dt] = t
    floors = [f"read floor {how}, 1 thread" for how in ("numpy", "numba", "prefetched")]
    table["read floor, 1 thread (fastest)"] = {dt: min(table[name][dt] for name in floors)
                                               for dt in files}
    for name, row in table.items():
        print(f"{name:<34}" + "".join(f"{row[dt]:>10.3f}" if dt in row else f"{'':>10}"
                                      for dt in files))
    one, many = table["urna, 1 thread"], table[f"urna, {nt} threads"]
    f1, fn_ = table["read floor, 1 thread (fastest)"], table[f"read floor, {nt} threads"]
    peer = table["faiss Flat / SQfp16 / SQ8 / SQ4"]
    print(f"{'urna / floor, 1 thread':<34}"
          + "".join(f"{ratio(one[d], f1[d]):>9.2f}x" for d in files))
    print(f"{'urna / floor, ' + str(nt) + ' threads':<34}"
          + "".join(f"{ratio(many[d], fn_[d]):>9.2f}x" for d in files))
    print(f"{'urna 1 thread / faiss':<34}"
          + "".join(f"{ratio(one[d], peer[d]):>9.2f}x" for d in files))
    if "screen alone, streaming" in table:
        streamed = table["screen alone, streaming"]
        l2 = table[f"screen alone, {L2_BLOCK_BYTES >> 10} KB in L2"]
        print(f"{'screen streaming / floor':<34}"
              + "".join(f"{ratio(streamed[d], f1[d]):>9.2f}x" for d in files))
        print(f"{'screen in L2 / floor':<34}"
              + "".join(f"{ratio(l2[d], f1[d]):>9.2f}x" for d in files))
        print(f"{'memory share of the screen':<34}"
              + "".join(f"{1 - ratio(l2[d], streamed[d]):>9.0%} " for d in files))
    half1, halfn = table["urna rows= half, 1 thread"], table[f"urna rows= half, {nt} threads"]
    print(f"{'rows= half / floor, 1 thread':<34}"
          + "".join(f"{ratio(half1[d], f1[d]):>9.2f}x" for d in files))
    print(f"{'rows= half, ' + str(nt) + ' / 1 threads':<34}"
          + "".join(f"{ratio(halfn[d], half1[d]):>9.2f}x" for d in files))
    floor_q = {d: np.minimum.reduce([raw[name][d] for name in floors]) for d in files}
    print("paired (median of per-query ratios):")
    for label, name, base in (("urna / floor, 1 thread", "urna, 1 thread", None),
                              ("urna / faiss, 1 thread", "urna, 1 thread",
                               "faiss Flat / SQfp16 / SQ8 / SQ4"),
                              ("rows= half / floor, 1 thread", "urna rows= half, 1 thread", None),
                              (f"urna / floor, {nt} threads", f"urna, {nt} threads",
                               f"read floor, {nt} threads")):
        print(f"  {label:<32}" + "".join(
            f"{paired(raw[name][d], floor_q[d] if base is None else raw[base][d]):>9.2f}x"
            for d in files))
    if "float32" not in files:  # the rest is float32's
        for uf in files.values():
            uf.close()
        pool.shutdown()
        return
    print(f"floor rate: {M.nbytes / f1['float32'] / 1e6:.1f} GB/s on one thread, "
          f"{ratio(M.nbytes / 1e6, fn_['float32']):.1f} GB/s on {nt}")
    gain = table["urna numpy screen (CLI path)"]["float32"] - one["float32"]
    print(f"\nkernel break-even: numba + scan kernels load in {load * 1e3:.0f} ms (fresh "
          f"process); they save {gain:.2f} ms per {M.nbytes / 1e6:.0f} MB float32 query, so "
          + (f"a process pays them back after ~{load * 1e3 / gain:.0f} such queries "
             f"(~{load * 1e3 / gain * M.nbytes / 1e9:.1f} GB scanned)" if gain > 0 else
             "they never pay back here") + f"; KERNEL_RENT_SECONDS = {exact._RENT.budget}")

    bf = {"urna search_batch, 1 thread": lambda Q: exact.search_batch(
              f._state.scoring, Q, k, threads=1),
          f"urna search_batch, {nt} threads": lambda Q: exact.search_batch(
              f._state.scoring, Q, k, threads=nt),
          "numpy Q@M.T+argpartition": lambda Q: numpy_batch(M, Q, k),
          "faiss IndexFlatIP": lambda Q: peers["float32"].search(Q, k),
          "usearch exact": lambda Q: usearch_search(M, Q, k, MetricKind.IP, exact=True,
                                                    threads=1)}
    batch_r = qps(bf, batch)
    print(f"\n{'float32 batch of ' + str(len(batch)):<34}{'QPS':>10}{'vs faiss':>12}")
    for name, r in batch_r.items():
        print(f"{name:<34}{r:>10.1f}{r / batch_r['faiss IndexFlatIP']:>11.2f}x")
    for uf in files.values():
        uf.close()
    pool.shutdown()


def numpy_screen(slab, q: np.ndarray, k: int):
    """urna's search as a process without numba runs it (BLAS screen, numpy rescoring)."""
    saved = exact._SCAN[:]
    exact._SCAN[:] = [None]
    try:
        return exact.search(slab, q, k, threads=1)
    finally:
        exact._SCAN[:] = saved


if __name__ == "__main__":
    main()
