"""Parallel warm calls: an agent's tool calls made at once, answered by one warm server.

``--calls`` ``urna ask`` calls start together (each a fresh process, ``URNA_DAEMON=1``); the
figure is the wall time until the last one exits. Three sides take turns round by round: the
warm server with one process (``URNA_DAEMON_WORKERS=1``, each caller waits for the one
before), with ``--workers`` processes (the default two), and the reference wheel's ``urna
search`` run the same number of times at once (cold: the wheel has no server). Each server
is warmed first (every process answers a few calls; the wheel runs once) and stopped at
the end.

    .venv/bin/python benchmarks/bench_warm_parallel.py --calls 4 --rounds 9
    .venv/bin/python benchmarks/bench_warm_parallel.py --file F.urna --calls 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from scratch import scratch_dir  # this folder

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
REF_URNA = "/work/refvenv/bin/urna"
OURS = [sys.executable, "-c", "import urna.cli as c; c.console()"]


def _env(workers: int, cache: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=SRC, URNA_DAEMON="1", URNA_CACHE_DIR=cache,
                URNA_DAEMON_WORKERS=str(workers), TMPDIR=scratch_dir(f"urna-par-{workers}-"))


def _at_once(argvs: list[list[str]], env: dict[str, str] | None) -> float:
    """Seconds from starting every command to the last one's exit (each must succeed)."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(a, env=env, stdout=subprocess.DEVNULL) for a in argvs]
    if any(p.wait() != 0 for p in procs):
        raise RuntimeError("a call failed")
    return time.perf_counter() - t0


def main() -> None:
    """Time ``--calls`` parallel calls per side for ``--rounds`` rounds; print the medians."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=None, help="a .urna file with a potion model (default: "
                    "bench_cli.py's 20,000-document hybrid file, built once)")
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.file is None:
        from bench_cli import build_file  # this folder

        folder = os.path.join(tempfile.gettempdir(), "urna-bench")
        os.makedirs(folder, exist_ok=True)
        args.file = build_file(folder, 20_000)
    cache = scratch_dir("urna-par-cache-")
    sides = {"warm, 1 process": _env(1, cache),
             f"warm, {args.workers} processes": _env(args.workers, cache)}
    with open(os.devnull, "w") as quiet:
        vector = subprocess.run(
            [sys.executable, "-c", "import sys, json, urna; f = urna.open(sys.argv[1]); "
             "print(json.dumps([0.1] * f.embedding_dim))", args.file],
            env=dict(os.environ, PYTHONPATH=SRC), capture_output=True, text=True,
            check=True).stdout.strip()
        for env in sides.values():  # start each server, then let every process answer
            subprocess.run([*OURS, "ask", args.file, "warm up"], env=env, stdout=quiet,
                           check=True)
            time.sleep(2)
            for _ in range(4):
                _at_once([[*OURS, "ask", args.file, "warm up"]] * args.workers, env)
    ref = [[REF_URNA, "search", args.file, vector, "-k", "3"]] * args.calls
    _at_once(ref, None)  # its first start compiles and loads what the later ones find ready
    times: dict[str, list[float]] = {name: [] for name in [*sides, "reference search (cold)"]}
    try:
        for r in range(args.rounds):
            for name, env in sides.items():
                calls = [[*OURS, "ask", args.file, f"w{r}x w{i}x"] for i in range(args.calls)]
                times[name].append(_at_once(calls, env))
            times["reference search (cold)"].append(_at_once(ref, None))
    finally:
        for env in sides.values():
            subprocess.run([*OURS, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL)
    ref_median = statistics.median(times["reference search (cold)"])
    print(f"{args.calls} calls at once, {args.rounds} rounds, wall time to the last exit:")
    for name, walls in times.items():
        median = statistics.median(walls)
        print(f"  {name:<26} median {1e3 * median:6.0f} ms  min {1e3 * min(walls):6.0f} ms"
              f"  {median / ref_median:5.2f}x the reference")
    print(f"  load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
