"""A living catalog's log as versions pile up: its size on disk and the time to open it.

One catalog of ``--chunks`` toy chunks (``tests/living/corpus.py``: 10 chunks a document,
dim 8) takes ``--versions`` versions, each removing ``--removals`` live chunks spread over the
corpus (a 1% churn by default); every ``--every`` versions the catalog's bytes and the median
of three ``urna.open_catalog`` calls are printed. Then a catalog made by ``urna build --spec
--update`` over ``--rows`` rows (``bench_update.py``'s rows, floor embedder): its bytes and the
median of seven opens. ``--baseline-src DIR`` runs the same with another checkout's ``src``
(e.g. a ``git archive`` of an earlier commit) in its own process, beside this tree's, so a
change of the log's form shows its own effect. ``--squash KEEP`` then compacts the catalog and
squashes every version but the newest KEEP, a row after each.

    .venv/bin/python benchmarks/bench_living_log.py
    .venv/bin/python benchmarks/bench_living_log.py --baseline-src /tmp/old/src
    .venv/bin/python benchmarks/bench_living_log.py --squash 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in a fresh process with the tree under test first on the path: argv = chunks, versions,
# removals, every; prints [[version, bytes, open ms], ...] as JSON.
_RUN = r"""
import json, statistics, sys, tempfile, time
from pathlib import Path
import urna
from living.corpus import CHUNKER, document, new_catalog

n_chunks, versions, removals, every, keep = map(int, sys.argv[1:6])
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
        if keep:  # then compact away the removed rows and fold all but the newest versions
            for step in ("compact", "squash"):
                cat.compact() if step == "compact" else cat.squash(keep)
                times = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    urna.open_catalog(path).close()
                    times.append((time.perf_counter() - t0) * 1000)
                out.append([step, path.stat().st_size, round(statistics.median(times), 1)])
print(json.dumps(out))
"""

# The forge-built catalog: argv = rows, scratch folder; prints [bytes, open ms].
_FORGE = r"""
import contextlib, io, json, statistics, sys, time
from pathlib import Path
import urna
from bench_update import rows_of, spec_for
from urna.cli import main

rows, root = int(sys.argv[1]), Path(sys.argv[2])
spec = spec_for(root / "live", rows_of(rows), root / "cache")
try:
    with contextlib.redirect_stdout(io.StringIO()):  # the build's own JSON
        main(["build", "--spec", str(spec), "--json", "--update"])
except SystemExit as e:
    assert not e.code, e.code
path = next((root / "live" / "out").glob("*.catalog.json"))
times = []
for _ in range(7):
    t0 = time.perf_counter()
    urna.open_catalog(path).close()
    times.append((time.perf_counter() - t0) * 1000)
print(json.dumps([path.stat().st_size, round(statistics.median(times), 1)]))
"""


def run(src: Path, script: str, *argv: object) -> list:
    """``script`` run with ``src`` first on the path; its JSON answer."""
    path = [str(src), str(ROOT / "tests"), str(ROOT / "benchmarks")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    done = subprocess.run([sys.executable, "-c", script, *map(str, argv)],
                          env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def main() -> None:
    """Run this tree (and the baseline) and print a row per checkpoint."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--versions", type=int, default=60)
    ap.add_argument("--removals", type=int, default=20)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--squash", type=int, default=0, metavar="KEEP",
                    help="after the versions, compact, then squash all but the newest KEEP "
                         "versions (this tree only), a row after each")
    ap.add_argument("--baseline-src", type=Path, default=None)
    args = ap.parse_args()
    if args.versions * args.removals >= args.chunks:
        ap.error("--versions x --removals must stay below --chunks (a catalog keeps one chunk)")
    sides = [ROOT / "src", *([args.baseline_src] if args.baseline_src else [])]
    logs = [run(src, _RUN, args.chunks, args.versions, args.removals, args.every,
                args.squash if i == 0 else 0) for i, src in enumerate(sides)]
    with tempfile.TemporaryDirectory() as tmp:
        forged = [run(src, _FORGE, args.rows, Path(tmp) / str(i)) for i, src in enumerate(sides)]
    ours, base = logs[0], logs[1] if args.baseline_src else None
    head = "| version | catalog bytes | open ms |"
    if base:
        head += " baseline bytes | baseline open ms |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for i, (version, size, ms) in enumerate(ours):
        row = f"| {version} | {size:,} | {ms} |"
        if base and i < len(base):
            row += f" {base[i][1]:,} | {base[i][2]} |"
        print(row)
    print(f"\nforge-built catalog of {args.rows:,} rows: {forged[0][0]:,} bytes, open "
          f"{forged[0][1]} ms" + (f"; baseline {forged[1][0]:,} bytes, open {forged[1][1]} ms"
                                  if base else ""))


if __name__ == "__main__":
    main()
