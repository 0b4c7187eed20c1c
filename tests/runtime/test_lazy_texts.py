"""Texts decoded per record and the text-by-id lookup equal what the eager decode gives.

Claims: the lazy 0x02 table is taken exactly when the eager decoder accepts the payload (and
then holds the same texts), for any payload, well formed or damaged; the text a chunk id
maps to is the reference's (the last ordinal among the stored texts wins on a repeated id,
an unknown id maps to nothing), whether the ids are searched in place or held in a list;
the in-place search of the ids finds the first row as ``list.index`` does, never a match
that straddles two records; the spans of a verified body, walked only as far as asked, are
the decoded spans; a text error is raised before the search's own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import urna
from helpers.budget import examples
from helpers.mutate import find_entry, payload_range, reseal
from helpers.payloads import damaged, eager_result
from helpers.vectors import REF
from urna.errors import UrnaError
from urna.format.layout import PREFIX, SECTION_CHUNKS_CANONICAL
from urna.format.sections.canonical import (
    decode_spans,
    decode_texts,
    encode_chunk_ids,
    encode_spans,
    encode_texts,
)
from urna.runtime.lazy_tables import (
    LazyChunkIds,
    TextsById,
    WalkedSpans,
    lazy_chunk_ids,
    lazy_texts,
)

# multi-byte characters of every width, so a damaged byte can split one
texts = st.text(alphabet=st.sampled_from("ab \n\u00e9\u2010\U0001f600"), max_size=10)
# few letters and the bytes of a length field: ids repeat and match across record borders
ids = st.text(alphabet=st.sampled_from("ab\x00\x01\x02\x03"), max_size=4)


@settings(max_examples=examples(400, 150), deadline=None)
@given(rows=st.lists(texts, max_size=30), data=st.data())
def test_lazy_texts_taken_exactly_when_eager_decodes(rows: list[str],
                                                     data: st.DataObject) -> None:
    raw = damaged(encode_texts(rows), data)
    lazy = lazy_texts(raw, len(rows))
    eager = eager_result(decode_texts, raw, len(rows))
    assert (lazy is None) == isinstance(eager, type)
    if lazy is not None:
        assert list(lazy) == eager
        assert lazy[:] == eager
        assert [lazy[i] for i in range(-len(lazy), len(lazy))] == eager + eager


def test_lazy_texts_decline_a_body_cut_inside_a_character() -> None:
    # "é" is two bytes: moving one to the next record leaves both records invalid alone,
    # though the bytes of the two bodies together are valid UTF-8
    raw = encode_texts(["a\u00e9", "b"])
    cut = PREFIX.pack(1, 2) + b"\x02\x00\x00\x00a\xc3" + b"\x02\x00\x00\x00\xa9b"
    assert len(cut) == len(raw)
    assert lazy_texts(cut, 2) is None
    assert isinstance(eager_result(decode_texts, cut, 2), type)


def _reference_map(chunk_ids: list[str], stored: list[str]) -> dict[str, str]:
    """The reference's map, as the runtime built it before: the last ordinal wins."""
    return {cid: stored[i] for i, cid in enumerate(chunk_ids) if i < len(stored)}


@settings(max_examples=examples(400, 150), deadline=None)
@given(chunk_ids=st.lists(ids, max_size=25), n_texts=st.integers(0, 30), asked=ids,
       in_place=st.booleans(), searches=st.integers(0, 30))
def test_text_by_id_is_the_reference_map(chunk_ids: list[str], n_texts: int, asked: str,
                                         in_place: bool, searches: int) -> None:
    stored = [f"text {i}" for i in range(n_texts)]
    table = lazy_chunk_ids(encode_chunk_ids(chunk_ids), len(chunk_ids)) if in_place \
        else list(chunk_ids)
    assert table is not None  # ASCII ids are searched in place
    if isinstance(table, LazyChunkIds):
        table.searches_before_map = searches  # the answers before and after the map is built
    by_id = TextsById(table, stored)
    expected = _reference_map(chunk_ids, stored)
    for cid in [*chunk_ids, asked]:
        assert by_id.get(cid, "") == expected.get(cid, "")


@settings(max_examples=300, deadline=None)
@given(chunk_ids=st.lists(ids, max_size=25), asked=ids, stop=st.integers(0, 30),
       searches=st.integers(0, 40))
def test_lazy_id_index_is_list_index(chunk_ids: list[str], asked: str, stop: int,
                                     searches: int) -> None:
    lazy = lazy_chunk_ids(encode_chunk_ids(chunk_ids), len(chunk_ids))
    assert lazy is not None
    lazy.searches_before_map = searches  # searched in the bytes, then from the rows' map
    for cid in {*chunk_ids, asked}:
        for bound in (None, stop):
            try:
                want: int | None = chunk_ids.index(cid, 0, len(chunk_ids) if bound is None
                                                   else bound)
            except ValueError:
                want = None
            try:
                got: int | None = lazy.index(cid, 0, bound)
            except ValueError:
                got = None
            assert got == want


@pytest.mark.parametrize("name", ["quickstart-hybrid.urna", "dedup-hybrid.urna",
                                  "synthetic-compressed.urna", "quickstart-blobs.urna"])
def test_retrieve_and_cite_give_the_stored_texts(name: str) -> None:
    with urna.open(REF / name) as f:
        stored, chunk_ids = f.texts(), f.chunk_ids()
        q = f.vectors([min(7, f.n_embeddings - 1)])[0]
    by_id = _reference_map(chunk_ids, stored)
    with urna.open(REF / name) as f:  # a fresh file: no eager decode of the texts before
        res = f.retrieve(q, 5, query_text="the file")
        assert res.hits
        assert [h.text for h in res.hits] == [by_id[h.chunk_id] for h in res.hits]
    with urna.open(REF / name) as f:
        cited = f.cite(res.hits[0].citation_id)
        assert cited.text == stored[cited.ordinal]
        assert cited.ordinal == chunk_ids.index(res.hits[0].chunk_id)


def _bad_text_file(tmp_path: Path) -> Path:
    """quickstart-exact with one text byte made invalid UTF-8, every checksum resealed."""
    buf = bytearray((REF / "quickstart-exact.urna").read_bytes())
    start, end = payload_range(buf, SECTION_CHUNKS_CANONICAL)
    assert find_entry(buf, SECTION_CHUNKS_CANONICAL)[2].encoding == 0  # raw: bytes as stored
    buf[start + PREFIX.size + 4] = 0xFF  # the first byte of the first text
    path = tmp_path / "bad-text.urna"
    path.write_bytes(reseal(buf))
    return path


def test_a_text_error_comes_before_the_search_and_its_own_errors(tmp_path: Path) -> None:
    path = _bad_text_file(tmp_path)
    with urna.open(path) as f:
        with pytest.raises(UrnaError) as eager:
            f.texts()
        q = np.zeros(f.embedding_dim, np.float32)
        q[0] = 1.0
        for query in (q, q[:3]):  # a valid query, and one the search itself refuses
            with pytest.raises(type(eager.value)) as got:
                f.retrieve(query, 3)
            assert str(got.value) == str(eager.value)


_URIS = st.text(alphabet=st.sampled_from("ab/:\u00e9\u6771"), max_size=8)


@settings(max_examples=examples(300, 100), deadline=None)
@given(rows=st.lists(st.tuples(_URIS, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
                     max_size=30), data=st.data())
def test_walked_spans_are_the_decoded_spans_in_any_order(rows, data) -> None:
    raw = encode_spans(rows)
    reads: list[int] = []
    spans = WalkedSpans(lambda: reads.append(1) or raw, len(rows))
    assert len(spans) == len(rows) and not reads  # nothing read before a row is asked for
    order = data.draw(st.permutations(range(len(rows))))
    assert [spans[i] for i in order] == [rows[i] for i in order]
    assert list(spans) == rows == decode_spans(raw, len(rows)) and reads == ([1] if rows else [])
    if rows:
        spans[0] = ("blob://x", 1, 2)  # the blob overlay replaces entries
        assert spans[0] == ("blob://x", 1, 2) and spans[1:] == rows[1:]
