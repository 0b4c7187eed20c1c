"""``build_bytes`` on one thread vs every core, same corpus, same bytes (a benchmark, never a test).

Embeds ``--n`` synthetic chunks once with potion (cached in ``--dir``), then builds the file
with the forge's default preset (hybrid: HNSW + BM25, plus the graph) ``--rounds`` times per
setting, alternating ``URNA_THREADS=1`` and the default thread count, and checks every build
gives the same bytes. Prints the median wall and CPU seconds of each (CPU counts every thread,
so on a shared machine it is the steadier figure) and the wall ratio.

    .venv/bin/python benchmarks/bench_build.py                 # 10,000 chunks, 2 rounds
    .venv/bin/python benchmarks/bench_build.py --n 2000 --rounds 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_embed import synthetic_texts  # noqa: E402  (the same corpus as bench_embed)


def embedded_chunks(n: int, work: Path) -> tuple[list[dict], str, str, int]:
    """The corpus as build chunks, with its potion vectors (embedded once, then cached)."""
    from urna.forge.embed import potion_embedder

    texts = synthetic_texts(n)
    emb = potion_embedder()
    cache = work / f"bench-build-{n}.npy"
    if cache.exists():
        vecs = np.load(cache)
    else:
        vecs = emb.embed(texts)
        np.save(cache, vecs)
    chunks, offset = [], 0
    for i, text in enumerate(texts):
        size = len(text.encode("utf-8"))
        chunks.append({"canonical_text": text, "source_uri": f"doc{i // 100}.txt",
                       "byte_start": offset, "byte_end": offset + size, "embedding": vecs[i]})
        offset += size + 1
    return chunks, emb.embedding_model, emb.model_hash(), emb.embedding_dim


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "urna-bench-build"))
    args = ap.parse_args()
    from urna.build import build_bytes
    from urna.build_options import BuildOptions
    from urna.format.ahead import worker_count

    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    chunks, model, model_hash, dim = embedded_chunks(args.n, work)
    options = BuildOptions(preset="hybrid", with_graph=True, reproducible=True)
    build_bytes(model, dim, "bench/1", model_hash, chunks[:64], options)  # load the kernels
    default = str(worker_count())
    times: dict[str, list[float]] = {"1": [], default: []}
    cpu: dict[str, list[float]] = {"1": [], default: []}
    digests = set()
    for _ in range(args.rounds):
        for threads in ("1", default):
            os.environ["URNA_THREADS"] = threads
            t0, c0 = time.perf_counter(), time.process_time()
            data = build_bytes(model, dim, "bench/1", model_hash, chunks, options)
            times[threads].append(time.perf_counter() - t0)
            cpu[threads].append(time.process_time() - c0)
            digests.add(hashlib.sha256(data).hexdigest())
    os.environ.pop("URNA_THREADS", None)
    one, many = statistics.median(times["1"]), statistics.median(times[default])
    print(json.dumps({"chunks": args.n, "bytes": len(data), "identical": len(digests) == 1,
                      "one_thread_s": round(one, 2), f"{default}_threads_s": round(many, 2),
                      "one_thread_cpu_s": round(statistics.median(cpu["1"]), 2),
                      f"{default}_threads_cpu_s": round(statistics.median(cpu[default]), 2),
                      "speedup": round(one / many, 2)}, indent=1))


if __name__ == "__main__":
    main()
