"""index/exact screens: the fast screen plus exact rescoring answers exactly the full per-row scan.

Claims: for every dtype, on random data with duplicated rows (ties), any k (1, near n, past n),
the screened search returns the same ids and score bits as scoring every row with the exact
kernel and fully sorting, whichever screen runs (numba kernels or numpy / BLAS) and on any
number of threads; each screen stays within its stated bound of the exact kernel on adversarial
rows (cancellation, mixed magnitudes, subnormals, int4 nibble extremes), for every integer
screen this machine can run (VNNI and AVX2: int8 query; portable: int16 query);
``search_batch`` with threads equals ``search`` per query; the heap selection equals numpy's
partition; ``threads`` comes from ``URNA_THREADS`` by default and a bad value is a typed
error.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.ordering import descending_total_order
from helpers.slabs import DTYPES, corpora, make_slab
from urna.errors import InvalidInput, UrnaError
from urna.index import _scan_kernels, exact
from urna.index.exact import Slab, score_rows, search, search_batch, top_k
from urna.index.row_scores import unpack_int4

# the fixtures only pick a backend and task size: the same for every generated input
FIXED = [HealthCheck.function_scoped_fixture]


@pytest.fixture(autouse=True)
def _small_tasks(monkeypatch):
    """Small slabs still split into several thread tasks and use the compiled rescoring."""
    monkeypatch.setattr(exact, "_ROWS_PER_TASK", 16)
    monkeypatch.setattr(exact, "NUMBA_MIN_VALUES", 0)


def full_scan(slab: Slab, q: np.ndarray, k: int) -> tuple[list[int], bytes]:
    """The definition: every row scored by the exact kernel, then the full (score, id) sort."""
    ids, scores = top_k(score_rows(slab, q), k)
    return ids.tolist(), scores.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=40, deadline=None, suppress_health_check=FIXED)
@given(case=corpora())
def test_screened_search_equals_the_full_scan(screen_backend, dtype, case) -> None:
    m, q, k, threads = case
    slab = make_slab(dtype, m)
    ids, scores = search(slab, q, k, threads=threads)
    assert (ids.tolist(), scores.tobytes()) == full_scan(slab, q, k)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None, suppress_health_check=FIXED)
@given(case=corpora())
def test_search_equals_the_numpy_definition_bit_for_bit(screen_backend, dtype, case) -> None:
    # numpy alone: every row scored by row_scores (what a process without numba computes)
    m, q, k, threads = case
    slab = make_slab(dtype, m)
    plain = exact._score_numpy(slab, q, np.arange(slab.n, dtype=np.int64))
    want_ids, want_scores = top_k(plain, k)
    ids, scores = search(slab, q, k, threads=threads)
    assert (ids.tolist(), scores.tobytes()) == (want_ids.tolist(), want_scores.tobytes())


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=15, deadline=None, suppress_health_check=FIXED)
@given(case=corpora())
def test_batch_equals_search_on_any_thread_count(screen_backend, dtype, case) -> None:
    m, q, k, threads = case
    slab = make_slab(dtype, m)
    Q = np.vstack([q, m[:3]]).astype(np.float32)
    ids, scores = search_batch(slab, Q, k, threads=threads)
    for j in range(len(Q)):
        want_ids, want_scores = full_scan(slab, Q[j], k)
        assert ids[j].tolist() == want_ids and scores[j].tobytes() == want_scores


def adversarial_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """Rows made to cancel: alternating huge terms, mixed magnitudes, subnormal-sized entries."""
    m = rng.standard_normal((n, dim)).astype(np.float32)
    m[0::4, 0::2] *= 1e4
    m[0::4, 1::2] *= -1e4
    m[1::4] *= np.float32(10.0) ** rng.integers(-20, 4, (len(m[1::4]), dim))
    m[2::4] = np.float32(1e-39) * rng.integers(-3, 4, (len(m[2::4]), dim))
    m[3::4, : dim // 2] = 7.0
    m[3::4, dim // 2:] = -7.0
    return m


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=30, deadline=None, suppress_health_check=FIXED)
@given(seed=st.integers(0, 2 ** 32 - 1), dim=st.sampled_from([64, 128, 384]),
       scale=st.sampled_from([1.0, 1e-3, 1e3]))
def test_screen_stays_within_its_bound(screen_backend, dtype, seed, dim, scale) -> None:
    rng = np.random.default_rng(seed)
    slab = make_slab(dtype, adversarial_rows(rng, 96, dim))
    q = rng.standard_normal(dim).astype(np.float32)
    q[0::2] *= np.float32(scale)
    q = (q / np.linalg.norm(q)).astype(np.float32)
    s, delta = exact.screen(slab, q, threads=2)
    exact_scores = score_rows(slab, q)
    assert np.isfinite(delta)
    gap = np.abs(s.astype(np.float64) - exact_scores.astype(np.float64))
    assert gap.max() <= delta


@settings(max_examples=30, deadline=None, suppress_health_check=FIXED)
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(65, 300), zero_share=st.floats(0.1, 1.0),
       threads=st.sampled_from([1, 2, 3]))
def test_scores_that_underflow_to_either_zero_rank_in_total_order(screen_backend, seed, n,
                                                                  zero_share, threads) -> None:
    # int8 rows whose scale is 0 (a row of subnormals quantises so) score (sum) * 0: +0.0 or
    # -0.0 by the sign of the sum; the reference ranks +0.0 first, then -0.0, each by row
    rng = np.random.default_rng(seed)
    codes = rng.integers(-127, 128, (n, 64)).astype(np.int8)
    scales = rng.uniform(0.001, 0.01, n).astype(np.float32)
    scales[rng.random(n) < zero_share] = 0.0
    scales[:2] = 0.0
    codes[1] = -codes[0]  # sums of opposite signs: both zeros are present
    slab = Slab.int8(scales, codes)
    q = rng.standard_normal(64).astype(np.float32)
    q = (q / np.linalg.norm(q)).astype(np.float32)
    every = score_rows(slab, q)
    assert sorted(np.signbit(every[:2]).tolist()) == [False, True]
    k = int(rng.integers(1, n + 3))
    want = descending_total_order(every, list(range(n)))[:k]
    ids, scores = search(slab, q, k, threads=threads)
    assert ids.tolist() == want
    assert scores.tobytes() == every[want].tobytes()


# int4 widths of every unrolled VNNI scan (128 ... 2048: 1-16 pairs of groups), two of the
# generic block loop (640, 1280: 5 and 10 pairs) and an odd group count (320: row by row)
INT4_DIMS = [128, 256, 320, 384, 512, 640, 768, 1024, 1280, 1536, 2048]


@settings(max_examples=40, deadline=None, suppress_health_check=FIXED)
@given(seed=st.integers(0, 2 ** 32 - 1), dim=st.sampled_from(INT4_DIMS),
       n=st.integers(65, 140), threads=st.sampled_from([1, 2, 3]))
def test_int4_screen_of_every_width_stays_within_its_bound(screen_backend, seed, dim, n,
                                                            threads) -> None:
    # row counts and thread ranges that are not whole blocks of rows: the tails too
    rng = np.random.default_rng(seed)
    slab = make_slab("int4", adversarial_rows(rng, n, dim))
    q = rng.standard_normal(dim).astype(np.float32)
    q = (q / np.linalg.norm(q)).astype(np.float32)
    s, delta = exact.screen(slab, q, threads=threads)
    gap = np.abs(s.astype(np.float64) - score_rows(slab, q).astype(np.float64))
    assert np.isfinite(delta) and gap.max() <= delta
    k = int(rng.integers(1, 12))
    ids, scores = search(slab, q, k, threads=threads)
    assert (ids.tolist(), scores.tobytes()) == full_scan(slab, q, k)


@pytest.mark.parametrize("screens", list(_scan_kernels.RUNNABLE))
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), dim=st.sampled_from([128, 256, 384, 512, 640, 768,
                                                              1024, 1536, 2048]),
       n=st.integers(1, 45))
def test_int4_screen_scales_each_row_and_group_by_its_own_scale(screens, seed, dim, n) -> None:
    # the screen's arithmetic, which its bound assumes: qscale * sum_g s_g * (exact integer
    # dot of group g), up to f32 roundings; every (row, group) scale a different power of
    # two, so lanes of one row or group summed under another's scale would miss by far more
    assert exact.load_kernels()
    kern = _scan_kernels.RUNNABLE[screens]
    rng = np.random.default_rng(seed)
    groups = dim // 64
    packed = rng.integers(0, 256, (n, dim // 2), dtype=np.uint8)
    exps = (np.arange(n)[:, None] * 5 + np.arange(groups)[None, :] * 3 + seed) % 13 - 6
    slab = Slab.int4(np.ldexp(1.0, exps).astype(np.float16), packed, dim)
    q = rng.standard_normal(dim).astype(np.float32)
    probe = exact._probe(slab, q, kern)
    qe, qo, _, qscale = probe.args
    qi = np.empty(dim, np.int64)
    qi[0::2], qi[1::2] = qe, qo
    codes = unpack_int4(packed).astype(np.int64).reshape(n, groups, 64)
    terms = codes * qi.reshape(groups, 64)
    scale = np.ldexp(1.0, exps)
    want = float(qscale) * (terms.sum(axis=2) * scale).sum(axis=1)  # exact in f64
    out = np.empty(n, np.float32)
    kern["range"]["int4"](*exact._slab_args(slab), *probe.args, 0, n, out)
    # f32 roundings: at most one per lane product, 16 lanes a group, and the sum tree
    size = float(qscale) * (np.abs(terms).sum(axis=2) * scale).sum(axis=1)
    slack = size * (32 * groups + 4) * 2.0 ** -24
    assert np.all(np.abs(out.astype(np.float64) - want) <= slack)


def test_int4_screen_covers_every_nibble(screen_backend) -> None:
    # bytes 0x00..0xFF in every position: all sixteen signed values, low and high
    rows = np.vstack([np.roll(np.arange(256, dtype=np.uint8), -r)[:64] for r in range(96)])
    slab = Slab.int4(np.full((96, 2), 0.5, np.float16), rows, 128)
    q = np.linspace(-1, 1, 128).astype(np.float32)
    q /= np.linalg.norm(q)
    s, delta = exact.screen(slab, q, threads=1)
    assert np.abs(s.astype(np.float64) - score_rows(slab, q)).max() <= delta


def test_threads_do_not_change_a_single_bit(screen_backend) -> None:
    rng = np.random.default_rng(3)
    m = rng.standard_normal((5000, 128)).astype(np.float32)
    m[1000:1100] = m[4]
    for dtype in DTYPES:
        slab = make_slab(dtype, m)
        q = (m[4] / np.linalg.norm(m[4])).astype(np.float32)
        one = search(slab, q, 50, threads=1)
        for t in (2, 3, 7):
            got = search(slab, q, 50, threads=t)
            assert got[0].tolist() == one[0].tolist() and got[1].tobytes() == one[1].tobytes()
        b1 = search_batch(slab, m[:9], 20, threads=1)
        b2 = search_batch(slab, m[:9], 20, threads=2)
        assert b1[0].tolist() == b2[0].tolist() and b1[1].tobytes() == b2[1].tobytes()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 0.5, -1.0, 2.0, 0.5, 3.25]), min_size=1,
                max_size=60), st.integers(1, 60))
def test_heap_selection_equals_partition(values: list[float], k: int) -> None:
    assert exact.load_kernels()
    s = np.array(values, dtype=np.float32)
    k = min(k, len(s))
    assert _scan_kernels.kth_largest(s, k) == np.partition(s, len(s) - k)[len(s) - k]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 0.5, -1.0, 2.0, 0.5, 3.25, 1e-45, -1e-45, 1e-38]),
                min_size=1, max_size=300), st.integers(1, 300),
       st.sampled_from([0.0, 1e-46, 1e-8, 0.25, 1.0, 1e300]))
def test_compiled_cut_keeps_exactly_the_rows_at_or_above_it(values, k, delta) -> None:
    assert exact.load_kernels()
    s = np.array(values, dtype=np.float32)
    k = min(k, len(s))
    found = np.empty(len(s), dtype=np.int64)
    count = _scan_kernels.screened_rows(s.view(np.int32), k, 2.0 * delta, found)
    kth = float(np.partition(s, len(s) - k)[len(s) - k])
    cut = kth - 2.0 * delta  # the f64 cut; the f32 one may sit below it, never above
    with np.errstate(over="ignore"):  # a huge delta: the f32 cut is -inf
        want = np.flatnonzero(s >= exact._cut(kth, delta))
    assert found[:count].tolist() == want.tolist()
    assert np.all(s[want].astype(np.float64) >= cut - abs(cut) * 2.0 ** -23 - 2.0 ** -149)
    assert set(np.flatnonzero(s.astype(np.float64) >= cut)) <= set(want.tolist())


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_compiled_cut_refuses_non_finite_screens(bad) -> None:
    assert exact.load_kernels()
    s = np.linspace(-1, 1, 1000).astype(np.float32)
    for at in (0, 500, 999):
        t = s.copy()
        t[at] = bad
        assert _scan_kernels.screened_rows(t.view(np.int32), 10, 0.0,
                                           np.empty(1000, np.int64)) == -1


def test_threads_default_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("URNA_THREADS", "3")
    assert exact.resolve_threads(None) == 3
    assert exact.resolve_threads(1) == 1
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(InvalidInput) as err:
            exact.resolve_threads(bad)  # type: ignore[arg-type]
        assert isinstance(err.value, UrnaError)


def test_non_finite_rows_fall_back_to_the_full_scan(screen_backend) -> None:
    rng = np.random.default_rng(9)
    m = rng.standard_normal((300, 64)).astype(np.float32)
    m[5] *= np.float32(3e37)
    slab = Slab.float32(m)
    q = np.ones(64, np.float32) / np.float32(8.0)
    ids, scores = search(slab, q, 3, threads=2)
    assert (ids.tolist(), scores.tobytes()) == full_scan(slab, q, 3)


@pytest.mark.parametrize("dtype", ["int8", "int4"])
@pytest.mark.parametrize("bits", [8, 16])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), dim=st.sampled_from([64, 100, 192, 384]),
       spread=st.sampled_from([1e-30, 1e-3, 1.0, 1e30]))
def test_compiled_query_quantiser_equals_numpy(dtype, bits, seed, dim, spread) -> None:
    if dtype == "int4" and dim % 64:
        dim = 128
    assert exact.load_kernels()
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal(dim) * spread).astype(np.float32)
    q[rng.integers(0, dim, 3)] = 0.0
    slab = make_slab(dtype, rng.standard_normal((2, dim)).astype(np.float32))
    want = exact._probe(slab, q, {"bits": {dtype: bits}})  # numpy's quantiser
    got = exact._probe(slab, q, {"bits": {dtype: bits}, "quantise": _scan_kernels.quantise_query})
    # the same rigorous norms (f64 sums in another order, both rounded up by 1e-9)
    assert np.allclose([got.err, got.norm], [want.err, want.norm], rtol=1e-12, atol=0)
    # |q| for the bound, rounded up: never below the f64 norm the numpy path uses
    assert got.qnorm >= exact._norm(q) and np.isclose(got.qnorm, exact._norm(q), rtol=1e-8)
    assert len(got.args) == len(want.args)
    for a, b in zip(got.args, want.args, strict=True):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()
        else:
            assert a == b and type(a) is type(b)

