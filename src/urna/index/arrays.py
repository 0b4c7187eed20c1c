"""Small array helpers the index and runtime layers share."""

from __future__ import annotations

import numpy as np


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """The distinct integers of ``values`` (flattened), ascending: ``np.unique`` without its
    first-call import of ``numpy.ma`` (~15 ms of a command-line query)."""
    a = np.sort(np.asarray(values).ravel())
    if a.size < 2:
        return a
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def negative_zeros(scores: np.ndarray) -> np.ndarray:
    """Where ``scores`` hold -0.0: the sort key that puts +0.0 before -0.0 (IEEE total order),
    which numpy's compare calls equal."""
    return (scores == 0) & np.signbit(scores)
