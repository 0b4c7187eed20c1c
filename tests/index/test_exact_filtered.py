"""index/exact filtered scan: ``search(..., rows=)`` answers exactly the exact scan of those rows.

Claims: for every dtype and screen (this machine's numba screens, the portable int16 ones,
numpy / BLAS), any mask (empty, one row, sparse, dense, all), any k (1, near the match count,
past it), either way of screening a row list (as a list, or a scan of every row for a dense
one) and any thread count, the filtered search returns the ids and score bits of scoring
only the matching rows with the exact kernel and fully sorting them; the answer does not change
by a bit with the thread count; a file's ``where=`` search on several threads equals one thread;
int8 widths that are not a multiple of the vector step (the scalar tail) stay exact; a row
list in any order answers as the sorted list (ties to the lower row); a bad row list is a
typed error or ``IndexError``, never a crash.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.slabs import DTYPES, corpora, make_slab
from urna.errors import InvalidInput
from urna.index import exact
from urna.index.exact import rank, score_rows, search

FIXED = [HealthCheck.function_scoped_fixture]


@pytest.fixture(autouse=True)
def _small_tasks(monkeypatch):
    """Small row lists still split into several thread tasks and use the compiled rescoring."""
    monkeypatch.setattr(exact, "_ROWS_PER_TASK", 16)
    monkeypatch.setattr(exact, "NUMBA_MIN_VALUES", 0)


def filtered_scan(slab, q: np.ndarray, rows: np.ndarray, k: int) -> tuple[list[int], bytes]:
    """The definition: the matching rows scored by the exact kernel, then the full sort."""
    ids, scores = rank(rows, score_rows(slab, q, rows), k)
    return ids.tolist(), scores.tobytes()


@st.composite
def masks(draw, n: int):
    """Ascending distinct rows of ``n``: none, one, sparse, dense or all of them."""
    kind = draw(st.sampled_from(["none", "one", "sparse", "dense", "all"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "none":
        return np.zeros(0, np.int64)
    if kind == "one":
        return np.array([int(rng.integers(0, n))], np.int64)
    if kind == "all":
        return np.arange(n, dtype=np.int64)
    keep = rng.random(n) < (0.1 if kind == "sparse" else 0.7)
    return np.flatnonzero(keep).astype(np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=40, deadline=None, suppress_health_check=FIXED)
@given(case=corpora(), data=st.data(), dense=st.sampled_from([exact.DENSE_ROWS, 2.0]))
def test_filtered_search_equals_the_filtered_full_scan(screen_backend, monkeypatch, dtype,
                                                      case, data, dense) -> None:
    m, q, k, threads = case
    monkeypatch.setattr(exact, "DENSE_ROWS", dense)  # 2.0: every list screened as a list
    slab = make_slab(dtype, m)
    rows = data.draw(masks(len(m)))
    k = data.draw(st.sampled_from([k, 1, max(1, len(rows) - 1), len(rows), len(rows) + 3]))
    ids, scores = search(slab, q, k, threads=threads, rows=rows)
    assert (ids.tolist(), scores.tobytes()) == filtered_scan(slab, q, rows, k)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None, suppress_health_check=FIXED)
@given(case=corpora(), data=st.data())
def test_a_row_list_in_any_order_answers_as_the_sorted_list(screen_backend, dtype, case,
                                                            data) -> None:
    m, q, k, threads = case
    slab = make_slab(dtype, m)
    rows = data.draw(masks(len(m)))
    shuffled = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).permutation(rows)
    ids, scores = search(slab, q, k, threads=threads, rows=shuffled)
    # ties go to the lower row, whatever the order of the list
    assert (ids.tolist(), scores.tobytes()) == filtered_scan(slab, q, rows, k)


def test_filtered_threads_do_not_change_a_single_bit(screen_backend) -> None:
    rng = np.random.default_rng(11)
    m = rng.standard_normal((6000, 128)).astype(np.float32)
    m[2000:2200] = m[7]  # ties across the thread boundaries
    q = (m[7] / np.linalg.norm(m[7])).astype(np.float32)
    for share in (0.4, 0.1):  # screened by a scan of every row, and as a row list
        rows = np.flatnonzero(rng.random(6000) < share).astype(np.int64)
        rows = np.union1d(rows, np.arange(2000, 2200))
        for dtype in DTYPES:
            slab = make_slab(dtype, m)
            one = search(slab, q, 60, threads=1, rows=rows)
            assert (one[0].tolist(), one[1].tobytes()) == filtered_scan(slab, q, rows, 60)
            for t in (2, 3, 5):
                got = search(slab, q, 60, threads=t, rows=rows)
                assert got[0].tolist() == one[0].tolist()
                assert got[1].tobytes() == one[1].tobytes()


@pytest.mark.parametrize("dim", [40, 100, 200])
def test_int8_widths_off_the_vector_step_stay_exact(screen_backend, dim) -> None:
    rng = np.random.default_rng(dim)
    m = rng.standard_normal((700, dim)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    slab = make_slab("int8", m)
    q = (m[3] + 0.2 * rng.standard_normal(dim).astype(np.float32)).astype(np.float32)
    q /= np.linalg.norm(q)
    s, delta = exact.screen(slab, q, threads=2)
    assert np.abs(s.astype(np.float64) - score_rows(slab, q)).max() <= delta
    rows = np.arange(0, 700, 3, dtype=np.int64)
    ids, scores = search(slab, q, 9, threads=2, rows=rows)
    assert (ids.tolist(), scores.tobytes()) == filtered_scan(slab, q, rows, 9)


def test_bad_row_lists_are_rejected() -> None:
    slab = make_slab("float32", np.eye(80, 64, dtype=np.float32))
    q = np.full(64, 0.125, np.float32)
    with pytest.raises(IndexError):
        search(slab, q, 3, rows=np.array([0, 80]))
    with pytest.raises(IndexError):
        search(slab, q, 3, rows=np.array([-1, 2]))
    with pytest.raises(InvalidInput):
        search(slab, q, 3, rows=np.zeros((2, 2), np.int64))
