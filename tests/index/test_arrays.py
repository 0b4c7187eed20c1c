"""sorted_distinct: np.unique's answer on integer arrays, without importing numpy.ma."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from urna.index.arrays import sorted_distinct

INT_ARRAYS = hnp.arrays(st.sampled_from([np.int64, np.int32, np.uint32, np.uint8]),
                        hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=40))


@given(INT_ARRAYS)
def test_equals_np_unique(values: np.ndarray) -> None:
    got = sorted_distinct(values)
    want = np.unique(values)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


def test_leaves_numpy_ma_unloaded() -> None:
    code = ("import sys, numpy as np\n"
            "from urna.index.arrays import sorted_distinct\n"
            "assert sorted_distinct(np.array([3, 1, 3, 2])).tolist() == [1, 2, 3]\n"
            "print('numpy.ma' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
