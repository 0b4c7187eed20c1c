"""Hostile 0x18 metadata payloads: typed errors, fast, with small memory, never a crash.

Bodies are written by hand from the layout in format/sections/metadata.py and wrapped in a
valid prefix and zstd frame, so each corruption reaches the body parser.
"""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
from datetime import UTC, datetime

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import (
    MalformedSectionPayload,
    SectionCountMismatch,
    UnsupportedSectionVersion,
    UrnaError,
)
from urna.format.encodings.zstd import zstd_decompress
from urna.format.layout import SECTION_METADATA
from urna.format.sections.metadata import decode_metadata, encode_metadata

U32_MAX = 0xFFFFFFFF


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def wrap(body: bytes, n_rows: int, body_len: int | None = None) -> bytes:
    frame = zstandard.ZstdCompressor().compress(body)
    size = len(body) if body_len is None else body_len
    return struct.pack("<IQQ", 1, n_rows, size) + frame


def column(name: bytes, tag: int, validity: bytes, values: bytes) -> bytes:
    return u32(len(name)) + name + bytes([tag]) + validity + values


def malformed(payload: bytes, n_rows: int, needle: str) -> None:
    with pytest.raises(MalformedSectionPayload, match=needle) as info:
        decode_metadata(payload, n_rows)
    assert info.value.section_id == SECTION_METADATA


SMALL = encode_metadata([{"lang": "pt", "n": 1, "tags": ["a", "b"], "ok": True},
                         None, {"lang": "en", "f": 0.5,
                                "t": datetime(2020, 1, 1, tzinfo=UTC)}], 3)


def test_every_truncation_of_a_small_payload_is_a_typed_error() -> None:
    for cut in range(len(SMALL)):
        with pytest.raises(MalformedSectionPayload) as info:
            decode_metadata(SMALL[:cut], 3)
        assert info.value.section_id == SECTION_METADATA


def test_every_truncation_of_the_body_is_a_typed_error() -> None:
    body = zstd_decompress(SMALL[20:])
    for cut in range(len(body)):
        malformed(wrap(body[:cut], 3), 3, "metadata: ")


def test_prefix_checks() -> None:
    with pytest.raises(UnsupportedSectionVersion):
        decode_metadata(b"\x02" + SMALL[1:], 3)
    with pytest.raises(SectionCountMismatch) as info:
        decode_metadata(SMALL, 4)
    assert (info.value.section_id, info.value.expected, info.value.got) == (0x18, 4, 3)
    malformed(SMALL + b"\x00", 3, "zstd decompression failed")
    malformed(SMALL[:20] + b"not a zstd frame", 3, "zstd decompression failed")
    malformed(SMALL[:20], 3, "missing zstd frame")


def test_body_length_must_match_and_is_capped() -> None:
    body = u32(0)
    malformed(wrap(body, 0, body_len=3), 0, "zstd decompression failed")
    malformed(wrap(body, 0, body_len=40), 0, "body is 4 bytes, header says 40")
    malformed(wrap(body, 0, body_len=1 << 62), 0, "exceeds the cap")


@pytest.mark.parametrize(("body", "n_rows", "needle"), [
    (u32(U32_MAX), 0, "columns declared past the end"),
    (u32(1) + u32(U32_MAX) + b"abcd", 0, "want 4294967295 bytes"),
    (u32(1) + column(b"a", 9, b"\x01", b""), 1, "unknown type tag 9"),
    (u32(1) + column(b"a", 0, b"\x01", b""), 1, "unknown type tag 0"),
    (u32(1) + column(b"a", 1, b"", b""), 1, "want 1 bytes"),
    (u32(1) + column(b"a", 1, b"\x01", b"\x00" * 7), 1, "want 8 bytes"),
    (u32(1) + column(b"a", 1, b"\x03", b"\x00" * 8), 1, "padding bits"),
    (u32(1) + column(b"a", 1, b"\x00", struct.pack("<q", 5)), 1, "null row has a non-zero"),
    (u32(1) + column(b"a", 2, b"\x01", struct.pack("<d", float("nan"))), 1, "NaN"),
    (u32(1) + column(b"a", 3, b"\x01", b"\x02"), 1, "bool byte 2"),
    (u32(1) + column(b"a", 4, b"\x01", u32(U32_MAX)), 1, "dictionary of 4294967295"),
    (u32(1) + column(b"a", 4, b"\x01", u32(1) + u32(1) + b"x" + u32(1)), 1,
     "dictionary index 1 out of range"),
    (u32(1) + column(b"a", 4, b"\x01", u32(2) + u32(1) + b"y" + u32(1) + b"x" + u32(0)), 1,
     "not strictly ascending"),
    (u32(1) + column(b"a", 4, b"\x01", u32(2) + u32(1) + b"x" + u32(1) + b"x" + u32(0)), 1,
     "not strictly ascending"),
    (u32(1) + column(b"a", 4, b"\x01", u32(1) + u32(1) + b"\xff" + u32(0)), 1,
     "invalid utf-8"),
    (u32(1) + column(b"a", 6, b"\x01", u32(0) + u32(0) + u32(U32_MAX)), 1, "want 17179869180"),
    (u32(1) + column(b"a", 6, b"\x01", u32(1) + u32(1) + b"x" + u32(1) + u32(1) + u32(0)), 1,
     "offsets not non-decreasing from 0"),
    (u32(1) + column(b"a", 6, b"\x01", u32(1) + u32(1) + b"x" + u32(0) + u32(1) + u32(3)), 1,
     "dictionary index 3"),
    (u32(1) + column(b"a", 6, b"\x00", u32(1) + u32(1) + b"x" + u32(0) + u32(1) + u32(0)), 1,
     "null row has list items"),
    (u32(1) + column(b"a", 6, b"\x03", u32(0) + u32(0) + u32(2) + u32(1)), 2,
     "offsets not non-decreasing"),
    (u32(2) + column(b"b", 3, b"\x01", b"\x01") + column(b"a", 3, b"\x01", b"\x01"), 1,
     "out of order"),
    (u32(2) + column(b"a", 3, b"\x01", b"\x01") + column(b"a", 3, b"\x01", b"\x01"), 1,
     "out of order or duplicated"),
    (u32(1) + column(b"", 3, b"\x01", b"\x01"), 1, "bad column name"),
    (u32(1) + column(b"chunk_id", 3, b"\x01", b"\x01"), 1, "bad column name"),
    (u32(1) + column(b"\xc3", 3, b"\x01", b"\x01"), 1, "column name invalid utf-8"),
    (u32(1) + column(b"a", 3, b"\x01", b"\x01") + b"\x00", 1, "trailing bytes"),
    (u32(0) + b"\x00", 0, "trailing bytes"),
])
def test_hostile_bodies(body: bytes, n_rows: int, needle: str) -> None:
    malformed(wrap(body, n_rows), n_rows, needle)


def test_a_well_formed_hand_body_decodes() -> None:
    """The fixture bodies above are right apart from their one fault: this one has none."""
    body = u32(1) + column(b"a", 6, b"\x03", u32(1) + u32(1) + b"x" + u32(0) + u32(1) + u32(2)
                           + u32(0) + u32(0))
    table = decode_metadata(wrap(body, 2), 2)
    assert [table.row(0), table.row(1)] == [{"a": ["x"]}, {"a": ["x"]}]


@pytest.mark.parametrize("n_rows", [1 << 20, 1 << 40, (1 << 64) - 1])
def test_huge_row_counts_fail_fast_in_small_memory(n_rows: int) -> None:
    tracemalloc.start()
    try:
        malformed(wrap(u32(1) + column(b"a", 1, b"", b""), n_rows), n_rows, "want")
        malformed(wrap(u32(U32_MAX) + b"\x00" * 64, n_rows), n_rows, "past the end")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_corruptions_of_the_body_never_escape_the_typed_errors(data) -> None:
    body = bytearray(zstd_decompress(SMALL[20:]))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(body) - 1))
        body[i] = data.draw(st.integers(0, 255))
    try:
        table = decode_metadata(wrap(bytes(body), 3), 3)
    except UrnaError:
        return
    for i in range(3):  # whatever decodes is a readable table
        table.row(i)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 64))
def test_random_payloads_never_escape_the_typed_errors(blob: bytes, n_rows: int) -> None:
    for payload in (blob, SMALL[:20] + blob, wrap(blob, n_rows)):
        with contextlib.suppress(UrnaError):
            decode_metadata(payload, n_rows)
