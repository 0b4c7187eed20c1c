"""The decode registry (02-encodings §1.2), the 0x02 dictionary/dedup path and the dedup map (§7).

Also replays the reference's corrupted files (mutations-0.5.1.json) whose recorded error comes
from these codecs: decoding the damaged section must give the reference's exact message.
"""

from __future__ import annotations

import contextlib
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.mutate import apply_case, load_cases
from urna.errors import (
    MalformedSectionPayload,
    UnsupportedSectionEncoding,
    UnsupportedSectionVersion,
)
from urna.format.encodings import (
    decode_chunks_canonical_section,
    decode_section,
    zstd_compress,
)
from urna.format.encodings.dedup import decode_map, dedup, encode_map
from urna.format.encodings.intpack import pack_u64s
from urna.format.layout import URNA_SECTION_ENTRY_SIZE, Header, SectionEntry

DATA = Path(__file__).resolve().parents[1] / "data"


def canonical(texts: list[str], version: int = 1) -> bytes:
    out = struct.pack("<IQ", version, len(texts))
    for t in texts:
        out += struct.pack("<I", len(t.encode())) + t.encode()
    return out


@pytest.mark.parametrize("encoding", [0, 2, 3, 7])
def test_identity_encodings_return_the_payload(encoding):
    assert decode_section(0x05, encoding, b"\x01\x02") == b"\x01\x02"
    assert decode_section(0x05, encoding, memoryview(b"ab")) == b"ab"


@pytest.mark.parametrize("section_id, encoding", [(0x05, 5), (0x01, 6), (0x06, 8), (0x03, 11),
                                                  (0x02, 99), (0x0B, 6)])
def test_unknown_and_reserved_encodings(section_id, encoding):
    with pytest.raises(UnsupportedSectionEncoding) as info:
        if section_id == 0x02:
            decode_chunks_canonical_section(encoding, b"", None, None)
        else:
            decode_section(section_id, encoding, b"")
    assert (info.value.section_id, info.value.encoding) == (section_id, encoding)
    assert str(info.value) == (
        f"unsupported section encoding: section={section_id} encoding={encoding}")


def test_codec_errors_are_retagged_to_the_section():
    with pytest.raises(MalformedSectionPayload) as info:
        decode_section(0x06, 1, b"garbage!")
    assert str(info.value) == (
        "malformed section payload: section=6 "
        "reason=zstd decompression failed: Src size is incorrect")


def test_dedup_map_example():
    pool, refs = dedup(["a", "b", "a", "c", "b", "a"])
    assert pool == ["a", "b", "c"] and refs == [0, 1, 0, 2, 1, 0]
    blob = encode_map(refs)
    assert blob.hex() == "00" "06000000" "01000000" "0c000000" "0000000000000000" "02" "8401"
    assert decode_map(blob) == refs
    assert decode_map(blob + b"junk") == refs  # bytes after the blocks are ignored


def test_dedup_expansion_whatever_the_encoding():
    texts = ["a", "b", "a", "c", "b", "a"]
    pool, refs = dedup(texts)
    blob = encode_map(refs)
    assert decode_chunks_canonical_section(0, canonical(pool), None, blob) == canonical(texts)
    compressed_pool = zstd_compress(canonical(pool))
    assert decode_chunks_canonical_section(1, compressed_pool, None, blob) == canonical(texts)
    # The dictionary is ignored unless the encoding is 5.
    assert decode_chunks_canonical_section(0, canonical(texts), b"dict", None) == canonical(texts)


def _dedup_error(payload: bytes, blob: bytes, cls=MalformedSectionPayload):
    with pytest.raises(cls) as info:
        decode_chunks_canonical_section(0, payload, None, blob)
    return info.value


def test_dedup_rejections():
    good = canonical(["x", "y"])
    err = _dedup_error(good, b"")
    assert (err.section_id, err.reason) == (11, "dedup_map: empty")
    err = _dedup_error(good, b"\x03" + pack_u64s([0]))
    assert (err.section_id, err.reason) == (11, "dedup_map: unknown kind 3")
    err = _dedup_error(good, b"\x00" + pack_u64s([0, 2**32]))
    assert (err.section_id, err.reason) == (11, "dedup_map: back-ref exceeds u32")
    err = _dedup_error(good, b"\x00" + pack_u64s([0, 2]))
    assert (err.section_id, err.reason) == (11, "dedup_map: back-ref out of unique-pool range")
    err = _dedup_error(good, b"\x00\x01\x00")
    assert (err.section_id, err.reason) == (11, "intpack: truncated u32")
    err = _dedup_error(b"\x01\x00\x00\x00\x02", encode_map([0]))
    assert (err.section_id, err.reason) == (2, "chunks_canonical: truncated count prefix")
    err = _dedup_error(canonical(["x"], version=2), encode_map([0]), UnsupportedSectionVersion)
    assert (err.section_id, err.version) == (2, 2)
    err = _dedup_error(canonical(["x"]) + b"!", encode_map([0]))
    assert (err.section_id, err.reason) == (2, "trailing bytes: consumed 17 of 18")
    err = _dedup_error(canonical(["x"])[:-1] + b"\xff", encode_map([0]))
    assert err.reason == "invalid utf-8: invalid utf-8 sequence of 1 bytes from index 0"
    # A pool claiming 2^64-1 entries fails on the bytes, never allocates by the count.
    err = _dedup_error(struct.pack("<IQ", 1, 2**64 - 1) + b"\x01\x00\x00\x00x", encode_map([0]))
    assert err.reason == "want 4 bytes at offset 17, have 17"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["", "a", "b", "ção", "long text"]), max_size=30))
def test_dedup_roundtrip(texts):
    pool, refs = dedup(texts)
    blob = encode_map(refs)
    assert encode_map(dedup(texts)[1]) == blob
    compressed_pool = zstd_compress(canonical(pool))
    assert decode_chunks_canonical_section(1, compressed_pool, None, blob) == canonical(texts)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=300), st.data())
def test_corrupted_map_raises_only_typed_errors(refs, draw):
    blob = bytearray(encode_map(refs))
    pos = draw.draw(st.integers(0, len(blob) - 1))
    blob[pos] = draw.draw(st.integers(0, 255))
    with contextlib.suppress(MalformedSectionPayload):
        decode_chunks_canonical_section(0, canonical(["a"] * 6), None, bytes(blob))


_CODEC_REASON = re.compile(r"malformed section payload: section=(\d+) reason="
                           r"(zstd|intpack|chunk_ids intpack|spans intpack|dedup_map"
                           r"|txt_streams|fsst)")


def _codec_cases():
    out = []
    for key, case in sorted(load_cases().items()):
        found = _CODEC_REASON.match(case.get("message", ""))
        # HNSW and graph payloads are not codecs
        if found and int(found.group(1)) not in (0, 7, 12):
            out.append((key, case, int(found.group(1))))
    return out


CODEC_CASES = _codec_cases()


def test_the_mutation_set_exercises_these_codecs():
    assert len(CODEC_CASES) >= 40


@pytest.mark.parametrize("key, case, section_id", CODEC_CASES, ids=[c[0] for c in CODEC_CASES])
def test_reference_mutations_give_the_reference_message(key, case, section_id):
    buf = apply_case(case)
    header = Header.unpack(buf)
    entries: dict[int, SectionEntry] = {}
    for i in range(header.section_table_count):
        entry = SectionEntry.unpack(buf, header.section_table_offset
                                     + URNA_SECTION_ENTRY_SIZE * i)
        entries.setdefault(entry.section_id, entry)

    def payload(sid: int) -> bytes | None:
        e = entries.get(sid)
        return None if e is None else bytes(buf[e.offset:e.offset + e.size])

    with pytest.raises(MalformedSectionPayload) as info:
        if section_id in (0x02, 0x0B):
            decode_chunks_canonical_section(entries[2].encoding, payload(2), payload(0x0A),
                                            payload(0x0B))
        else:
            decode_section(section_id, entries[section_id].encoding, payload(section_id))
    assert str(info.value) == case["message"]
