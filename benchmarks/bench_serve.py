"""Load on ``urna serve`` over loopback: requests/s and p99 for ``search`` and ``ask``.

Two corpora are served by one ``urna serve`` (one process unless ``--workers`` is compared):

* ``quickstart``: the twelve quickstart paragraphs built from ``examples/quickstart/corpus.toml``
  (hybrid preset: HNSW + BM25 + graph);
* ``big``: 100,000 chunks (``--n``) of synthetic sentences made from the quickstart's words,
  embedded with the vendored potion model and written with ``urna.build`` (preset exact,
  float32).

Two request kinds per corpus, each driven for ``--seconds`` by ``--connections`` keep-alive
connections:

* ``search``: ``POST /api/corpora/<name>/search`` with a 256-d query vector, k 10, exact;
* ``ask``: ``POST /api/corpora/<name>/retrieve`` with a question text, k 10 (the server embeds
  it with the file's model, applies the model_hash gate and routes like ``urna retrieve``).

The load generator is ``wrk`` (C, ``apt-get install wrk``) when it is on PATH, bounded by
``--seconds``; otherwise a Python thread pool with one httpx client per connection, bounded by
``--seconds`` and ``--max-requests``. A warm-up of ``--warmup`` requests per kind comes first
(numba compiles on first use).

    .venv/bin/python benchmarks/bench_serve.py                      # 100,000 chunks, 10 s each
    .venv/bin/python benchmarks/bench_serve.py --n 20000 --seconds 5
    .venv/bin/python benchmarks/bench_serve.py --seconds 6 --compare 2  # before / after

``--compare ROUNDS`` alternates, in one run, a server as it was before shared scans
(``--threads 1 --batch-max 1``: one worker thread, every request scanned alone, the handlers'
old path) and one with the defaults (a thread per core, concurrent exact queries on the big
file sharing one scan, ``urna.serve.batching``), so both see the same machine load.
``--file F`` serves another potion-embedded file beside them (bench_cli's 20,000-document
hybrid file, say: its ``ask`` takes the hybrid route, HNSW + BM25 + the fused rank).
``--compare-workers ROUNDS`` alternates the defaults (one process) and ``--workers`` with a
process per core (each with its own socket on the port). ``--serve-option`` passes other
``urna serve`` options. Figures: README "Performance",
paragraph "Serving".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

import urna
from urna.forge.embed import potion_embedder

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from helpers.ports import free_port, listening_on  # noqa: E402  (the tests' port helpers)

URNA = [sys.executable, "-c", "from urna.cli import main; main()"]
QUESTIONS = ["can I use this offline", "how do citations work", "what does forge do",
             "is the file format frozen", "how are scores computed"]


def build_quickstart(work: Path) -> Path:
    """The quickstart built by the forge (cached in ``work``)."""
    out = work / "qs" / "out" / "quickstart.urna"
    if not out.exists():
        subprocess.run([*URNA, "build", "--spec", "examples/quickstart/corpus.toml",
                        "--out-dir", str(out.parent), "--cache-dir", str(work / "qs" / "cache")],
                       cwd=ROOT, check=True, capture_output=True)
    return out


def build_big(work: Path, n: int) -> Path:
    """``n`` synthetic sentences over the quickstart vocabulary, potion-embedded (cached)."""
    out = work / f"big-{n}.urna"
    if out.exists():
        return out
    docs = (ROOT / "examples/quickstart/docs.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in docs]
    words = sorted({w for r in rows for w in re.findall(r"[a-z][a-z'-]+", r["text"])})
    rng = random.Random(7)
    texts = [f"{i}: " + " ".join(rng.choices(words, k=rng.randint(12, 40))) for i in range(n)]
    emb = potion_embedder()
    cache = work / f"big-{n}.npy"
    if cache.exists():
        vecs = np.load(cache)
    else:
        t0 = time.perf_counter()
        vecs = emb.embed(texts)
        np.save(cache, vecs)
        print(f"  embedded {n} texts in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    chunks = [{"canonical_text": t, "source_uri": f"synthetic/{i // 1000}.txt",
               "byte_start": 0, "byte_end": len(t.encode()), "embedding": vecs[i]}
              for i, t in enumerate(texts)]
    t0 = time.perf_counter()
    urna.build(str(out), emb.embedding_model, emb.embedding_dim, "bench-serve/1",
               emb.model_hash(), chunks, preset="exact", reproducible=True)
    print(f"  built {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def start_server(files: list[Path], options: list[str]) -> tuple[subprocess.Popen, str]:
    """``urna serve FILES OPTIONS`` on a free loopback port; returns once it answers."""
    port = free_port()
    proc = subprocess.Popen([*URNA, "serve", *map(str, files), "--port", str(port), *options],
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    processes = int(options[options.index("--workers") + 1]) if "--workers" in options else 1
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/api/corpora", timeout=2)
            # every process listening: the load's connections are spread over all of them
            if processes == 1 or listening_on(port) == processes:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("urna serve did not start")


# ------------------------------------------------------------------------ load generators


_WRK_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = io.open("{body}"):read("*a")
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %.3f %.3f %d %d\\n", summary.requests,
    summary.duration, latency:percentile(50), latency:percentile(99),
    summary.errors.status, summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout))
end
"""


def run_wrk(url: str, body: dict, seconds: float, connections: int, tmp: Path) -> dict:
    """wrk for ``seconds``: requests/s, p50, p99 (ms) and error counts."""
    bfile, script = tmp / "body.json", tmp / "post.lua"
    bfile.write_text(json.dumps(body))
    script.write_text(_WRK_LUA.replace("{body}", str(bfile)))
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{int(seconds)}s",
                          "--timeout", "10s", "-s", str(script), url],
                         capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT"))
    n, dur_us, p50, p99, bad_status, errors = line.split()[1:]
    return {"requests": int(n), "rps": int(n) / (int(dur_us) / 1e6), "p50_ms": float(p50) / 1e3,
            "p99_ms": float(p99) / 1e3, "non_2xx": int(bad_status), "errors": int(errors),
            "generator": "wrk"}


def run_python(url: str, body: dict, seconds: float, connections: int, max_requests: int) -> dict:
    """Threads with one keep-alive httpx client each, bounded by time and count."""
    lat: list[float] = []
    bad = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker() -> None:
        with httpx.Client(timeout=10) as c:
            while time.monotonic() < stop:
                with lock:
                    if len(lat) >= max_requests:
                        return
                t0 = time.perf_counter()
                r = c.post(url, json=body)
                dt = time.perf_counter() - t0
                with lock:
                    lat.append(dt)
                    bad[0] += r.status_code != 200

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    a = np.array(lat) * 1e3
    return {"requests": len(lat), "rps": len(lat) / wall, "p50_ms": float(np.percentile(a, 50)),
            "p99_ms": float(np.percentile(a, 99)), "non_2xx": bad[0], "errors": 0,
            "generator": "python"}


VARIANTS = {"before": ["--threads", "1", "--batch-max", "1"], "after": []}
"""``--compare``: the old serving (one thread, no shared scans) against the defaults."""
CORES = os.cpu_count() or 1
WORKER_VARIANTS = {"1 process": [], f"{CORES} processes": ["--workers", str(CORES)]}
"""``--compare-workers``: the defaults against one process per core (``--workers``)."""


def drive(files: list[Path], options: list[str], args: argparse.Namespace, gen: str,
          qvec: list[float], work: Path) -> list[dict]:
    """One server with ``options``: every corpus and request kind for ``--seconds`` each."""
    proc, url = start_server(files, options)
    rows = []
    try:
        with httpx.Client(timeout=60) as c:
            for f in files:
                name = f.stem
                for kind, path, body in (
                        ("search", "search", {"vector": qvec, "k": 10, "mode": "exact"}),
                        ("ask", "retrieve", {"text": QUESTIONS[0], "k": 10})):
                    target = f"{url}/api/corpora/{name}/{path}"
                    for i in range(args.warmup):
                        warm = body if kind == "search" else {**body, "text": QUESTIONS[i % 5]}
                        assert c.post(target, json=warm).status_code == 200
                    if gen == "wrk":
                        res = run_wrk(target, body, args.seconds, args.connections, work)
                    else:
                        res = run_python(target, body, args.seconds, args.connections,
                                         args.max_requests)
                    n = c.get(f"{url}/api/corpora").json()
                    size = next(x["n_embeddings"] for x in n["corpora"] if x["name"] == name)
                    rows.append({"corpus": name, "chunks": size, "kind": kind, **res})
                    print(json.dumps(rows[-1]), file=sys.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return rows


def main() -> None:
    """Build (or reuse) the corpora, serve them, drive each kind, print a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="chunks in the big corpus")
    ap.add_argument("--seconds", type=float, default=10.0, help="duration of each run")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--max-requests", type=int, default=200_000, help="Python generator cap")
    ap.add_argument("--serve-option", action="append", default=[], metavar="OPT",
                    help="extra urna serve option (repeat: --serve-option=--threads "
                    "--serve-option=1)")
    ap.add_argument("--compare", type=int, default=0, metavar="ROUNDS",
                    help="alternate the old serving (--threads 1 --batch-max 1) and the "
                    "defaults for ROUNDS rounds each, in this one run")
    ap.add_argument("--compare-workers", type=int, default=0, metavar="ROUNDS",
                    help="alternate one process (the defaults) and --workers <cores> for "
                    "ROUNDS rounds each, in this one run")
    ap.add_argument("--file", action="append", default=[], metavar="F",
                    help="also serve F, a potion-embedded .urna (repeat), e.g. bench_cli's "
                    "hybrid file: its ask takes the hybrid route")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "urna-bench-serve"))
    ap.add_argument("--generator", choices=["auto", "wrk", "python"], default="auto")
    args = ap.parse_args()
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    files = [build_quickstart(work), build_big(work, args.n), *map(Path, args.file)]
    gen = args.generator
    if gen == "auto":
        gen = "wrk" if shutil.which("wrk") else "python"
    qvec = potion_embedder().embed([QUESTIONS[0]])[0].tolist()
    if args.compare:
        runs = [(v, VARIANTS[v]) for _ in range(args.compare) for v in VARIANTS]
    elif args.compare_workers:
        runs = [(v, WORKER_VARIANTS[v]) for _ in range(args.compare_workers)
                for v in WORKER_VARIANTS]
    else:
        runs = [("serve", args.serve_option)]
    rows = []
    for label, options in runs:
        rows += [{"variant": label, **r} for r in drive(files, options, args, gen, qvec, work)]
    load = os.getloadavg()[0]
    print(f"\n{args.connections} connections, {args.seconds:g} s per row, "
          f"generator {gen}, {os.cpu_count()} CPUs, load average {load:.1f} at the end\n")
    print("| variant | corpus | chunks | request | requests/s | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['variant']} | {r['corpus']} | {r['chunks']:,} | {r['kind']} | "
              f"{r['rps']:,.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
              f"{r['non_2xx'] + r['errors']} |")


if __name__ == "__main__":
    main()
