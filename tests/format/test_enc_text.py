"""The per-chunk text container: txt_streams (10), zstd_dict (5) with 0x0A, fsst (9).

Expected bytes are the worked examples of 02-encodings §6 (their zstd frames stored raw, so stable);
the reference picked fsst with byte-identical output on a corpus in test_enc_reference.py. Every
rejection of §6.1 / §6.3 / §6.4 is exercised with its reason text.
"""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urna.errors import MalformedSectionPayload, UnsupportedSectionEncoding
from urna.format.encodings import decode_chunks_canonical_section, decode_section
from urna.format.encodings.fsst import _Encoder, build_table, decode_fsst, encode_fsst
from urna.format.encodings.intpack import pack_u64s
from urna.format.encodings.textcontainer import (
    KIND_FSST,
    decode_txt_streams,
    encode_txt_streams,
    parse_container,
    txt_streams_text,
)
from urna.format.encodings.zstd import zstd_compress
from urna.format.encodings.zstd_dict import (
    decode_zstd_dict,
    encode_zstd_dict,
    train_dict,
)


def canonical(texts: list[str]) -> bytes:
    out = struct.pack("<IQ", 1, len(texts))
    for t in texts:
        raw = t.encode()
        out += struct.pack("<I", len(raw)) + raw
    return out


def reason(fn, *args) -> str:
    with pytest.raises(MalformedSectionPayload) as info:
        fn(*args)
    assert info.value.section_id in (0, 2)
    return info.value.reason


DICT_CORPUS = [f"record {i}: the shared boilerplate of every chunk in this corpus, id {i * 7}"
               for i in range(40)]
DICT = train_dict(DICT_CORPUS)


def test_txt_streams_example():
    payload = encode_txt_streams(["alpha", ""])
    assert payload.hex() == (
        "00" "0200000000000000" "03000000010000000c000000" "0000000000000000" "05" "c05d"
        "28b52ffd0068290000616c706861" "28b52ffd2000010000")
    assert len(payload) == 55
    assert decode_txt_streams(payload) == canonical(["alpha", ""])
    assert txt_streams_text(payload, 0) == "alpha"
    assert reason(txt_streams_text, payload, 2) == "txt_streams: index out of range"


def test_empty_containers():
    assert encode_txt_streams([]).hex() == "00" + "00" * 8 + "01000000010000000c000000" + "00" * 9
    assert len(encode_fsst([])) == 36
    assert encode_fsst([]).endswith(bytes.fromhex("020000000000"))
    assert decode_section(0x02, 10, encode_txt_streams([])) == canonical([])
    assert decode_section(0x02, 9, encode_fsst([])) == canonical([])


def test_fsst_examples():
    payload = encode_fsst(["aaaa"])
    assert payload.hex() == (
        "02" "0100000000000000" "02000000010000000c000000" "0000000000000000" "01" "02"
        "10000000" "0400" "03616161" "026161" "0461616161" "0161" "02")
    assert build_table(b"ababab") == [b"abab", b"ababab", b"aba", b"ababa", b"bab", b"babab",
                                      b"ab", b"baba", b"ba", b"a", b"b"]
    two = encode_fsst(["abab", "ab"])
    assert two[-2:] == b"\x00\x06"
    assert decode_fsst(two) == canonical(["abab", "ab"])


def test_fsst_walk_gives_up_on_a_missing_edge():
    # The reference's trie walk returns "no match" as soon as a byte has no edge, even after
    # passing a shorter symbol; with 8+ bytes left only a full 8-byte symbol can match.
    coder = _Encoder([b"abc", b"abcd", b"abcdefgh", b"ab"])
    assert coder.encode(b"abc") == b"\x00"
    assert coder.encode(b"abcX") == bytes.fromhex("ff61ff62ff63ff58")
    assert coder.encode(b"abcdefghab") == b"\x02\x03"
    assert coder.encode(b"abcdefgX") == bytes.fromhex("ff61ff62ff63ff64ff65ff66ff67ff58")


def test_zstd_dict_roundtrip_and_frame_header():
    assert DICT is not None and DICT[:4] == b"\x37\xa4\x30\xec"
    payload = encode_zstd_dict(DICT_CORPUS + [""], DICT)
    assert decode_zstd_dict(payload, DICT) == canonical(DICT_CORPUS + [""])
    dict_id = DICT[4:8]
    # The empty text is a one-shot frame with the dictID and content size 0.
    assert payload.endswith(b"\x28\xb5\x2f\xfd\x23" + dict_id + b"\x00\x01\x00\x00")
    assert decode_chunks_canonical_section(5, payload, DICT, None) == canonical(DICT_CORPUS + [""])


def test_dictionary_training_rules():
    assert train_dict(["a", "b", "c", "d", "e", "f", "g"]) is None  # fewer than 8 unique
    assert train_dict([""] * 20) is None
    assert train_dict(DICT_CORPUS) == train_dict(list(reversed(DICT_CORPUS)) + DICT_CORPUS[:3])
    assert len(DICT) <= 4096


def test_zstd_dict_needs_its_dictionary():
    payload = encode_zstd_dict(DICT_CORPUS, DICT)
    with pytest.raises(MalformedSectionPayload) as info:
        decode_chunks_canonical_section(5, payload, None, None)
    assert (info.value.section_id, info.value.reason) == (
        2, "zstd_dict: dict-framed section but no dictionary (0x0A)")
    other = train_dict([t.upper() + " zz" for t in DICT_CORPUS])
    assert reason(decode_zstd_dict, payload, other) == "zstd_dict: decompress: Dictionary mismatch"
    with pytest.raises(UnsupportedSectionEncoding) as err:
        decode_section(0x05, 5, payload)
    assert (err.value.section_id, err.value.encoding) == (5, 5)


def container(kind: int, declared: int, offsets_blob: bytes, region: bytes) -> bytes:
    return bytes([kind]) + struct.pack("<Q", declared) + offsets_blob + region


PREFIX = {0: ("txt_streams", decode_txt_streams), 2: ("fsst", decode_fsst),
          1: ("zstd_dict", lambda p: decode_zstd_dict(p, DICT))}


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_container_rejections(kind):
    name, decode = PREFIX[kind]
    assert reason(decode, b"") == f"{name}: empty"
    assert reason(decode, bytes([(kind + 1) % 3]) + bytes(20)) == (
        f"{name}: unknown kind {(kind + 1) % 3}")
    assert reason(decode, bytes([kind]) + bytes(7)) == f"{name}: truncated count"
    assert reason(decode, bytes([kind]) + bytes(8) + b"\x01\x00") == "intpack: truncated u32"
    assert reason(decode, container(kind, 0, pack_u64s([]), b"")) == (
        f"{name}: offset table must hold n+1 >= 1")
    assert reason(decode, container(kind, 2**64 - 1, pack_u64s([0]), b"")) == (
        f"{name}: declared count != offset count - 1")
    assert reason(decode, container(kind, 2, pack_u64s([0, 1]), b"x")) == (
        f"{name}: declared count != offset count - 1")
    assert reason(decode, container(kind, 1, pack_u64s([1, 1]), b"")) == (
        f"{name}: first offset must be 0")
    # 129 zero offsets whose two blocks share one 9-byte body: shorter than the canonical table.
    shared = struct.pack("<IIII", 129, 2, 16, 16) + bytes(9)
    assert reason(decode, container(kind, 128, shared, b"")) == f"{name}: truncated offset table"
    assert reason(decode, container(kind, 2, pack_u64s([0, 5, 3]), bytes(5))) == (
        f"{name}: non-monotonic offsets")
    if kind != 2:
        assert reason(decode, container(kind, 1, pack_u64s([0, 3]), bytes(4))) == (
            f"{name}: final offset != streams length")


def test_txt_streams_frame_errors():
    bad = container(0, 1, pack_u64s([0, 4]), b"abcd")
    assert reason(decode_txt_streams, bad) == "zstd decompression failed: Src size is incorrect"
    frame = zstd_compress(b"\xff\xfe")
    bad = container(0, 1, pack_u64s([0, len(frame)]), frame)
    assert reason(decode_txt_streams, bad) == (
        "txt_streams: invalid utf-8: invalid utf-8 sequence of 1 bytes from index 0")
    # An empty slice is an empty text (zstd of zero bytes decodes to nothing).
    assert decode_txt_streams(container(0, 1, pack_u64s([0, 0]), b"")) == canonical([""])


def fsst_payload(region: bytes, offsets=(0,)) -> bytes:
    return container(2, len(offsets) - 1, pack_u64s(list(offsets)), region)


def test_fsst_rejections():
    table = struct.pack("<H", 1) + b"\x02ab"
    good = struct.pack("<I", len(table)) + table
    assert decode_fsst(fsst_payload(good + b"\x00\xff\x63", (0, 3))) == canonical(["abc"])
    assert reason(decode_fsst, fsst_payload(b"\x01\x00")) == "fsst: truncated region header"
    assert reason(decode_fsst, fsst_payload(struct.pack("<I", 1) + b"\x01")) == (
        "fsst: truncated table count")
    assert reason(decode_fsst, fsst_payload(struct.pack("<IH", 2, 256))) == (
        "fsst: table count exceeds 255")
    assert reason(decode_fsst, fsst_payload(struct.pack("<IH", 3, 1))) == (
        "fsst: truncated symbol len")
    assert reason(decode_fsst, fsst_payload(struct.pack("<IH", 3, 1) + b"\x00")) == (
        "fsst: symbol len out of range")
    assert reason(decode_fsst, fsst_payload(struct.pack("<IH", 3, 1) + b"\x09")) == (
        "fsst: symbol len out of range")
    assert reason(decode_fsst, fsst_payload(struct.pack("<IH", 6, 1) + b"\x03ab")) == (
        "fsst: truncated symbol bytes")
    assert reason(decode_fsst, fsst_payload(struct.pack("<I", 9) + table + bytes(9))) == (
        "fsst: declared table length mismatch")
    assert reason(decode_fsst, fsst_payload(good + b"\x00", (0, 2))) == (
        "fsst: final offset != streams length")
    assert reason(decode_fsst, fsst_payload(good + b"\x00\xff", (0, 2))) == "fsst: trailing escape"
    assert reason(decode_fsst, fsst_payload(good + b"\x01", (0, 1))) == (
        "fsst: code out of table range")
    assert reason(decode_fsst, fsst_payload(good + b"\xff\xc3", (0, 2))) == (
        "fsst: invalid utf-8: incomplete utf-8 byte sequence from index 0")


def test_dispatch_retags_container_errors():
    with pytest.raises(MalformedSectionPayload) as info:
        decode_section(0x05, 9, b"")
    assert (info.value.section_id, info.value.reason) == (5, "fsst: empty")


texts_strategy = st.lists(st.text(max_size=40), max_size=12)


@settings(max_examples=40, deadline=None)
@given(texts_strategy)
def test_txt_streams_roundtrip(texts):
    payload = encode_txt_streams(texts)
    assert decode_txt_streams(payload) == canonical(texts)
    assert encode_txt_streams(texts) == payload


@settings(max_examples=60, deadline=None)
@given(texts_strategy)
def test_fsst_roundtrip(texts):
    payload = encode_fsst(texts)
    assert decode_fsst(payload) == canonical(texts)
    assert encode_fsst(texts) == payload


@settings(max_examples=40, deadline=None)
@given(texts_strategy)
def test_zstd_dict_roundtrip(texts):
    payload = encode_zstd_dict(texts, DICT)
    assert decode_zstd_dict(payload, DICT) == canonical(texts)
    assert encode_zstd_dict(texts, DICT) == payload


@settings(max_examples=120, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=5),
       st.sampled_from([0, 1, 2]), st.data())
def test_corruption_raises_only_typed_errors(texts, kind, draw):
    encode = {0: encode_txt_streams, 1: lambda t: encode_zstd_dict(t, DICT), 2: encode_fsst}[kind]
    payload = bytearray(encode(texts))
    pos = draw.draw(st.integers(0, len(payload) - 1))
    payload[pos] = draw.draw(st.integers(0, 255))
    cut = draw.draw(st.integers(0, len(payload)))
    with contextlib.suppress(MalformedSectionPayload):
        PREFIX[kind][1](bytes(payload[:cut]))


def _naive_table(corpus: bytes) -> list[bytes]:
    """§6.4's ranking spelled out: every 1..8-byte substring, (len-1)*count desc, bytes asc."""
    from collections import Counter

    counts = Counter(corpus[i:i + n] for n in range(1, 9) for i in range(len(corpus) - n + 1))
    return sorted(counts, key=lambda s: (-(len(s) - 1) * counts[s], s))[:255]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([b"", b"ab", b"\x00", b"abcdefgh"]))
def test_fsst_table_matches_the_spelled_out_ranking(data, motif):
    corpus = data + motif * 5 + data[:7]
    assert build_table(corpus) == _naive_table(corpus)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgh é", max_size=40), max_size=12))
def test_fsst_corpus_pass_codes_each_text_as_alone(texts):
    # encode_fsst finds 8-byte matches in one pass over the joined texts; each text's codes
    # must be those of the text coded on its own (no match may straddle two texts).
    raw = [t.encode("utf-8") for t in texts]
    coder = _Encoder(build_table(b"".join(raw)))
    alone = [coder.encode(r) for r in raw]
    box = parse_container(encode_fsst(texts), KIND_FSST, check_final=False)
    table_len = int.from_bytes(bytes(box.region[:4]), "little")
    streams = box.region[4 + table_len:]
    assert [bytes(box.frame(i, streams)) for i in range(box.count)] == alone
