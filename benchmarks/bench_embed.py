"""Embedding throughput and declarative build time (a benchmark, never a test).

Measures, on one machine:
  1. potion embedding throughput in chunks/s over N synthetic chunks (default 10,000),
     and the floor embedder's for comparison;
  2. the wall time of ``urna build --spec`` over the same N rows (cold cache: rows ->
     embed -> emit with the forge's default preset, hybrid + graph), then the warm rerun
     that reuses the embed cache.

Run from the repository root:
    .venv/bin/python benchmarks/bench_embed.py            # 10,000 chunks
    .venv/bin/python benchmarks/bench_embed.py --n 2000 --preset exact
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.specs import write_jsonl_spec  # noqa: E402  (the tests' spec writer)

WORDS = ["file", "vector", "search", "citation", "offline", "embed", "chunk", "corpus", "index", "model", "query", "rerank", "cosine", "byte", "span", "hash", "manifest", "section", "graph", "space", "media", "blob", "token", "lexical", "semantic", "build", "spec", "cache", "shard", "stream", "frame", "archive", "reader", "writer", "format"]


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


def bench_build(texts: list[str], preset: str, work: Path) -> dict[str, float]:
    from urna.forge import pipeline
    from urna.forge.spec import load_spec

    rows = ({"id": f"{i:06d}", "text": t} for i, t in enumerate(texts))
    spec = write_jsonl_spec(work, rows, name="bench", preset=preset, with_graph=None,
                            cache_dir=work / "cache")
    out = {}
    for label in ("cold", "warm"):
        t0 = time.perf_counter()
        result = pipeline.build(load_spec(spec), progress=pipeline.Progress(False))
        out[f"build_{label}_s"] = round(time.perf_counter() - t0, 2)
        out[f"timings_{label}"] = result["timings"]
    out["bytes"] = result["outputs"]["bench.urna"]["bytes"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--preset", default="hybrid")
    ap.add_argument("--skip-build", action="store_true")
    args = ap.parse_args()
    from urna.forge.embed import FloorEmbedder, PotionEmbedder

    texts = synthetic_texts(args.n)
    report = {"potion": bench_embedder("potion", PotionEmbedder(), texts),
              "floor": bench_embedder("floor", FloorEmbedder(), texts[: min(len(texts), 2000)])}
    if not args.skip_build:
        with tempfile.TemporaryDirectory() as d:
            report["build"] = {"preset": args.preset, "chunks": args.n,
                               **bench_build(texts, args.preset, Path(d))}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
