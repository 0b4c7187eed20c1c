"""The build reports its steps as they finish (the index bar's hook) without touching the bytes.

``build_steps`` names, for a set of options, the steps ``build_bytes`` reports in order, so a
progress bar knows its length before the build starts; the terminal run of ``urna build``
draws one bar per stage, the index bar counting those steps.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from helpers.specs import write_jsonl_spec
from test_build_threads import REFERENCE_HASHES, corpus_chunks
from urna.build import build_bytes, build_steps
from urna.build_options import BuildOptions
from urna.forge.emit import emit_file
from urna.forge.progress import Progress
from urna.forge.sources import load_rows
from urna.forge.spec import load_spec

ARGS = ("demo-model", 32, "demo-chunker/1", "sha256:" + "0" * 64)


@pytest.mark.parametrize(("preset", "with_graph", "steps"), [
    ("exact", False, ["texts", "assemble"]),
    ("exact", True, ["hnsw", "graph", "texts", "assemble"]),
    ("hybrid", True, ["hnsw", "bm25", "graph", "texts", "assemble"]),
    ("compressed", False, ["texts", "assemble"]),
])
def test_steps_are_reported_in_the_announced_order(preset, with_graph, steps):
    options = BuildOptions(preset=preset, with_graph=with_graph, reproducible=True)
    chunks = corpus_chunks(60)
    seen: list[str] = []
    with_hook = build_bytes(*ARGS, chunks, options, on_step=seen.append)
    assert build_steps(options, len(chunks)) == steps
    assert seen == steps
    assert with_hook == build_bytes(*ARGS, chunks, options)


def test_a_watched_build_still_writes_the_reference_bytes():
    options = BuildOptions(preset="hybrid", with_graph=True, reproducible=True, with_hnsw=True,
                           with_bm25=True)
    data = build_bytes(*ARGS, corpus_chunks(), options, on_step=lambda _step: None)
    assert hashlib.sha256(data).hexdigest() == REFERENCE_HASHES["hybrid"]


def test_the_index_bar_counts_the_steps_on_a_terminal(tmp_path, capsys):
    rows = ({"id": f"{i:03d}", "text": f"passage {i} about topic {i % 7}"} for i in range(40))
    spec = load_spec(write_jsonl_spec(tmp_path, rows, name="bars", preset="hybrid",
                                      with_graph=True, cache_dir=tmp_path / "cache"))
    rows = load_rows(spec)
    vectors = {"potion": np.asarray([c["embedding"] for c in corpus_chunks(len(rows))],
                                    dtype=np.float32)}
    meta = {"potion": {"embedding_model": "demo-model", "model_hash": ARGS[3]}}
    out = emit_file(spec, tmp_path / "bars.urna", rows, vectors, meta, "sha256:" + "1" * 64,
                    progress=Progress(enabled=True))
    err = capsys.readouterr().err
    assert "index bars.urna" in err and "5/5" in err  # hnsw, bm25, graph, texts, assemble
    assert f"{out['bytes']}/{out['bytes']}" in err  # the write bar

