"""UrnaFile.vectors: the stored rows as float32 (beyond the reference)."""

from __future__ import annotations

import numpy as np
import pytest

import urna
from helpers.vectors import REF, corpus, section_payload


def test_float32_rows_are_the_stored_bytes():
    data = (REF / "synthetic-exact.urna").read_bytes()
    stored = np.frombuffer(section_payload(data, 0x04), dtype="<f4").reshape(-1, 64)
    with urna.open(REF / "synthetic-exact.urna") as f:
        assert np.array_equal(f.vectors(), stored)
        assert np.array_equal(f.vectors([3, 0, 3]), stored[[3, 0, 3]])
        with pytest.raises(IndexError):
            f.vectors([f.n_embeddings])


def test_quantised_rows_approximate_the_inputs():
    original = np.asarray([c["embedding"] for c in corpus("synthetic")["chunks"]], dtype=np.float32)
    for name, tol in (("synthetic-compressed.urna", 1e-3), ("synthetic-int4.urna", 0.1)):
        with urna.open(REF / name) as f:
            assert np.abs(f.vectors() - original).max() < tol
