"""Damaged section payloads for the lazy-decoder tests, and what the eager decoder makes of one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from urna.errors import UrnaError
from urna.format.layout import PREFIX
from urna.format.sections.bm25 import Bm25Payload


def eager_result(decode: Callable[[bytes, int], Any], raw: bytes, n: int) -> Any:
    """``decode(raw, n)``, or the class of the typed error it raises."""
    try:
        return decode(raw, n)
    except UrnaError as exc:
        return type(exc)


def damaged(raw: bytes, data: st.DataObject) -> bytes:
    """``raw`` kept, cut, extended, one byte poked, or its prefix count changed."""
    kind = data.draw(st.sampled_from(["keep", "cut", "extend", "poke", "count"]))
    if kind == "cut":
        return raw[:data.draw(st.integers(0, len(raw)))]
    if kind == "extend":
        return raw + data.draw(st.binary(min_size=1, max_size=8))
    if kind == "poke" and len(raw) > 0:
        pos = data.draw(st.integers(0, len(raw) - 1))
        return raw[:pos] + bytes([data.draw(st.integers(0, 255))]) + raw[pos + 1:]
    if kind == "count" and len(raw) >= PREFIX.size:
        return PREFIX.pack(1, data.draw(st.integers(0, 40))) + raw[PREFIX.size:]
    return raw


def bm25_payload(n_docs: int, k1: float, b: float, avgdl: float,
                 posts: list[list[tuple[int, int]]]) -> Bm25Payload:
    """A 0x08 payload of terms "aa", "bb", "cc" (one per posting list of ``(doc, tf)``), with
    doc lengths ``7d mod 5`` and whatever parameters (hostile ones too) are given."""
    terms = ["aa", "bb", "cc"][:len(posts)]
    offsets = np.cumsum([0] + [len(pl) for pl in posts]).astype(np.int64)
    return Bm25Payload(2, k1, b, avgdl, n_docs, len(terms),
                       np.asarray([(7 * d) % 5 for d in range(n_docs)], np.uint32), terms,
                       offsets, np.asarray([d for pl in posts for d, _ in pl], np.uint32),
                       np.asarray([tf for pl in posts for _, tf in pl], np.uint32))
