"""The numba-free beam's batched distances (``hnsw_beam.dist8_rows``) on hostile values.

Claim: for any rows and query, including infinities, NaN, overflowing products, signed zeros
and subnormals, and batches as wide as a layer-0 list, every distance has the bits of the
kernel's ``dist8`` (the block-major reduction adds each lane's blocks in the kernel's order),
NaN wherever it is NaN.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.index import _hnsw_dist as D
from urna.index import hnsw_beam

VALUES = st.one_of(st.floats(-3, 3, width=32),
                   st.sampled_from([0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, float("inf"),
                                    float("-inf"), float("nan")]))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 72), st.integers(1, 40), st.data())
def test_batched_distances_have_the_kernel_bits(dim, m, data) -> None:
    q = np.asarray(data.draw(st.lists(VALUES, min_size=dim, max_size=dim)), np.float32)
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rows = (rng.normal(size=(m, dim)) * 10.0 ** rng.integers(-20, 20, size=(m, dim)))
    rows = rows.astype(np.float32)
    for _ in range(data.draw(st.integers(0, 6))):  # some hostile cells
        rows[data.draw(st.integers(0, m - 1)), data.draw(st.integers(0, dim - 1))] = \
            data.draw(VALUES)
    with np.errstate(all="ignore"):  # inf - inf and overflow are the point here
        got = hnsw_beam.dist8_rows(q, rows)
        want = np.asarray([D.dist8(q, r) for r in rows], dtype=np.float32)
    # a NaN's sign and payload are the CPU's, not the order's: the beam reads NaN as NaN
    assert np.array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    assert got[keep].view(np.uint32).tolist() == want[keep].view(np.uint32).tolist()
