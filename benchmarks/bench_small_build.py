"""Small hybrid builds, process start to exit: this tree vs the reference wheel (and a baseline).

What an agent indexing a few documents, a living corpus's new segment or ``make quickstart``
pays: one fresh process per build calling ``urna.build(..., preset="hybrid")`` (HNSW + BM25)
on the first ``n`` of ``bench_embed``'s synthetic chunks, embedded once with potion (256-d,
cached in ``--dir``). For each size the commands take turns for ``--runs`` rounds:

* ``urna`` (this tree) with numba's kernel cache warm, and again with an empty one
  (``NUMBA_CACHE_DIR`` a new folder each run: a machine's first build, which compiles the
  graph builder when it is used);
* ``reference``: the wheel's ``urna.build`` on the same chunks (``/work/refvenv``);
* ``--baseline SRC``: the same two ``urna`` rows from another source tree (e.g. a ``git
  archive`` of an earlier commit).

Prints the median wall time of each and its ratio to the reference's, and checks that every
file is the reference's bytes.

``--quickstart`` times instead ``urna build --spec examples/quickstart/corpus.toml`` (the
forge: sources, embedding, the file and its sidecars), what ``make quickstart`` runs first,
this tree and the baseline in turn.

``--add N`` times instead one chunk added to a living corpus of ``N`` chunks (built with the
forge's default preset, hybrid, by ``urna build --spec --update``): a fresh process opens the
catalog and calls ``add`` with one potion-embedded note, as an agent keeping notes would; this
tree and the baseline take turns on the same catalog (the reference has no living corpora).

    .venv/bin/python benchmarks/bench_small_build.py
    .venv/bin/python benchmarks/bench_small_build.py --sizes 12,256,400 --runs 3 \
        --baseline /tmp/old/src
    .venv/bin/python benchmarks/bench_small_build.py --add 12 --runs 5 --baseline /tmp/old/src
    .venv/bin/python benchmarks/bench_small_build.py --quickstart --runs 10 --baseline /tmp/old/src
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_embed import synthetic_texts  # noqa: E402  (the same corpus as bench_embed)
from scratch import scratch_dir  # noqa: E402

from helpers.specs import write_jsonl_spec  # noqa: E402  (the tests' spec writer)

SRC = str(HERE.parent / "src")
REF_PYTHON = "/work/refvenv/bin/python"
_BUILD = """
import json, sys
import urna
meta = json.load(open(sys.argv[1]))
urna.build(sys.argv[2], meta["model"], meta["dim"], "bench/1", meta["model_hash"],
           meta["chunks"], preset="hybrid", reproducible=True)
"""


def chunk_file(n: int, work: Path) -> Path:
    """The first ``n`` synthetic chunks with their potion vectors, as JSON (cached)."""
    path = work / f"small-build-{n}.json"
    if path.exists():
        return path
    from urna.forge.embed import potion_embedder

    texts = synthetic_texts(n)
    emb = potion_embedder()
    vecs = np.asarray(emb.embed(texts), dtype=np.float32)
    chunks, offset = [], 0
    for i, text in enumerate(texts):
        size = len(text.encode("utf-8"))
        chunks.append({"canonical_text": text, "source_uri": f"doc{i // 10}.txt",
                       "byte_start": offset, "byte_end": offset + size,
                       "embedding": vecs[i].tolist()})
        offset += size + 1
    path.write_text(json.dumps({"model": emb.embedding_model, "dim": emb.embedding_dim,
                                "model_hash": emb.model_hash(), "chunks": chunks}))
    return path


_ADD = """
import sys
import urna
from urna.forge.embed import potion_embedder
text = "a note an agent keeps, number " + sys.argv[2]
vector = potion_embedder().embed([text])[0].tolist()
urna.open_catalog(sys.argv[1]).add([{"canonical_text": text, "source_uri": "note.md",
                                     "byte_start": 0, "byte_end": len(text),
                                     "embedding": vector}])
"""


def living_catalog(n: int, work: Path) -> Path:
    """A living corpus of ``n`` synthetic chunks (the forge's default preset), new each run."""
    rows = [{"id": f"{i:06d}", "text": t} for i, t in enumerate(synthetic_texts(n))]
    spec = write_jsonl_spec(work, rows, name="living", preset=None, with_graph=None)
    env = dict(os.environ, PYTHONPATH=SRC, URNA_CACHE_DIR=str(work / "cache"))
    subprocess.run([sys.executable, "-m", "urna.cli", "build", "--spec", str(spec), "--update"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    return work / "out" / "living.catalog.json"


def time_adds(n: int, runs: int, trees: dict[str, str], scratch: Path) -> None:
    """``--add``: one chunk added to a living corpus of ``n``, each tree in turn."""
    catalog = living_catalog(n, scratch)
    times: dict[str, list[float]] = {label: [] for label in trees}
    for r in range(runs + 1):  # round 0 warms the page cache
        for label, src in trees.items():
            env = dict(os.environ, PYTHONPATH=src, URNA_CACHE_DIR=str(scratch / "cache"))
            took = timed([sys.executable, "-c", _ADD, str(catalog), f"{label}-{r}"], env)
            if r:
                times[label].append(took)
    print(f"\none chunk added to a living corpus of {n} chunks (hybrid), {runs} runs each")
    print(f"  {'tree':<12}{'median ms':>10}{'min ms':>9}")
    for label, ts in times.items():
        print(f"  {label:<12}{statistics.median(ts) * 1e3:>10.0f}{min(ts) * 1e3:>9.0f}")


def time_quickstart(runs: int, trees: dict[str, str], scratch: Path) -> None:
    """``--quickstart``: the quickstart spec built by each tree in turn, in a copy of it."""
    import shutil

    root = scratch / "quickstart"
    shutil.copytree(HERE.parent / "examples" / "quickstart", root / "examples" / "quickstart",
                    ignore=shutil.ignore_patterns("out"))
    times: dict[str, list[float]] = {label: [] for label in trees}
    for r in range(runs + 1):  # round 0 warms the page cache
        for label, src in trees.items():
            shutil.rmtree(root / "examples" / "quickstart" / "out", ignore_errors=True)
            env = dict(os.environ, PYTHONPATH=src, URNA_CACHE_DIR=str(scratch / "cache"))
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "urna.cli", "build", "--spec",
                            "examples/quickstart/corpus.toml"], cwd=root, env=env, check=True,
                           stdout=subprocess.DEVNULL)
            if r:
                times[label].append(time.perf_counter() - t0)
    print(f"\nurna build --spec examples/quickstart/corpus.toml, {runs} runs each")
    print(f"  {'tree':<12}{'median ms':>10}{'min ms':>9}")
    for label, ts in times.items():
        print(f"  {label:<12}{statistics.median(ts) * 1e3:>10.0f}{min(ts) * 1e3:>9.0f}")


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one process."""
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="12,64,256")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", default=None, help="another tree's src/ to time beside")
    ap.add_argument("--add", type=int, default=0, help="time adds to a living corpus of N")
    ap.add_argument("--quickstart", action="store_true", help="time the quickstart spec build")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "urna-bench-small"))
    args = ap.parse_args()
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    scratch = Path(scratch_dir("urna-small-build-"))
    trees = {"urna": SRC, **({"baseline": args.baseline} if args.baseline else {})}
    if args.add:
        time_adds(args.add, args.runs, trees, scratch)
        return
    if args.quickstart:
        time_quickstart(args.runs, trees, scratch)
        return
    for n in (int(s) for s in args.sizes.split(",")):
        chunks = chunk_file(n, work)
        commands: dict[str, tuple[list[str], str | None, bool]] = {}
        for label, src in trees.items():
            commands[f"{label}, kernel cache warm"] = ([sys.executable, "-c", _BUILD], src, False)
            commands[f"{label}, first build (empty kernel cache)"] = (
                [sys.executable, "-c", _BUILD], src, True)
        commands["reference"] = ([REF_PYTHON, "-c", _BUILD], None, False)
        times: dict[str, list[float]] = {name: [] for name in commands}
        digests: dict[str, set[str]] = {name: set() for name in commands}
        for r in range(args.runs + 1):  # round 0 warms the page cache and the kernel cache
            for name, (argv, src, cold) in commands.items():
                out = scratch / f"{n}-{len(times[name])}.urna"
                env = dict(os.environ, URNA_CACHE_DIR=str(scratch / "cache"))
                env.pop("PYTHONPATH", None)
                if src is not None:
                    env["PYTHONPATH"] = src
                if cold:
                    env["NUMBA_CACHE_DIR"] = scratch_dir("urna-numba-")
                took = timed([*argv, str(chunks), str(out)], env)
                digests[name].add(hashlib.sha256(out.read_bytes()).hexdigest())
                out.unlink()
                if r:
                    times[name].append(took)
        ref = statistics.median(times["reference"])
        same = all(d == digests["reference"] for d in digests.values())
        print(f"\n{n} chunks (potion, 256-d), preset hybrid, {args.runs} runs; every file the "
              f"reference's bytes: {'yes' if same else 'NO'}")
        print(f"  {'command':<48}{'median ms':>10}{'min ms':>9}   vs reference")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"  {name:<48}{med * 1e3:>10.0f}{min(ts) * 1e3:>9.0f}   {med / ref:.2f}x")


if __name__ == "__main__":
    main()
