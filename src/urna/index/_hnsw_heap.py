"""The HNSW beam's heaps and sort key, as plain Python that numba compiles.

The home of the rules the beams follow: ``_hnsw_kernels`` compiles these functions with numba
for long-lived processes. The numba-free beam of a short one (``hnsw_beam``, a CLI query) runs
the standard library's C ``heapq`` instead, whose push and pop follow these same rules on
negated keys (its docstring says how), so the two beams push, pop and order candidates
identically, ties and NaN included (``tests/index/test_hnsw_beam_heaps.py`` walks both).

The heap replays Rust's ``BinaryHeap``: a max-heap on ``key`` where "greater" means
``key_a > key_b``, so a NaN key compares Equal to everything (``partial_cmp().unwrap_or(Equal)``)
and the right child wins ties on the way down. Each function is self-contained (no call to
another plain function), which is what lets numba compile it on its own.
"""

from __future__ import annotations

import numpy as np

EPOCH_LIMIT = 65535  # visited stamps are uint16: at the wrap the array is cleared once


def push(key, val, size, k, v):  # type: ignore[no-untyped-def]
    """Append ``(k, v)`` and sift it up; returns the new size."""
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        if not (k > key[parent]):
            break
        key[pos] = key[parent]
        val[pos] = val[parent]
        pos = parent
    key[pos] = k
    val[pos] = v
    return size + 1


def pop_root(key, val, size):  # type: ignore[no-untyped-def]
    """Remove the root (the caller read it already); returns the new size.

    Rust's ``pop``: the last element moves to the root, sinks to the bottom always taking the
    greater child (the right one on a tie), then sifts up from there.
    """
    size -= 1
    if size > 0:
        k = key[size]
        v = val[size]
        pos = 0
        child = 1
        while child <= size - 2:
            if not (key[child] > key[child + 1]):
                child += 1
            key[pos] = key[child]
            val[pos] = val[child]
            pos = child
            child = 2 * pos + 1
        if child == size - 1:
            key[pos] = key[child]
            val[pos] = val[child]
            pos = child
        while pos > 0:
            parent = (pos - 1) >> 1
            if not (k > key[parent]):
                break
            key[pos] = key[parent]
            val[pos] = val[parent]
            pos = parent
        key[pos] = k
        val[pos] = v
    return size


def order_key(d, bits, tie):  # type: ignore[no-untyped-def]
    """An int64 that sorts like (distance ``d`` in total order, NaN last; then ``tie``).

    ``bits`` is the IEEE bit pattern of ``d`` (read through a uint32 view of its array).
    """
    if d != d:
        o = np.int64(0x7FFFFFFF)
    else:
        b = np.int64(bits)
        o = np.int64(0x7FFFFFFF) - b if b >= 0x80000000 else b
    return o * np.int64(4294967296) + np.int64(tie)
