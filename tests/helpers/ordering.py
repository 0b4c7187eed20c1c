"""The reference's score order written out independently of urna (§4): the tests' oracle."""

from __future__ import annotations

import numpy as np


def descending_total_order(s: np.ndarray, ids: list[int]) -> list[int]:
    """``ids`` by score in descending IEEE total order (-0.0 below +0.0), then id; NaN last."""
    def key(i: int) -> tuple:
        bits = int(s[i:i + 1].view(np.int32)[0])
        order = bits ^ 0x7FFFFFFF if bits < 0 else bits  # total order as a signed integer
        return (bool(np.isnan(s[i])), 0 if np.isnan(s[i]) else -order, ids[i])
    return [ids[i] for i in sorted(range(len(s)), key=key)]
