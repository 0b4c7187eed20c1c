"""A resident server loads the compiled kernels in the background (``runtime.resident``): the
queries it answers before, during and after the load give the same hits and score bits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import urna

SRC = str(Path(urna.__file__).resolve().parent.parent)

# Answers 5 queries in numpy, then keeps answering them while the kernels load, then after:
# prints every answer (ids and exact score bits) and which backend each phase ran on.
DRIVER = r'''
import json, sys
import numpy as np
import urna
from urna.index import exact
from urna.runtime.resident import load_kernels_in_background
queries = np.random.default_rng(1).standard_normal((5, 64)).astype(np.float32)
def answers(f):
    return [[(h.chunk_id, float(h.score).hex()) for h in f.search(q.tolist(), k=8).hits]
            for q in queries]
with urna.open(sys.argv[1]) as f:
    before = answers(f)
    before_backend = exact.backend() if exact._NUMBA_LOADED else "not loaded"
    thread = load_kernels_in_background()
    during = []
    while thread is not None and thread.is_alive():
        during.append(answers(f))
    if thread is not None:
        thread.join()
    after = answers(f)
    print(json.dumps({"before": before, "during": during, "after": after,
                      "before_backend": before_backend, "started": thread is not None,
                      "loaded": exact._NUMBA_LOADED,
                      "screens": bool(exact._SCAN and exact._SCAN[0])}))
'''


@pytest.fixture(scope="module")
def exact_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 x 64 float32 rows, preset exact: every search screens and rescores."""
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((3000, 64)).astype(np.float32)
    chunks = [{"canonical_text": f"chunk {i}", "source_uri": f"doc{i % 30}.txt",
               "byte_start": i, "byte_end": i + 5, "embedding": vecs[i].tolist()}
              for i in range(3000)]
    path = tmp_path_factory.mktemp("resident") / "exact.urna"
    urna.build(str(path), "m", 64, "v1", "sha256:" + "00" * 32, chunks, preset="exact",
               reproducible=True)
    return path


def _run(path: Path, **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", DRIVER, str(path)], capture_output=True,
                         text=True, timeout=300, check=True,
                         env={**os.environ, "PYTHONPATH": SRC, **env})
    return json.loads(out.stdout)


def test_answers_are_the_same_before_during_and_after_the_background_load(
        exact_file: Path) -> None:
    got = _run(exact_file)
    assert got["before_backend"] == "not loaded"  # the first answers came from numpy
    assert got["started"] and got["loaded"] and got["screens"]
    assert got["after"] == got["before"]
    assert all(answers == got["before"] for answers in got["during"])


def test_opting_out_leaves_the_kernels_unloaded(exact_file: Path) -> None:
    got = _run(exact_file, URNA_PRELOAD_KERNELS="0")
    assert not got["started"] and not got["loaded"]
    assert got["after"] == got["before"]


# A hybrid file served while its kernels are prepared: every numba dispatcher's compile (or
# cache load) is recorded with the thread that asked for it.
PREPARED = r'''
import json, sys, threading
import numpy as np
import urna
from urna.index import exact, hnsw
from urna.runtime.resident import prepare_resident_server
compiles = []
def watch(frame, event, arg):  # numba is not imported before the preparation, as in a server
    code = frame.f_code
    if event == "call" and code.co_name == "compile" and code.co_filename.endswith(
            "numba/core/dispatcher.py") and hasattr(frame.f_locals.get("self"), "py_func"):
        compiles.append([threading.current_thread().name,
                         frame.f_locals["self"].py_func.__name__])
sys.setprofile(watch)
threading.setprofile(watch)
queries = np.random.default_rng(2).standard_normal((3, 64)).astype(np.float32)
def answers(f):
    out = []
    for q in queries:
        for hits in (f.search(q, 5), f.search_ann(q, 5, 32),
                     f.search_hybrid(q, "alpha beta gamma", 5, 32),
                     f.retrieve(q, 5, query_text="delta alpha", rank="fused")):
            out.append([(h.chunk_id, float(h.score).hex()) for h in hits])
    return out
with urna.open(sys.argv[1]) as f:
    before = answers(f)
    loaded_before = "numba" in sys.modules
    thread = prepare_resident_server([f])
    during = []
    while thread.is_alive():
        during.append(answers(f))
    thread.join()
    after = answers(f)
    print(json.dumps({"before": before, "during": during, "after": after, "compiles": compiles,
                      "loaded_before": loaded_before,
                      "walks_compiled": hnsw._kernels_ready(),
                      "scores_compiled": exact._use_numba(1, 64)}))
'''

_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"] + [f"word{i}" for i in range(400)]


@pytest.fixture(scope="module")
def hybrid_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 x 64 rows with HNSW and BM25 (past the postings the BM25 kernel takes)."""
    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((3000, 64)).astype(np.float32)
    chunks = [{"canonical_text": " ".join(rng.choice(_WORDS, 30)), "source_uri": f"d{i}.txt",
               "byte_start": 0, "byte_end": 1, "embedding": vecs[i].tolist()}
              for i in range(3000)]
    path = tmp_path_factory.mktemp("resident") / "hybrid.urna"
    urna.build(str(path), "m", 64, "v1", "sha256:" + "00" * 32, chunks, preset="hybrid",
               reproducible=True)
    return path


def test_no_request_waits_on_a_compile_while_the_kernels_are_prepared(
        hybrid_file: Path) -> None:
    out = subprocess.run([sys.executable, "-c", PREPARED, str(hybrid_file)],
                         capture_output=True, text=True, timeout=600, check=True,
                         env={**os.environ, "PYTHONPATH": SRC})
    got = json.loads(out.stdout)
    assert not got["loaded_before"]  # the first answers ran without numba
    # every kernel the queries need was compiled (or loaded) by the preparing thread alone
    assert got["compiles"] and {name for name, _ in got["compiles"]} == {"urna-kernels"}
    kernels = {fn for _, fn in got["compiles"]}
    assert {"search_graph", "_topk_kernel"} <= kernels, kernels
    assert got["walks_compiled"] and got["scores_compiled"]  # then every thread runs them
    assert got["after"] == got["before"]
    assert all(answers == got["before"] for answers in got["during"])
