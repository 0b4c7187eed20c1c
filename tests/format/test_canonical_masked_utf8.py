"""The one-pass UTF-8 check of 0x02 / 0x03 bodies (``canonical.masked_utf8``) = each body's.

A process with numpy loaded checks every body of a large payload by incremental decodes of
copies, a block of whole records at a time, whose framing bytes (lengths, span tails) are line
feeds. Claims: it accepts exactly when every body decodes on its own, whatever bytes surround
it (a body cut inside a sequence whose next length byte would complete it, empty bodies, bad
bytes in the first, a middle or the last record, no record at all), whatever the block size
(records split at every block end, records larger than a block); and ``string_records`` /
``span_records`` taking it end as the decoders end, record for record or with the same error.
"""

from __future__ import annotations

import numpy as np  # noqa: F401 - loaded: the records take the masked check
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.outcomes import outcome
from urna.format.layout import pack_prefix
from urna.format.sections import canonical
from urna.format.sections.canonical import (
    decode_spans,
    decode_strings,
    masked_utf8,
    span_records,
    string_records,
)

# bodies valid or not alone; a lead byte, a lone continuation, a surrogate, an overlong form
PIECES = [b"", b"a", b"\xc3\xa7", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xc3", b"\xe2\x82",
          b"\x80", b"\xbf", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xff", b"\n"]
BODY = st.lists(st.sampled_from(PIECES), max_size=4).map(b"".join)


def _valid(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _strings_payload(bodies: list[bytes]) -> bytes:
    out = [pack_prefix(len(bodies))]
    for body in bodies:
        out.append(len(body).to_bytes(4, "little") + body)
    return b"".join(out)


def _starts(bodies: list[bytes], gap: int) -> list[int]:
    starts, at = [], 12 + 4
    for body in bodies:
        starts.append(at)
        at += len(body) + gap
    return starts


@settings(max_examples=400, deadline=None)
@given(st.lists(BODY, max_size=40), st.lists(st.integers(0, 255), min_size=16, max_size=16))
def test_the_masked_check_is_every_body_decoded_alone(bodies: list[bytes], tail: list) -> None:
    # strings: 4 framing bytes before each later body; spans: 20, and a 16-byte tail after the
    # last. Framing bytes are drawn hostile (continuations, leads) by the lengths and ``tail``.
    want = all(map(_valid, bodies))
    strings = _strings_payload(bodies)
    assert masked_utf8(strings, _starts(bodies, 4), 4, 0) is want
    spans = [pack_prefix(len(bodies))]
    for body in bodies:
        spans.append(len(body).to_bytes(4, "little") + body + bytes(tail))
    assert masked_utf8(b"".join(spans), _starts(bodies, 20), 20, 16) is want


@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("bad", [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80"])
def test_one_bad_body_among_many_is_found(where: str, bad: bytes) -> None:
    bodies = ["ção €".encode() * (i % 5) for i in range(600)]
    at = {"first": 0, "middle": 300, "last": 599}[where]
    bodies[at] += bad
    assert masked_utf8(_strings_payload(bodies), _starts(bodies, 4), 4, 0) is False
    bodies[at] = bodies[at][:-len(bad)]
    assert masked_utf8(_strings_payload(bodies), _starts(bodies, 4), 4, 0) is True


def test_a_sequence_the_next_length_would_complete_is_refused() -> None:
    # body 0 ends with the lead 0xc3; body 1 is 0xa9 bytes long, so the byte after the lead is
    # 0xa9, a continuation: read across the framing the two would make "é"
    bodies = [b"ab\xc3", b"x" * 0xA9]
    payload = _strings_payload(bodies)
    assert payload[12 + 4 + 3] == 0xA9
    assert masked_utf8(payload, _starts(bodies, 4), 4, 0) is False


def test_no_records_and_empty_bodies_pass() -> None:
    assert masked_utf8(_strings_payload([]), [], 4, 0) is True
    bodies = [b""] * 300
    assert masked_utf8(_strings_payload(bodies), _starts(bodies, 4), 4, 0) is True


def _hostile(payload: bytes, data: st.DataObject) -> bytes:
    """``payload`` as drawn: intact, cut short (down to empty), grown, or its count raised."""
    kind = data.draw(st.sampled_from(["intact", "intact", "cut", "grow", "count"]))
    if kind == "cut":
        return payload[:data.draw(st.integers(0, max(0, len(payload) - 1)))]
    if kind == "grow":
        return payload + bytes(data.draw(st.integers(1, 24)))
    if kind == "count" and len(payload) >= 12:
        count = int.from_bytes(payload[4:12], "little") + data.draw(st.integers(1, 2**40))
        return payload[:4] + count.to_bytes(8, "little") + payload[12:]
    return payload


@settings(max_examples=300, deadline=None)
@given(st.lists(BODY, max_size=30), st.data())
def test_records_taking_the_masked_check_end_as_the_decoders(bodies: list[bytes],
                                                             data: st.DataObject) -> None:
    # from the first record on, as if every payload were large; the decoders read record by
    # record with the bounded cursor and name the first bad body, record that runs out,
    # count past the payload or trailing byte
    raw = _hostile(_strings_payload(bodies), data)
    uri_bodies = data.draw(st.lists(BODY, min_size=len(bodies), max_size=len(bodies)))
    # tails of bytes past 0x7f: the whole payload is never ASCII
    spans_raw = _hostile(pack_prefix(len(bodies)) + b"".join(
        len(u).to_bytes(4, "little") + u + (2**63 + i).to_bytes(8, "little") * 2
        for i, u in enumerate(uri_bodies)), data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(canonical, "_MASKED_MIN_RECORDS", 0)

        def texts(payload: bytes) -> list[str]:
            got = string_records(payload, len(bodies), 0x02)
            return [got.text(i) for i in range(len(got))]

        def rows(payload: bytes) -> list:
            got = span_records(payload, len(bodies))
            return [got.span(i) for i in range(len(got))]

        assert outcome(texts, raw) == outcome(decode_strings, raw, len(bodies), 0x02)
        assert outcome(rows, spans_raw) == outcome(decode_spans, spans_raw, len(bodies))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1), st.binary(max_size=40))
def test_records_are_ascii_whatever_the_prefix_holds(count: int, records: bytes) -> None:
    # the count's bytes may pass 0x7f; only the records' bytes decide
    payload = pack_prefix(count) + records
    assert canonical._records_ascii(payload) is records.isascii()


@settings(max_examples=400, deadline=None)
@given(st.lists(BODY, max_size=40), st.lists(st.integers(0, 255), min_size=16, max_size=16),
       st.integers(1, 48))
def test_the_check_read_in_blocks_is_every_body_decoded_alone(bodies: list[bytes], tail: list,
                                                              block: int) -> None:
    # the bodies are read a buffer's worth of whole records at a time; a buffer of a few bytes
    # splits them at every record, and leaves the records longer than it to be read alone
    want = all(map(_valid, bodies))
    strings = _strings_payload(bodies)
    spans = b"".join([pack_prefix(len(bodies))] + [
        len(body).to_bytes(4, "little") + body + bytes(tail) for body in bodies])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(canonical, "_MASK_BLOCK", block)
        assert masked_utf8(strings, _starts(bodies, 4), 4, 0) is want
        assert masked_utf8(spans, _starts(bodies, 20), 20, 16) is want


@pytest.mark.parametrize("block", [1, 3, 7, 64, 1 << 18])
def test_a_sequence_split_by_a_block_end_is_judged_whole(block: int) -> None:
    # bodies holding multi-byte sequences that a block boundary would cut, were blocks not
    # made of whole records
    bodies = [b"ab" + "ç€😀".encode() * 3, b"x", "€".encode() * 5, b""]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(canonical, "_MASK_BLOCK", block)
        assert masked_utf8(_strings_payload(bodies), _starts(bodies, 4), 4, 0) is True
        bodies[2] = bodies[2][:-1]  # the last "€" cut short
        assert masked_utf8(_strings_payload(bodies), _starts(bodies, 4), 4, 0) is False
