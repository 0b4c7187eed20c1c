"""0x14 blob_refs, 0x16 blob_span_overlay and 0x17 blob_data codecs (03-runtime §12.1-12.3).

Paths and what they raise (sections 20 / 22 / 23):
* version != 1                       -> UnsupportedSectionVersion(id, v)
* 0x14 count > remaining / 45        -> Malformed(20, "blob_refs: entry count exceeds payload")
* 0x14 uri length / utf-8 / flag     -> "blob_refs: uri length exceeds payload" /
                                        "blob_refs: uri is not utf-8" /
                                        "blob_refs: bad inlined flag f"
* 0x16 count > remaining / 16        -> Malformed(22,
                                                 "blob_span_overlay: entry count exceeds payload")
* 0x14 / 0x16 field past the end     -> Malformed(id, "unexpected EOF")
* 0x14 / 0x16 bytes after the table  -> "trailing bytes after records" /
                                        "trailing bytes after entries"
* 0x17 under 12 bytes                -> Malformed(23, "blob_data: payload shorter than header")
* 0x17 count > (size - 12) / 16      -> "blob_data: entry count exceeds payload"
* 0x17 offset + len past 2^64 / data -> "blob_data: entry i offset overflow" /
                                        "blob_data: entry i spans past payload (end > data_len)"
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.mutate import apply_case, section_cases
from helpers.vectors import section_payload
from urna.errors import InvalidInput, MalformedSectionPayload, UnsupportedSectionVersion, UrnaError
from urna.format import layout as L
from urna.format.sections.blobs import (
    BLOB_REF_NONE,
    BlobRef,
    decode_blob_data,
    decode_blob_refs,
    decode_overlay,
    encode_blob_data,
    encode_blob_refs,
    encode_overlay,
)

DATA = Path(__file__).resolve().parents[1] / "data"
REF = DATA / "ref-0.5.1"
BLOB_FILES = ["quickstart-blobs.urna", "synthetic-blobs.urna"]
REFS, OVERLAY, BLOBDATA = L.SECTION_BLOB_REFS, L.SECTION_BLOB_SPAN_OVERLAY, L.SECTION_BLOB_DATA


def expected(name: str) -> dict:
    return json.loads((REF / "expected.json").read_text())["files"][name]


def ref_from_option(d: dict) -> BlobRef:
    """A build_options blob_refs dict as a record (the hash may carry a sha256: prefix)."""
    digest = bytes.fromhex(d["content_hash"].removeprefix("sha256:"))
    return BlobRef(digest, d["original_uri"], d["byte_len"], d["inlined"])


def malformed(decoder, payload: bytes, section_id: int, reason: str) -> None:
    with pytest.raises(MalformedSectionPayload) as ei:
        decoder(payload)
    assert (ei.value.section_id, ei.value.reason) == (section_id, reason)


# ------------------------------------------------------------------ reference vectors


@pytest.mark.parametrize("name", BLOB_FILES)
def test_payloads_rebuilt_from_build_options_equal_the_reference(name):
    buf = (REF / name).read_bytes()
    opts = expected(name)["build_options"]
    refs = [ref_from_option(d) for d in opts["blob_refs"]]
    blobs = [None if p is None else (REF / p).read_bytes() for p in opts["blob_data_paths"]]
    spans = [(s["blob_ref_index"], s["byte_start"], s["byte_end"])
             for s in opts["chunk_blob_spans"]]
    assert encode_blob_refs(refs) == section_payload(buf, REFS)
    assert encode_blob_data(blobs) == section_payload(buf, BLOBDATA)
    assert encode_overlay(spans) == section_payload(buf, OVERLAY)


@pytest.mark.parametrize("name", BLOB_FILES)
def test_reference_payloads_decode_to_what_inspect_reports(name):
    buf = (REF / name).read_bytes()
    exp = expected(name)
    refs = decode_blob_refs(section_payload(buf, REFS))
    assert [dict(content_hash=r.content_hash_hex, original_uri=r.original_uri, byte_len=r.byte_len,
                 inlined=r.inlined) for r in refs] == exp["inspect"]["blobs"]
    payload = section_payload(buf, BLOBDATA)
    entries, data_start = decode_blob_data(payload)
    assert data_start == 12 + 16 * len(refs)
    (off, n), gap = entries
    blob = payload[data_start + off:data_start + off + n]
    assert hashlib.sha256(blob).hexdigest() == exp["blob0_sha256"] == refs[0].content_hash.hex()
    assert gap == (0, 0) and not refs[1].inlined
    overlay = decode_overlay(section_payload(buf, OVERLAY))
    assert len(overlay) == L.Header.unpack(buf).n_chunks
    assert [(None if i == BLOB_REF_NONE else i, a, b) for i, a, b in overlay] == [
        (s["blob_ref_index"], s["byte_start"], s["byte_end"])
        for s in exp["build_options"]["chunk_blob_spans"]]


def test_overlay_vector_from_the_reference_tests():
    refs = [BlobRef(bytes(32), "media/corpus.av1", 1_892_352, True)]
    spans = [(0, 0, 4096), (0, 4096, 8192), (None, 0, 0)]
    assert decode_blob_refs(encode_blob_refs(refs)) == refs
    assert decode_overlay(encode_overlay(spans)) == [(0, 0, 4096), (0, 4096, 8192),
                                                    (BLOB_REF_NONE, 0, 0)]


# ------------------------------------------------------------------ properties

blob_refs = st.lists(st.builds(BlobRef, st.binary(min_size=32, max_size=32), st.text(max_size=30),
                               st.integers(0, 2**64 - 1), st.booleans()), max_size=20)
overlays = st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1),
                              st.integers(0, 2**64 - 1)), max_size=40)
blob_lists = st.lists(st.one_of(st.none(), st.binary(max_size=64)), max_size=20)


@settings(max_examples=150, deadline=None)
@given(blob_refs)
def test_blob_refs_roundtrip_and_determinism(refs):
    payload = encode_blob_refs(refs)
    assert decode_blob_refs(payload) == refs
    assert encode_blob_refs(list(refs)) == payload


@settings(max_examples=150, deadline=None)
@given(overlays)
def test_overlay_roundtrip_and_determinism(rows):
    payload = encode_overlay(rows)
    assert decode_overlay(payload) == rows
    assert len(payload) == 12 + 20 * len(rows)
    assert encode_overlay(list(rows)) == payload


@settings(max_examples=150, deadline=None)
@given(blob_lists)
def test_blob_data_roundtrip_and_determinism(blobs):
    payload = encode_blob_data(blobs)
    entries, start = decode_blob_data(payload)
    assert [payload[start + o:start + o + n] if b is not None else None
            for (o, n), b in zip(entries, blobs, strict=False)] == blobs
    assert all(e == (0, 0) for e, b in zip(entries, blobs, strict=False) if b is None)
    assert encode_blob_data(list(blobs)) == payload


def test_empty_payloads():
    for enc, dec in ((encode_blob_refs, decode_blob_refs), (encode_overlay, decode_overlay)):
        assert enc([]) == struct.pack("<IQ", 1, 0) and dec(enc([])) == []
    assert decode_blob_data(encode_blob_data([])) == ([], 12)


# ------------------------------------------------------------------ encoder inputs


def test_overlay_index_none_is_blob_ref_none_and_widths_are_checked():
    assert encode_overlay([(None, 1, 2)]) == encode_overlay([(0xFFFFFFFF, 1, 2)])
    for bad in ((2**32, 0, 0), (-1, 0, 0), (0, -1, 0), (0, 0, 2**64)):
        with pytest.raises(InvalidInput):
            encode_overlay([bad])


def test_blob_ref_needs_a_32_byte_digest_and_a_u64_length():
    with pytest.raises(InvalidInput):
        encode_blob_refs([BlobRef(bytes(31), "u", 1, True)])
    with pytest.raises(InvalidInput):
        encode_blob_refs([BlobRef(bytes(32), "u", 2**64, True)])


# ------------------------------------------------------------------ 0x14 rejections

ONE_REF = encode_blob_refs([BlobRef(bytes(range(32)), "media/a.bin", 7, True)])


def test_blob_refs_version():
    with pytest.raises(UnsupportedSectionVersion) as ei:
        decode_blob_refs(struct.pack("<I", 0) + ONE_REF[4:])
    assert (ei.value.section_id, ei.value.version) == (REFS, 0)


def test_blob_refs_count_bound_and_truncations():
    malformed(decode_blob_refs, ONE_REF[:4] + struct.pack("<Q", 2) + ONE_REF[12:], REFS,
              "blob_refs: entry count exceeds payload")
    malformed(decode_blob_refs, ONE_REF[:4] + struct.pack("<Q", 2**63) + ONE_REF[12:], REFS,
              "blob_refs: entry count exceeds payload")
    for cut in range(len(ONE_REF)):
        with pytest.raises(UrnaError):
            decode_blob_refs(ONE_REF[:cut])
    malformed(decode_blob_refs, ONE_REF[:-1], REFS, "unexpected EOF")  # the inlined flag
    malformed(decode_blob_refs, ONE_REF[:8], REFS, "unexpected EOF")  # the count


def test_blob_refs_records_of_the_minimum_size():
    rec = bytes(32) + struct.pack("<I", 0) + struct.pack("<Q", 1) + b"\x01"
    assert len(rec) == 45
    refs = decode_blob_refs(struct.pack("<IQ", 1, 2) + rec + bytes(45))
    assert refs == [BlobRef(bytes(32), "", 1, True), BlobRef(bytes(32), "", 0, False)]
    no_flag = struct.pack("<IQ", 1, 1) + bytes(32) + struct.pack("<I", 3) + b"abc" + bytes(8)
    malformed(decode_blob_refs, no_flag, REFS, "unexpected EOF")
    malformed(decode_blob_refs, no_flag + bytes(3), REFS, "trailing bytes after records")


def test_blob_refs_field_faults():
    head = struct.pack("<IQ", 1, 1) + bytes(32)
    malformed(decode_blob_refs, head + struct.pack("<I", 100) + bytes(13), REFS,
              "blob_refs: uri length exceeds payload")
    malformed(decode_blob_refs, head + struct.pack("<I", 2) + b"\xc3\x28" + bytes(8) + b"\x00",
              REFS, "blob_refs: uri is not utf-8")
    malformed(decode_blob_refs, head + struct.pack("<I", 0) + bytes(8) + b"\x02", REFS,
              "blob_refs: bad inlined flag 2")
    malformed(decode_blob_refs, ONE_REF + b"\x00", REFS, "trailing bytes after records")


# ------------------------------------------------------------------ 0x16 rejections

TWO_SPANS = encode_overlay([(0, 0, 10), (None, 1, 2)])


def test_overlay_version():
    with pytest.raises(UnsupportedSectionVersion) as ei:
        decode_overlay(struct.pack("<I", 7) + TWO_SPANS[4:])
    assert (ei.value.section_id, ei.value.version) == (OVERLAY, 7)


def test_overlay_count_is_bounded_by_16_bytes_as_in_the_reference():
    malformed(decode_overlay, TWO_SPANS[:4] + struct.pack("<Q", 3) + TWO_SPANS[12:], OVERLAY,
              "blob_span_overlay: entry count exceeds payload")
    # 40 bytes of entries pass a 16-byte bound for 2 entries, so a claim of 2 over 36 bytes
    # (room for 2 by /16, not by /20) fails as EOF, as the reference does.
    malformed(decode_overlay, TWO_SPANS[:-4], OVERLAY, "unexpected EOF")
    malformed(decode_overlay, TWO_SPANS[:11], OVERLAY, "unexpected EOF")
    malformed(decode_overlay, TWO_SPANS + b"\x00", OVERLAY, "trailing bytes after entries")
    for cut in range(len(TWO_SPANS)):
        with pytest.raises(UrnaError):
            decode_overlay(TWO_SPANS[:cut])


# ------------------------------------------------------------------ 0x17 rejections

DATA_AB = encode_blob_data([b"abc", None, b"de"])


def test_blob_data_header_and_version():
    malformed(decode_blob_data, DATA_AB[:11], BLOBDATA, "blob_data: payload shorter than header")
    malformed(decode_blob_data, b"", BLOBDATA, "blob_data: payload shorter than header")
    with pytest.raises(UnsupportedSectionVersion) as ei:
        decode_blob_data(struct.pack("<I", 0) + DATA_AB[4:])
    assert (ei.value.section_id, ei.value.version) == (BLOBDATA, 0)


def test_blob_data_count_and_spans():
    malformed(decode_blob_data, DATA_AB[:4] + struct.pack("<Q", 2**64 - 1) + DATA_AB[12:], BLOBDATA,
              "blob_data: entry count exceeds payload")
    malformed(decode_blob_data, DATA_AB[:-1], BLOBDATA,
              "blob_data: entry 2 spans past payload (5 > 4)")
    hostile = bytearray(DATA_AB)
    hostile[12:28] = struct.pack("<QQ", 2**64 - 1, 1)
    malformed(decode_blob_data, bytes(hostile), BLOBDATA, "blob_data: entry 0 offset overflow")
    hostile[12:28] = struct.pack("<QQ", 2**64 - 2, 1)
    malformed(decode_blob_data, bytes(hostile), BLOBDATA,
              f"blob_data: entry 0 spans past payload ({2**64 - 1} > 5)")
    for cut in range(len(DATA_AB)):
        with pytest.raises(UrnaError):
            decode_blob_data(DATA_AB[:cut])


def test_blob_data_is_not_copied():
    payload = bytearray(encode_blob_data([b"xyz"]))
    entries, start = decode_blob_data(memoryview(payload))
    assert entries == [(0, 3)] and bytes(payload[start:]) == b"xyz"


# ------------------------------------------------------------------ reference mutation cases


_DECODERS = {REFS: decode_blob_refs, OVERLAY: decode_overlay, BLOBDATA: decode_blob_data}


def _cases():
    return [(sid, c) for sid in _DECODERS for c in section_cases(sid)
            if "references missing" not in c["message"]]


@pytest.mark.parametrize("sid, case", _cases(),
                         ids=lambda x: x["mutation"] if isinstance(x, dict) else str(x))
def test_reference_mutations_fail_with_the_reference_message(sid, case):
    payload = section_payload(apply_case(case), sid)
    with pytest.raises(UrnaError) as ei:
        _DECODERS[sid](payload)
    assert (type(ei.value).__name__, str(ei.value)) == (case["variant"], case["message"])


@settings(max_examples=300, deadline=None)
@given(st.data(), st.sampled_from([REFS, OVERLAY, BLOBDATA]))
def test_corrupted_payloads_fail_only_with_typed_errors(data, sid):
    payload = bytearray({REFS: ONE_REF, OVERLAY: TWO_SPANS, BLOBDATA: DATA_AB}[sid])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(payload) - 1))
        payload[at] = data.draw(st.integers(0, 255))
    with contextlib.suppress(UrnaError):
        _DECODERS[sid](bytes(payload[:data.draw(st.integers(0, len(payload)))]))
