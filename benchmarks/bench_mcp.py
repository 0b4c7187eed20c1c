"""An agent's tool call: ``urna mcp``'s ``search`` tool against the command-line ``urna ask``.

An agent asks a corpus through a tool. Three ways are timed on the same file and question,
from the moment the call is made to its answer:

* ``mcp search``: one ``search`` tool call to a running ``urna mcp FILE`` over stdio, made
  by the MCP SDK's own client (what an agent host does), after ``--warmup`` calls;
* ``urna ask (warm)``: ``urna ask FILE QUESTION -k K`` answered by the warm server
  (``URNA_DAEMON=1``), process start to exit;
* ``urna ask``: the same, cold (a fresh process, the file's verdict kept);

and, as the floor of every tool call in the same rounds, the reference wheel's ``urna search
FILE VECTOR -k 3`` (a fresh process; the wheel has no server). The commands take turns, one
call each per round, for ``--rounds`` rounds; medians and each one's ratio to the wheel's.

    .venv/bin/python benchmarks/bench_mcp.py                 # the bench_cli file, 40 rounds
    .venv/bin/python benchmarks/bench_mcp.py --file F.urna --question "how do I ..."
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

from bench_cli import QUESTION, REF_BIN, SRC, _vector, _warm_server, build_file, run_once
from scratch import scratch_dir  # this folder


async def _rounds(path: str, question: str, k: int, rounds: int, warmup: int) -> dict:
    from mcp import Client, StdioServerParameters

    sys.path.insert(0, SRC)
    import urna

    with urna.open(path) as f:
        vector = json.dumps(_vector(path, f.embedding_dim).tolist())
    env = dict(os.environ, PYTHONPATH=SRC, URNA_CACHE_DIR=scratch_dir("urna-bench-mcp-"))
    warm_env = {**env, "URNA_DAEMON": "1", "TMPDIR": scratch_dir("urna-bench-mcp-warm-")}
    ref_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ours = [sys.executable, "-c", "import urna.cli as c; c.console()"]
    ask = ours + ["ask", path, question, "-k", str(k)]
    cli = {"reference search": ([os.path.join(REF_BIN, "urna"), "search", path, vector, "-k",
                                 "3"], ref_env),
           "urna ask": (ask, env), "urna ask (warm)": (ask, warm_env)}
    times: dict[str, list[float]] = {name: [] for name in ["mcp search", *cli]}
    params = StdioServerParameters(command=sys.executable,
                                   args=["-c", "from urna.cli import main; main()", "mcp", path],
                                   env=env)
    async with Client(params) as client:
        call = {"text": question, "k": k}
        for _ in range(warmup):
            await client.call_tool("search", call)
        for argv, e in cli.values():  # the warm server starts; every verdict is kept
            run_once(argv, e)
        for _ in range(rounds):
            t0 = time.perf_counter()
            got = await client.call_tool("search", call)
            times["mcp search"].append(time.perf_counter() - t0)
            assert not got.is_error, got.content
            for name, (argv, e) in cli.items():
                times[name].append(run_once(argv, e)[0])
    _warm_server((ask, warm_env), "stop")
    return times


def main() -> None:
    """Build (or reuse) the file, take turns, print medians and ratios to the wheel's call."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=None, help="a .urna file (default: bench_cli's)")
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "urna-bench"))
    ap.add_argument("--question", default=QUESTION)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path = args.file or build_file(args.dir, args.docs)
    times = asyncio.run(_rounds(path, args.question, args.k, args.rounds, args.warmup))
    ref = statistics.median(times["reference search"])
    print(f"{path}: call to answer, {args.rounds} rounds (commands taking turns), "
          f"question {args.question!r}, k {args.k}")
    print(f"  {'call':<22} {'median ms':>10} {'p90 ms':>8} {'min ms':>8}   vs reference search")
    for name, t in times.items():
        t = sorted(t)
        med = statistics.median(t)
        print(f"  {name:<22} {med * 1e3:10.1f} {t[int(0.9 * (len(t) - 1))] * 1e3:8.1f} "
              f"{t[0] * 1e3:8.1f}   {med / ref:.3f}x")
    print(f"  load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
