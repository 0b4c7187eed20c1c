"""Open-time laziness and concurrency keep every answer the eager, serial open gave.

Claims: the lazy 0x01 / 0x03 tables either decline (the eager decoder then judges the bytes)
or give exactly the records the eager decoder gives, for any payload, well formed or not;
an open whose passes all run on worker threads yields the same hashes, tables and search
answers as the inline open; a file that opens can be closed at once (no thread still holds
a slice of the map).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from helpers.budget import examples
from helpers.payloads import damaged, eager_result
from helpers.vectors import REF
from urna.format import ahead
from urna.format.sections.canonical import (
    decode_chunk_ids,
    decode_spans,
    encode_chunk_ids,
    encode_spans,
)
from urna.runtime.lazy_tables import lazy_chunk_ids, lazy_spans

texts = st.text(alphabet=st.characters(codec="utf-8", max_codepoint=0x2FF), max_size=12)
spans = st.tuples(texts, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))


@settings(max_examples=examples(300, 100), deadline=None)
@given(ids=st.lists(texts, max_size=30), data=st.data())
def test_lazy_ids_match_eager(ids: list[str], data: st.DataObject) -> None:
    raw = damaged(encode_chunk_ids(ids), data)
    lazy = lazy_chunk_ids(raw, len(ids))
    eager = eager_result(decode_chunk_ids, raw, len(ids))
    if lazy is not None:
        assert list(lazy) == eager
        assert [lazy[i] for i in range(-len(lazy), len(lazy))] == eager + eager
        for cid in eager:
            assert lazy.index(cid) == eager.index(cid)


@settings(max_examples=examples(300, 100), deadline=None)
@given(rows=st.lists(spans, max_size=30), data=st.data())
def test_lazy_spans_match_eager(rows: list[tuple[str, int, int]], data: st.DataObject) -> None:
    raw = damaged(encode_spans(rows), data)
    lazy = lazy_spans(raw, len(rows))
    eager = eager_result(decode_spans, raw, len(rows))
    if lazy is not None:
        assert list(lazy) == eager
        assert lazy[:] == eager


def test_lazy_tables_taken_for_ascii_records() -> None:
    ids = [f"sha256:{i:064x}" for i in range(50)]
    rows = [(f"doc-{i % 7}.txt", i, i + i % 5) for i in range(50)]
    assert list(lazy_chunk_ids(encode_chunk_ids(ids), 50)) == ids
    assert list(lazy_spans(encode_spans(rows), 50)) == rows
    assert list(lazy_chunk_ids(encode_chunk_ids(["é", "ab"]), 2)) == ["é", "ab"]  # UTF-8 ids


def test_lazy_spans_take_the_blob_overlay() -> None:
    rows = [("a", 0, 1), ("b", 1, 2)]
    lazy = lazy_spans(encode_spans(rows), 2)
    lazy[1] = ("blob://x", 5, 6)
    assert list(lazy) == [("a", 0, 1), ("blob://x", 5, 6)]


def test_record_count_is_bounded_by_the_bytes() -> None:
    raw = struct.pack("<IQ", 1, 2**40) + b"\0" * 8
    assert lazy_chunk_ids(raw, 2**40) is None  # no 2^40-entry table is allocated


def _answers(path):
    f = urna.open(path)
    try:
        q = np.random.default_rng(3).normal(size=f.embedding_dim).astype(np.float32)
        hits = f.search(q, k=5)
        return (f.file_hash, f.content_hash, f.chunk_ids(),
                [(h.chunk_id, h.score, h.source_uri, h.offset_start, h.offset_end,
                  h.citation_id) for h in hits])
    finally:
        f.close()


@pytest.mark.parametrize("name", sorted(p.name for p in REF.glob("*.urna")))
def test_threaded_open_equals_inline(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inline = _answers(REF / name)
    monkeypatch.setattr(ahead, "INLINE_BYTES", 0)
    monkeypatch.setattr(ahead, "worker_count", lambda: 2)
    assert _answers(REF / name) == inline


def test_a_verified_repack_open_reads_only_the_spans_it_is_asked_for(verdict_cache,
                                                                      monkeypatch) -> None:
    # preset "compressed" repacks 0x03 into intpack columns; a repeat open of the same bytes
    # reads a span from one block of each column (repack.BlockSpans), never every column
    from urna.format.encodings import repack
    from urna.runtime.lazy_tables import LazySpans

    rng = np.random.default_rng(7)
    rows = rng.standard_normal((700, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    chunks = [{"canonical_text": f"text number {i} about topic {i % 7}",
               "source_uri": f"docs/file-{i % 53}.md", "byte_start": 10 * i,
               "byte_end": 10 * i + 9,
               "embedding": rows[i].tolist()} for i in range(700)]
    path = verdict_cache / "spans.urna"
    urna.build(str(path), "m", 16, "c/1", "sha256:" + "0" * 64, chunks, preset="compressed")
    with urna.open(path) as f:  # the first open decodes every column and keeps the verdict
        assert f._state.view.entry(0x03).encoding == 4
        want = [f._state.spans[i] for i in range(700)]
        hits = [(h.source_uri, h.offset_start, h.offset_end) for h in f.search(rows[400], 5)]

    def whole(*args):
        raise AssertionError("a verified repack's columns were decoded whole")

    from urna.format.encodings import intpack

    monkeypatch.setattr(repack, "spans_columns", whole)
    monkeypatch.setattr(intpack, "unpack_u64s", whole)
    with urna.open(path) as f:
        assert f._state.view.trusted
        assert isinstance(f._state.spans, LazySpans)
        assert isinstance(f._state.spans._records, repack.BlockSpans)
        assert [(h.source_uri, h.offset_start, h.offset_end) for h in f.search(rows[400], 5)] \
            == hits
        assert [f._state.spans[i] for i in (699, 0, 128, 127, 400)] == \
            [want[i] for i in (699, 0, 128, 127, 400)]
        monkeypatch.undo()  # a walk of every span may decode the columns whole
        assert list(f._state.spans) == want
    assert want[5] == ("docs/file-5.md", 50, 59)
