"""Encoding 4, the repack container: chunk_ids digests (kind 0) and spans columns (kind 1).

Expected bytes are the worked examples of 02-encodings §4 (derived by hand from the rules) and the
raw payloads of 01-container §8; the real-file agreement is in test_enc_reference.py.
"""

from __future__ import annotations

import contextlib
import random
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import MalformedSectionPayload
from urna.format.encodings import decode_section, repack
from urna.format.encodings.intpack import pack_u64s
from urna.format.encodings.repack import (
    BlockSpans,
    ColumnSpans,
    chunk_ids_eligible,
    column_span,
    decode_repack,
    encode_chunk_ids,
    encode_spans,
    spans_columns,
    spans_raw_pieces,
)
from urna.format.reader import UrnaView
from urna.format.sections.canonical import decode_spans, span_records

DATA = Path(__file__).resolve().parents[1] / "data"
ID0 = "sha256:" + "00" * 32
ID1 = "sha256:" + "01" * 32


def raw_ids(ids: list[str]) -> bytes:
    return struct.pack("<IQ", 1, len(ids)) + b"".join(
        struct.pack("<I", len(i)) + i.encode() for i in ids)


def raw_spans(spans) -> bytes:
    return struct.pack("<IQ", 1, len(spans)) + b"".join(
        struct.pack("<I", len(u.encode())) + u.encode() + struct.pack("<QQ", a, b)
        for u, a, b in spans)


def reason(payload: bytes) -> tuple[int, str]:
    with pytest.raises(MalformedSectionPayload) as info:
        decode_repack(payload)
    return info.value.section_id, info.value.reason


def test_chunk_ids_example():
    packed = encode_chunk_ids([ID0, ID1])
    assert packed == bytes.fromhex("00 02000000") + bytes(32) + b"\x01" * 32
    assert len(packed) == 69
    assert decode_repack(packed) == raw_ids([ID0, ID1])
    assert len(raw_ids([ID0, ID1])) == 162


def test_empty_chunk_id_list():
    assert encode_chunk_ids([]) == bytes.fromhex("0000000000")
    assert decode_repack(encode_chunk_ids([])) == struct.pack("<IQ", 1, 0)


@pytest.mark.parametrize("bad", [
    "sha256:" + "AB" * 32,          # uppercase hex
    "sha256:" + "00" * 31,          # short
    "md5:" + "00" * 32,             # wrong prefix
    "sha256:" + "0g" * 32,          # not hex
])
def test_non_canonical_ids_make_the_whole_list_ineligible(bad):
    assert chunk_ids_eligible([ID0])
    assert not chunk_ids_eligible([ID0, bad])


def test_spans_example():
    spans = [("a.txt", 5, 9), ("b.txt", 0, 100), ("a.txt", 9, 12)]
    packed = encode_spans(spans)
    assert packed.hex() == (
        "01" "03000000" "02000000" "05000000612e747874" "05000000622e747874"
        "16000000" "03000000010000000c000000" "0000000000000000" "01" "02"
        "17000000" "03000000010000000c000000" "0000000000000000" "04" "0509"
        "18000000" "03000000010000000c000000" "0300000000000000" "07" "813000")
    assert len(packed) == 108
    assert decode_repack(packed) == raw_spans(spans)


def test_span_lengths_wrap_modulo_2_64():
    spans = [("u", 10, 3)]  # end before start: length stored as a wrapping difference
    assert decode_repack(encode_spans(spans)) == raw_spans(spans)


def test_empty_and_unknown_kind():
    assert reason(b"") == (0, "intpack repack: empty payload")
    assert reason(b"\x07abc") == (0, "intpack repack: unknown kind 7")


def test_chunk_ids_body_checks():
    assert reason(b"\x00\x01\x00") == (1, "chunk_ids intpack: truncated count")
    # Two ids announced, 40 bytes present (64 needed).
    assert reason(b"\x00" + struct.pack("<I", 2) + bytes(40)) == (
        1, "chunk_ids intpack: digest body size mismatch")
    assert reason(b"\x00" + struct.pack("<I", 0xFFFFFFFF)) == (
        1, "chunk_ids intpack: digest body size mismatch")


def _spans_body(count, uris, cols, tail=b""):
    out = b"\x01" + struct.pack("<II", count, len(uris))
    out += b"".join(struct.pack("<I", len(u)) + u for u in uris)
    for col in cols:
        blob = pack_u64s(col)
        out += struct.pack("<I", len(blob)) + blob
    return out + tail


def test_spans_body_checks():
    assert reason(b"\x01\x01\x00") == (3, "want 4 bytes at offset 0, have 2")
    # A 1.3-billion URI claim in a tiny payload is refused before anything is allocated.
    hostile = b"\x01" + struct.pack("<II", 1, 1_300_000_000) + bytes(81)
    assert reason(hostile) == (3, "spans intpack: uri pool count exceeds payload")
    assert reason(_spans_body(2, [b"a"], [[0], [1], [2]])) == (
        3, "spans intpack: column length mismatch")
    assert reason(_spans_body(1, [b"a"], [[0], [1], [2]], b"!")) == (
        3, "trailing bytes: consumed 88 of 89")
    assert reason(_spans_body(1, [b"a"], [[1], [1], [2]])) == (
        3, "spans intpack: uri index out of range")
    assert reason(_spans_body(1, [b"\xff"], [[0], [1], [2]])) == (
        3, "invalid utf-8: invalid utf-8 sequence of 1 bytes from index 0")
    truncated_blob = b"\x01" + struct.pack("<II", 1, 0) + struct.pack("<I", 4) + bytes(4)
    assert reason(truncated_blob) == (0, "intpack: truncated u32")


def test_dispatch_retags_to_the_section():
    with pytest.raises(MalformedSectionPayload) as info:
        decode_section(0x03, 4, b"\x09")
    assert (info.value.section_id, info.value.reason) == (3, "intpack repack: unknown kind 9")
    with pytest.raises(MalformedSectionPayload) as info:
        decode_section(0x01, 4, b"\x00\x01\x00")
    assert info.value.section_id == 1


hexid = st.binary(min_size=32, max_size=32).map(lambda d: "sha256:" + d.hex())
span = st.tuples(st.text(max_size=12), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))


@settings(max_examples=60, deadline=None)
@given(st.lists(hexid, max_size=20))
def test_chunk_ids_roundtrip(ids):
    packed = encode_chunk_ids(ids)
    assert decode_repack(packed) == raw_ids(ids)
    assert encode_chunk_ids(ids) == packed


@settings(max_examples=60, deadline=None)
@given(st.lists(span, max_size=20))
def test_spans_roundtrip(spans):
    packed = encode_spans(spans)
    assert decode_repack(packed) == raw_spans(spans)
    assert encode_spans(spans) == packed


@settings(max_examples=100, deadline=None)
@given(st.lists(span, min_size=1, max_size=8), st.data())
def test_corrupted_spans_raise_only_typed_errors(spans, draw):
    with contextlib.suppress(MalformedSectionPayload):
        decode_repack(damaged_spans(spans, draw))


def damaged_spans(spans, draw) -> bytes:
    """``spans`` repacked, one byte set to a drawn value, then cut at a drawn length."""
    packed = bytearray(encode_spans(spans))
    pos = draw.draw(st.integers(0, len(packed) - 1))
    packed[pos] = draw.draw(st.integers(0, 255))
    return bytes(packed[:draw.draw(st.integers(0, len(packed)))])


@settings(max_examples=80, deadline=None)
@given(st.lists(span, max_size=30), st.integers(1, 200))
def test_streamed_spans_rebuild_is_the_raw_payload_in_bounded_pieces(spans, piece_bytes):
    # a content hash streams the rebuild: its length and bytes must be the raw payload's, and
    # no piece may hold more than one record past the piece size
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(repack, "SPANS_PIECE_BYTES", piece_bytes)
        length, pieces = spans_raw_pieces(memoryview(encode_spans(spans))[1:])
        pieces = list(pieces)
    raw = raw_spans(spans)
    assert (length, b"".join(pieces)) == (len(raw), raw)
    longest = max((4 + len(u.encode()) + 16 for u, _, _ in spans), default=0)
    assert pieces[0] == raw[:12]  # the prefix, then the records
    assert all(len(p) <= piece_bytes + longest for p in pieces[1:])


def test_a_repacked_file_reads_its_span_records_from_the_columns():
    # the reference wrote this file's 0x03 as a spans repack (encoding 4, kind 1)
    data = (DATA / "ref-0.5.1-tokens" / "tokens-hybrid.urna").read_bytes()
    view = UrnaView.from_bytes(data)
    assert view.entry(0x03).encoding == 4
    n = view.header.n_embeddings
    records = view.span_records(n)
    fresh = UrnaView.from_bytes(data)  # decodes 0x03 the plain way
    assert [records.span(i) for i in range(n)] == decode_spans(fresh.decoded(0x03), n)
    assert view.decoded(0x03) == fresh.decoded(0x03)


def test_a_repacked_span_count_other_than_the_header_fails_as_the_raw_records_do():
    data = (DATA / "ref-0.5.1-tokens" / "tokens-hybrid.urna").read_bytes()
    n = UrnaView.from_bytes(data).header.n_embeddings
    for wanted in (n - 1, n + 1):
        with pytest.raises(Exception) as ours:
            UrnaView.from_bytes(data).span_records(wanted)
        with pytest.raises(Exception) as theirs:
            span_records(UrnaView.from_bytes(data).decoded(0x03), wanted)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


@settings(max_examples=80, deadline=None)
@given(st.lists(span, max_size=30))
def test_column_spans_read_each_record_as_the_raw_payload_decodes_it(spans):
    # a search reads a few spans straight from the columns: each must be the raw record's,
    # the wrapped end included
    body = memoryview(encode_spans(spans))[1:]
    count, pool, idx, starts, lens = spans_columns(body)
    records = ColumnSpans(pool, idx, starts, lens)
    assert len(records) == len(spans)
    assert [records.span(i) for i in range(count)] == decode_spans(decode_repack(
        encode_spans(spans)), len(spans))


@settings(max_examples=80, deadline=None)
@given(st.lists(span, max_size=300))
def test_column_span_reads_one_record_without_numpy(spans):
    # a cite of a verified file reads its one span from one block of each column; every
    # record, across block boundaries, is the stored one, and none past the end is invented
    packed = encode_spans(spans)
    for i in sorted({0, 127, 128, len(spans) - 1, len(spans)} & set(range(len(spans) + 1))):
        assert column_span(packed, i) == (spans[i] if i < len(spans) else None)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b/\u00e9", "", "\U0001f600x"]),
                          st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)), max_size=400),
       st.data())
def test_block_spans_read_every_record_in_any_order(spans, draw):
    # a trusted open's spans: each record read from its blocks when asked, in any order and
    # more than once, is the stored one (the end wrapped mod 2^64); no record past the end
    records = BlockSpans.of(encode_spans(spans))
    assert records is not None and len(records) == len(spans)
    order = draw.draw(st.permutations(range(len(spans))))
    for i in [*order, *order[:3]]:
        uri, start, end = spans[i]
        assert records.span(i) == (uri, start, end)
    if spans:
        assert records.span(-1) == spans[-1]
    with pytest.raises(IndexError):
        records.span(len(spans))


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_block_spans_walked_past_their_block_budget_read_the_same_records(seed):
    # a walk of every record (a filter, a listing) switches to the columns decoded whole
    # part way: the records on both sides of the switch are the stored ones
    rnd = random.Random(seed)
    spans = [(rnd.choice(["a", "b/\u00e9", ""]), rnd.randrange(2**64), rnd.randrange(2**64))
             for _ in range(3000)]
    records = BlockSpans.of(encode_spans(spans))
    order = list(range(3000))
    rnd.shuffle(order)
    assert [records.span(i) for i in order] == [spans[i] for i in order]


def test_block_spans_take_only_a_spans_repack_whose_directories_parse():
    packed = encode_spans([("a", 1, 2), ("b", 3, 4)])
    assert BlockSpans.of(packed) is not None
    assert BlockSpans.of(b"\x00" + packed[1:]) is None  # kind 0: chunk ids
    assert BlockSpans.of(packed[:-3]) is None  # the last column cut
    assert BlockSpans.of(packed[:6]) is None
    assert BlockSpans.of(b"") is None


@settings(max_examples=150, deadline=None)
@given(st.lists(span, min_size=1, max_size=8), st.data())
def test_column_span_of_damaged_bytes_is_none_or_a_record(spans, draw):
    # damaged bytes never raise here: the caller falls back to the full decode and its errors
    got = column_span(damaged_spans(spans, draw), draw.draw(st.integers(0, 8)))
    assert got is None or (isinstance(got[0], str) and 0 <= got[1] < 2**64)
