"""Slabs for the exact-scan tests: every dtype quantised as the writer does, random corpora."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from urna.index.exact import Slab

DTYPES = ("float32", "float16", "int8", "int4")


def make_slab(dtype: str, m: np.ndarray) -> Slab:
    """The rows ``m`` stored as ``dtype`` (the writer's quantisers, §2.2)."""
    if dtype == "float32":
        return Slab.float32(np.ascontiguousarray(m, dtype=np.float32))
    if dtype == "float16":
        return Slab.float16(m.astype(np.float16))
    n, d = m.shape
    if dtype == "int8":
        sc = (np.abs(m).max(axis=1) / 127).astype(np.float32)
        sc[sc == 0] = 1
        codes = np.clip(np.round(m / sc[:, None]), -127, 127).astype(np.int8)
        return Slab.int8(sc, codes)
    g = m.reshape(n, d // 64, 64)
    sc16 = (np.abs(g).max(axis=2) / 7).astype(np.float16)
    sc16[sc16 == 0] = 1
    codes = np.clip(np.round(g / sc16.astype(np.float32)[..., None]), -8, 7).astype(np.int8)
    codes = codes.reshape(n, d)
    packed = ((codes[:, 0::2] & 0x0F) | ((codes[:, 1::2] & 0x0F) << 4)).astype(np.uint8)
    return Slab.int4(sc16, packed, d)


@st.composite
def corpora(draw):
    """Random unit rows with duplicates and near-duplicates, a query near one row, a k."""
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(65, 400))
    dim = draw(st.sampled_from([64, 128, 192]))
    m = rng.standard_normal((n, dim)).astype(np.float32)
    dups = draw(st.integers(0, n // 3))
    src = rng.integers(0, n, dups)
    dst = rng.integers(0, n, dups)
    m[dst] = m[src]  # exact ties, possibly straddling the cut-off
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = m[rng.integers(0, n)] + draw(st.sampled_from([0.0, 1e-3, 0.3, 3.0])) * \
        rng.standard_normal(dim).astype(np.float32)
    q = (q / np.linalg.norm(q)).astype(np.float32)
    k = draw(st.sampled_from([1, 2, 10, n - 1, n, n + 5]))
    threads = draw(st.sampled_from([1, 2, 3]))
    return m, q, k, threads
