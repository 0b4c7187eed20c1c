"""The numba-free HNSW beam (``index.hnsw_beam``) as a one-shot ``urna ask`` runs it.

Opens FILE (a potion-embedded hybrid file), embeds each question with the file's model, then
walks the graph the way a CLI query does: the deferred neighbour-id column decoded block by
block as the walk reads it (a fresh ``decode_hnsw(..., defer_ids=True)`` for every walk, so
every walk decodes its blocks again), beam ``max(ef, ef_construction)``. Prints the first
walk of the process (the vector rows touched for the first time) and the median and fastest
walk's CPU time of the calling thread over ``--rounds`` rounds of every question; with
``--baseline SRC`` it runs the same in a process importing another source tree (e.g. ``git
archive`` of an earlier commit), alternating, and checks both trees return the same ids.

    .venv/bin/python benchmarks/bench_beam.py --file ~/.cache/urna-quality/manpages-para/corpus.urna
    .venv/bin/python benchmarks/bench_beam.py --file F.urna --baseline /tmp/old/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
QUESTIONS = ["how do I list files sorted by size", "change the owner of a file recursively",
             "show disk usage of a directory", "find text in files",
             "compress a folder into an archive"]

_WALKS = """
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
from urna.format.layout import SECTION_HNSW_INDEX
from urna.format.sections.hnsw import decode_hnsw
from urna.forge.query import embed_query, manifest_of
from urna.index import hnsw_beam
from urna.runtime.search import hnsw_vectors
from urna.runtime.searcher import open_searcher
path, rounds, questions = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
f = open_searcher(path)
st = f._state
vecs = [embed_query(manifest_of(f), q)[0] for q in questions]
rows = hnsw_vectors(st)
raw = st.view.decoded(SECTION_HNSW_INDEX)
times, ids = [], []
for r in range(rounds):
    for v in vecs:
        g = decode_hnsw(raw, st.n, defer_ids=True)
        ef = max(64, g.ef_construction)
        t = time.thread_time()
        out = hnsw_beam.search_graph(np.array(v, dtype=np.float32), ef, g.entry_point,
                                     g.max_level, rows, g.node_ptr, g.nbr_ptr[:-1],
                                     g.nbr_ptr[1:], g.id_column(), np.zeros(0, np.uint8))
        times.append((time.thread_time() - t) * 1e3)
        if r == 0:
            ids.append(out.tolist())
f.close()
print(json.dumps({"times": times, "ids": ids}))
"""


def walks(src: str, path: str, rounds: int) -> dict:
    """The walk times (ms, calling thread's CPU) and ids of one process importing ``src``."""
    env = dict(os.environ, PYTHONPATH=src)
    out = subprocess.run([sys.executable, "-c", _WALKS, path, str(rounds),
                          json.dumps(QUESTIONS)], env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def main() -> None:
    """Alternate the trees' processes, print each one's first, median and fastest walk."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", required=True, help="a potion-embedded file with an HNSW index")
    ap.add_argument("--rounds", type=int, default=4, help="rounds of the questions a process")
    ap.add_argument("--processes", type=int, default=5, help="processes per tree")
    ap.add_argument("--baseline", default=None, help="another source tree to compare with")
    args = ap.parse_args()
    trees = {"this tree": SRC} | ({"baseline": args.baseline} if args.baseline else {})
    firsts: dict[str, list[float]] = {name: [] for name in trees}
    rest: dict[str, list[float]] = {name: [] for name in trees}
    answers: dict[str, list] = {}
    for _ in range(args.processes):
        for name, src in trees.items():
            got = walks(src, args.file, args.rounds)
            firsts[name].append(got["times"][0])
            rest[name] += got["times"][1:]
            answers.setdefault(name, got["ids"])
    print(f"{args.file}: {len(QUESTIONS)} questions x {args.rounds} rounds x "
          f"{args.processes} processes (CPU ms of the walking thread)")
    for name in trees:
        print(f"  {name:10s} first walk median {statistics.median(firsts[name]):6.1f}   "
              f"later walks median {statistics.median(rest[name]):6.1f}  "
              f"fastest {min(rest[name]):6.1f}")
    if args.baseline:
        same = answers["this tree"] == answers["baseline"]
        print(f"  same ids in the same order: {same}")


if __name__ == "__main__":
    main()
