"""A living catalog's log as versions pile up: its size on disk and the time to open it.

One catalog of ``--chunks`` toy chunks (``tests/living/corpus.py``: 10 chunks a document,
dim 8) takes ``--versions`` versions, each removing ``--removals`` live chunks spread over the
corpus (a 1% churn by default); every ``--every`` versions the catalog's bytes and the median
of three ``urna.open_catalog`` calls are printed. ``--baseline-src DIR`` runs the same sequence
with another checkout's ``src`` (e.g. a ``git archive`` of an earlier commit) in its own
process, beside this tree's, so a change of the log's form shows its own effect.

    .venv/bin/python benchmarks/bench_living_log.py
    .venv/bin/python benchmarks/bench_living_log.py --baseline-src /tmp/old/src
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in a fresh process with the tree under test first on the path: argv = chunks, versions,
# removals, every; prints [[version, bytes, open ms], ...] as JSON.
_RUN = r"""
import json, statistics, sys, tempfile, time
from pathlib import Path
import urna
from living.corpus import CHUNKER, document, new_catalog

n_chunks, versions, removals, every = map(int, sys.argv[1:5])
docs = [document(f"d{i}.txt", n_chunks=10) for i in range(max(1, n_chunks // 10))]
chunks = [c for d in docs for c in d]
ids = [urna.chunk_id(c["canonical_text"], c["source_uri"], c["byte_start"], c["byte_end"],
                     CHUNKER) for c in chunks]
order = sorted(range(len(ids)), key=lambda i: (i * 7919) % len(ids))  # spread over the corpus
out = []
with tempfile.TemporaryDirectory() as tmp:
    path = new_catalog(Path(tmp), chunks)
    with urna.open_catalog(path) as cat:
        for v in range(versions):
            cat.remove(chunk_ids=[ids[i] for i in order[v * removals:(v + 1) * removals]])
            if (v + 1) % every == 0:
                times = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    urna.open_catalog(path).close()
                    times.append((time.perf_counter() - t0) * 1000)
                out.append([v + 2, path.stat().st_size, round(statistics.median(times), 1)])
print(json.dumps(out))
"""


def run(src: Path, args: argparse.Namespace) -> list[list[float]]:
    """The sequence run with ``src`` first on the path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(ROOT / "tests")]))
    done = subprocess.run([sys.executable, "-c", _RUN, str(args.chunks), str(args.versions),
                           str(args.removals), str(args.every)],
                          env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def main() -> None:
    """Run this tree (and the baseline) and print a row per checkpoint."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--versions", type=int, default=60)
    ap.add_argument("--removals", type=int, default=20)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--baseline-src", type=Path, default=None)
    args = ap.parse_args()
    if args.versions * args.removals >= args.chunks:
        ap.error("--versions x --removals must stay below --chunks (a catalog keeps one chunk)")
    ours = run(ROOT / "src", args)
    base = run(args.baseline_src, args) if args.baseline_src else None
    head = "| version | catalog bytes | open ms |"
    if base:
        head += " baseline bytes | baseline open ms |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for i, (version, size, ms) in enumerate(ours):
        row = f"| {version} | {size:,} | {ms} |"
        if base:
            row += f" {base[i][1]:,} | {base[i][2]} |"
        print(row)


if __name__ == "__main__":
    main()
