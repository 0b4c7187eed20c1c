"""Embedding throughput and ``urna build --spec`` end to end (a benchmark, never a test).

Measures, on one machine:
  1. potion embedding throughput in chunks/s over N synthetic chunks (default 10,000),
     and the floor embedder's for comparison;
  2. ``urna build --spec`` over the same N rows with the forge's default preset (hybrid +
     graph), each run a fresh process, wall and CPU (user + sys of the child) and the
     build's own stage timings: "cold" (numba's kernel cache and the embed cache both empty:
     the first build on a machine), "warm kernels" (compiled kernels cached, embed cache
     empty: a new corpus), "warm" (both cached: a rebuild). Every run must write the same
     bytes. On a shared machine wall times are noisy; CPU time is the steadier figure.

Run from the repository root:
    .venv/bin/python benchmarks/bench_embed.py            # 10,000 chunks
    .venv/bin/python benchmarks/bench_embed.py --n 2000 --preset exact
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.specs import write_jsonl_spec  # noqa: E402  (the tests' spec writer)

WORDS = ["file", "vector", "search", "citation", "offline", "embed", "chunk", "corpus", "index",
         "model", "query", "rerank", "cosine", "byte", "span", "hash", "manifest", "section",
         "graph", "space", "media", "blob", "token", "lexical", "semantic", "build", "spec",
         "cache", "shard", "stream", "frame", "archive", "reader", "writer", "format"]


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    """N paragraphs of 40-90 words (about 300-600 characters, a typical chunk)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))) + f" #{i}."
            for i in range(n)]


def bench_embedder(name: str, emb, texts: list[str]) -> dict[str, float]:
    emb.embed(texts[:64])  # load the table / warm caches outside the timing
    t0 = time.perf_counter()
    emb.embed(texts)
    dt = time.perf_counter() - t0
    return {"embedder": name, "chunks": len(texts), "seconds": round(dt, 3),
            "chunks_per_s": round(len(texts) / dt, 1)}


def run_build(spec: Path, cache: Path, numba_cache: Path) -> dict[str, object]:
    """One ``urna build --spec`` in a fresh process: wall, CPU, stage timings, file digest."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(numba_cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from urna.cli import main; main()", "build",
                           "--spec", str(spec), "--cache-dir", str(cache), "--json"],
                          env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(proc.stdout)
    out = result["outputs"]["bench.urna"]
    return {"wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
            "timings": result["timings"], "bytes": out["bytes"], "file_hash": out["file_hash"]}


def bench_build(texts: list[str], preset: str | None, work: Path) -> dict[str, object]:
    """The three runs of the module docstring, in order, on one corpus."""
    rows = ({"id": f"{i:06d}", "text": t} for i, t in enumerate(texts))
    spec = write_jsonl_spec(work, rows, name="bench", preset=preset, with_graph=None)
    kernels = work / "numba-cache"
    runs = {"cold": run_build(spec, work / "embed-cold", kernels),
            "warm_kernels": run_build(spec, work / "embed-warm", kernels),
            "warm": run_build(spec, work / "embed-warm", kernels)}
    return {**runs, "identical": len({r["file_hash"] for r in runs.values()}) == 1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--preset", default=None, help="build preset (default: the forge's)")
    ap.add_argument("--skip-build", action="store_true")
    args = ap.parse_args()
    from urna.forge.embed import FloorEmbedder, PotionEmbedder

    texts = synthetic_texts(args.n)
    report = {"potion": bench_embedder("potion", PotionEmbedder(), texts),
              "floor": bench_embedder("floor", FloorEmbedder(), texts[: min(len(texts), 2000)])}
    if not args.skip_build:
        with tempfile.TemporaryDirectory() as d:
            report["build"] = {"preset": args.preset or "forge default", "chunks": args.n,
                               **bench_build(texts, args.preset, Path(d))}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
