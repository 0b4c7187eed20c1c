"""0x15 space_table codec and the band bytes next to it (03-runtime §11.1-11.2).

Paths and what they raise (section 21 = 0x15):
* version != 1                          -> UnsupportedSectionVersion(21, v)
* count > remaining / 22                -> Malformed(21, "space_table: entry count exceeds payload")
* a field past the end                  -> Malformed(21, "unexpected EOF")
* string length past the end / bad utf8 -> "space_table: string length exceeds payload" /
                                           "space_table: string is not utf-8"
* index 0 or >= 16, dtype code > 3,     -> "space_table: space_index i outside 1..15",
  empty name, hash without sha256:         "space_table: unknown dtype code c",
                                           "space_table: empty space name",
                                           "space_table: model_hash must be sha256:<hex>"
* duplicate index or name               -> decode: "space_table: duplicate index or name";
                                           encode: "... duplicate space_index i" /
                                                   "duplicate name n"
* bytes after the last entry            -> "trailing bytes after entries"
"""

from __future__ import annotations

import contextlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.mutate import apply_case, load_cases, section_cases
from urna.errors import InvalidInput, MalformedSectionPayload, UnsupportedSectionVersion, UrnaError
from urna.format import layout as L
from urna.format.sections.space_table import SpaceEntry, decode_space_table, encode_space_table

DATA = Path(__file__).resolve().parents[1] / "data"
REF = DATA / "ref-0.5.1"
SPACE_FILES = ["quickstart-spaces.urna", "synthetic-spaces.urna"]
HASH = "sha256:" + "1" * 64
HASH_BYTES = HASH.encode()


def table(buf: bytes) -> dict[int, tuple[L.SectionEntry, bytes]]:
    """First entry and payload of each section id, read through the file's own table."""
    h = L.Header.unpack(buf)
    out: dict[int, tuple[L.SectionEntry, bytes]] = {}
    for i in range(h.section_table_count):
        e = L.SectionEntry.unpack(buf, h.section_table_offset + i * L.URNA_SECTION_ENTRY_SIZE)
        out.setdefault(e.section_id, (e, buf[e.offset:e.offset + e.size]))
    return out


def build_options(name: str) -> dict:
    return json.loads((REF / "expected.json").read_text())["files"][name]["build_options"]


def entry(**kw) -> SpaceEntry:
    base = dict(space_index=1, name="vision", dim=32, dtype_code=0, model_hash=HASH, n_vectors=12)
    base.update(kw)
    return SpaceEntry(**base)


def raw_entry(index=1, name=b"vision", dim=2, dtype=0, model_hash=HASH_BYTES, n=3) -> bytes:
    return (struct.pack("<BI", index, len(name)) + name + struct.pack("<IBI", dim, dtype,
            len(model_hash)) + model_hash + struct.pack("<Q", n))


def raw_table(*entries: bytes, count: int | None = None, version: int = 1) -> bytes:
    return struct.pack("<IQ", version, len(entries) if count is None else count) + b"".join(entries)


def malformed(payload: bytes, reason: str) -> None:
    with pytest.raises(MalformedSectionPayload) as ei:
        decode_space_table(payload)
    assert (ei.value.section_id, ei.value.reason) == (L.SECTION_SPACE_TABLE, reason)


# ------------------------------------------------------------------ reference vectors


@pytest.mark.parametrize("name", SPACE_FILES)
def test_reference_table_decodes_to_the_build_options_and_reencodes(name):
    buf = (REF / name).read_bytes()
    sections = table(buf)
    payload = sections[L.SECTION_SPACE_TABLE][1]
    entries = decode_space_table(payload)
    spaces = build_options(name)["spaces"]
    n_chunks = L.Header.unpack(buf).n_chunks
    decoded = [(e.space_index, e.name, e.dim, e.dtype, e.model_hash, e.n_vectors)
               for e in entries]
    assert decoded == [
        (i + 1, s["name"], len(s["vectors"][0]), s.get("dtype", "float32"), s["model_hash"],
         n_chunks)
        for i, s in enumerate(spaces)]
    assert encode_space_table(entries) == payload


@pytest.mark.parametrize("name", SPACE_FILES)
def test_band_bytes_are_the_build_vectors_in_the_space_dtype(name):
    buf = (REF / name).read_bytes()
    sections = table(buf)
    entries = decode_space_table(sections[L.SECTION_SPACE_TABLE][1])
    for e, spec in zip(entries, build_options(name)["spaces"], strict=False):
        band_entry, band = sections[e.band_section_id]
        rows = np.asarray(spec["vectors"], dtype=np.float32)  # the reference reads f32 first
        if e.dtype == "float32":
            expected, encoding = rows.astype("<f4").tobytes(), L.ENCODING_RAW
        else:
            expected, encoding = rows.astype("<f2").tobytes(), 2  # float16 encoding id
        assert band_entry.encoding == encoding
        assert band == expected
        assert len(band) == e.n_vectors * e.dim * (4 if e.dtype == "float32" else 2)


# ------------------------------------------------------------------ properties

names = st.text(min_size=1, max_size=12)
entry_lists = st.lists(
    st.tuples(names, st.integers(0, 2**32 - 1), st.integers(0, 3),
              st.text(max_size=20), st.integers(0, 2**64 - 1)),
    max_size=15, unique_by=lambda t: t[0])


@settings(max_examples=150, deadline=None)
@given(entry_lists, st.permutations(list(range(1, 16))))
def test_roundtrip_and_determinism(rows, indices):
    entries = [SpaceEntry(idx, n, d, c, "sha256:" + h, v)
               for idx, (n, d, c, h, v) in zip(indices, rows, strict=False)]
    payload = encode_space_table(entries)
    assert decode_space_table(payload) == entries
    assert encode_space_table(list(entries)) == payload


def test_empty_table_is_the_bare_prefix():
    assert encode_space_table([]) == struct.pack("<IQ", 1, 0)
    assert decode_space_table(struct.pack("<IQ", 1, 0)) == []


# ------------------------------------------------------------------ entry rules, both ways


@pytest.mark.parametrize("kw, reason", [
    (dict(space_index=0), "space_table: space_index 0 outside 1..15"),
    (dict(space_index=16), "space_table: space_index 16 outside 1..15"),
    (dict(dtype_code=4), "space_table: unknown dtype code 4"),
    (dict(name=""), "space_table: empty space name"),
    (dict(model_hash="md5:abc"), "space_table: model_hash must be sha256:<hex>"),
])
def test_entry_rules_apply_to_encoder_and_decoder(kw, reason):
    with pytest.raises(MalformedSectionPayload) as ei:
        encode_space_table([entry(**kw)])
    assert (ei.value.section_id, ei.value.reason) == (L.SECTION_SPACE_TABLE, reason)
    e = entry(**kw)
    malformed(raw_table(raw_entry(index=e.space_index, name=e.name.encode(), dtype=e.dtype_code,
                                  model_hash=e.model_hash.encode())), reason)


def test_model_hash_needs_only_the_prefix():
    decoded = decode_space_table(encode_space_table([entry(model_hash="sha256:")]))
    assert decoded[0].model_hash == "sha256:"


def test_duplicates_are_rejected():
    with pytest.raises(MalformedSectionPayload, match="duplicate name vision"):
        encode_space_table([entry(), entry(space_index=2)])
    with pytest.raises(MalformedSectionPayload, match="duplicate space_index 1"):
        encode_space_table([entry(), entry(name="audio")])
    malformed(raw_table(raw_entry(index=1), raw_entry(index=2)),
              "space_table: duplicate index or name")
    malformed(raw_table(raw_entry(name=b"a"), raw_entry(name=b"b")),
              "space_table: duplicate index or name")


def test_values_past_their_field_width_are_caller_errors():
    for kw in (dict(dim=2**32), dict(n_vectors=-1), dict(space_index=256)):
        with pytest.raises(InvalidInput):
            encode_space_table([entry(**kw)])


# ------------------------------------------------------------------ structural rejections


def test_version_other_than_1_is_unsupported():
    with pytest.raises(UnsupportedSectionVersion) as ei:
        decode_space_table(raw_table(raw_entry(), version=0))
    assert (ei.value.section_id, ei.value.version) == (L.SECTION_SPACE_TABLE, 0)


def test_count_is_bounded_by_22_bytes_per_entry():
    one = raw_entry()
    malformed(raw_table(one, count=2**63), "space_table: entry count exceeds payload")
    malformed(struct.pack("<IQ", 1, 1) + bytes(21), "space_table: entry count exceeds payload")
    # 99 bytes pass the bound for two entries; the second one then runs out.
    assert len(one) == 99
    malformed(raw_table(one, count=2), "unexpected EOF")


def test_every_truncation_fails_typed():
    payload = encode_space_table([entry(), entry(space_index=2, name="audio", dtype_code=1)])
    for cut in range(len(payload)):
        with pytest.raises(UrnaError):
            decode_space_table(payload[:cut])
    malformed(payload[:-1], "unexpected EOF")
    malformed(payload[:2], "unexpected EOF")


def test_string_faults():
    long_name = struct.pack("<IQ", 1, 1) + struct.pack("<BI", 1, 1000) + bytes(40)
    malformed(long_name, "space_table: string length exceeds payload")
    malformed(raw_table(raw_entry(name=b"\xff\xfe")), "space_table: string is not utf-8")


def test_trailing_bytes_are_rejected():
    malformed(raw_table(raw_entry()) + b"\x00", "trailing bytes after entries")


# ------------------------------------------------------------------ reference mutation cases


@pytest.mark.parametrize("case", section_cases(L.SECTION_SPACE_TABLE),
                         ids=lambda c: c["mutation"])
def test_reference_mutations_fail_with_the_reference_message(case):
    payload = table(apply_case(case))[L.SECTION_SPACE_TABLE][1]
    with pytest.raises(UrnaError) as ei:
        decode_space_table(payload)
    assert (type(ei.value).__name__, str(ei.value)) == (case["variant"], case["message"])


def test_flipped_n_vectors_decodes_to_what_the_reader_then_rejects():
    case = load_cases()["synthetic-spaces__s15_payload_flip_fixed"]
    entries = decode_space_table(table(apply_case(case))[L.SECTION_SPACE_TABLE][1])
    # The reference's reader says "space vision lists 21648 vectors but the corpus has 400 chunks".
    assert case["message"].endswith(
        "space vision lists 21648 vectors but the corpus has 400 chunks")
    assert (entries[0].name, entries[0].n_vectors) == ("vision", 21648)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupted_payloads_fail_only_with_typed_errors(data):
    payload = bytearray(encode_space_table([entry(),
                                            entry(space_index=2, name="audio", dtype_code=1)]))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(payload) - 1))
        payload[at] = data.draw(st.integers(0, 255))
    with contextlib.suppress(UrnaError):
        decode_space_table(bytes(payload[:data.draw(st.integers(0, len(payload)))]))
