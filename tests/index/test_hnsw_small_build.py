"""The numba-free HNSW build of small corpora (``index.hnsw_small_build``): the compiled
builder's graph on any input, taken only where it pays, and a build that never imports numba.

The reference payloads rebuilt by both builders are in ``test_hnsw.py``; here the compiled
kernel is the oracle on random inputs with many equal distances (repeated rows, coarse values),
where the heaps' tie rules and the selection order decide the graph.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from urna.index import _hnsw_kernels, hnsw_small_build
from urna.index import hnsw as hnsw_module
from urna.index.hnsw import build_hnsw, compiled_build

ROOT = Path(__file__).resolve().parents[2]


def _graph(vecs: np.ndarray, m: int, ef: int, seed: int, compiled: bool,
           monkeypatch: pytest.MonkeyPatch):
    with monkeypatch.context() as patch:
        patch.setattr(hnsw_module, "compiled_build", lambda n: compiled)
        return build_hnsw(vecs, m, ef, seed)


@st.composite
def corpora(draw: st.DrawFn) -> np.ndarray:
    """Unit (or zero) rows, often with repeats and coarse values (equal distances)."""
    n = draw(st.integers(0, 48))
    dim = draw(st.sampled_from([1, 3, 8, 13, 16, 40]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    if draw(st.booleans()):
        vecs = np.round(vecs)  # few distinct directions: many ties
    if n > 2 and draw(st.booleans()):
        vecs[rng.integers(0, n, n // 2)] = vecs[0]  # repeated rows: distance 0 ties
    if n and draw(st.booleans()):
        vecs[rng.random(n) < 0.3] = 0.0  # zero rows (the build keeps them): distance 1 to all
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.where(norms == 0, 1, norms)).astype(np.float32)


@settings(max_examples=examples(400, 60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(vecs=corpora(), m=st.integers(0, 6), ef=st.sampled_from([0, 1, 2, 3, 8, 30, 100]),
       seed=st.integers(0, 2**32 - 1))
def test_the_small_build_is_the_compiled_graph(vecs: np.ndarray, m: int, ef: int, seed: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert _hnsw_kernels.build_graph is not None  # the oracle is compiled in this process
    want = _graph(vecs, m, ef, seed, True, monkeypatch)
    got = _graph(vecs, m, ef, seed, False, monkeypatch)
    assert (got.entry_point, got.max_level) == (want.entry_point, want.max_level)
    assert np.array_equal(got.levels, want.levels)
    assert np.array_equal(got.nbr_ptr, want.nbr_ptr)
    assert np.array_equal(got.ids, want.ids)


def test_a_graph_of_typical_size_is_the_compiled_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((hnsw_small_build.SMALL_BUILD_ROWS, 64)).astype(np.float32)
    vecs[::7] = vecs[1]
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    want = _graph(vecs, 16, 200, 42, True, monkeypatch)
    got = _graph(vecs, 16, 200, 42, False, monkeypatch)
    assert np.array_equal(got.ids, want.ids) and np.array_equal(got.nbr_ptr, want.nbr_ptr)


def test_the_compiled_builder_runs_past_the_size_or_once_loaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    small = hnsw_small_build.SMALL_BUILD_ROWS
    assert compiled_build(small + 1)
    assert compiled_build(small)  # this process has loaded the kernels
    monkeypatch.delitem(sys.modules, "urna.index._hnsw_kernels")
    assert not compiled_build(small) and compiled_build(small + 1)


_BUILD = """
import sys
import urna
chunks = [{"canonical_text": f"passage {i} on topic {i % 3}", "source_uri": "d.txt",
           "byte_start": i, "byte_end": i + 1,
           "embedding": [float((i * 7 + j) % 5) - 2.0 + 0.5 * j for j in range(8)]}
          for i in range(int(sys.argv[2]))]
urna.build(sys.argv[1], "m", 8, "c/1", "sha256:" + "0" * 64, chunks, preset="hybrid")
print("numba" in sys.modules)
"""


def test_a_small_hybrid_build_never_imports_numba(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    run = [sys.executable, "-c", _BUILD]
    small = subprocess.run([*run, str(tmp_path / "s.urna"), "40"], env=env, check=True,
                           capture_output=True, text=True)
    assert small.stdout.strip() == "False"
    big = subprocess.run([*run, str(tmp_path / "b.urna"),
                          str(hnsw_small_build.SMALL_BUILD_ROWS + 1)],
                         env=env, check=True, capture_output=True, text=True)
    assert big.stdout.strip() == "True"  # the compiled builder: the check can tell
