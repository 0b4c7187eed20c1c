"""Checked records of 0x01 / 0x02 / 0x03 (``string_records``, ``span_records``) = the decoders.

``cite`` and ``validate`` read the tables as records: one walk over the lengths, the strings
built only for the record asked for. Claims: on any payload, well-formed or damaged, they end
as ``decode_strings`` / ``decode_spans`` end (the same records, or the same error class and
text); ``index`` is ``list.index`` of the decoded strings; a payload known to be checked
(``utf8_checked``) gives the same records.
"""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.outcomes import outcome
from urna.format.encodings.zstd import zstd_decompress
from urna.format.sections.canonical import (
    decode_spans,
    decode_strings,
    encode_spans,
    encode_strings,
    proven_span,
    proven_string,
    span_records,
    string_records,
)


def _past_127(records: st.SearchStrategy, filler: object) -> st.SearchStrategy:
    """``records``, some padded past 127 records: from 128 on, the count's bytes are not ASCII."""
    return st.builds(lambda got, pad, at: got[:at] + [filler] * pad + got[at:],
                     records, st.sampled_from([0, 0, 130, 300]), st.integers(0, 40))


TEXTS = _past_127(st.lists(st.sampled_from(["", "a", "sha256:" + "ab" * 32, "ção", "€uro",
                                            "x" * 200, "\U0001f600", "line\nbreak"]),
                           max_size=40), "id")
SPANS = _past_127(st.lists(st.tuples(st.sampled_from(["a.txt", "docs/ü.md", "", "p.pdf#page=2"]),
                                     st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
                           max_size=30), ("a.txt", 1, 2))


def _damaged(payload: bytes, data: st.DataObject) -> bytes:
    buf = bytearray(payload)
    for _ in range(data.draw(st.integers(0, 3))):
        kind = data.draw(st.sampled_from(["flip", "cut", "grow", "utf8"]))
        if kind == "flip" and buf:
            i = data.draw(st.integers(0, len(buf) - 1))
            buf[i] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "cut" and buf:
            del buf[data.draw(st.integers(0, len(buf) - 1)):]
        elif kind == "grow":
            buf += bytes(data.draw(st.integers(1, 5)))
        elif kind == "utf8" and len(buf) > 12:
            buf[data.draw(st.integers(12, len(buf) - 1))] = data.draw(
                st.sampled_from([0x80, 0xC3, 0xE2, 0xFF]))
    return bytes(buf)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.data())
def test_string_records_end_as_the_decoder(texts: list[str], data: st.DataObject) -> None:
    payload = _damaged(encode_strings(texts), data)
    expected = data.draw(st.sampled_from([None, len(texts)]))
    want = outcome(decode_strings, payload, expected, 0x02)

    def records(raw: bytes, n: int | None, sid: int) -> list[str]:
        got = string_records(raw, n, sid)
        return [got.text(i) for i in range(len(got))]

    assert outcome(records, payload, expected, 0x02) == want


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.sampled_from(["", "a", "ção", "zz", "sha256:" + "ab" * 32, "\ud800"]))
def test_index_is_list_index(texts: list[str], wanted: str) -> None:
    payload = encode_strings(texts)
    for checked in (False, True):
        got = string_records(payload, len(texts), 0x01, utf8_checked=checked)
        if wanted in texts:
            assert got.index(wanted) == texts.index(wanted)
        else:
            with pytest.raises(ValueError):
                got.index(wanted)


def test_equal_length_records_take_the_column_check() -> None:
    ids = [f"sha256:{i:064x}" for i in range(50)]
    got = string_records(encode_strings(ids), 50, 0x01)
    assert isinstance(got.starts, range)
    assert [got.text(i) for i in range(50)] == ids and got.index(ids[37]) == 37
    bad = bytearray(encode_strings(ids))
    bad[12 + 75 * 20] = 70  # one record's length: the column check refuses, the walk decides
    assert outcome(string_records, bytes(bad), 50, 0x01) == \
        outcome(decode_strings, bytes(bad), 50, 0x01)


@settings(max_examples=300, deadline=None)
@given(SPANS, st.data())
def test_span_records_end_as_the_decoder(spans: list, data: st.DataObject) -> None:
    payload = _damaged(encode_spans(spans), data)
    expected = data.draw(st.sampled_from([None, len(spans)]))
    want = outcome(decode_spans, payload, expected)

    def records(raw: bytes, n: int | None) -> list:
        got = span_records(raw, n)
        return [got.span(i) for i in range(len(got))]

    assert outcome(records, payload, expected) == want
    if want[0] == "ok":
        checked = span_records(payload, expected, utf8_checked=True)
        assert [checked.span(i) for i in range(len(checked))] == want[1]


@pytest.mark.parametrize("bad", [b"\xff", b"\xc3", b"\xed\xa0\x80"])
def test_many_ascii_records_and_one_bad_body_fail_as_the_decoder(bad: bytes) -> None:
    # 200 records: the count's low byte is 0xc8, so "all bytes ASCII" must leave the prefix out
    ids = encode_strings([f"id{i}" for i in range(200)])
    assert [string_records(ids, 200, 0x01).text(i) for i in range(200)] == \
        decode_strings(ids, 200, 0x01)
    broken = ids.replace(b"id77", b"id7" + bad[:1], 1)
    assert outcome(string_records, broken, 200, 0x01)[0] == "MalformedSectionPayload"
    assert outcome(string_records, broken, 200, 0x01) == \
        outcome(decode_strings, broken, 200, 0x01)
    spans = encode_spans([("a.txt", i, i + 1) for i in range(199)] + [("b.txt", 0, 1)])
    assert span_records(spans, 200).span(199) == ("b.txt", 0, 1)
    broken = spans.replace(b"b.txt", (b"b" + bad + b"xt.t")[:5], 1)
    assert outcome(span_records, broken, 200)[0] == "MalformedSectionPayload"
    assert outcome(span_records, broken, 200) == outcome(decode_spans, broken, 200)


@settings(max_examples=examples(200, 75), deadline=None)
@given(TEXTS, SPANS, st.data())
def test_a_proven_record_is_the_decoded_one(texts: list[str], spans: list,
                                            data: st.DataObject) -> None:
    # cite on bytes a verdict proved walks 0x02 / 0x03 only up to the cited record
    strings, rows = encode_strings(texts), encode_spans(spans)
    assert [proven_string(strings, i) for i in range(len(texts))] == texts
    assert [proven_span(rows, i) for i in range(len(spans))] == decode_spans(rows, None)
    # bytes that are not the proven ones never crash: None, and the full parse decides
    cut = data.draw(st.integers(0, max(0, len(strings) - 1)))
    for i in range(len(texts) + 2):
        got = proven_string(strings[:cut], i)
        assert got is None or got == texts[i]
    cut = data.draw(st.integers(0, max(0, len(rows) - 1)))
    for i in range(len(spans) + 2):
        got = proven_span(rows[:cut], i)
        assert got is None or got == decode_spans(rows, None)[i]


@settings(max_examples=examples(100, 40), deadline=None)
@given(TEXTS, SPANS, st.integers(1, 3), st.data())
def test_a_proven_record_read_from_a_zstd_prefix_is_the_decoded_one(
        texts: list[str], spans: list, n_frames: int, data: st.DataObject) -> None:
    # cite on a verified body decodes a zstd 0x02 / 0x03 only up to the cited record
    from urna.format.encodings.zstd import DecodedPrefix, zstd_compress

    def framed(raw: bytes) -> bytes:  # the decoded bytes split over n_frames frames
        cuts = sorted(data.draw(st.integers(0, len(raw))) for _ in range(n_frames - 1))
        bounds = [0, *cuts, len(raw)]
        return b"".join(zstd_compress(raw[a:b]) for a, b in itertools.pairwise(bounds))

    strings, rows = framed(encode_strings(texts)), framed(encode_spans(spans))
    for i in data.draw(st.lists(st.integers(-1, len(texts) + 1), max_size=5)):
        assert proven_string(DecodedPrefix(strings), i) == (
            texts[i] if 0 <= i < len(texts) else None)
    decoded = decode_spans(zstd_decompress(rows), None)
    for i in data.draw(st.lists(st.integers(-1, len(spans) + 1), max_size=5)):
        assert proven_span(DecodedPrefix(rows), i) == (
            decoded[i] if 0 <= i < len(spans) else None)


def test_a_count_no_payload_can_hold_is_refused_before_walking() -> None:
    huge = struct.pack("<IQ", 1, 2**40) + b"\x00" * 8
    assert outcome(string_records, huge, None, 0x02) == outcome(decode_strings, huge, None, 0x02)
    assert outcome(span_records, huge, None) == outcome(decode_spans, huge, None)
