"""The light verbs below the CLI: ``inspect`` / ``cite`` / ``validate``'s library calls, each in a
fresh interpreter, against the reference wheel's ``urna search`` (process start to exit).

``bench_cli.py`` times the verbs through the command line, whose parser's import is part of
each call; this times only what ``cli/file_cmds.py`` calls (the reader, the verdicts, the
citation, the full check), so the figure is the library's. Commands take turns for ``--runs``
rounds after one warm-up each (each call then finds the verdict an earlier one kept, as a
repeat CLI call does); prints medians and the median of each round's ratio to the reference.

    .venv/bin/python benchmarks/bench_light_calls.py --file F.urna --runs 9
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from bench_cli import run_once  # this folder: one timing of a process for both benchmarks
from scratch import scratch_dir

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
REF_BIN = "/work/refvenv/bin"

CALLS = r'''
import mmap, sys
from urna.runtime import verdicts
verb, path = sys.argv[1], sys.argv[2]
with open(path, "rb") as fh:
    data = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
if verb == "inspect":
    from urna.format.inspect import inspect_view
    from urna.format.layout import SECTION_METADATA
    from urna.runtime.stats import metadata_schema
    view = verdicts.checked_view(path, data)
    doc = inspect_view(view, None)
    verdicts.keep_view(path, data, view)
    if view.entry(SECTION_METADATA) is not None:
        metadata_schema(view)
elif verb == "validate":
    from urna.runtime.validation import validate_bytes
    validate_bytes(data)
else:
    from urna.format.citation import resolve_citation
    view, known = verdicts.checked(path, data)
    hit = resolve_citation(view, sys.argv[3], records_checked=verdicts.CITE_RECORDS in known)
    verdicts.keep_view(path, data, view, frozenset({verdicts.CITE_RECORDS}))
    view.file_hash()
'''


def main() -> None:
    """Alternate the calls with the reference's search; print medians and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", required=True, help="a .urna file")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    sys.path.insert(0, SRC)
    import urna

    with urna.open(args.file) as f:
        dim = f.embedding_dim
        citation = f"urna://{f.content_hash}/{f.chunk_ids()[0]}"
    ours = dict(os.environ, PYTHONPATH=SRC, URNA_CACHE_DIR=scratch_dir("urna-bench-"))
    ref = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    vector = json.dumps([1.0 / dim ** 0.5] * dim)
    cmds = {"reference search": ([os.path.join(REF_BIN, "urna"), "search", args.file, vector,
                                  "-k", "3"], ref)}
    for verb in ("inspect", "cite", "validate"):
        extra = [citation] if verb == "cite" else []
        cmds[f"{verb} (library)"] = ([sys.executable, "-c", CALLS, verb, args.file, *extra], ours)
    for argv, env in cmds.values():
        run_once(argv, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        for name, (argv, env) in cmds.items():
            times[name].append(run_once(argv, env))
    base = times["reference search"]
    print(f"{args.file}: {args.runs} alternating rounds (medians; ratios: median of each round's)")
    for name, ts in times.items():
        wall = statistics.median(t[0] for t in ts)
        cpu = statistics.median(t[1] for t in ts)
        r_wall = statistics.median(t[0] / b[0] for t, b in zip(ts, base, strict=True))
        r_cpu = statistics.median(t[1] / b[1] for t, b in zip(ts, base, strict=True))
        print(f"  {name:20s} wall {1e3 * wall:6.0f} ms  CPU {1e3 * cpu:6.0f} ms   "
              f"vs reference search: wall {r_wall:.2f}x  CPU {r_cpu:.2f}x")


if __name__ == "__main__":
    main()
