"""Open time side by side: ``urna.open`` (this tree) vs the reference wheel 0.5.1.

Each side runs in its own subprocess (the reference with ``/work/refvenv/bin/python``) that
opens the same file ``--opens`` times (warm page cache, every check) and prints the wall and
CPU times; the sides alternate for ``--rounds`` rounds, so a busy machine slows them alike.
Prints the median open of each side and the ratio ours / reference. Two sides of ours:
``urna repeat`` (a verdict of an earlier full open is kept, ``runtime.verdicts``: one hash
pass proves the bytes unchanged) and ``urna first`` (``URNA_OPEN_CACHE=0``: every pass, as
the first open of a file). ``--baseline-src DIR`` adds another checkout's ``src`` (e.g.
``/work/main/src``), both sides, to show a change's own effect.

    .venv/bin/python benchmarks/bench_open.py                   # 100,000 x 384 float32
    .venv/bin/python benchmarks/bench_open.py --n 20000 --rounds 3

The file is built once with ``urna.build`` (clustered rows, as bench_exact.py) and cached in
``--dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
REF_PYTHON = "/work/refvenv/bin/python"

_TIMER = """
import json, sys, time
import urna
path, opens = sys.argv[1], int(sys.argv[2])
urna.open(path)  # warm: imports, page cache
out = []
for _ in range(opens):
    t0, c0 = time.perf_counter(), time.process_time()
    f = urna.open(path)
    out.append([(time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3])
    del f
print(json.dumps(out))
"""


def timed_opens(python: str, src: str | None, path: str, opens: int,
                extra_env: dict[str, str]) -> list[list[float]]:
    """``[wall ms, CPU ms]`` per ``urna.open(path)`` in a fresh ``python`` process."""
    env = dict(os.environ, **extra_env)
    env.pop("PYTHONPATH", None)
    if src is not None:
        env["PYTHONPATH"] = src
    out = subprocess.run([python, "-c", _TIMER, path, str(opens)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    """Build (or reuse) the file, alternate the sides, print medians and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--opens", type=int, default=5, help="opens per round and side")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "urna-bench"))
    ap.add_argument("--baseline-src", default=None)
    args = ap.parse_args()
    sys.path.insert(0, SRC)
    sys.path.insert(0, HERE)
    from bench_exact import build_file, clustered

    os.makedirs(args.dir, exist_ok=True)
    rows, _ = clustered(args.n, args.dim, 1, min(2000, args.n))
    path = build_file(args.dir, rows, args.dtype)
    del rows
    cache = tempfile.mkdtemp(prefix="urna-bench-cache-")  # this run's own verdicts
    ours = {"URNA_CACHE_DIR": cache}
    sides = {"urna repeat": (sys.executable, SRC, ours),
             "urna first": (sys.executable, SRC, {**ours, "URNA_OPEN_CACHE": "0"}),
             "reference": (REF_PYTHON, None, {})}
    if args.baseline_src:
        theirs = {"URNA_CACHE_DIR": tempfile.mkdtemp(prefix="urna-bench-cache-")}  # its own
        sides["baseline repeat"] = (sys.executable, args.baseline_src, theirs)
        sides["baseline first"] = (sys.executable, args.baseline_src,
                                   {**theirs, "URNA_OPEN_CACHE": "0"})
    times: dict[str, list[list[float]]] = {name: [] for name in sides}
    for r in range(args.rounds):
        for name, (python, src, env) in sides.items():
            times[name] += timed_opens(python, src, path, args.opens, env)
        print(f"round {r + 1}: " + "  ".join(
            f"{name} {statistics.median(t[0] for t in ts[-args.opens:]):.0f} ms"
            for name, ts in times.items()))
    size_mb = os.path.getsize(path) / 1e6
    print(f"\nopen of {path} ({size_mb:.0f} MB), median of {args.rounds * args.opens} opens:")
    ref = [statistics.median(t[i] for t in times["reference"]) for i in (0, 1)]
    for name, ts in times.items():
        wall, cpu = (statistics.median(t[i] for t in ts) for i in (0, 1))
        print(f"  {name:15s} wall {wall:7.1f} ms ({wall / ref[0]:.2f}x reference)   "
              f"CPU {cpu:7.1f} ms ({cpu / ref[1]:.2f}x)")


if __name__ == "__main__":
    main()
