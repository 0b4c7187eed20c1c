"""A long-lived process answering hybrid queries (a framework retriever, a notebook, an agent's
own process): latency per window of its life, this tree beside the reference wheel.

Each side runs in its own process for ``--seconds``, asking the same questions in turn
(pre-embedded with the file's potion model, so both time the file's work alone):

* ``urna search_hybrid``: ``f.search_hybrid(vec, text, 10, 64)``, the reference's algorithm
  (vector shortlist + BM25 shortlist, exact rerank); the wheel runs the same call;
* ``urna retrieve fused``: ``f.retrieve(vec, 10, query_text=text, rank="fused")``, what
  ``urna ask`` returns by default (the fused ranking);
* ``--baseline SRC`` adds both from another source tree (e.g. ``git archive`` of an earlier
  commit), labelled ``(baseline)``.

The processes run one after another (two at once would share the two cores). Prints each
side's median latency per ``--window`` seconds (the first windows pay for loading what the
process loads on the way: the compiled kernels once their rent is paid, ``index.kernel_rent``),
the median over the last third of its life with its ratio to the wheel's, and its slowest
call.

``--server``: each urna side starts as ``urna serve`` and ``urna mcp`` do
(``runtime.resident.prepare_resident_server`` on the opened file: the kernels prepared on a
background thread). ``--cold-kernels``: the urna sides run with an empty numba cache
(``NUMBA_CACHE_DIR``), as a machine's first run or the first after an upgrade, which compiles
every kernel it uses.

    .venv/bin/python benchmarks/bench_resident.py                    # the 20,000-doc bench file
    .venv/bin/python benchmarks/bench_resident.py --file F.urna --seconds 20 --baseline /tmp/old/src
    .venv/bin/python benchmarks/bench_resident.py --server --cold-kernels --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from bench_cli import REF_BIN, SRC, build_file  # this folder
from scratch import scratch_dir

QUESTIONS = ["w12x w7x w300x", "w5x w88x", "w1x w2x w3x w4000x w77x", "w19x w230x w9x", "w42x"]

_LOOP = r'''
import json, sys, time
import numpy as np
import urna
path, call, seconds, queries = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
asked = [(np.asarray(v, dtype=np.float32), t) for v, t in json.loads(open(queries).read())]
f = urna.open(path)
if sys.argv[5] == "server":
    from urna.runtime.resident import prepare_resident_server
    try:
        prepare_resident_server([f])
    except TypeError:  # a tree from before it took the served files
        prepare_resident_server()
if call == "search_hybrid":
    def one(v, t): f.search_hybrid(v, t, 10, 64)
else:
    def one(v, t): f.retrieve(v, 10, query_text=t, rank="fused")
t0 = time.perf_counter()
times = []
while time.perf_counter() - t0 < seconds:
    for v, t in asked:
        s = time.perf_counter()
        one(v, t)
        times.append((s - t0, time.perf_counter() - s))
print(json.dumps(times))
'''


def _queries(path: str, folder: str) -> str:
    sys.path.insert(0, SRC)
    import urna
    from urna.forge.query import embed_query, manifest_of

    with urna.open(path) as f:
        asked = [(embed_query(manifest_of(f), q)[0].tolist(), q) for q in QUESTIONS]
    out = os.path.join(folder, "queries.json")
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(asked, fh)
    return out


def _run(python: str, src: str | None, path: str, call: str, seconds: float,
         queries: str, cache: str, server: bool, cold: bool) -> list[tuple[float, float]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if src is not None:
        env.update(PYTHONPATH=src, URNA_CACHE_DIR=cache)
        if cold:
            env["NUMBA_CACHE_DIR"] = scratch_dir("urna-bench-resident-numba-")
    mode = "server" if server and src is not None else "library"
    out = subprocess.run([python, "-c", _LOOP, path, call, str(seconds), queries, mode],
                         env=env, check=True, capture_output=True, text=True).stdout
    return [(float(a), float(b)) for a, b in json.loads(out)]


def main() -> None:
    """Run every side for ``--seconds``, one after another; print windows and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=None)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--window", type=float, default=2.0)
    ap.add_argument("--baseline", default=None, help="another tree's src folder")
    ap.add_argument("--server", action="store_true", help="start as urna serve / mcp do")
    ap.add_argument("--cold-kernels", action="store_true", help="an empty numba cache")
    args = ap.parse_args()
    path = args.file or build_file(scratch_dir("urna-bench-resident-"), args.docs)
    folder = scratch_dir("urna-bench-resident-q-")
    queries = _queries(path, folder)
    sides = {"reference search_hybrid": (os.path.join(REF_BIN, "python"), None, "search_hybrid"),
             "urna search_hybrid": (sys.executable, SRC, "search_hybrid"),
             "urna retrieve fused": (sys.executable, SRC, "retrieve")}
    if args.baseline:
        sides["urna search_hybrid (baseline)"] = (sys.executable, args.baseline, "search_hybrid")
        sides["urna retrieve fused (baseline)"] = (sys.executable, args.baseline, "retrieve")
    results = {name: _run(python, src, path, call, args.seconds, queries,
                          scratch_dir("urna-bench-resident-cache-"), args.server,
                          args.cold_kernels)
               for name, (python, src, call) in sides.items()}
    windows = int(args.seconds // args.window)
    print(f"{path}: one process per side, {args.seconds:.0f} s each; median ms per call by "
          f"window of its life")
    print(f"  {'side':<32}" + "".join(f"{f'{w * args.window:.0f}-{(w + 1) * args.window:.0f} s':>9}"
                                      for w in range(windows)) + "   steady   vs ref  slowest")
    tail = {name: statistics.median(d for s, d in times if s >= args.seconds * 2 / 3) * 1e3
            for name, times in results.items()}
    ref = tail["reference search_hybrid"]
    for name, times in results.items():
        cells = []
        for w in range(windows):
            sel = [d for s, d in times if w * args.window <= s < (w + 1) * args.window]
            cells.append(f"{statistics.median(sel) * 1e3:9.2f}" if sel else f"{'-':>9}")
        slowest = max(d for _, d in times) * 1e3
        print(f"  {name:<32}" + "".join(cells) + f"{tail[name]:9.2f}  {tail[name] / ref:6.2f}x"
              f"{slowest:9.0f}")


if __name__ == "__main__":
    main()
