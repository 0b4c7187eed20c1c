"""The 0x08 term table read in place (format.sections.bm25_terms) is the record-by-record read.

Claims: on any table (names empty, 255 / 256+ bytes long, holding NUL or line feed bytes or
their own ``u32`` framing, multi-byte UTF-8, repeated, sorted or not; dfs that look like
length fields; tables whose starts the byte tests miss again and again) the records found
are the walk's (starts, names, dfs, end); ``find`` answers as a dict of the names (the last
of a repeated name) for every name and for absent ones (prefixes, extensions, one byte off);
``prefixed`` gives the names under a prefix in code point order; ``strictly_sorted`` is the
byte order of the names. A damaged table is refused exactly when the walk fails, and the
eager decoder raises the same error with or without the in-place read.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from urna.errors import UrnaError
from urna.format.sections import bm25 as bm25_codec
from urna.format.sections.bm25 import decode_bm25
from urna.format.sections.bm25_terms import read_term_table, record_starts
from urna.index.bm25 import Bm25Index

_PIECES = st.sampled_from(["a", "b", "ab", "\x00", "\n", "\x05\x00\x00\x00", "\u00e9", "\u6771",
                           "z" * 40, "q" * 300, "\U0001f600", "config"])
_NAME = st.one_of(
    st.lists(_PIECES, max_size=6).map("".join),
    st.text(alphabet="ab\x00", max_size=24),  # ties on the first 8 and 16 bytes
    st.text(max_size=12),
)
_DF = st.one_of(st.integers(0, 300), st.sampled_from([1 << 8, 1 << 16, 1 << 24, 2**32 - 1]))


def _table(names: list[str], dfs: list[int]) -> bytes:
    return b"".join(struct.pack("<I", len(raw)) + raw + struct.pack("<I", df)
                    for raw, df in zip((n.encode() for n in names), dfs, strict=True))


def _walk(buf: bytes, pos: int, n: int) -> tuple[list[int], list[str], list[int], int] | None:
    """The record-by-record read, written out here: None where a record runs out or a name
    is not UTF-8."""
    starts, names, dfs = [], [], []
    for _ in range(n):
        if pos + 4 > len(buf):
            return None
        (size,) = struct.unpack_from("<I", buf, pos)
        if pos + 8 + size > len(buf):
            return None
        try:
            names.append(buf[pos + 4:pos + 4 + size].decode("utf-8"))
        except UnicodeDecodeError:
            return None
        starts.append(pos)
        dfs.append(struct.unpack_from("<I", buf, pos + 4 + size)[0])
        pos += 8 + size
    return starts, names, dfs, pos


_TABLES = st.lists(st.tuples(_NAME, _DF), max_size=60).flatmap(lambda recs: st.tuples(
    st.just(recs), st.binary(max_size=9), st.binary(max_size=12), st.booleans()))


def _layout(case) -> tuple[bytes, int, list[str], list[int]]:
    recs, head, tail, ordered = case
    if ordered:  # what every writer produces: byte order, no repeats
        recs = sorted(dict(recs).items())
    names, dfs = [n for n, _ in recs], [d for _, d in recs]
    return head + _table(names, dfs) + tail, len(head), names, dfs


def _assert_is_the_walk(buf: bytes, pos: int, names: list[str], dfs: list[int]) -> None:
    want = _walk(buf, pos, len(names))
    assert want is not None
    table = read_term_table(buf, pos, len(names))
    assert table is not None
    assert table.starts.tolist() == want[0] and table.end == want[3]
    assert table.dfs.tolist() == want[2] == dfs
    assert [table[i] for i in range(len(names))] == want[1] == names
    assert table.names() == names
    named = read_term_table(buf, pos, len(names), names=True)
    assert named is not None and named.names() == names


@settings(max_examples=examples(400, 150), deadline=None)
@given(case=_TABLES)
def test_the_records_found_are_the_walks(case) -> None:
    buf, pos, names, dfs = _layout(case)
    _assert_is_the_walk(buf, pos, names, dfs)


@settings(max_examples=examples(400, 150), deadline=None)
@given(case=_TABLES, probes=st.lists(_NAME, max_size=8))
def test_lookups_answer_as_a_dict_of_the_names(case, probes: list[str]) -> None:
    buf, pos, names, _ = _layout(case)
    table = read_term_table(buf, pos, len(names))
    assert table is not None
    raw = [n.encode() for n in names]
    assert table.strictly_sorted() == all(a < b for a, b in zip(raw, raw[1:], strict=False))
    by_name = {n: i for i, n in enumerate(names)}
    near = [p for n in names[:10] for p in (n[:-1], n + "a", n + "\x00", n[:8], n[:16] + "b")]
    for term in [*names, *probes, *near, "", "\ud800"]:
        assert table.find(term) == by_name.get(term)
        assert (term in table) == (term in by_name)
    in_order = sorted(range(len(names)), key=names.__getitem__)
    for prefix in [*probes, *near, "", "a", "ab", "\x00", "aaaaaaaa", "aaaaaaaab", "\ud800"]:
        assert table.prefixed(prefix) == [i for i in in_order if names[i].startswith(prefix)]


@pytest.mark.parametrize("size", [0, 1, 254, 255, 256, 70_000])
def test_names_the_byte_tests_cannot_see_are_walked(size: int) -> None:
    # lengths past one byte, an empty name, a name that opens with its own framing, dfs that
    # look like a length field followed by a name
    names = sorted({"a" * size, "\x07\x00\x00\x00x", "b", "c" * 300, "d"})
    dfs = [7, 1 << 24, 0, 5, 2**32 - 1]
    buf = b"\x01\x00\x00\x00" + _table(names, dfs)
    _assert_is_the_walk(buf, 4, names, dfs)


def test_many_misses_in_a_row_fall_back_to_the_walk() -> None:
    # every other name longer than a byte: the guesses stop at each; after the last guess
    # the rest is walked
    names = [f"{i:05d}" + ("x" * 300 if i % 2 else "") for i in range(200)]
    dfs = list(range(200))
    buf = _table(names, dfs)
    _assert_is_the_walk(buf, 0, names, dfs)
    long_names = [f"{i:05d}" + "y" * 200 for i in range(300)]  # windows too short at first
    _assert_is_the_walk(_table(long_names, dfs + dfs[:100]), 0, long_names, dfs + dfs[:100])


def test_counts_beyond_the_bytes_are_refused_before_anything_is_allocated() -> None:
    buf = _table(["a", "b"], [1, 2])
    assert record_starts(buf, 0, 2**32 - 1) is None
    assert record_starts(buf, 0, -1) is None
    assert record_starts(buf, len(buf), 0) is not None


def _outcome(fn, raw: bytes):
    try:
        return fn(raw)
    except UrnaError as exc:
        return type(exc), str(exc)


@settings(max_examples=examples(500, 150), deadline=None)
@given(case=_TABLES, data=st.data())
def test_a_damaged_table_is_refused_where_the_walk_fails(case, data) -> None:
    buf, pos, names, _ = _layout(case)
    damaged = bytearray(buf)
    for _ in range(data.draw(st.integers(0, 3))):
        if damaged:
            at = data.draw(st.integers(0, len(damaged) - 1))
            damaged[at] = data.draw(st.sampled_from([0x00, 0x01, 0x0A, 0x80, 0xC3, 0xFF, 0x61]))
    raw = bytes(damaged[:data.draw(st.integers(pos, len(damaged)))])  # the table's start is read
    n = data.draw(st.sampled_from([len(names), len(names) + 1, max(len(names) - 1, 0)]))
    want = _walk(raw, pos, n)
    table = read_term_table(raw, pos, n)
    if want is None:
        assert table is None
    else:
        assert table is not None
        assert (table.starts.tolist(), table.names(), table.dfs.tolist(), table.end) == want


@settings(max_examples=examples(300, 100), deadline=None)
@given(docs=st.lists(st.lists(st.sampled_from(["a", "b\u00e9", "\u6771", "cc", "q" * 300]),
                              max_size=4).map(" ".join), min_size=1, max_size=12),
       data=st.data())
def test_the_eager_decoder_raises_the_same_error_with_or_without_the_in_place_read(
        docs: list[str], data) -> None:
    raw = bytearray(Bm25Index.build(docs).to_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.sampled_from([0x00, 0x01, 0x0A, 0x80, 0xC3, 0xFF, 0x61]))
    payload = bytes(raw[:data.draw(st.integers(0, len(raw)))])
    got = _outcome(decode_bm25, payload)
    fast = bm25_codec.read_term_table
    bm25_codec.read_term_table = lambda *a, **k: None  # the record-by-record cursor alone
    try:
        want = _outcome(decode_bm25, payload)
    finally:
        bm25_codec.read_term_table = fast
    assert got == want


def test_a_table_of_twenty_thousand_terms_looks_each_up() -> None:
    rng = np.random.default_rng(5)
    words = sorted({"".join(rng.choice(list("abcdefghij\u00e9"), int(rng.integers(1, 14))))
                    for _ in range(25_000)})
    dfs = rng.integers(1, 70_000, len(words)).tolist()
    buf = b"\x00" * 40 + _table(words, dfs) + b"tail"
    _assert_is_the_walk(buf, 40, words, dfs)
    table = read_term_table(buf, 40, len(words))
    assert table is not None and table.strictly_sorted()
    by_name = {w: i for i, w in enumerate(words)}
    # every word and a longer absent one: more lookups than a question's, so the later ones
    # go through the dict the table builds for a server's many queries
    for i, word in enumerate(words):
        assert table.find(word) == i
        longer = word + "\u00e9" * 9
        assert table.find(longer) == by_name.get(longer)
    assert table._by_name is not None
    for i in range(0, len(words), 97):
        prefix = words[i][:2]
        assert table.prefixed(prefix) == [j for j, w in enumerate(words) if w.startswith(prefix)]
