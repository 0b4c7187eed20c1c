"""CLI verbs, process start to answer: ``urna <verb>`` (this tree) vs the wheel's ``urna search``.

Each command is a fresh process (like a user's shell or an agent's tool call), timed from
spawn to exit; the commands take turns for ``--runs`` rounds (hyperfine-like, warm page cache,
one warm-up each), so a busy machine slows them alike. Prints the median and min of every
command, its CPU time (user + sys of the process) and its ratios to the reference wheel's
``urna search FILE VECTOR -k 3``: of the medians, and the median of each round's CPU ratio.
The source tree is byte-compiled first (an installed wheel ships its bytecode;
PYTHONDONTWRITEBYTECODE would otherwise make every run recompile it).
Ours run with this run's own cache folder: after the warm-up, each call finds the verdict of
an earlier full open (``runtime.verdicts``); the ``(first open)`` rows run with
``URNA_OPEN_CACHE=0``, every pass, as a file's first open does (``validate`` always does).

    .venv/bin/python benchmarks/bench_cli.py                    # builds the 20,000-doc file
    .venv/bin/python benchmarks/bench_cli.py --file F.urna --runs 5
    .venv/bin/python benchmarks/bench_cli.py --file F.urna --baseline /tmp/old/src

Three floors run in the same rounds: ``python -c pass`` (the interpreter's start), the
interpreter importing numpy as the CLI does (one BLAS thread, no teardown), the least a verb
that scores vectors can take, and the interpreter importing every module one real ``urna
ask`` imported, in its order, then exiting: what that verb pays before it reads the file.
``urna stats`` also runs beside the wheel's own ``urna stats`` (the one other verb both
command lines have that this file can compare).

``--baseline SRC`` adds every ``urna`` command run from another source tree (e.g. ``git
archive`` of an earlier commit), labelled ``(baseline)``, taking turns with the rest, and
prints each command's median CPU ratio to its baseline twin: a before/after under one load.
``--warm`` adds each verb answered by the warm server (``URNA_DAEMON=1``, ``urna.cli.warm``),
started by the warm-up and stopped at the end, labelled ``(warm)``.
``--layer`` times the command line alone instead: a fresh process imports every urna module
the verb uses outside ``urna.cli`` (recorded from one real call), then the CPU time of
importing ``urna.cli`` and parsing the verb's arguments is the figure (this tree and, with
``--baseline``, the other one, alternating; a baseline from before #20 parses with click).

The default file: 20,000 Zipf-text documents embedded with potion-base-8M (256-d) and built
with preset ``hybrid`` (HNSW + BM25) by this tree's writer, whose bytes are the wheel's
(``--wheel-build``: by the wheel itself), cached in ``--dir``. ``ask`` and
``retrieve`` embed their question with the file's model (potion, as the file says).
``--question`` may be given several times: round ``r`` asks the ``r``-th question (cycling),
the same one for every command of that round, so a median spans real questions of different
lengths, not the one that happens to be cheapest.

    .venv/bin/python benchmarks/bench_cli.py --file F.urna --only ask,retrieve,search \
        --question "how do I list files sorted by size" --question "find text in files"
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from scratch import scratch_dir  # this folder

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
REF_BIN = "/work/refvenv/bin"
QUESTION = "w12x w7x w300x"
ASKED = "\0question"  # stands in the argv of ask and retrieve for the round's question

_BUILD = """
import json, sys
import numpy as np
import urna
vecs = np.load(sys.argv[2])
meta = json.load(open(sys.argv[3]))
chunks = [{"canonical_text": d, "source_uri": f"docs/doc{i % 500}.txt", "byte_start": i,
           "byte_end": i + len(d), "embedding": vecs[i].tolist()}
          for i, d in enumerate(meta["docs"])]
urna.build(sys.argv[1], "minishlab/potion-base-8M/v1", 256, "bench/1", meta["model_hash"],
           chunks, preset="hybrid", hnsw_ef_construction=100, reproducible=True)
"""


def build_file(folder: str, n_docs: int, by_wheel: bool = False) -> str:
    """The potion-embedded hybrid file, built once by this tree's writer (the wheel's bytes:
    ``tests/test_build.py`` holds them equal; ~20 s) or, with ``by_wheel``, by the reference
    wheel itself (its single-threaded HNSW build takes ~15 min for 20,000 rows here)."""
    path = os.path.join(folder, f"hybrid-{n_docs}-potion.urna")
    if os.path.exists(path):
        return path
    sys.path.insert(0, SRC)
    sys.path.insert(0, HERE)
    import numpy as np
    from bench_bm25 import make_corpus

    from urna.forge.embed import PotionEmbedder

    docs, _ = make_corpus(n_docs, 30_000, 0)
    embedder = PotionEmbedder()
    vecs_path = os.path.join(folder, f"potion-{n_docs}.npy")
    meta_path = os.path.join(folder, f"potion-{n_docs}.json")
    np.save(vecs_path, np.asarray(embedder.embed(docs), dtype=np.float32))
    with open(meta_path, "w", encoding="utf-8") as fh:
        json.dump({"docs": docs, "model_hash": embedder.model_hash()}, fh)
    python = os.path.join(REF_BIN, "python") if by_wheel else sys.executable
    env = None if by_wheel else dict(os.environ, PYTHONPATH=SRC)
    subprocess.run([python, "-c", _BUILD, path, vecs_path, meta_path], check=True, env=env)
    return path


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


_NUMPY_FLOOR = ("import os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); "
                "import numpy; os._exit(0)")

# Records every module one real call imports, in the order it imported them (argv: the verb's).
_RECORD_IMPORTS = """
import json, os, sys
exit_now = os._exit
def record(code):
    sys.stderr.write("\\0" + json.dumps([m for m in sys.modules if not m.startswith("__")]))
    sys.stderr.flush()
    exit_now(code)
os._exit = record
import urna.cli
sys.argv = ["urna", *sys.argv[1:]]
urna.cli.console()
"""

# Imports the recorded modules in that order, then exits as the CLI does: what a verb costs
# before it does any work. A module that fails to import alone is skipped, and so is one under
# a package that was never imported (a module loaded by its path, as libzstd's cffi extension
# is without the zstandard package: the urna module that loads it is in the list too).
_IMPORTS_FLOOR = """
import importlib, json, os, sys
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
names = json.loads(sys.argv[1])
recorded = set(names)
for name in names:
    parts = name.split(".")
    if any(".".join(parts[:i]) not in recorded for i in range(1, len(parts))):
        continue
    try:
        importlib.import_module(name)
    except Exception:
        pass
os._exit(0)
"""


def imports_floor(argv: list[str], env: dict) -> list[str]:
    """The floor command of ``argv`` (an ``urna`` verb): a fresh interpreter importing every
    module one real call of it imports, and nothing else."""
    verb_args = argv[argv.index("-c") + 2:]
    got = subprocess.run([sys.executable, "-c", _RECORD_IMPORTS, *verb_args], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    modules = json.loads(got.stderr.rsplit("\0", 1)[1])
    return [sys.executable, "-c", _IMPORTS_FLOOR, json.dumps(modules)]


def run_once(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds from spawn to exit of one command (output discarded; must succeed)."""
    t0, c0 = time.perf_counter(), _children_cpu()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t0, _children_cpu() - c0


def commands(path: str, baseline: str | None = None, question: str = QUESTION,
             warm: bool = False) -> dict[str, tuple[list[str], dict]]:
    """Every timed command: name -> (argv, environment); ``baseline`` adds each ``urna`` one
    run from that source tree, named ``<name> (baseline)``; ``question`` is what ``ask`` and
    ``retrieve`` ask; ``warm`` adds each verb answered by the warm server, ``<name> (warm)``."""
    sys.path.insert(0, SRC)
    import urna

    with urna.open(path) as f:
        dim = f.embedding_dim
        hit = f.search(_vector(path, dim), 1)[0]
    vector = json.dumps(_vector(path, dim).tolist())
    ours_env = dict(os.environ, PYTHONPATH=SRC,
                    URNA_CACHE_DIR=scratch_dir("urna-bench-cache-"))
    ref_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # What the installed `urna` script runs (``console``: no interpreter teardown after a
    # one-request verb); a tree from before it had only ``main``.
    ours = [sys.executable, "-c", "import sys, urna.cli as c; "
            "c.console() if hasattr(c, 'console') else sys.exit(c.main())"]
    timed = {
        "reference search": ([os.path.join(REF_BIN, "urna"), "search", path, vector, "-k", "3"],
                             ref_env),
        "urna search": (ours + ["search", path, vector, "-k", "3"], ours_env),
        "urna search (first open)": (ours + ["search", path, vector, "-k", "3"],
                                     {**ours_env, "URNA_OPEN_CACHE": "0"}),
        "urna ask": (ours + ["ask", path, question], ours_env),
        "urna retrieve": (ours + ["retrieve", path, question], ours_env),
        "urna cite": (ours + ["cite", path, hit.citation_id], ours_env),
        "urna cite (first open)": (ours + ["cite", path, hit.citation_id],
                                   {**ours_env, "URNA_OPEN_CACHE": "0"}),
        "urna inspect": (ours + ["inspect", path], ours_env),
        "urna inspect (first open)": (ours + ["inspect", path],
                                      {**ours_env, "URNA_OPEN_CACHE": "0"}),
        "urna validate": (ours + ["validate", path], ours_env),
        "urna stats": (ours + ["stats", path], ours_env),
        "reference stats": ([os.path.join(REF_BIN, "urna"), "stats", path], ref_env),
        # The floors of a call, in the same rounds: the interpreter's start alone, and with
        # numpy imported as a verb that scores vectors imports it (one BLAS thread, the exit
        # without teardown), so no such verb can take less.
        "floor: python": ([sys.executable, "-c", "pass"], ours_env),
        "floor: python + numpy": ([sys.executable, "-c", _NUMPY_FLOOR], ours_env),
    }
    # ... and every module `urna ask` imports (numpy, the embedder, the index readers), the
    # least that verb can take in one process before it reads a byte of the file
    ask_argv = timed["urna ask"][0]
    timed["floor: imports of urna ask"] = (imports_floor(asking(ask_argv, QUESTION), ours_env),
                                           ours_env)
    if warm:
        warm_env = {**ours_env, "URNA_DAEMON": "1", "TMPDIR": scratch_dir("urna-bench-warm-")}
        for name, (argv, env) in list(timed.items()):
            if name.startswith("urna ") and "URNA_OPEN_CACHE" not in env:
                timed[f"{name} (warm)"] = (argv, {**env, **warm_env})
    if baseline is None:
        return timed
    compileall.compile_dir(baseline, quiet=1)
    base_cache = scratch_dir("urna-bench-cache-baseline-")
    for name, (argv, env) in list(timed.items()):
        if name.startswith("urna "):
            timed[f"{name} (baseline)"] = (argv, {**env, "PYTHONPATH": baseline,
                                                  "URNA_CACHE_DIR": base_cache})
    return timed


_LAYER = """
import importlib, json, sys, time
verb, args, preload = sys.argv[1], sys.argv[2:], json.loads(sys.stdin.read())
if preload is None:  # record: the urna modules a real call uses outside the CLI
    from urna.cli import main
    try:
        main([verb, *args])
    except SystemExit:
        pass
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("urna")
                            and not m.startswith("urna.cli"))))
    raise SystemExit(0)
for name in preload:
    importlib.import_module(name)
t0 = time.process_time()
import urna.cli
if hasattr(urna.cli, "load_command"):
    urna.cli.load_command(verb).parse(args, "urna " + verb, [])
else:  # a tree from before #20: click
    urna.cli.cli.commands[verb].make_context(verb, list(args))
print((time.process_time() - t0) * 1e3)
"""


def layer(path: str, verbs: list[str], trees: dict[str, str], runs: int) -> None:
    """Print the median CPU ms of the command line alone (import + parse) per verb and tree."""
    cite = None
    for verb in verbs:
        args = [path]
        if verb == "cite":
            if cite is None:
                sys.path.insert(0, SRC)
                import urna

                with urna.open(path) as f:
                    cite = f.search(_vector(path, f.embedding_dim), 1)[0].citation_id
            args.append(cite)
        elif verb.startswith("search"):
            args.append(json.dumps([0.0] * 4))  # parsed, never searched
        elif verb in ("ask", "retrieve"):
            args.append("how do I list files sorted by size")  # their one required argument
        preload = {}
        for name, src in trees.items():
            env = dict(os.environ, PYTHONPATH=src)
            out = subprocess.run([sys.executable, "-c", _LAYER, verb, *args], input="null",
                                 env=env, capture_output=True, text=True, check=True).stdout
            preload[name] = out.strip().splitlines()[-1]
        got: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(runs):
            for name, src in trees.items():
                env = dict(os.environ, PYTHONPATH=src)
                out = subprocess.run([sys.executable, "-c", _LAYER, verb, *args],
                                     input=preload[name], env=env, capture_output=True,
                                     text=True, check=True).stdout
                got[name].append(float(out.strip().splitlines()[-1]))
        print(f"urna {verb}: the command line alone (import urna.cli + parse), CPU ms, "
              f"{runs} runs: " + ", ".join(f"{name} {statistics.median(ms):.1f} "
                                             f"(min {min(ms):.1f})" for name, ms in got.items()))


def asking(argv: list[str], question: str) -> list[str]:
    """``argv`` with the round's question in place of :data:`ASKED` (other argvs unchanged)."""
    return [question if a == ASKED else a for a in argv]


def _vector(path: str, dim: int):
    import numpy as np

    v = np.random.default_rng(5).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def main() -> None:
    """Build (or reuse) the file, alternate the commands, print medians and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=None, help="an existing .urna file with a potion model")
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--wheel-build", action="store_true",
                    help="build the default file with the reference wheel (slow) instead of "
                         "this tree's byte-identical writer")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "urna-bench"))
    ap.add_argument("--only", default=None, help="comma-separated verbs (e.g. search,cite)")
    ap.add_argument("--question", action="append", default=None,
                    help="what ask and retrieve ask (repeatable: round r asks the r-th, "
                         "cycling; the default suits the built Zipf file)")
    ap.add_argument("--baseline", default=None,
                    help="another tree's src folder: its commands alternate with this one's")
    ap.add_argument("--warm", action="store_true",
                    help="also time each verb answered by the warm server (URNA_DAEMON=1)")
    ap.add_argument("--layer", action="store_true",
                    help="time the command line alone (import + parse) per verb of --only")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path = args.file or build_file(args.dir, args.docs, args.wheel_build)
    if args.layer:
        trees = {"this tree": SRC} | ({"baseline": args.baseline} if args.baseline else {})
        for src in trees.values():
            compileall.compile_dir(src, quiet=1)
        layer(path, (args.only or "inspect").split(","), trees, args.runs)
        return
    questions = args.question or [QUESTION]
    cmds = commands(path, args.baseline, ASKED, args.warm)
    if args.only:
        verbs = args.only.split(",")
        keep = {"reference search"} | {f"{who} {v}" for v in verbs for who in ("urna", "reference")}
        cmds = {k: v for k, v in cmds.items()
                if k.split(" (")[0] in keep or k.startswith("floor: ")}
    compileall.compile_dir(SRC, quiet=1)
    for argv, env in cmds.values():  # warm-up: page cache, bytecode, the open verdicts
        run_once(asking(argv, questions[0]), env)
    warm = [cmds[name] for name in cmds if name.endswith("(warm)")]
    if warm:
        _warm_server(warm[0], "status")  # the first warm call started it: wait until it serves
        for argv, env in warm:
            run_once(asking(argv, questions[0]), env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    names = list(cmds)
    for r in range(args.runs):
        # Odd rounds run the commands in reverse: whichever runs right after another program
        # meets colder caches, so no command is always first.
        for name in names if r % 2 == 0 else names[::-1]:
            argv, env = cmds[name]
            times[name].append(run_once(asking(argv, questions[r % len(questions)]), env))
    ref_wall = statistics.median(t[0] for t in times["reference search"])
    ref_cpu = statistics.median(t[1] for t in times["reference search"])
    ref_rounds = times["reference search"]
    print(f"{path}: process start to answer, {args.runs} runs each (commands alternating)")
    if len(questions) > 1:
        print(f"  questions, one a round in turn: {'; '.join(questions)}")
    print(f"  {'command':38s} {'median ms':>10s} {'min ms':>8s} {'CPU ms':>8s}"
          "   vs reference search (wall, CPU; median of the rounds' CPU ratios)")
    for name, ts in times.items():
        wall = statistics.median(t[0] for t in ts)
        cpu = statistics.median(t[1] for t in ts)
        # Each round's ratio to the reference's call of the same round: a load that comes and
        # goes during the run slows both sides of one ratio alike.
        rounds = statistics.median(t[1] / r[1] for t, r in zip(ts, ref_rounds, strict=True))
        print(f"  {name:38s} {wall * 1e3:10.0f} {min(t[0] for t in ts) * 1e3:8.0f} "
              f"{cpu * 1e3:8.0f}   {wall / ref_wall:5.2f}x {cpu / ref_cpu:5.2f}x {rounds:5.2f}x")
    twins = [(name, f"{name} (baseline)") for name in times if f"{name} (baseline)" in times]
    if twins:
        print("  this tree / baseline (median of the rounds' CPU ratios; wall medians):")
    for name, twin in twins:
        cpu_ratio = statistics.median(
            t[1] / b[1] for t, b in zip(times[name], times[twin], strict=True))
        wall_ratio = (statistics.median(t[0] for t in times[name])
                      / statistics.median(t[0] for t in times[twin]))
        print(f"  {name:38s} {cpu_ratio:5.2f}x CPU {wall_ratio:5.2f}x wall")
    print(f"  load average at the end: {os.getloadavg()[0]:.2f}")
    if warm:
        print("  (warm) rows: the CPU column is the caller's alone; the server's is not counted")
        _warm_server(warm[0], "stop")


def _warm_server(command: tuple[list[str], dict], action: str) -> None:
    """``urna daemon status`` until the warm server answers, or ``urna daemon stop``."""
    argv, env = command
    base = argv[:argv.index("-c") + 2]  # the interpreter and the console call
    deadline = time.monotonic() + 120
    while True:
        run = subprocess.run(base + ["daemon", action, "--json"], env=env, capture_output=True,
                             text=True, check=True)
        if action == "stop" or json.loads(run.stdout) is not None:
            return
        if time.monotonic() > deadline:
            raise SystemExit("the warm server did not come up")
        time.sleep(0.2)


if __name__ == "__main__":
    main()
