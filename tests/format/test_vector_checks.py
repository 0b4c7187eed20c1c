"""The NaN/Inf walk of a slab (02-encodings §10.5) without numpy: ``vector_checks``.

The strided walk and numpy's walk are compared with a one-word-at-a-time oracle
(``struct`` + ``math.isfinite``) on random words, dense with the edge words: NaNs, infinities,
the largest finite values (top byte 0x7F / 0xFF but finite), subnormals and zeros. Blocks are
made small so that one payload spans many of them and a bad word lands anywhere in one.
"""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import InvalidEmbeddingValue
from urna.format.encodings import validate_embedding_values, vector_checks
from urna.format.encodings.vector_checks import all_finite, numpy_all_finite, strided_all_finite

EDGE_F32 = [0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x7F7FFFFF, 0xFF7FFFFF,
            0x7F000000, 0xFF7F0000, 0x00000001, 0x80000000, 0x00000000, 0x3F800000, 0x7F00FFFF]
EDGE_F16 = [0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x7BFF, 0xFBFF, 0x0001, 0x8000, 0x0000,
            0x3C00, 0x7800]


def _words(width: int, edges: list[int]) -> st.SearchStrategy[list[int]]:
    word = st.one_of(st.integers(0, (1 << (8 * width)) - 1), st.sampled_from(edges))
    return st.lists(word, max_size=300)


def _oracle(payload: bytes, width: int) -> bool:
    fmt = "<f" if width == 4 else "<e"
    return all(math.isfinite(v) for (v,) in struct.iter_unpack(fmt, payload))


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_checks, "_BLOCK", 64)


def _walks_agree(words: list[int], width: int) -> None:
    payload = struct.pack(f"<{len(words)}{'I' if width == 4 else 'H'}", *words)
    want = _oracle(payload, width)
    assert strided_all_finite(memoryview(payload), width) is want
    assert numpy_all_finite(memoryview(payload), width) is want


@settings(max_examples=400, deadline=None)
@given(_words(4, EDGE_F32))
def test_f32_walks_agree_with_each_word(words: list[int]) -> None:
    _walks_agree(words, 4)


@settings(max_examples=400, deadline=None)
@given(_words(2, EDGE_F16))
def test_f16_walks_agree_with_each_word(words: list[int]) -> None:
    _walks_agree(words, 2)


@pytest.mark.parametrize("position", [0, 15, 16, 17, 250])
def test_one_bad_word_anywhere_is_found(position: int) -> None:
    words = [0x3F800000] * 256
    words[position] = 0x7FC00000
    payload = struct.pack("<256I", *words)
    assert not strided_all_finite(memoryview(payload), 4)
    words[position] = 0x7F7FFFFF  # the largest finite value: top byte 0x7F, still finite
    assert strided_all_finite(memoryview(struct.pack("<256I", *words)), 4)


def test_words_past_the_count_are_not_read() -> None:
    payload = struct.pack("<3I", 0x3F800000, 0x3F800000, 0x7F800000)
    assert all_finite(payload, 4, 0, 2)
    assert not all_finite(payload, 4, 4, 2)
    assert all_finite(payload[:8] + b"\xff\xff\xff", 4)  # a partial word is not a value


def test_quantised_scales_are_walked() -> None:
    head = struct.pack("<II", 1, 0)
    codes = bytes(3)
    validate_embedding_values(0x04, 3, head + struct.pack("<f", 0.5) + codes, 1, 3)
    with pytest.raises(InvalidEmbeddingValue):
        validate_embedding_values(0x04, 3, head + struct.pack("<I", 0x7F800000) + codes, 1, 3)
    head4 = struct.pack("<II", 1, 1)
    with pytest.raises(InvalidEmbeddingValue):
        validate_embedding_values(0x04, 7, head4 + struct.pack("<H", 0x7E00) + bytes(32), 1, 64)
