"""Differential queries: files the wheel builds from generated inputs, queried by both sides.

``differential_builds`` compares what the two writers make; this compares what the two readers
answer. The wheel builds each generated case of ``differential_builds.make_case`` (its own
bytes, so nothing of ours is in the files), then the same worker runs in the wheel's
interpreter and in ours over every built file: exact ``search``, ``search_ann`` at several
beams, ``search_hybrid`` with query texts drawn from the file's own words, odd scripts and
empty text, ``search_graph``, ``search_space`` and ``retrieve``, for query vectors of several
kinds (random, a stored row, its negation, a near tie, a zero vector) and several k. Each call's
answer is kept as its hits (chunk id, score bits, span, source, index type, rerank flags, text)
or the builtin exception class and message; any difference is printed with the call that
showed it. Not a test: the wheel is never a suite dependency.

    .venv/bin/python tools/differential_queries.py [--seed S] [--count N] [--keep DIR] [--scaled]
        [--compiled]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from differential_builds import WORDS, _gauss_row, _prose, make_case, run_side  # noqa: E402
from reference_wheel import BUILTIN_NAME_SOURCE, REF_PYTHON  # noqa: E402

OURS_PYTHON = str(ROOT / ".venv" / "bin" / "python")

# Runs in both interpreters: argv[1] = JSON list of {"path", "calls": [[verb, args]]}; prints
# one JSON object {path: [answer per call]}.
WORKER = r'''
import json, struct, sys
import urna

''' + BUILTIN_NAME_SOURCE + r'''
def hit(h):
    out = [h.chunk_id, struct.pack("<d", h.score).hex(), h.offset_start, h.offset_end,
           h.source_uri, h.score_type]
    for name in ("index_type", "reranked", "rerank_source", "text", "citation_id"):
        if hasattr(h, name):
            out.append(getattr(h, name))
    return out

spec = json.load(open(sys.argv[1]))
if sys.argv[2:] == ["compiled"]:  # ours only: the numba kernels from the first call on
    from urna.index import exact, hnsw
    exact._RENT.spent, hnsw._RENT.spent = exact._RENT.budget, hnsw._RENT.budget
    exact.NUMBA_MIN_VALUES = 0
results = {}
for item in spec:
    answers = []
    try:
        f = urna.open(item["path"])
    except BaseException as exc:
        results[item["path"]] = [["open", builtin_name(exc), str(exc)]]
        continue
    for verb, args in item["calls"]:
        try:
            answers.append([hit(h) for h in getattr(f, verb)(*args)])
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            answers.append(["error", builtin_name(exc), str(exc)])
    results[item["path"]] = answers
    del f
print(json.dumps(results))
'''


def scaled_case(seed: int, index: int) -> dict:
    """A larger corpus than ``make_case`` gives (1,000-3,000 clustered rows, prose texts, every
    index): the beams, heaps and candidate pools of the approximate verbs at a size where
    they prune."""
    rng = random.Random(f"scaled{seed}:{index}")
    n, dim = rng.randint(1000, 3000), rng.choice([8, 16, 32, 64])
    centres = [_gauss_row(rng, dim) for _ in range(rng.randint(2, 40))]
    rows = []
    for _ in range(n):
        c = rng.choice(centres)
        rows.append([_f32(x + rng.gauss(0, rng.choice([0.01, 0.1, 0.5]))) for x in c])
    chunks = [{"canonical_text": _prose(rng), "source_uri": f"doc{i % 97}.txt",
               "byte_start": 0, "byte_end": 1, "embedding": r} for i, r in enumerate(rows)]
    kwargs: dict = {"preset": rng.choice(["hybrid", "exact", "compressed", "tiny"]),
                    "with_hnsw": True, "with_bm25": True, "reproducible": True,
                    # zstd text costs the wheel ~0.1 s a chunk; the readers' answers do not
                    # depend on the text codec (the small cases cover it)
                    "text_encoding": "raw",
                    "with_graph": rng.random() < 0.5, "graph_top_m": rng.choice([2, 4, 8]),
                    "hnsw_m": rng.choice([4, 8, 16]),
                    "hnsw_ef_construction": rng.choice([16, 32, 64]),
                    "hnsw_seed": rng.choice([1, 42, 2**40])}
    if rng.random() < 0.5:
        kwargs["dtype"] = rng.choice(["float16", "int8"] + (["int4"] if dim % 64 == 0 else []))
    summary = {"n": n, "dim": dim, "options": sorted(kwargs), "dtype": kwargs.get("dtype"),
               "preset": kwargs["preset"]}
    return {"key": f"scaled{seed}_{index}", "blobs": {}, "summary": summary, "kwargs": kwargs,
            "args": ["demo", dim, "c/1", "sha256:" + "0" * 64, chunks]}


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def query_vectors(rng: random.Random, rows: list[list[float]], dim: int) -> list[list[float]]:
    """Query vectors of several kinds: random, a stored row, its negation, a near tie, zeros."""
    out = [[rng.gauss(0, 1) for _ in range(dim)] for _ in range(3)]
    finite = [r for r in rows if len(r) == dim and all(abs(v) < 1e30 for v in r)]
    if finite:
        row = rng.choice(finite)
        out.append(list(row))
        out.append([-v for v in row])
        out.append([_f32(v * (1 + 1e-7 * rng.random())) for v in row])
    out.append([0.0] * dim)
    out.append([1.0] + [0.0] * (dim - 1))
    # the norm's f32 edges (§3): squares that overflow (an all-zero query after division,
    # every score 0), squares that underflow (zero norm), subnormal and signed-zero parts
    out.append([3e38 * (1 if rng.random() < 0.5 else -1) for _ in range(dim)])
    out.append([1e-30 * rng.gauss(0, 1) for _ in range(dim)])
    out.append([rng.choice([1e-40, -1e-40, -0.0, 0.0, 1.0, -1.0]) for _ in range(dim)])
    return out


def query_texts(rng: random.Random, texts: list[str]) -> list[str]:
    """Query texts: words of the file's own chunks, random words, odd scripts and nothing."""
    own = [w for t in texts for w in t.split()][:5000]
    out = [" ".join(rng.choice(own) for _ in range(rng.randint(1, 4)))] if own else []
    if texts:
        out.append(rng.choice(texts)[:200])
    out += [" ".join(rng.choice(WORDS) for _ in range(3)), "", "ǅemo ΣΑΣ İstanbul ß 東京 🙂",
            "the the the"]
    return out


def calls_for(case: dict, rng: random.Random) -> list[list]:
    """The calls a built case gets (every verb; the wheel decides which ones refuse)."""
    model, dim, _chunker, model_hash, chunks = case["args"]
    rows = [c["embedding"] for c in chunks]
    texts = [c["canonical_text"] for c in chunks]
    n = len(chunks)
    ks = sorted({1, 3, 10, max(n, 1), n + 5}) if n <= 300 else [1, 10, 100]
    calls: list[list] = []
    spaces = [s["name"] for s in case["kwargs"].get("spaces") or [] if isinstance(s, dict)]
    for q in query_vectors(rng, rows, dim):
        for k in ks:
            calls.append(["search", [q, k]])
            for ef in (1, 10, 64):
                calls.append(["search_ann", [q, k, ef]])
            calls.append(["search_graph", [q, k]])
            calls.append(["search_graph", [q, k, 2, 16]])
            calls.append(["retrieve", [q, k]])
            calls.append(["retrieve", [q, k, 20, 2, 8]])
        for text in query_texts(rng, texts):
            for k in (1, 5, n + 2):
                calls.append(["search_hybrid", [q, text, k, 50]])
                calls.append(["search_hybrid", [q, text, k, 3]])
        for name in spaces[:2]:
            calls.append(["search_space", [name, q, 3]])
    return calls


def run_queries(python: str, items: list[dict], isolated: bool, compiled: bool = False) -> dict:
    """Every item's calls in one subprocess of ``python`` (``compiled``: ours on the numba
    kernels for every call, not only once their load has paid off)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(items, fh)
    cmd = [python, *(["-I"] if isolated else []), "-c", WORKER, fh.name,
           *(["compiled"] if compiled else [])]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    Path(fh.name).unlink()
    if run.returncode:
        raise RuntimeError(f"{python} failed:\n{run.stderr[-4000:]}")
    return json.loads(run.stdout)


def compare(seed: int, count: int, batch: int, keep: Path | None, scaled: bool = False,
            compiled: bool = False) -> int:
    """Build with the wheel, query with both; print differences; returns their count."""
    diffs, calls_made, files = 0, 0, 0
    causes: Counter[str] = Counter()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, count, batch):
            make = scaled_case if scaled else make_case
            cases = [make(seed, i) for i in range(start, min(start + batch, count))]
            out = Path(tmp) / "ref"
            built = run_side(REF_PYTHON, cases, out, True, True)
            items, by_path = [], {}
            for case in cases:
                if not built[case["key"]]["ok"] or built[case["key"]].get("open_error"):
                    continue
                path = str(out / f"{case['key']}.urna")
                rng = random.Random(f"q{seed}:{case['key']}")
                items.append({"path": path, "calls": calls_for(case, rng)})
                by_path[path] = case
            ref = run_queries(REF_PYTHON, items, True)
            ours = run_queries(OURS_PYTHON, items, False, compiled)
            for item in items:
                path, case = item["path"], by_path[item["path"]]
                files += 1
                a, b = ref[path], ours[path]
                calls_made += len(item["calls"])
                bad = [i for i in range(max(len(a), len(b)))
                       if i >= len(a) or i >= len(b) or a[i] != b[i]]
                if not bad:
                    continue
                diffs += 1
                i = bad[0]
                call = item["calls"][i] if i < len(item["calls"]) else ["open", []]
                ra = json.dumps(a[i] if i < len(a) else None)
                rb = json.dumps(b[i] if i < len(b) else None)
                causes[f"{call[0]}: {ra[:60]}"] += 1
                print(f"DIFF {case['key']} {json.dumps(case['summary'])} {len(bad)} calls; "
                      f"first {json.dumps(call)[:300]}\n  ref : {ra[:600]}\n  ours: {rb[:600]}",
                      flush=True)
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(path, keep / Path(path).name)
            shutil.rmtree(out, ignore_errors=True)
            print(f"-- {min(start + batch, count)}/{count} cases, {files} files queried, "
                  f"{calls_made} calls, {diffs} files differ, {time.time() - t0:.0f} s",
                  flush=True)
    for text, k in causes.most_common():
        print(f"  {k:5} {text}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--seed``, ``--count``, ``--batch``, ``--keep``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--batch", type=int, default=25)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--scaled", action="store_true",
                    help="larger clustered corpora with every index (scaled_case)")
    ap.add_argument("--compiled", action="store_true",
                    help="ours on the numba kernels for every call (exact screens and ranking, "
                         "HNSW), which a short process reaches only once their load pays off")
    args = ap.parse_args(argv)
    return 1 if compare(args.seed, args.count, args.batch, args.keep, args.scaled,
                        args.compiled) else 0


if __name__ == "__main__":
    sys.exit(main())
