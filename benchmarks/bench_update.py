"""Living corpora: an update with 1% new rows vs a full rebuild, and search as segments pile up.

Measures, on one machine, over N synthetic rows (default 10,000; the floor embedder, preset
``exact``, no graph):
  1. wall time of ``urna build --spec corpus.toml --update`` adding 1% new rows to a living
     catalog of N rows, against ``urna build --spec corpus.toml`` rebuilding one file of the
     N + 1% rows (cold embed cache); each is one fresh CLI process, start-up included;
  2. exact-search latency (k=10) of the living catalog as 1%-updates accumulate segments
     (1, 2, ... U+1), then after ``compact`` (one segment), against one file of the same rows.

Run from the repository root:
    .venv/bin/python benchmarks/bench_update.py
    .venv/bin/python benchmarks/bench_update.py --rows 100000 --updates 8
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.specs import write_jsonl_spec  # noqa: E402  (the tests' spec writer)

WORDS = ["file", "vector", "search", "citation", "offline", "embed", "chunk", "corpus", "index",
         "model", "query", "rerank", "cosine", "byte", "span", "hash", "manifest", "section",
         "graph", "space", "token", "lexical", "semantic", "build", "spec", "cache", "segment"]


def rows_of(n: int, start: int = 0, seed: int = 7) -> list[dict]:
    """Rows ``start..start+n`` of 40-90 words each (a typical chunk)."""
    rng = random.Random(seed + start)
    return [{"id": f"r{i:08d}",
             "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))) + f" #{i}."}
            for i in range(start, start + n)]


def spec_for(root: Path, rows: list[dict], cache: Path) -> Path:
    """A corpus.toml over ``rows`` (floor embedder, exact preset)."""
    return write_jsonl_spec(root, rows, name="bench", model="floor", mode="single",
                            cache_dir=cache)


def cli_build_s(spec: Path, *extra: str) -> tuple[float, dict]:
    """Seconds of one ``urna build --spec SPEC [extra]`` process, and its JSON result."""
    src = Path(__file__).resolve().parent.parent / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.perf_counter()
    cli = [sys.executable, "-c", "from urna.cli import main; main()"]
    done = subprocess.run([*cli, "build", "--spec", str(spec), "--json", *extra], env=env,
                          check=True, capture_output=True)
    return round(time.perf_counter() - t0, 2), json.loads(done.stdout)


def latency_ms(searcher, queries: np.ndarray, k: int = 10) -> float:
    """Median ms per exact search over ``queries``."""
    times = []
    for q in queries:
        t0 = time.perf_counter()
        searcher.search(q, k)
        times.append((time.perf_counter() - t0) * 1000.0)
    return float(np.median(times))


def main() -> None:
    """Run the benchmark and print one JSON document."""
    import urna

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--updates", type=int, default=5, help="1%% updates before compacting")
    ap.add_argument("--queries", type=int, default=50)
    args = ap.parse_args()
    step = max(1, args.rows // 100)
    out: dict = {"rows": args.rows, "update_rows": step}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = rows_of(args.rows)
        spec = spec_for(root / "live", rows, root / "cache-live")
        out["first_version_s"], first = cli_build_s(spec, "--update")
        catalog = Path(first["catalog"])
        rng = np.random.default_rng(3)
        with urna.open_catalog(catalog) as cat:
            dim = cat.embedding_dim
        queries = rng.standard_normal((args.queries, dim)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        curve = []
        with urna.open_catalog(catalog) as cat:
            curve.append({"segments": len(cat.shard_info),
                          "ms": round(latency_ms(cat, queries), 3)})
        update_s = []
        for u in range(args.updates):
            rows += rows_of(step, start=args.rows + u * step)
            spec = spec_for(root / "live", rows, root / "cache-live")
            seconds, res = cli_build_s(spec, "--update")
            update_s.append(seconds)
            assert res["added"] == step, res
            with urna.open_catalog(catalog) as cat:
                curve.append({"segments": len(cat.shard_info),
                              "ms": round(latency_ms(cat, queries), 3)})
        out["update_1pct_s"] = update_s
        # the full rebuild of the last corpus, cold cache, one file
        out["full_rebuild_s"], built = cli_build_s(spec_for(root / "full", rows,
                                                            root / "cache-full"))
        with urna.open(next(iter(built["outputs"].values()))["file"]) as one:
            out["one_file_ms"] = round(latency_ms(one, queries), 3)
        with urna.open_catalog(catalog) as cat:
            t0 = time.perf_counter()
            cat.compact()
            out["compact_s"] = round(time.perf_counter() - t0, 2)
            curve.append({"segments": len(cat.shard_info), "compacted": True,
                          "ms": round(latency_ms(cat, queries), 3)})
        out["search_k10_by_segments"] = curve
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
