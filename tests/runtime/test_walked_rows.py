"""Rows of a proven payload read through one kept record walk equal the eager decode.

Claims: on a verified body whose verdict proved the texts' records, the texts (and the spans
of any verified body) are walked only as far as the rows read, and every row read, in any
order and from threads reading at once, is the eager decoder's; the one walk
(``canonical.RecordWalk``), taken in any steps, finds the full proof's record starts; a
payload that is not the proven one (cut, extended, poked, another count) never crashes or
hangs a read: each row read is either the eager decoder's row or raises the eager
decoder's own error.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from helpers.payloads import damaged
from helpers.vectors import REF
from urna.errors import UrnaError
from urna.format.encodings.zstd import DecodedPrefix, zstd_compress
from urna.format.sections.canonical import (
    ProvenSpans,
    ProvenStrings,
    RecordWalk,
    _record_starts,
    decode_spans,
    decode_texts,
    encode_spans,
    encode_texts,
    proven_span,
    proven_string,
)
from urna.runtime.lazy_tables import WalkedSpans, WalkedTexts

# multi-byte characters of every width, so a damaged byte can split one
_TEXTS = st.text(alphabet=st.sampled_from("ab \n\u00e9\u2010\U0001f600\x00"), max_size=12)
_URIS = st.text(alphabet=st.sampled_from("ab/:\u00e9\u6771"), max_size=8)
_SPANS = st.tuples(_URIS, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))


def _eager(decode: Callable[[bytes, int], list[Any]], raw: bytes, n: int) -> list[Any] | UrnaError:
    try:
        return decode(raw, n)
    except UrnaError as exc:
        return exc


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(_TEXTS, max_size=30), data=st.data())
def test_walked_texts_are_the_decoded_texts_in_any_order(rows: list[str],
                                                         data: st.DataObject) -> None:
    raw = encode_texts(rows)
    loads: list[int] = []
    texts = WalkedTexts(lambda: loads.append(1) or raw, len(rows))
    assert len(texts) == len(rows) and not loads  # nothing read before a row is asked for
    order = data.draw(st.permutations(range(len(rows))))
    assert [texts[i] for i in order] == [rows[i] for i in order]
    assert list(texts) == rows == decode_texts(raw, len(rows))
    assert texts[:] == rows and [texts[i] for i in range(-len(rows), 0)] == rows
    assert loads == ([1] if rows else [])  # the payload is loaded once


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(_TEXTS, min_size=1, max_size=40), data=st.data())
def test_a_walk_goes_only_as_far_as_the_row_read(rows: list[str], data: st.DataObject) -> None:
    texts = WalkedTexts(lambda: encode_texts(rows), len(rows))
    row = data.draw(st.integers(0, len(rows) - 1))
    assert texts[row] == rows[row]
    walk = texts._rows.walk()
    assert walk is not None and len(walk.starts) == row + 1


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(_TEXTS, min_size=1, max_size=200), spans=st.lists(_SPANS, max_size=200),
       data=st.data())
def test_threads_reading_at_once_read_the_decoded_rows(rows: list[str], spans: list,
                                                       data: st.DataObject) -> None:
    texts = WalkedTexts(lambda: encode_texts(rows), len(rows))
    walked_spans = WalkedSpans(lambda: encode_spans(spans), len(spans))
    orders = [data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=60)) for _ in range(4)]
    got: list[list[str]] = [[] for _ in orders]
    got_spans: list[list[Any]] = [[] for _ in orders]
    start = threading.Barrier(len(orders))

    def read(j: int) -> None:
        start.wait()
        got[j] = [texts[i] for i in orders[j]]
        got_spans[j] = [walked_spans[i % len(spans)] for i in orders[j]] if spans else []

    threads = [threading.Thread(target=read, args=(j,)) for j in range(len(orders))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for j, order in enumerate(orders):
        assert got[j] == [rows[i] for i in order]
        assert got_spans[j] == ([spans[i % len(spans)] for i in order] if spans else [])
    assert list(texts) == rows and list(walked_spans) == spans


def _check_reads(rows_of: Any, eager: list[Any] | UrnaError, n: int, order: list[int]) -> None:
    """Each read is the eager row, or (a payload the eager decoder refuses) a row the walk
    could read or the eager decoder's own error."""
    for i in order:
        try:
            got = rows_of[i]
        except UrnaError as exc:
            assert isinstance(eager, UrnaError)
            assert (type(exc), str(exc)) == (type(eager), str(eager))
            continue
        if isinstance(eager, list):
            assert got == eager[i]
        else:  # a row the walk read from bytes the eager decoder refuses as a whole
            assert isinstance(got, str) or (isinstance(got, tuple) and isinstance(got[0], str))
    assert len(rows_of) == n


@settings(max_examples=500, deadline=None)
@given(rows=st.lists(_TEXTS, min_size=1, max_size=20), data=st.data())
def test_texts_not_the_proven_bytes_give_the_eager_error_or_a_row(rows: list[str],
                                                                  data: st.DataObject) -> None:
    raw = damaged(encode_texts(rows), data)
    eager = _eager(decode_texts, raw, len(rows))
    order = data.draw(st.lists(st.integers(0, len(rows) - 1), min_size=1, max_size=25))
    _check_reads(WalkedTexts(lambda: raw, len(rows)), eager, len(rows), order)


@settings(max_examples=500, deadline=None)
@given(rows=st.lists(_SPANS, min_size=1, max_size=20), data=st.data())
def test_spans_not_the_proven_bytes_give_the_eager_error_or_a_row(rows: list,
                                                                  data: st.DataObject) -> None:
    raw = damaged(encode_spans(rows), data)
    eager = _eager(decode_spans, raw, len(rows))
    order = data.draw(st.lists(st.integers(0, len(rows) - 1), min_size=1, max_size=25))
    _check_reads(WalkedSpans(lambda: raw, len(rows)), eager, len(rows), order)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(_TEXTS, min_size=1, max_size=20), spans=st.lists(_SPANS, min_size=1,
                                                                       max_size=20),
       data=st.data())
def test_rows_read_from_a_zstd_prefix_are_the_eager_rows(rows: list[str], spans: list,
                                                         data: st.DataObject) -> None:
    # a verified body's zstd 0x02 (decoded into one buffer) and 0x03 (decoded as far as the
    # rows read): proven bytes, or (never on a verified body) bytes that are not the proven ones
    for raw, n, decode, walked in (
            (encode_texts(rows), len(rows), decode_texts, WalkedTexts),
            (encode_spans(spans), len(spans), decode_spans, WalkedSpans)):
        if data.draw(st.booleans()):
            raw = damaged(raw, data)
        frame = zstd_compress(raw)
        order = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=25))
        _check_reads(walked(lambda frame=frame: DecodedPrefix(frame), n, lambda raw=raw: raw),
                     _eager(decode, raw, n), n, order)


def test_hostile_lengths_fall_back_to_the_eager_error() -> None:
    good = encode_texts(["alpha", "beta", "gamma"])
    # (payload, the rows a walk can still read); every other row raises the eager error
    for raw, readable in ((good[:12], {}), (good[:14], {}), (good[:-1], {0: "alpha", 1: "beta"}),
                          (good[:12] + b"\xff\xff\xff\xff" + good[16:], {}), (b"", {}),
                          (b"\x01\x00", {}), (good[:12] + b"\x05\x00\x00\x00alph", {})):
        eager = _eager(decode_texts, raw, 3)
        assert isinstance(eager, UrnaError)
        texts = WalkedTexts(lambda raw=raw: raw, 3)
        for i in (2, 0, 1, 2):
            if i in readable:
                assert texts[i] == readable[i]
                continue
            with pytest.raises(UrnaError) as got:
                texts[i]
            assert (type(got.value), str(got.value)) == (type(eager), str(eager))


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(_TEXTS, max_size=30), spans=st.lists(_SPANS, max_size=30),
       steps=st.lists(st.integers(0, 35), max_size=6), data=st.data())
def test_the_one_walk_taken_in_steps_finds_the_full_proofs_starts(
        rows: list[str], spans: list, steps: list[int], data: st.DataObject) -> None:
    for raw, n, tail in ((damaged(encode_texts(rows), data), len(rows), 0),
                         (damaged(encode_spans(spans), data), len(spans), 16)):
        full = _record_starts(raw, n, tail)
        walk = RecordWalk(raw, tail)
        for step in steps:
            walk.walk(step)
        reached = walk.walk(n)
        if full is not None:
            assert reached and walk.starts == full and walk.end == len(raw)
    texts = encode_texts(rows)
    assert [proven_string(texts, i) for i in range(len(rows))] == rows
    assert [ProvenStrings(texts).text(i) for i in range(len(rows))] == rows
    assert proven_string(texts, len(rows)) is None  # past the payload: no row, no crash
    raw_spans = encode_spans(spans)
    assert [proven_span(raw_spans, i) for i in range(len(spans))] == spans
    assert ProvenSpans(raw_spans).span(len(spans)) is None


def test_a_proven_files_texts_are_walked_only_as_far_as_read(verdict_cache: Path) -> None:
    path = verdict_cache / "quickstart-hybrid.urna"
    shutil.copyfile(REF / path.name, path)
    q = np.random.default_rng(3).standard_normal(16).astype(np.float32)
    with urna.open(path) as f:  # the full open; its first retrieve keeps the texts' proof
        q = np.resize(q, f.embedding_dim)
        want = f.retrieve(q, 2, query_text="offline").to_dict()["hits"]
        eager, eager_spans = f.texts(), f.spans()
    with urna.open(path) as f:
        assert f._state.texts_proven
        texts = f._state.texts
        assert isinstance(texts, WalkedTexts)
        assert texts[1] == eager[1]
        walk = texts._rows.walk()
        assert walk is not None and len(walk.starts) == 2  # rows 0 and 1 only
        # its zstd 0x02 decoded into one buffer, never copied into bytes
        assert isinstance(walk.prefix, DecodedPrefix) and walk.prefix.done
        assert f.retrieve(q, 2, query_text="offline").to_dict()["hits"] == want
        assert list(texts) == eager
        assert list(f._state.spans) == eager_spans  # its zstd 0x03 read through a prefix
