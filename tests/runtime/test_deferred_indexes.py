"""A repeat open reads the HNSW neighbour ids block by block and answers as a full open.

Claims: on a file whose 0x07 id column spans many intpack blocks, the trusted open's graph
serves the walk from ``BlockIds``: in a fresh process (as a CLI query: numba unloaded) the
whole column is never decoded by ANN, hybrid and fused retrieve queries, and every answer
equals a full open's, as it does in a process whose walks run on the compiled kernels; a
full open decodes the column whole, as before. The hybrid path decodes a deferred BM25 on a
worker while the beam walks (``format.ahead.start_quietly``), whose failure is left to the caller's
own call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import urna
from urna.errors import MalformedSectionPayload
from urna.format.ahead import start_quietly
from urna.format.sections.hnsw import BlockIds

MODEL_HASH = "sha256:" + "ab" * 32
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def _build(path: Path) -> Path:
    rng = np.random.default_rng(11)
    vecs = rng.normal(size=(900, 24)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    chunks = [{"canonical_text": " ".join(rng.choice(WORDS, 6).tolist()) + f" row{i}",
               "source_uri": f"doc{i % 7}.txt", "byte_start": i, "byte_end": i + 5,
               "embedding": v.tolist()} for i, v in enumerate(vecs)]
    urna.build(path, "t/24", 24, "t/1", MODEL_HASH, chunks, preset="hybrid",
               hnsw_ef_construction=40, reproducible=True)
    return path


def _answers(f: urna.UrnaFile) -> list:
    out = []
    for seed in range(4):
        q = np.random.default_rng(seed).normal(size=24).astype(np.float32)
        q /= np.linalg.norm(q)
        out.append(f.search_ann(q, 5, 16).to_dict()["hits"])
        out.append(f.search_hybrid(q, "delta golf", 5, 30).to_dict()["hits"])
        res = f.retrieve(q, 3, query_text="echo india row12", rank="fused").to_dict()
        del res["query_time_ms"]
        out.append(res)
    return out


_CHILD = """
import json, sys
import numpy as np
from urna.runtime import verdicts
verdicts.MIN_BYTES = 0  # the test file is small
import urna
sys.path.insert(0, sys.argv[2])
from test_deferred_indexes import _answers
with urna.open(sys.argv[1]) as f:
    st = f._state
    trusted, column = st.view.trusted, type(st.hnsw.id_column()).__name__
    got = _answers(f)
    whole = "ids" in st.hnsw.__dict__
    bm25 = type(st.bm25_index).__name__
print(json.dumps([trusted, column, whole, "numba" in sys.modules, bm25, got]))
"""


def test_trusted_open_walks_blocks_and_answers_alike(verdict_cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = _build(verdict_cache / "g.urna")
    with monkeypatch.context() as m:
        m.setenv("URNA_OPEN_CACHE", "0")
        with urna.open(path) as f:
            assert not f._state.view.trusted
            assert isinstance(f._state.hnsw.id_column(), np.ndarray)  # decoded whole
            want = json.loads(json.dumps(_answers(f)))
    with urna.open(path) as f:  # keeps the verdict
        assert len(f._state.hnsw.ids) > 20 * 128  # many blocks
    # a fresh process (no numba loaded, as a CLI query): the trusted open walks blocks
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(Path(__file__).parent)],
                         env=env, capture_output=True, text=True, check=True).stdout
    trusted, column, whole, numba, bm25, got = json.loads(out)
    assert (trusted, column, whole, numba) == (True, "BlockIds", False, False)
    assert bm25 == "LazyBm25Index"  # loaded ahead, on a worker, by the hybrid path
    assert got == want
    with urna.open(path) as f:  # in this process too, whatever walks it
        assert f._state.view.trusted and isinstance(f._state.hnsw.id_column(), BlockIds)
        assert json.loads(json.dumps(_answers(f))) == want


def test_preload_leaves_its_error_to_the_callers_own_call() -> None:
    calls = []

    def work() -> None:
        calls.append(1)
        raise MalformedSectionPayload(8, "bm25: broken")

    ahead = start_quietly(work)
    ahead.wait()  # the worker's failure is not raised here
    assert not ahead.failed
    assert calls == [1]
    with pytest.raises(MalformedSectionPayload, match="bm25: broken"):
        work()  # the caller's own call raises it, in its turn
