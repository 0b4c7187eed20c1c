"""index/exact: per-dtype scores, the rerank invariant, exact top-k order, backends, batch.

Claims: each kernel equals a float64 dequantize-then-dot within f32 rounding (int4 within
1e-5 for dims 64/128/320/384, §18 item 11; float16 subnormals widen exactly); a row's score
is bit-identical whether it is scored alone, in a subset or in the full scan; top-k equals
the full sort by (score desc, index asc, NaN last) including ties at the cut-off (§4, §18
item 5); the numba and numpy backends agree; URNA_FORCE_SCALAR selects the numpy path;
search_batch returns exactly what search returns per query.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.ordering import descending_total_order
from urna.index import exact
from urna.index.exact import Slab, rank, score_rows, search, search_batch, top_k

RNG = np.random.default_rng(20261129)


@pytest.fixture(autouse=True)
def _compiled_kernels_for_small_slabs(monkeypatch):
    """Small test slabs would take the numpy path; score them with the backend under test."""
    monkeypatch.setattr(exact, "NUMBA_MIN_VALUES", 0)


def _unit(n: int, d: int) -> np.ndarray:
    m = RNG.standard_normal((n, d)).astype(np.float32)
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def _int8(m: np.ndarray) -> Slab:
    sc = (np.abs(m).max(axis=1) / 127).astype(np.float32)
    codes = np.clip(np.round(m / sc[:, None]), -127, 127).astype(np.int8)
    return Slab.int8(sc, codes)


def _int4(m: np.ndarray) -> Slab:
    n, d = m.shape
    g = m.reshape(n, d // 64, 64)
    sc = (np.abs(g).max(axis=2) / 7).astype(np.float16)
    codes = np.clip(np.round(g / sc.astype(np.float32)[..., None]), -7, 7).astype(np.int8)
    codes = codes.reshape(n, d)
    packed = ((codes[:, 0::2] & 0x0F) | ((codes[:, 1::2] & 0x0F) << 4)).astype(np.uint8)
    return Slab.int4(sc, packed, d)


def _slabs(m: np.ndarray) -> list[Slab]:
    return [Slab.float32(m), Slab.float16(m.astype(np.float16)), _int8(m), _int4(m)]


def _reference(slab: Slab, q: np.ndarray) -> np.ndarray:
    return slab.dequantize(0, slab.n).astype(np.float64) @ q.astype(np.float64)


@pytest.mark.parametrize("dim", [64, 128, 320, 384])
def test_kernels_equal_dequantize_then_dot(dim: int) -> None:
    m = _unit(300, dim)
    q = _unit(1, dim)[0]
    for slab in _slabs(m):
        got = score_rows(slab, q)
        assert got.dtype == np.float32
        assert np.abs(got - _reference(slab, q)).max() < 1e-5, slab.dtype


def test_int4_nibbles_sign_extend_all_sixteen_values() -> None:
    # bytes 0x00..0xFF cover every (low, high) nibble pair, including -8 (0x8)
    packed = np.arange(256, dtype=np.uint8).reshape(8, 32)
    scales = np.ones((8, 1), dtype=np.float16)
    slab = Slab.int4(scales, packed, 64)
    q = np.zeros(64, dtype=np.float32)
    q[0], q[1] = 1.0, 1000.0  # row score = low + 1000 * high of byte 0
    got = score_rows(slab, q)
    lows = [((b & 0xF) ^ 8) - 8 for b in range(0, 256, 32)]
    highs = [((b >> 4) ^ 8) - 8 for b in range(0, 256, 32)]
    assert got.tolist() == [lo + 1000.0 * hi for lo, hi in zip(lows, highs, strict=True)]


def test_float16_subnormals_and_signs_widen_exactly() -> None:
    halves = np.array([0x0001, 0x03FF, 0x8001, 0x0400, 0xFBFF, 0x7BFF, 0x8000, 0x3C00],
                      dtype=np.uint16).view(np.float16)
    slab = Slab.float16(np.diag(halves))
    got = score_rows(slab, np.eye(8, dtype=np.float32)[0] * 0 + 1)
    assert got.tolist() == halves.astype(np.float32).tolist()


def test_a_rows_score_does_not_depend_on_which_rows_are_scored() -> None:
    m = _unit(1000, 96 + 64 * 0 + 32)  # dim 128 also exercises the int4 groups
    q = _unit(1, m.shape[1])[0]
    for slab in _slabs(m):
        full = score_rows(slab, q)
        pick = np.array([999, 3, 500, 3, 0], dtype=np.int64)
        assert score_rows(slab, q, pick).tobytes() == full[pick].tobytes(), slab.dtype
        for i in (0, 17, 999):
            assert score_rows(slab, q, np.array([i])).tobytes() == full[i:i + 1].tobytes()


def test_small_slabs_use_the_numpy_path(monkeypatch) -> None:
    monkeypatch.setattr(exact, "NUMBA_MIN_VALUES", 10 ** 9)
    m = _unit(50, 64)
    q = _unit(1, 64)[0]
    for slab in _slabs(m):
        assert score_rows(slab, q).tobytes() == \
            exact._score_numpy(slab, q, np.arange(50)).tobytes()


def test_numpy_and_numba_backends_agree() -> None:
    m = _unit(500, 192)
    q = _unit(1, 192)[0]
    rows = np.arange(500, dtype=np.int64)
    for slab in _slabs(m):
        plain = exact._score_numpy(slab, q, rows)
        fast = score_rows(slab, q)
        assert np.abs(plain - fast).max() <= 1e-6, slab.dtype
        assert np.array_equal(search(slab, q, 10)[0], top_k(plain, 10)[0])


def test_force_scalar_selects_the_numpy_path() -> None:
    code = ("from urna.index import exact; print(exact.backend(), exact.simd_backend())")
    env = dict(os.environ, URNA_FORCE_SCALAR="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["numpy", "scalar"]
    env["URNA_FORCE_SCALAR"] = "0"  # "0" does not force (reference semantics)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == exact.backend()


def test_ordering_vector_of_the_reference() -> None:
    ids, _ = rank(np.arange(5), np.array([0.5, np.nan, 0.9, np.nan, -1.0], np.float32), 5)
    assert ids.tolist() == [2, 0, 4, 1, 3]


def test_ties_at_the_cut_off_go_to_the_lower_index() -> None:
    s = np.array([0.1, 0.7, 0.7, 0.3, 0.7, 0.7], dtype=np.float32)
    assert top_k(s, 2)[0].tolist() == [1, 2]
    assert top_k(s, 3)[0].tolist() == [1, 2, 4]
    assert top_k(s, 100)[0].tolist() == [1, 2, 4, 5, 3, 0]


def test_positive_zero_ranks_before_negative_zero() -> None:
    # IEEE total order, as the reference sorts (an int8 score underflows to either zero)
    zeros = np.array([0.0, -0.0, 0.0, -0.0], np.float32)
    assert top_k(zeros, 2)[0].tolist() == [0, 2]
    assert top_k(zeros, 4)[0].tolist() == [0, 2, 1, 3]
    assert rank(np.array([7, 3, 5]), np.array([-0.0, -0.0, 0.0], np.float32), 3)[0].tolist() \
        == [5, 3, 7]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 0.25, -0.5, 1.0, 0.25, float("nan"), -1.0, 0.75,
                                 1e-45, -1e-45]),
                min_size=0, max_size=40), st.integers(min_value=1, max_value=45))
def test_top_k_equals_the_full_sort(values: list[float], k: int) -> None:
    s = np.array(values, dtype=np.float32)
    want = descending_total_order(s, list(range(len(s))))
    ids, scores = top_k(s, k)
    assert ids.tolist() == want[:k]
    assert scores.tobytes() == s[want[:k]].tobytes()


def test_search_batch_equals_search_per_query() -> None:
    m = _unit(3000, 64)
    m[10] = m[11]  # duplicate rows: exact ties across the screen window
    Q = np.vstack([m[10], m[500] + 0.01, _unit(5, 64)]).astype(np.float32)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    for slab in _slabs(m):
        ids, scores = search_batch(slab, Q, 7)
        for i in range(len(Q)):
            one_ids, one_scores = search(slab, Q[i], 7)
            assert ids[i].tolist() == one_ids.tolist(), slab.dtype
            assert scores[i].tobytes() == one_scores.tobytes()


def test_screened_float32_search_equals_scoring_every_row() -> None:
    m = _unit(4000, 64)
    m[100:140] = m[7]  # forty identical rows: an exact tie straddles the cut-off
    slab = Slab.float32(m)
    for q in (m[7], m[7] + 1e-4, _unit(1, 64)[0]):
        q = (q / np.linalg.norm(q)).astype(np.float32)
        for k in (1, 10, 25, 3999):
            ids, scores = search(slab, q, k)
            want_ids, want_scores = top_k(score_rows(slab, q), k)
            assert ids.tolist() == want_ids.tolist()
            assert scores.tobytes() == want_scores.tobytes()


def test_overflowing_rows_fall_back_to_scoring_every_row() -> None:
    m = _unit(300, 64)
    m[5] *= np.float32(3e37)  # squares overflow: no rounding bound, every row is scored
    slab = Slab.float32(m)
    q = np.ones(64, np.float32) / np.float32(8.0)
    ids, scores = search(slab, q, 3)
    want_ids, want_scores = top_k(score_rows(slab, q), 3)
    assert ids.tolist() == want_ids.tolist() and scores.tobytes() == want_scores.tobytes()


def test_k_larger_than_n_and_empty_slab() -> None:
    m = _unit(3, 64)
    assert len(search(Slab.float32(m), m[0], 10)[0]) == 3
    empty = Slab.float32(np.zeros((0, 64), np.float32))
    assert len(search(empty, m[0], 5)[0]) == 0
    assert search_batch(empty, m, 5)[0].shape == (3, 0)
