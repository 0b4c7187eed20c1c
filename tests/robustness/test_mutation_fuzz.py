"""Seeded mutation fuzz: every corruption of a valid file either works or raises an
``urna.errors`` exception, through every entry point, in bounded time and memory
(05-style §2 item 9; 03-runtime §18 item 12).

Cases come from ``_cases.generate`` (flips at every header / table / manifest offset and at
sampled payload offsets, raw and resealed; truncations at every section boundary and at random
points; splices; hostile counts; seeded random multi-step mutations). By default each source
file gets a few seconds (cases in a seeded order, so the budget samples every kind); knobs:

* ``URNA_MUTATION_ITERS`` random cases per source (default 200), ``URNA_FUZZ_SECONDS`` budget
  per source (default 0.75 s x ITERS / 200, 1.5 s under ``URNA_LONG_TESTS=1``; 0 = run every
  case), ``URNA_FUZZ_SEED`` (default 0),
  ``URNA_FUZZ_CASE_CAP`` seconds per case before it counts as a hang (default 20),
  ``URNA_FUZZ_TRACEMALLOC=1`` to trace the peak allocation of every case,
  ``URNA_FUZZ_ONLY=<case_id>`` and ``URNA_FUZZ_SOURCES=a.urna,b.urna`` to replay,
  ``URNA_FUZZ_STATS=<file.jsonl>`` to append the figures of each source.
"""

from __future__ import annotations

import collections
import json
import os
import random
import time
import tracemalloc
from pathlib import Path

import pytest
from _cases import generate, is_hostile
from _harness import CaseTimeout, env_float, env_int, exercise, now, rss_peak_mib, time_cap
from _sources import BUILT, built_source

from helpers.budget import seconds
from helpers.mutate import DATA_DIR, source_bytes

DEFAULT_SOURCES = [
    "golden_v1_minimal.urna",
    "quickstart-hybrid.urna",       # intpack ids, zstd text, HNSW, BM25
    "quickstart-blobs.urna",        # 0x14 / 0x16 / 0x17
    "quickstart-spaces.urna",       # 0x15 + f32 and f16 bands
    "quickstart-graph.urna",        # 0x0C
    "quickstart-int8_bm25.urna",    # int8, raw BM25
    "quickstart-nano.urna",         # int4, zstd text, HNSW
    "quickstart-f16_hnsw.urna",     # float16, HNSW
    "dedup-zstd_f32.urna",          # 0x0B dedup map
] + BUILT                           # every optional section at once; 0x02 as codecs 10, 9, 5
SOURCES = [s for s in os.environ.get("URNA_FUZZ_SOURCES", ",".join(DEFAULT_SOURCES)).split(",")
           if s]
ITERS = env_int("URNA_MUTATION_ITERS", 200)
# More random cases buy proportionally more time unless the budget is given explicitly.
BUDGET = env_float("URNA_FUZZ_SECONDS", seconds(1.5, 0.75) * max(ITERS, 200) / 200)
SEED = env_int("URNA_FUZZ_SEED", 0)
CASE_CAP = env_float("URNA_FUZZ_CASE_CAP", 20.0)
TRACE = os.environ.get("URNA_FUZZ_TRACEMALLOC") == "1"
ONLY = os.environ.get("URNA_FUZZ_ONLY")
# Peak Python-visible allocation allowed for one case: what a sane reader of the file needs
# (the 64 MiB zstd cap of 02-encodings §5.2 plus copies of the file), never a hostile count.
MEM_CAP = 96 << 20


@pytest.fixture(scope="session")
def built_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("built"))


def load_source(name: str, built: str) -> bytes:
    """A source: a file of tests/data (top level or ref-0.5.1) or one of ``_sources.BUILT``."""
    if name.startswith("built-"):
        return built_source(name, built)
    top = DATA_DIR / name
    return top.read_bytes() if top.exists() else source_bytes(name)


def run_cases(name: str, base: bytes, path: Path, *, budget: float, trace: bool,
              select=None) -> dict:
    """Run the cases of one source; return figures and the list of failures."""
    cases = generate(base, ITERS, SEED)
    random.Random(SEED).shuffle(cases)
    if ONLY:
        cases = [c for c in cases if c[0] == ONLY]
    if select is not None:
        cases = [c for c in cases if select(c[0])]
    stats = {"source": name, "seed": SEED, "cases": 0, "of": len(cases), "ok": 0,
             "by_error": collections.Counter(), "max_case_s": 0.0, "max_case": "",
             "max_case_cpu_s": 0.0, "max_cpu_case": "",
             "peak_alloc_mib": 0.0, "peak_case": "", "failures": []}
    with time_cap(max(CASE_CAP, 120.0)):  # warm-up: JIT compiles and imports are not a case
        exercise(base, path)
    deadline = now() + budget if budget > 0 else float("inf")
    if trace:
        tracemalloc.start()
    try:
        for cid, make in cases:
            if now() > deadline:
                break
            data = make()
            if trace:
                tracemalloc.reset_peak()
                base_mem = tracemalloc.get_traced_memory()[0]
            t0, c0 = now(), time.process_time()
            try:
                with time_cap(CASE_CAP):
                    ex = exercise(data, path)
            except CaseTimeout as exc:
                stats["failures"].append(f"{name} {cid}: hang ({exc})")
                continue
            took, cpu = now() - t0, time.process_time() - c0
            if cpu > stats["max_case_cpu_s"]:  # CPU time: immune to a busy machine's stalls
                stats["max_case_cpu_s"], stats["max_cpu_case"] = cpu, cid
            stats["cases"] += 1
            if took > stats["max_case_s"]:
                stats["max_case_s"], stats["max_case"] = took, cid
            if trace:
                peak = (tracemalloc.get_traced_memory()[1] - base_mem) / (1 << 20)
                if peak > stats["peak_alloc_mib"]:
                    stats["peak_alloc_mib"], stats["peak_case"] = peak, cid
                if peak * (1 << 20) > MEM_CAP + 4 * len(data):
                    stats["failures"].append(f"{name} {cid}: allocated {peak:.0f} MiB")
            errs = [o for o in ex.outcomes if not o.ok and not o.op.endswith("_bad")]
            if errs:
                stats["by_error"][errs[0].variant] += 1
            else:
                stats["ok"] += 1
            for o in ex.foreign:
                stats["failures"].append(
                    f"{name} {cid}: {o.op} raised {o.variant}: {o.message}\n{o.trace}")
    finally:
        if trace:
            tracemalloc.stop()
    stats["rss_peak_mib"] = rss_peak_mib()
    return stats


def _report(stats: dict) -> None:
    out = os.environ.get("URNA_FUZZ_STATS")
    if out:
        row = dict(stats, by_error=dict(stats["by_error"]), failures=len(stats["failures"]))
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
    print(f"{stats['source']}: {stats['cases']}/{stats['of']} cases, ok {stats['ok']}, "
          f"max {stats['max_case_s']:.3f} s wall ({stats['max_case']}), "
          f"{stats['max_case_cpu_s']:.3f} s cpu ({stats['max_cpu_case']}), "
          f"peak alloc {stats['peak_alloc_mib']:.1f} MiB, rss {stats['rss_peak_mib']:.0f} MiB, "
          f"errors {dict(stats['by_error'].most_common(6))}")


def _fail_text(name: str, stats: dict) -> str:
    head = "\n".join(stats["failures"][:8])
    return (f"{len(stats['failures'])} bad outcomes on {name} (seed {SEED}); replay one with "
            f"URNA_FUZZ_SOURCES={name} URNA_FUZZ_SEED={SEED} URNA_FUZZ_ONLY=<case id>:\n{head}")


@pytest.mark.parametrize("name", SOURCES)
def test_untouched_source_passes_every_entry_point(name: str, tmp_path: Path,
                                                   built_dir: str) -> None:
    ex = exercise(load_source(name, built_dir), tmp_path / "base.urna")
    assert not ex.missing, f"UrnaFile lacks {ex.missing}"
    bad = [o for o in ex.outcomes if not o.ok and not o.op.endswith("_bad")]
    assert bad == [], [(o.op, o.variant, o.message) for o in bad]
    wrong = [o for o in ex.outcomes if o.op.endswith("_bad") and (o.ok or o.foreign)]
    assert wrong == [], [(o.op, o.variant, o.message) for o in wrong]
    assert any(o.op == "cite_bad" for o in ex.outcomes)


@pytest.mark.parametrize("name", SOURCES)
def test_mutation_fuzz(name: str, tmp_path: Path, built_dir: str) -> None:
    stats = run_cases(name, load_source(name, built_dir), tmp_path / "case.urna", budget=BUDGET,
                      trace=TRACE)
    _report(stats)
    assert stats["cases"] > 0
    assert not stats["failures"], _fail_text(name, stats)


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "built-all-int4",
                                  "built-0x02-fsst", "built-0x02-zstd_dict"])
def test_hostile_counts_do_not_allocate(name: str, tmp_path: Path, built_dir: str) -> None:
    """2**60 and u64-max in every header count and in the first fields of every payload."""
    stats = run_cases(name, load_source(name, built_dir), tmp_path / "case.urna", budget=0,
                      trace=True,
                      select=is_hostile)
    _report(stats)
    assert stats["cases"] == stats["of"] > 20
    assert not stats["failures"], _fail_text(name, stats)
    assert stats["peak_alloc_mib"] * (1 << 20) < MEM_CAP
